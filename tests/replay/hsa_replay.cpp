// SPDX-License-Identifier: MIT
// A replay ROCr for tests: a shared library that exports the HSA entry points the doctor's HSA
// probe resolves with dlsym (checks/runtime/hsa_child.cpp) and answers them from a recorded
// rocminfo capture converted to JSON (tests/replay/captures/*.json). Load it with `--hsa-library`.
//
//   HALO_REPLAY_CAPTURE=/path/to/capture.json   the capture to replay (required)
//   HALO_REPLAY_MODE=hang            hsa_init never returns (tests the time limit)
//   HALO_REPLAY_MODE=crash           hsa_init dies with SIGSEGV (tests the isolation)
//   HALO_REPLAY_MODE=crash_in_pools  the first memory-pool query dies with SIGSEGV
//   HALO_REPLAY_MODE=init_fail       hsa_init returns HSA_STATUS_ERROR_OUT_OF_RESOURCES, as
//                                    ROCr does without /dev/kfd
//
// Capture format: {"source": URL, "runtime_version": "1.18" (optional), "agents": [{"name",
// "marketing_name", "vendor_name", "device_type": "CPU|GPU|DSP|AIE", "node", "chip_id",
// "compute_units", "bdfid"?, "wavefront_size"?, "memory_properties": "APU"|""|absent, "pools":
// [{"segment": "GLOBAL|READONLY|PRIVATE|GROUP", "flags": ["KERNARG", "FINE GRAINED", "COARSE
// GRAINED", "EXTENDED FINE GRAINED"], "size_kb", "allocatable", "alloc_granule_kb",
// "alloc_rec_granule_kb", "alloc_alignment_kb", "accessible_by_all", "alloc_max_kb"?}]}]}.
// Sizes stay in rocminfo's KB (KiB) so the files can be checked against the captures by eye; an
// attribute left out of the capture is answered with HSA_STATUS_ERROR_INVALID_ARGUMENT, as an
// older ROCr does for attributes it does not know.
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

using nlohmann::json;

json g_capture;
bool g_initialized = false;

constexpr std::uint32_t kMemoryProperties = 0xA114;
constexpr std::uint32_t kPoolRecGranule = 18;

std::string mode() {
  const char* m = std::getenv("HALO_REPLAY_MODE");
  return m != nullptr ? m : "";
}

const json* agent_at(hsa_agent_t a) {
  if (!g_initialized || a.handle == 0) return nullptr;
  const auto& agents = g_capture["agents"];
  if (a.handle > agents.size()) return nullptr;
  return &agents[a.handle - 1];
}

const json* pool_at(hsa_amd_memory_pool_t p) {
  const std::uint64_t agent = p.handle >> 32;
  const std::uint64_t index = p.handle & 0xffffffffu;
  const json* a = agent_at(hsa_agent_t{agent});
  if (a == nullptr || index == 0 || index > (*a)["pools"].size()) return nullptr;
  return &(*a)["pools"][index - 1];
}

hsa_status_t copy_string(const json& j, const char* field, void* value) {
  if (!j.contains(field)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const std::string s = j[field].get<std::string>();
  char* out = static_cast<char*>(value);
  std::memset(out, 0, 64);
  std::memcpy(out, s.data(), s.size() < 63 ? s.size() : 63);
  return HSA_STATUS_SUCCESS;
}

template <class T>
hsa_status_t copy_number(const json& j, const char* field, void* value, T scale = 1) {
  if (!j.contains(field) || j[field].is_null()) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const T v = static_cast<T>(j[field].get<std::uint64_t>() * static_cast<std::uint64_t>(scale));
  std::memcpy(value, &v, sizeof v);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t copy_bool(const json& j, const char* field, void* value) {
  if (!j.contains(field)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const bool v = j[field].get<bool>();
  std::memcpy(value, &v, sizeof v);
  return HSA_STATUS_SUCCESS;
}

std::uint32_t device_type(const std::string& t) {
  if (t == "CPU") return HSA_DEVICE_TYPE_CPU;
  if (t == "GPU") return HSA_DEVICE_TYPE_GPU;
  if (t == "DSP") return HSA_DEVICE_TYPE_DSP;
  return 3; // HSA_DEVICE_TYPE_AIE (newer ROCr)
}

std::uint32_t segment(const std::string& s) {
  if (s == "GLOBAL") return HSA_AMD_SEGMENT_GLOBAL;
  if (s == "READONLY") return HSA_AMD_SEGMENT_READONLY;
  if (s == "PRIVATE") return HSA_AMD_SEGMENT_PRIVATE;
  return HSA_AMD_SEGMENT_GROUP;
}

std::uint32_t global_flags(const json& pool) {
  std::uint32_t f = 0;
  for (const auto& name : pool.value("flags", json::array())) {
    const std::string n = name.get<std::string>();
    if (n == "KERNARG")
      f |= HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT;
    else if (n == "FINE GRAINED")
      f |= HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED;
    else if (n == "COARSE GRAINED")
      f |= HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED;
    else if (n == "EXTENDED FINE GRAINED")
      f |= 8u;
  }
  return f;
}

} // namespace

extern "C" {

hsa_status_t hsa_init() {
  const std::string m = mode();
  if (m == "hang")
    for (;;)
      ::pause();
  if (m == "crash") std::raise(SIGSEGV);
  if (m == "init_fail") return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  const char* path = std::getenv("HALO_REPLAY_CAPTURE");
  if (path == nullptr) return HSA_STATUS_ERROR;
  std::ifstream in(path);
  if (!in) return HSA_STATUS_ERROR;
  g_capture = json::parse(in, nullptr, false);
  if (g_capture.is_discarded() || !g_capture.contains("agents")) return HSA_STATUS_ERROR;
  g_initialized = true;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_shut_down() {
  if (!g_initialized) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  g_initialized = false;
  return HSA_STATUS_SUCCESS;
}

// The texts of ROCr's hsa_status_string for the codes the replay returns.
hsa_status_t hsa_status_string(hsa_status_t status, const char** status_string) {
  switch (status) {
  case HSA_STATUS_SUCCESS:
    *status_string = "HSA_STATUS_SUCCESS: The function has been executed successfully.";
    return HSA_STATUS_SUCCESS;
  case HSA_STATUS_ERROR:
    *status_string = "HSA_STATUS_ERROR: A generic error has occurred.";
    return HSA_STATUS_SUCCESS;
  case HSA_STATUS_ERROR_INVALID_ARGUMENT:
    *status_string =
        "HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a "
        "precondition stated in the documentation of the corresponding formal argument.";
    return HSA_STATUS_SUCCESS;
  case HSA_STATUS_ERROR_OUT_OF_RESOURCES:
    *status_string =
        "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary "
        "resources. This error may also occur when the core runtime library needs to spawn "
        "threads or create internal OS-specific events.";
    return HSA_STATUS_SUCCESS;
  case HSA_STATUS_ERROR_NOT_INITIALIZED:
    *status_string =
        "HSA_STATUS_ERROR_NOT_INITIALIZED: An API other than hsa_init has been invoked while "
        "the reference count of the HSA runtime is zero.";
    return HSA_STATUS_SUCCESS;
  default:
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

hsa_status_t hsa_system_get_info(hsa_system_info_t attribute, void* value) {
  if (!g_initialized) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (!g_capture.contains("runtime_version")) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const std::string v = g_capture["runtime_version"].get<std::string>();
  const auto dot = v.find('.');
  std::uint16_t n = 0;
  if (attribute == HSA_SYSTEM_INFO_VERSION_MAJOR)
    n = static_cast<std::uint16_t>(std::stoul(v.substr(0, dot)));
  else if (attribute == HSA_SYSTEM_INFO_VERSION_MINOR)
    n = static_cast<std::uint16_t>(std::stoul(v.substr(dot + 1)));
  else
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::memcpy(value, &n, sizeof n);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_iterate_agents(hsa_status_t (*callback)(hsa_agent_t agent, void* data),
                                void* data) {
  if (!g_initialized) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  for (std::uint64_t i = 0; i < g_capture["agents"].size(); ++i) {
    const hsa_status_t st = callback(hsa_agent_t{i + 1}, data);
    if (st != HSA_STATUS_SUCCESS) return st;
  }
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_agent_get_info(hsa_agent_t agent, hsa_agent_info_t attribute, void* value) {
  if (!g_initialized) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  const json* a = agent_at(agent);
  if (a == nullptr) return HSA_STATUS_ERROR_INVALID_AGENT;
  const auto attr = static_cast<std::uint32_t>(attribute);
  switch (attr) {
  case HSA_AGENT_INFO_NAME:
    return copy_string(*a, "name", value);
  case HSA_AGENT_INFO_VENDOR_NAME:
    return copy_string(*a, "vendor_name", value);
  case HSA_AMD_AGENT_INFO_PRODUCT_NAME:
    return copy_string(*a, "marketing_name", value);
  case HSA_AGENT_INFO_DEVICE: {
    const std::uint32_t t = device_type(a->value("device_type", ""));
    std::memcpy(value, &t, sizeof t);
    return HSA_STATUS_SUCCESS;
  }
  case HSA_AMD_AGENT_INFO_DRIVER_NODE_ID:
    return copy_number<std::uint32_t>(*a, "node", value);
  case HSA_AMD_AGENT_INFO_CHIP_ID:
    return copy_number<std::uint32_t>(*a, "chip_id", value);
  case HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT:
    return copy_number<std::uint32_t>(*a, "compute_units", value);
  case HSA_AMD_AGENT_INFO_BDFID:
    return copy_number<std::uint32_t>(*a, "bdfid", value);
  case HSA_AGENT_INFO_WAVEFRONT_SIZE:
    return copy_number<std::uint32_t>(*a, "wavefront_size", value);
  case kMemoryProperties: {
    if (!a->contains("memory_properties")) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    std::uint8_t bits[8] = {};
    if ((*a)["memory_properties"].get<std::string>() == "APU") bits[0] = 1;
    std::memcpy(value, bits, sizeof bits);
    return HSA_STATUS_SUCCESS;
  }
  default:
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

hsa_status_t hsa_amd_agent_iterate_memory_pools(
    hsa_agent_t agent, hsa_status_t (*callback)(hsa_amd_memory_pool_t memory_pool, void* data),
    void* data) {
  if (!g_initialized) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  const json* a = agent_at(agent);
  if (a == nullptr) return HSA_STATUS_ERROR_INVALID_AGENT;
  for (std::uint64_t m = 0; m < (*a)["pools"].size(); ++m) {
    const hsa_status_t st = callback(hsa_amd_memory_pool_t{(agent.handle << 32) | (m + 1)}, data);
    if (st != HSA_STATUS_SUCCESS) return st;
  }
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t memory_pool,
                                          hsa_amd_memory_pool_info_t attribute, void* value) {
  if (!g_initialized) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (mode() == "crash_in_pools") std::raise(SIGSEGV);
  const json* p = pool_at(memory_pool);
  if (p == nullptr) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const auto attr = static_cast<std::uint32_t>(attribute);
  switch (attr) {
  case HSA_AMD_MEMORY_POOL_INFO_SEGMENT: {
    const std::uint32_t s = segment(p->value("segment", ""));
    std::memcpy(value, &s, sizeof s);
    return HSA_STATUS_SUCCESS;
  }
  case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: {
    const std::uint32_t f = global_flags(*p);
    std::memcpy(value, &f, sizeof f);
    return HSA_STATUS_SUCCESS;
  }
  case HSA_AMD_MEMORY_POOL_INFO_SIZE:
    return copy_number<std::size_t>(*p, "size_kb", value, 1024);
  case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED:
    return copy_bool(*p, "allocatable", value);
  case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE:
    return copy_number<std::size_t>(*p, "alloc_granule_kb", value, 1024);
  case kPoolRecGranule:
    return copy_number<std::size_t>(*p, "alloc_rec_granule_kb", value, 1024);
  case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT:
    return copy_number<std::size_t>(*p, "alloc_alignment_kb", value, 1024);
  case HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL:
    return copy_bool(*p, "accessible_by_all", value);
  case HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE:
    return copy_number<std::size_t>(*p, "alloc_max_kb", value, 1024);
  default:
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

} // extern "C"
