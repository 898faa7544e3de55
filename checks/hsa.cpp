// Probe: what the ROCm runtime (ROCr, the HSA runtime under HIP and PyTorch) really offers:
// its agents and their memory pools, the numbers rocminfo prints under "HSA Agents" and
// "Pool Info", in bytes.
//
// ROCr is loaded at run time (dlopen of libhsa-runtime64.so.1), never linked, so the doctor
// starts and explains the machine when ROCm is missing or broken. hsa_init and every query run
// in a forked child with a time limit (--runtime-timeout, default 10 s); the child reports one
// JSON object per line over a pipe, so a ROCr that hangs or crashes becomes an error fact that
// says in which step it happened. Headers (types and enum values only) come from
// libhsa-runtime-dev; attributes newer than its ROCm 5.2 use their raw values.
#include "hsa.hpp"

#include "child_run.hpp"
#include "probes.hpp"

#include <halo/sanitize.hpp>

#include <fmt/format.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>

namespace halo::probes {
namespace hsa {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> library_candidates(const std::string& requested, const char* rocm_path,
                                            bool live) {
  std::vector<std::string> out;
  auto add = [&](std::string p) {
    if (!p.empty() && std::find(out.begin(), out.end(), p) == out.end())
      out.push_back(std::move(p));
  };
  add(requested);
  if (!live) return out;
  if (rocm_path != nullptr && *rocm_path != '\0')
    add((fs::path(rocm_path) / "lib" / kLibraryName).string());
  add(std::string("/opt/rocm/lib/") + kLibraryName);
  add(kLibraryName);
  return out;
}

std::optional<std::string> version_from_info_text(std::string_view text) {
  static const RE2 re(R"(^\s*(\d+\.\d+(?:\.\d+)?))");
  std::string version;
  if (!RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re, &version))
    return std::nullopt;
  return version;
}

std::optional<RocmVersion> rocm_version_of(const fs::path& real_library_path) {
  // AMD's packages: PREFIX/lib/libhsa-runtime64.so.1 beside PREFIX/.info/version ("7.1.0-20").
  const fs::path info = real_library_path.parent_path().parent_path() / ".info" / "version";
  std::ifstream in(info);
  if (in) {
    std::string text(256, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (auto v = version_from_info_text(text)) return RocmVersion{*v, info.string()};
  }
  static const RE2 dir_re(R"((?:^|/)rocm[-_]?(\d+\.\d+(?:\.\d+)?)(?:/|$))");
  std::string version;
  const std::string path = real_library_path.string();
  if (RE2::PartialMatch(path, dir_re, &version))
    return RocmVersion{version, "library path " + path};
  // ROCm's own builds append the ROCm build number: libhsa-runtime64.so.1.18.70100 = 7.1.0.
  static const RE2 name_re(R"(\.so\.\d+\.\d+\.(\d{5,6})$)");
  const std::string name = real_library_path.filename().string();
  long n = 0;
  if (RE2::PartialMatch(name, name_re, &n)) {
    return RocmVersion{fmt::format("{}.{}.{}", n / 10000, (n / 100) % 100, n % 100),
                       "library file name " + name};
  }
  return std::nullopt;
}

std::string device_type_name(std::uint32_t type) {
  switch (type) {
  case 0:
    return "cpu";
  case 1:
    return "gpu";
  case 2:
    return "dsp";
  case 3:
    return "aie";
  default:
    return fmt::format("unknown({})", type);
  }
}

std::string segment_name(std::uint32_t segment) {
  switch (segment) {
  case 0:
    return "global";
  case 1:
    return "readonly";
  case 2:
    return "private";
  case 3:
    return "group";
  default:
    return fmt::format("unknown({})", segment);
  }
}

namespace {

// Attributes newer than the ROCm 5.2 headers (hsa_ext_amd.h of ROCm 6.x/7.x).
constexpr std::uint32_t kAgentInfoMemoryProperties = 0xA114;
constexpr std::uint64_t kMemoryPropertyAgentIsApu = 1u << 0;
constexpr std::uint32_t kPoolInfoRecGranule = 18;
constexpr std::uint32_t kGlobalFlagExtendedFineGrained = 8;
constexpr unsigned kStatusSuccess = static_cast<unsigned>(HSA_STATUS_SUCCESS);
constexpr unsigned kDeviceGpu = static_cast<unsigned>(HSA_DEVICE_TYPE_GPU);
constexpr unsigned kSegmentGlobal = static_cast<unsigned>(HSA_AMD_SEGMENT_GLOBAL);

// ---------------------------------------------------------------------------------------------
// Child side: load ROCr, query, write one JSON object per line.

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

void emit(int fd, const json& j) {
  write_all(fd, dump_json(j) + "\n");
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
    emit(fd, {{"event", "load_failed"}, {"errors", errors}});
    return;
  }
  std::string real = loaded;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(api.init), &info) != 0 && info.dli_fname != nullptr)
    real = info.dli_fname;
  std::error_code ec;
  const fs::path canon = fs::canonical(real, ec);
  emit(fd, {{"event", "load"},
            {"requested", loaded},
            {"path", ec ? real : canon.string()},
            {"errors", errors}});

  const hsa_status_t init = api.init();
  emit(fd, {{"event", "init"},
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
    emit(fd, sys);
  }

  std::vector<hsa_agent_t> agents;
  const hsa_status_t it = api.iterate_agents(
      [](hsa_agent_t a, void* data) {
        static_cast<std::vector<hsa_agent_t>*>(data)->push_back(a);
        return HSA_STATUS_SUCCESS;
      },
      &agents);
  if (it != HSA_STATUS_SUCCESS) {
    emit(fd, {{"event", "agents_failed"}, {"string", status_text(api, it)}});
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
    emit(fd, ev);

    std::vector<hsa_amd_memory_pool_t> pools;
    const hsa_status_t ip = api.iterate_pools(
        a,
        [](hsa_amd_memory_pool_t p, void* data) {
          static_cast<std::vector<hsa_amd_memory_pool_t>*>(data)->push_back(p);
          return HSA_STATUS_SUCCESS;
        },
        &pools);
    if (ip != HSA_STATUS_SUCCESS) {
      emit(fd, {{"event", "pools_failed"}, {"agent", i}, {"string", status_text(api, ip)}});
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
      emit(fd, pe);
    }
  }
  emit(fd, {{"event", "agents_done"}, {"count", agents.size()}});
  const hsa_status_t sd = api.shut_down();
  emit(fd, {{"event", "done"}, {"shut_down", status_text(api, sd)}});
}

// ---------------------------------------------------------------------------------------------
// Parent side: lines -> facts.

/// The summary keys every run sets, so rules always find them with a status and a reason.
const std::vector<std::string>& summary_keys() {
  static const std::vector<std::string> k = {"hsa.library_path",
                                             "hsa.rocm_version",
                                             "hsa.init_status",
                                             "hsa.init_code",
                                             "hsa.runtime_version",
                                             "hsa.agent_count",
                                             "hsa.gpu_count",
                                             "hsa.gpu.0.agent",
                                             "hsa.gpu.0.gfx_target",
                                             "hsa.gpu.0.apu",
                                             "hsa.gpu.0.coarse_pool_bytes"};
  return k;
}

struct Events {
  std::optional<json> load, load_failed, init, system, agents_failed, agents_done, done;
  std::vector<json> agents;
  std::map<std::size_t, std::vector<json>> pools;
  std::map<std::size_t, std::string> pools_failed;
  std::string last; ///< last event name
  std::size_t malformed = 0;
};

Events parse_events(const std::vector<std::string>& lines) {
  Events ev;
  for (const auto& line : lines) {
    json j = json::parse(line, nullptr, false);
    // Every number of the protocol is an integer (child_body writes uint16/32/64 and bools): a
    // floating-point one would reach get<unsigned>() and overflow the conversion (undefined
    // behaviour, found by tests/fuzz/fuzz_hsa_child.cpp), so such a line is malformed.
    const auto has_float = [](const json& o) {
      return std::any_of(o.begin(), o.end(), [](const json& v) { return v.is_number_float(); });
    };
    if (j.is_discarded() || !j.is_object() || !j.contains("event") || has_float(j)) {
      ++ev.malformed;
      continue;
    }
    const std::string name = j.value("event", "");
    ev.last = name;
    if (name == "load")
      ev.load = j;
    else if (name == "load_failed")
      ev.load_failed = j;
    else if (name == "init")
      ev.init = j;
    else if (name == "system")
      ev.system = j;
    else if (name == "agents_failed")
      ev.agents_failed = j;
    else if (name == "agent")
      ev.agents.push_back(j);
    else if (name == "pool")
      ev.pools[j.value("agent", std::size_t{0})].push_back(j);
    else if (name == "pools_failed")
      ev.pools_failed[j.value("agent", std::size_t{0})] = j.value("string", "");
    else if (name == "agents_done")
      ev.agents_done = j;
    else if (name == "done")
      ev.done = j;
  }
  return ev;
}

/// The step the child was in when it stopped, from the last thing it reported.
std::string step_after(const Events& ev) {
  const std::string& l = ev.last;
  if (l.empty()) return "while loading the library (dlopen)";
  if (l == "load") return "in hsa_init";
  if (l == "init" || l == "system") return "while listing agents (hsa_iterate_agents)";
  if (l == "agent" || l == "pool" || l == "pools_failed")
    return fmt::format("while querying agent {} and its memory pools",
                       ev.agents.empty() ? std::size_t{0} : ev.agents.size() - 1);
  if (l == "agents_done") return "in hsa_shut_down";
  return "after " + l;
}

std::optional<std::int64_t> as_int64(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

/// Puts one queried field: its value, or `missing` with the runtime's status string when the
/// runtime did not answer that attribute (older ROCr).
template <class Convert>
void put_field(FactSet& facts, const json& ev, const char* field, const std::string& key,
               const std::string& source, Convert&& convert) {
  const json& errs = ev.contains("errors") ? ev["errors"] : json::object();
  if (ev.contains(field)) {
    std::optional<Value> v = convert(ev[field]);
    if (v)
      facts.put_ok(key, *v, source);
    else
      facts.put_status(key, Status::error, source, "value out of range: " + dump_json(ev[field]));
  } else if (errs.contains(field)) {
    facts.put_status(key, Status::missing, source,
                     "not reported by this ROCr: " + errs[field].get<std::string>());
  } else {
    facts.put_status(key, Status::missing, source, "not queried");
  }
}

auto as_int_value = [](const json& v) -> std::optional<Value> {
  if (auto i = as_int64(v)) return Value{*i};
  return std::nullopt;
};
auto as_string_value = [](const json& v) -> std::optional<Value> {
  if (v.is_string()) return Value{v.get<std::string>()};
  return std::nullopt;
};
auto as_bool_value = [](const json& v) -> std::optional<Value> {
  if (v.is_boolean()) return Value{v.get<bool>()};
  return std::nullopt;
};

std::string agent_source(const char* attr) {
  return fmt::format("hsa_agent_get_info({})", attr);
}
std::string pool_source(const char* attr) {
  return fmt::format("hsa_amd_memory_pool_get_info({})", attr);
}

void put_summary_status(FactSet& facts, Status st, const std::string& source,
                        const std::string& reason) {
  for (const auto& k : summary_keys())
    if (facts.find(k) == nullptr) facts.put_status(k, st, source, reason);
}

void put_failure(FactSet& facts, const std::string& reason) {
  facts.put_ok("hsa.status", std::string("error"), "hsa probe");
  facts.put_ok("hsa.error", reason, "hsa probe");
}

void convert(const ProbeContext& ctx, const ChildRun& run, const Events& ev, FactSet& facts) {
  const double timeout = ctx.options.runtime_timeout_s;
  const bool ended_badly = !run.started || run.timed_out || run.too_much_output ||
                           run.term_signal != 0 || (run.exited && run.exit_code != 0);
  const std::string ending = describe_end(run, timeout);
  // A child that hung or crashed leaves the doctor unable to judge the runtime: the facts below
  // say what happened, and the probe's status says it did not finish (halo-doctor slurm leaves
  // the node alone then, docs/slurm.md).
  if (ended_badly)
    mark_probe_incomplete(facts, "hsa", fmt::format("the ROCr child process {}", ending));

  // 1. The library.
  std::vector<std::string> load_errors;
  if (ev.load) load_errors = (*ev.load).value("errors", std::vector<std::string>{});
  if (ev.load_failed) load_errors = (*ev.load_failed).value("errors", std::vector<std::string>{});
  facts.put_ok("hsa.load_errors", load_errors, "dlopen");
  if (ev.load_failed || (!ev.load && !ended_badly)) {
    const std::string reason =
        fmt::format("ROCr ({}) could not be loaded: {}", kLibraryName,
                    load_errors.empty() ? std::string("no library to try")
                                        : fmt::format("{}", fmt::join(load_errors, "; ")));
    put_failure(facts, reason);
    put_summary_status(facts, Status::missing, "dlopen", reason);
    return;
  }
  if (!ev.load) {
    const std::string reason = fmt::format("the ROCr child process {} {}", ending, step_after(ev));
    put_failure(facts, reason);
    put_summary_status(facts, Status::error, "dlopen", reason);
    return;
  }
  const std::string path = (*ev.load).value("path", "");
  facts.put_ok("hsa.library_path", path, "dlopen + dladdr");
  if (auto v = rocm_version_of(path))
    facts.put_ok("hsa.rocm_version", v->version, v->source);
  else
    facts.put_status("hsa.rocm_version", Status::missing, path,
                     "no .info/version beside the library and its path names no ROCm release");

  // 2. hsa_init.
  if (!ev.init) {
    const std::string reason = fmt::format("ROCr ({}) {} {}", path, ending, step_after(ev));
    put_failure(facts, reason);
    put_summary_status(facts, Status::error, "hsa_init", reason);
    return;
  }
  const auto code = (*ev.init).value("code", 0u);
  const std::string init_str = (*ev.init).value("string", "");
  facts.put_ok("hsa.init_status", init_str, "hsa_init + hsa_status_string");
  facts.put_ok("hsa.init_code", static_cast<std::int64_t>(code), "hsa_init");
  if (code != kStatusSuccess) {
    const std::string reason = fmt::format("hsa_init failed: {}", init_str);
    put_failure(facts, reason);
    put_summary_status(facts, Status::error, "hsa_init", reason);
    return;
  }
  {
    const std::string vsrc = "hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MAJOR/MINOR)";
    const json s = ev.system ? *ev.system : json::object();
    if (s.contains("version_major") && s.contains("version_minor"))
      facts.put_ok("hsa.runtime_version",
                   fmt::format("{}.{}", s["version_major"].get<unsigned>(),
                               s["version_minor"].get<unsigned>()),
                   vsrc);
    else
      facts.put_status("hsa.runtime_version", Status::missing, vsrc,
                       "not reported by this ROCr: " +
                           dump_json(s.value("errors", json::object())));
  }

  // 3. Agents and pools, as far as the child got.
  std::int64_t gpu = 0;
  for (const json& a : ev.agents) {
    const std::size_t i = a.value("index", std::size_t{0});
    const std::string pre = fmt::format("hsa.agent.{}", i);
    put_field(facts, a, "name", pre + ".name", agent_source("HSA_AGENT_INFO_NAME"),
              as_string_value);
    put_field(facts, a, "marketing_name", pre + ".marketing_name",
              agent_source("HSA_AMD_AGENT_INFO_PRODUCT_NAME"), as_string_value);
    put_field(facts, a, "vendor_name", pre + ".vendor_name",
              agent_source("HSA_AGENT_INFO_VENDOR_NAME"), as_string_value);
    put_field(facts, a, "device_type", pre + ".device_type", agent_source("HSA_AGENT_INFO_DEVICE"),
              [](const json& v) -> std::optional<Value> {
                return Value{device_type_name(v.get<std::uint32_t>())};
              });
    put_field(facts, a, "node", pre + ".node", agent_source("HSA_AMD_AGENT_INFO_DRIVER_NODE_ID"),
              as_int_value);
    put_field(facts, a, "chip_id", pre + ".chip_id", agent_source("HSA_AMD_AGENT_INFO_CHIP_ID"),
              as_int_value);
    put_field(facts, a, "compute_units", pre + ".compute_units",
              agent_source("HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT"), as_int_value);
    put_field(facts, a, "bdfid", pre + ".bdfid", agent_source("HSA_AMD_AGENT_INFO_BDFID"),
              as_int_value);
    put_field(facts, a, "memory_properties", pre + ".apu",
              agent_source("HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES"),
              [](const json& v) -> std::optional<Value> {
                return Value{(v.get<std::uint64_t>() & kMemoryPropertyAgentIsApu) != 0};
              });
    const bool is_gpu = a.value("device_type", 99u) == kDeviceGpu;
    if (is_gpu) {
      put_field(facts, a, "wavefront_size", pre + ".wavefront_size",
                agent_source("HSA_AGENT_INFO_WAVEFRONT_SIZE"), as_int_value);
    } else {
      facts.put_status(pre + ".wavefront_size", Status::missing,
                       agent_source("HSA_AGENT_INFO_WAVEFRONT_SIZE"), "not a GPU agent");
    }
    static const RE2 gfx_re("gfx[0-9a-f]+");
    const std::string name = a.value("name", "");
    if (is_gpu && RE2::FullMatch(name, gfx_re))
      facts.put_ok(pre + ".gfx_target", name, agent_source("HSA_AGENT_INFO_NAME"));
    else
      facts.put_status(pre + ".gfx_target", Status::missing, agent_source("HSA_AGENT_INFO_NAME"),
                       is_gpu ? "the GPU agent's name is not a gfx target: " + name
                              : "not a GPU agent");

    std::optional<std::int64_t> coarse;
    const auto pit = ev.pools.find(i);
    const std::vector<json> none;
    const std::vector<json>& pools = pit == ev.pools.end() ? none : pit->second;
    if (auto pf = ev.pools_failed.find(i); pf != ev.pools_failed.end())
      facts.put_status(pre + ".pool_count", Status::error, "hsa_amd_agent_iterate_memory_pools",
                       pf->second);
    else
      facts.put_ok(pre + ".pool_count", static_cast<std::int64_t>(pools.size()),
                   "hsa_amd_agent_iterate_memory_pools");
    for (const json& p : pools) {
      const std::string pp = fmt::format("{}.pool.{}", pre, p.value("index", std::size_t{0}));
      put_field(facts, p, "segment", pp + ".segment",
                pool_source("HSA_AMD_MEMORY_POOL_INFO_SEGMENT"),
                [](const json& v) -> std::optional<Value> {
                  return Value{segment_name(v.get<std::uint32_t>())};
                });
      const std::string fsrc = pool_source("HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS");
      if (p.contains("global_flags")) {
        const auto flags = p["global_flags"].get<std::uint32_t>();
        facts.put_ok(pp + ".global_flags", static_cast<std::int64_t>(flags), fsrc);
        facts.put_ok(pp + ".kernarg", (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) != 0,
                     fsrc);
        facts.put_ok(pp + ".fine_grained",
                     (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) != 0, fsrc);
        facts.put_ok(pp + ".coarse_grained",
                     (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) != 0, fsrc);
        facts.put_ok(pp + ".extended_fine_grained", (flags & kGlobalFlagExtendedFineGrained) != 0,
                     fsrc);
        if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) != 0 && !coarse &&
            p.contains("size"))
          coarse = as_int64(p["size"]);
      } else {
        for (const char* f :
             {"global_flags", "kernarg", "fine_grained", "coarse_grained", "extended_fine_grained"})
          facts.put_status(pp + "." + f, Status::missing, fsrc,
                           p.value("segment", 0u) == kSegmentGlobal
                               ? "not reported by this ROCr"
                               : "only GLOBAL pools have flags");
      }
      put_field(facts, p, "size", pp + ".size_bytes", pool_source("HSA_AMD_MEMORY_POOL_INFO_SIZE"),
                as_int_value);
      put_field(facts, p, "alloc_allowed", pp + ".runtime_alloc_allowed",
                pool_source("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED"), as_bool_value);
      put_field(facts, p, "alloc_granule", pp + ".alloc_granule_bytes",
                pool_source("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE"), as_int_value);
      put_field(facts, p, "alloc_rec_granule", pp + ".alloc_rec_granule_bytes",
                pool_source("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE"), as_int_value);
      put_field(facts, p, "alloc_alignment", pp + ".alloc_alignment_bytes",
                pool_source("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT"), as_int_value);
      put_field(facts, p, "accessible_by_all", pp + ".accessible_by_all",
                pool_source("HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL"), as_bool_value);
      put_field(facts, p, "alloc_max", pp + ".alloc_max_bytes",
                pool_source("HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE"), as_int_value);
    }

    if (is_gpu) {
      const std::string g = fmt::format("hsa.gpu.{}", gpu++);
      const std::string src = fmt::format("derived: {}", pre);
      facts.put_ok(g + ".agent", static_cast<std::int64_t>(i), src);
      if (const Fact* f = facts.find(pre + ".gfx_target")) {
        Fact copy = *f;
        copy.key = g + ".gfx_target";
        facts.put(copy);
      }
      if (const Fact* f = facts.find(pre + ".apu")) {
        Fact copy = *f;
        copy.key = g + ".apu";
        facts.put(copy);
      }
      if (coarse)
        facts.put_ok(g + ".coarse_pool_bytes", *coarse,
                     src + ".pool.*: first GLOBAL coarse-grained pool");
      else
        facts.put_status(g + ".coarse_pool_bytes", Status::missing, src + ".pool.*",
                         "ROCr lists no GLOBAL coarse-grained pool for this GPU agent");
    }
  }

  const bool complete = ev.agents_done.has_value();
  if (ev.agents_failed) {
    const std::string reason =
        "hsa_iterate_agents failed: " + (*ev.agents_failed).value("string", "");
    put_failure(facts, reason);
    put_summary_status(facts, Status::error, "hsa_iterate_agents", reason);
    return;
  }
  if (!complete) {
    const std::string reason = fmt::format("ROCr ({}) {} {}", path, ending, step_after(ev));
    put_failure(facts, reason);
    put_summary_status(facts, Status::error, "hsa_iterate_agents", reason);
    return;
  }
  facts.put_ok("hsa.agent_count", static_cast<std::int64_t>(ev.agents.size()),
               "hsa_iterate_agents");
  facts.put_ok("hsa.gpu_count", gpu, "hsa_iterate_agents: agents with HSA_DEVICE_TYPE_GPU");
  put_summary_status(facts, Status::missing, "hsa_iterate_agents", "ROCr lists no GPU agent");
  if (ended_badly) {
    // Everything was read; only hsa_shut_down or the exit misbehaved. Keep the facts, say so.
    put_failure(facts, fmt::format("ROCr ({}) {} {}", path, ending, step_after(ev)));
    return;
  }
  facts.put_ok("hsa.status", std::string("ok"), "hsa probe");
  facts.put_status("hsa.error", Status::missing, "hsa probe", "no error");
}

/// parse_events() and convert() on untrusted lines: a report without the protocol's shape (a
/// field of the wrong type throws nlohmann::json's type_error) is a failure fact, never an
/// exception that would end the run (found by tests/fuzz/fuzz_hsa_child.cpp).
void decode(const ProbeContext& ctx, const ChildRun& run, FactSet& facts) {
  FactSet out;
  try {
    convert(ctx, run, parse_events(run.lines), out);
  } catch (const nlohmann::json::exception& e) {
    out = FactSet{};
    const std::string reason =
        fmt::format("the ROCr child's report is malformed: {}", terminal_safe(e.what()));
    put_failure(out, reason);
    put_summary_status(out, Status::error, "hsa probe", reason);
  }
  facts.merge(out);
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  std::string skip;
  if (ctx.options.no_runtime)
    skip = "skipped: --no-runtime";
  else if (!ctx.root.is_live() && ctx.options.hsa_library.empty())
    skip = "skipped: --root is not / (ROCr answers for the machine it runs on; pass --hsa-library "
           "to replay a recorded runtime for a fixture)";
  if (!skip.empty()) {
    for (const char* k : {"hsa.status", "hsa.error", "hsa.load_errors"})
      facts.put_status(k, Status::missing, "hsa probe", skip);
    put_summary_status(facts, Status::missing, "hsa probe", skip);
    return;
  }
  const std::vector<std::string> candidates =
      library_candidates(ctx.options.hsa_library, std::getenv("ROCM_PATH"), ctx.root.is_live());
  const ChildRun run =
      run_in_child([&](int fd) { child_body(fd, candidates); }, ctx.options.runtime_timeout_s);
  decode(ctx, run, facts);
}

} // namespace

void decode_child_lines(const ProbeContext& ctx, const std::vector<std::string>& lines,
                        FactSet& facts) {
  ChildRun run;
  run.started = true;
  run.exited = true;
  run.lines = lines;
  decode(ctx, run, facts);
}

} // namespace hsa

std::unique_ptr<Probe> make_hsa_probe() {
  return std::make_unique<BasicProbe>(
      "hsa",
      std::vector<std::string>{"hsa.status",
                               "hsa.error",
                               "hsa.load_errors",
                               "hsa.library_path",
                               "hsa.rocm_version",
                               "hsa.init_status",
                               "hsa.init_code",
                               "hsa.runtime_version",
                               "hsa.agent_count",
                               "hsa.agent.*.name",
                               "hsa.agent.*.marketing_name",
                               "hsa.agent.*.vendor_name",
                               "hsa.agent.*.device_type",
                               "hsa.agent.*.node",
                               "hsa.agent.*.chip_id",
                               "hsa.agent.*.compute_units",
                               "hsa.agent.*.bdfid",
                               "hsa.agent.*.apu",
                               "hsa.agent.*.wavefront_size",
                               "hsa.agent.*.gfx_target",
                               "hsa.agent.*.pool_count",
                               "hsa.agent.*.pool.*.segment",
                               "hsa.agent.*.pool.*.global_flags",
                               "hsa.agent.*.pool.*.kernarg",
                               "hsa.agent.*.pool.*.fine_grained",
                               "hsa.agent.*.pool.*.coarse_grained",
                               "hsa.agent.*.pool.*.extended_fine_grained",
                               "hsa.agent.*.pool.*.size_bytes",
                               "hsa.agent.*.pool.*.runtime_alloc_allowed",
                               "hsa.agent.*.pool.*.alloc_granule_bytes",
                               "hsa.agent.*.pool.*.alloc_rec_granule_bytes",
                               "hsa.agent.*.pool.*.alloc_alignment_bytes",
                               "hsa.agent.*.pool.*.accessible_by_all",
                               "hsa.agent.*.pool.*.alloc_max_bytes",
                               "hsa.gpu_count",
                               "hsa.gpu.*.agent",
                               "hsa.gpu.*.gfx_target",
                               "hsa.gpu.*.apu",
                               "hsa.gpu.*.coarse_pool_bytes"},
      std::vector<std::string>{
          "libhsa-runtime64.so.1 (--hsa-library, $ROCM_PATH/lib, /opt/rocm/lib, loader path)",
          "/dev/kfd (through ROCr)", "PREFIX/.info/version"},
      hsa::collect);
}

} // namespace halo::probes
