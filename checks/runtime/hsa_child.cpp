// SPDX-License-Identifier: MIT
// The ROCr probe's child side (checks/runtime/hsa.cpp runs it in a forked child,
// checks/common/child_run.hpp): load ROCr with dlopen, resolve its entry points with dlsym, call
// hsa_init and query the system, every agent and every memory pool, writing one JSON event per line
// (checks/runtime/hsa_internal.hpp, checks/runtime/hsa_protocol.cpp). Whatever ROCr does here
// (hang, crash, abort) ends only this process.
#include "hsa_internal.hpp"

#include <fmt/format.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace halo::probes::hsa {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The attribute arguments are taken as uint32_t: ROCr's attribute enums are passed as 32-bit
// integers, and AMD's extension values (0xA000 and up, or newer than these headers) lie outside the
// range of the core enum types.
struct Api {
  decltype(&::hsa_init) init = nullptr;
  decltype(&::hsa_shut_down) shut_down = nullptr;
  decltype(&::hsa_status_string) status_string = nullptr;
  hsa_status_t (*system_get_info)(std::uint32_t attribute, void* value) = nullptr;
  decltype(&::hsa_iterate_agents) iterate_agents = nullptr;
  hsa_status_t (*agent_get_info)(hsa_agent_t agent, std::uint32_t attribute, void* value) = nullptr;
  decltype(&::hsa_amd_agent_iterate_memory_pools) iterate_pools = nullptr;
  hsa_status_t (*pool_get_info)(hsa_amd_memory_pool_t pool, std::uint32_t attribute,
                                void* value) = nullptr;
};

template <class F> bool resolve(void* handle, const char* name, F& out, std::string& missing) {
  void* sym = ::dlsym(handle, name);
  if (sym == nullptr) {
    if (!missing.empty()) missing += ", ";
    missing += name;
    return false;
  }
  out = reinterpret_cast<F>(sym);
  return true;
}

std::string status_text(const Api& api, hsa_status_t st) {
  const char* s = nullptr;
  if (api.status_string != nullptr && api.status_string(st, &s) == HSA_STATUS_SUCCESS &&
      s != nullptr)
    return s;
  return fmt::format("HSA status 0x{:x}", static_cast<unsigned>(st));
}

/// Queries one attribute into a zeroed, generously sized buffer (so a runtime that writes more
/// than the documented size cannot overrun), then copies out a T.
template <class T, class Query>
void query(const Api& api, Query&& q, const char* field, json& out, json& errors) {
  alignas(16) std::array<unsigned char, 256> buf{};
  const hsa_status_t st = q(static_cast<void*>(buf.data()));
  if (st != HSA_STATUS_SUCCESS) {
    errors[field] = status_text(api, st);
    return;
  }
  T v{};
  std::memcpy(&v, buf.data(), sizeof v);
  out[field] = v;
}

void query_string(const Api& api, hsa_agent_t agent, std::uint32_t attr, const char* field,
                  json& out, json& errors) {
  alignas(16) std::array<char, 256> buf{};
  const hsa_status_t st = api.agent_get_info(agent, attr, buf.data());
  if (st != HSA_STATUS_SUCCESS) {
    errors[field] = status_text(api, st);
    return;
  }
  buf.back() = '\0';
  out[field] = std::string(buf.data(), ::strnlen(buf.data(), 64));
}

} // namespace

void child_body(int fd, const std::vector<std::string>& candidates) {
  Api api;
  void* handle = nullptr;
  std::vector<std::string> errors;
  std::string loaded;
  for (const auto& path : candidates) {
    ::dlerror();
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = ::dlerror();
      errors.push_back(e != nullptr ? std::string(e) : path + ": dlopen failed");
      continue;
    }
    Api a;
    std::string missing;
    bool ok = true;
    ok &= resolve(h, "hsa_init", a.init, missing);
    ok &= resolve(h, "hsa_shut_down", a.shut_down, missing);
    ok &= resolve(h, "hsa_status_string", a.status_string, missing);
    ok &= resolve(h, "hsa_system_get_info", a.system_get_info, missing);
    ok &= resolve(h, "hsa_iterate_agents", a.iterate_agents, missing);
    ok &= resolve(h, "hsa_agent_get_info", a.agent_get_info, missing);
    ok &= resolve(h, "hsa_amd_agent_iterate_memory_pools", a.iterate_pools, missing);
    ok &= resolve(h, "hsa_amd_memory_pool_get_info", a.pool_get_info, missing);
    if (!ok) {
      errors.push_back(fmt::format("{}: not ROCr, lacks {}", path, missing));
      ::dlclose(h);
      continue;
    }
    api = a;
    handle = h;
    loaded = path;
    break;
  }
  if (handle == nullptr) {
    write_event(fd, {{"event", "load_failed"}, {"errors", errors}});
    return;
  }
  std::string real = loaded;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(api.init), &info) != 0 && info.dli_fname != nullptr)
    real = info.dli_fname;
  std::error_code ec;
  const fs::path canon = fs::canonical(real, ec);
  write_event(fd, {{"event", "load"},
                   {"requested", loaded},
                   {"path", ec ? real : canon.string()},
                   {"errors", errors}});

  const hsa_status_t init = api.init();
  write_event(fd, {{"event", "init"},
                   {"code", static_cast<unsigned>(init)},
                   {"string", status_text(api, init)}});
  if (init != HSA_STATUS_SUCCESS) return;

  {
    json sys = {{"event", "system"}};
    json errs = json::object();
    query<std::uint16_t>(
        api, [&](void* b) { return api.system_get_info(HSA_SYSTEM_INFO_VERSION_MAJOR, b); },
        "version_major", sys, errs);
    query<std::uint16_t>(
        api, [&](void* b) { return api.system_get_info(HSA_SYSTEM_INFO_VERSION_MINOR, b); },
        "version_minor", sys, errs);
    sys["errors"] = errs;
    write_event(fd, sys);
  }

  std::vector<hsa_agent_t> agents;
  const hsa_status_t it = api.iterate_agents(
      [](hsa_agent_t a, void* data) {
        static_cast<std::vector<hsa_agent_t>*>(data)->push_back(a);
        return HSA_STATUS_SUCCESS;
      },
      &agents);
  if (it != HSA_STATUS_SUCCESS) {
    write_event(fd, {{"event", "agents_failed"}, {"string", status_text(api, it)}});
    api.shut_down();
    return;
  }

  for (std::size_t i = 0; i < agents.size(); ++i) {
    const hsa_agent_t a = agents[i];
    json ev = {{"event", "agent"}, {"index", i}};
    json errs = json::object();
    auto get = [&](std::uint32_t attr) {
      return [&api, a, attr](void* b) { return api.agent_get_info(a, attr, b); };
    };
    query_string(api, a, HSA_AGENT_INFO_NAME, "name", ev, errs);
    query_string(api, a, HSA_AGENT_INFO_VENDOR_NAME, "vendor_name", ev, errs);
    query_string(api, a, HSA_AMD_AGENT_INFO_PRODUCT_NAME, "marketing_name", ev, errs);
    query<std::uint32_t>(api, get(HSA_AGENT_INFO_DEVICE), "device_type", ev, errs);
    query<std::uint32_t>(api, get(HSA_AMD_AGENT_INFO_DRIVER_NODE_ID), "node", ev, errs);
    query<std::uint32_t>(api, get(HSA_AMD_AGENT_INFO_CHIP_ID), "chip_id", ev, errs);
    query<std::uint32_t>(api, get(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT), "compute_units", ev,
                         errs);
    query<std::uint32_t>(api, get(HSA_AMD_AGENT_INFO_BDFID), "bdfid", ev, errs);
    if (ev.value("device_type", 0u) == kDeviceGpu)
      query<std::uint32_t>(api, get(HSA_AGENT_INFO_WAVEFRONT_SIZE), "wavefront_size", ev, errs);
    query<std::uint64_t>(api, get(kAgentInfoMemoryProperties), "memory_properties", ev, errs);
    ev["errors"] = errs;
    write_event(fd, ev);

    std::vector<hsa_amd_memory_pool_t> pools;
    const hsa_status_t ip = api.iterate_pools(
        a,
        [](hsa_amd_memory_pool_t p, void* data) {
          static_cast<std::vector<hsa_amd_memory_pool_t>*>(data)->push_back(p);
          return HSA_STATUS_SUCCESS;
        },
        &pools);
    if (ip != HSA_STATUS_SUCCESS) {
      write_event(fd, {{"event", "pools_failed"}, {"agent", i}, {"string", status_text(api, ip)}});
      continue;
    }
    for (std::size_t m = 0; m < pools.size(); ++m) {
      const hsa_amd_memory_pool_t p = pools[m];
      json pe = {{"event", "pool"}, {"agent", i}, {"index", m}};
      json perrs = json::object();
      auto pget = [&](std::uint32_t attr) {
        return [&api, p, attr](void* b) { return api.pool_get_info(p, attr, b); };
      };
      query<std::uint32_t>(api, pget(HSA_AMD_MEMORY_POOL_INFO_SEGMENT), "segment", pe, perrs);
      if (pe.value("segment", 99u) == kSegmentGlobal)
        query<std::uint32_t>(api, pget(HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS), "global_flags", pe,
                             perrs);
      query<std::uint64_t>(api, pget(HSA_AMD_MEMORY_POOL_INFO_SIZE), "size", pe, perrs);
      query<bool>(api, pget(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED), "alloc_allowed", pe,
                  perrs);
      query<std::uint64_t>(api, pget(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE),
                           "alloc_granule", pe, perrs);
      query<std::uint64_t>(api, pget(kPoolInfoRecGranule), "alloc_rec_granule", pe, perrs);
      query<std::uint64_t>(api, pget(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT),
                           "alloc_alignment", pe, perrs);
      query<bool>(api, pget(HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL), "accessible_by_all", pe,
                  perrs);
      query<std::uint64_t>(api, pget(HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE), "alloc_max", pe,
                           perrs);
      pe["errors"] = perrs;
      write_event(fd, pe);
    }
  }
  write_event(fd, {{"event", "agents_done"}, {"count", agents.size()}});
  const hsa_status_t sd = api.shut_down();
  write_event(fd, {{"event", "done"}, {"shut_down", status_text(api, sd)}});
}

} // namespace halo::probes::hsa
