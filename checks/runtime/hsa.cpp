// SPDX-License-Identifier: MIT
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
//
// This file turns the child's events into hsa.* facts and holds the probe; the child itself is
// checks/runtime/hsa_child.cpp, the line protocol between the two checks/runtime/hsa_protocol.cpp,
// and what they share checks/runtime/hsa_internal.hpp.
#include "hsa.hpp"

#include "child_run.hpp"
#include "hsa_internal.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <nlohmann/json.hpp>

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <span>
#include <string_view>

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

namespace {
/// `names[value]`, else "unknown(VALUE)": a value of an enum a newer ROCr extended.
std::string enum_name(std::span<const std::string_view> names, std::uint32_t value) {
  return value < names.size() ? std::string(names[value]) : fmt::format("unknown({})", value);
}
} // namespace

std::string device_type_name(std::uint32_t type) {
  // hsa_device_type_t (hsa.h); 3 is HSA_DEVICE_TYPE_AIE of newer ROCr headers.
  static_assert(HSA_DEVICE_TYPE_CPU == 0 && HSA_DEVICE_TYPE_GPU == 1 && HSA_DEVICE_TYPE_DSP == 2);
  static constexpr std::array<std::string_view, 4> kNames{"cpu", "gpu", "dsp", "aie"};
  return enum_name(kNames, type);
}

std::string segment_name(std::uint32_t segment) {
  // hsa_amd_segment_t (hsa_ext_amd.h).
  static_assert(HSA_AMD_SEGMENT_GLOBAL == 0 && HSA_AMD_SEGMENT_READONLY == 1 &&
                HSA_AMD_SEGMENT_PRIVATE == 2 && HSA_AMD_SEGMENT_GROUP == 3);
  static constexpr std::array<std::string_view, 4> kNames{"global", "readonly", "private", "group"};
  return enum_name(kNames, segment);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Parent side: the child's events (parse_events) -> facts.

/// The summary keys every run sets, so rules always find them with a status and a reason.
const std::vector<std::string>& summary_keys() {
  static const std::vector<std::string> k = {std::string(fact_keys::hsa::library_path),
                                             std::string(fact_keys::hsa::rocm_version),
                                             std::string(fact_keys::hsa::init_status),
                                             std::string(fact_keys::hsa::init_code),
                                             std::string(fact_keys::hsa::runtime_version),
                                             std::string(fact_keys::hsa::agent_count),
                                             std::string(fact_keys::hsa::gpu_count),
                                             fact_keys::hsa::gpu_agent(0),
                                             fact_keys::hsa::gpu_gfx_target(0),
                                             fact_keys::hsa::gpu_apu(0),
                                             fact_keys::hsa::gpu_coarse_pool_bytes(0)};
  return k;
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

std::optional<Value> as_int_value(const json& v) {
  if (auto i = as_int64(v)) return Value{*i};
  return std::nullopt;
}
std::optional<Value> as_string_value(const json& v) {
  if (v.is_string()) return Value{v.get<std::string>()};
  return std::nullopt;
}
std::optional<Value> as_bool_value(const json& v) {
  if (v.is_boolean()) return Value{v.get<bool>()};
  return std::nullopt;
}
std::optional<Value> as_device_type(const json& v) {
  return Value{device_type_name(v.get<std::uint32_t>())};
}
std::optional<Value> as_is_apu(const json& v) {
  return Value{(v.get<std::uint64_t>() & kMemoryPropertyAgentIsApu) != 0};
}
std::optional<Value> as_segment(const json& v) {
  return Value{segment_name(v.get<std::uint32_t>())};
}

/// A field of the child's agent or pool record that becomes one fact as it is: the record's
/// field, the fact's key (a function of the agent's index, and the pool's), the ROCr attribute the
/// child read it from, and how its JSON becomes the value.
template <class Key> struct FieldFact {
  const char* field;
  Key key;
  const char* attribute;
  std::optional<Value> (*convert)(const json&);
};
/// hsa.agent.<agent>.KEY
using AgentKey = std::string (*)(std::size_t agent);
/// hsa.agent.<agent>.pool.<pool>.KEY
using PoolKey = std::string (*)(std::size_t agent, std::size_t pool);

/// hsa_agent_get_info (hsa.h hsa_agent_info_t, hsa_ext_amd.h hsa_amd_agent_info_t).
constexpr std::array<FieldFact<AgentKey>, 9> kAgentFields{{
    {"name", [](std::size_t a) { return fact_keys::hsa::agent_name(a); }, "HSA_AGENT_INFO_NAME",
     as_string_value},
    {"marketing_name", [](std::size_t a) { return fact_keys::hsa::agent_marketing_name(a); },
     "HSA_AMD_AGENT_INFO_PRODUCT_NAME", as_string_value},
    {"vendor_name", [](std::size_t a) { return fact_keys::hsa::agent_vendor_name(a); },
     "HSA_AGENT_INFO_VENDOR_NAME", as_string_value},
    {"device_type", [](std::size_t a) { return fact_keys::hsa::agent_device_type(a); },
     "HSA_AGENT_INFO_DEVICE", as_device_type},
    {"node", [](std::size_t a) { return fact_keys::hsa::agent_node(a); },
     "HSA_AMD_AGENT_INFO_DRIVER_NODE_ID", as_int_value},
    {"chip_id", [](std::size_t a) { return fact_keys::hsa::agent_chip_id(a); },
     "HSA_AMD_AGENT_INFO_CHIP_ID", as_int_value},
    {"compute_units", [](std::size_t a) { return fact_keys::hsa::agent_compute_units(a); },
     "HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT", as_int_value},
    {"bdfid", [](std::size_t a) { return fact_keys::hsa::agent_bdfid(a); },
     "HSA_AMD_AGENT_INFO_BDFID", as_int_value},
    {"memory_properties", [](std::size_t a) { return fact_keys::hsa::agent_apu(a); },
     "HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES", as_is_apu},
}};

/// hsa_amd_memory_pool_get_info (hsa_ext_amd.h hsa_amd_memory_pool_info_t).
constexpr std::array<FieldFact<PoolKey>, 8> kPoolFields{{
    {"segment",
     [](std::size_t a, std::size_t p) { return fact_keys::hsa::agent_pool_segment(a, p); },
     "HSA_AMD_MEMORY_POOL_INFO_SEGMENT", as_segment},
    {"size",
     [](std::size_t a, std::size_t p) { return fact_keys::hsa::agent_pool_size_bytes(a, p); },
     "HSA_AMD_MEMORY_POOL_INFO_SIZE", as_int_value},
    {"alloc_allowed",
     [](std::size_t a, std::size_t p) {
       return fact_keys::hsa::agent_pool_runtime_alloc_allowed(a, p);
     },
     "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED", as_bool_value},
    {"alloc_granule",
     [](std::size_t a, std::size_t p) {
       return fact_keys::hsa::agent_pool_alloc_granule_bytes(a, p);
     },
     "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE", as_int_value},
    {"alloc_rec_granule",
     [](std::size_t a, std::size_t p) {
       return fact_keys::hsa::agent_pool_alloc_rec_granule_bytes(a, p);
     },
     "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE", as_int_value},
    {"alloc_alignment",
     [](std::size_t a, std::size_t p) {
       return fact_keys::hsa::agent_pool_alloc_alignment_bytes(a, p);
     },
     "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT", as_int_value},
    {"accessible_by_all",
     [](std::size_t a, std::size_t p) {
       return fact_keys::hsa::agent_pool_accessible_by_all(a, p);
     },
     "HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL", as_bool_value},
    {"alloc_max",
     [](std::size_t a, std::size_t p) { return fact_keys::hsa::agent_pool_alloc_max_bytes(a, p); },
     "HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE", as_int_value},
}};

/// The facts of a pool's HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: the flags, then each flag.
constexpr std::array<PoolKey, 5> kFlagKeys{
    [](std::size_t a, std::size_t p) { return fact_keys::hsa::agent_pool_global_flags(a, p); },
    [](std::size_t a, std::size_t p) { return fact_keys::hsa::agent_pool_kernarg(a, p); },
    [](std::size_t a, std::size_t p) { return fact_keys::hsa::agent_pool_fine_grained(a, p); },
    [](std::size_t a, std::size_t p) { return fact_keys::hsa::agent_pool_coarse_grained(a, p); },
    [](std::size_t a, std::size_t p) {
      return fact_keys::hsa::agent_pool_extended_fine_grained(a, p);
    }};

std::string agent_source(const char* attr) {
  return fmt::format("hsa_agent_get_info({})", attr);
}
std::string pool_source(const char* attr) {
  return fmt::format("hsa_amd_memory_pool_get_info({})", attr);
}

/// put_field for each of `fields` of record `ev`, as the key of `index` (the agent's, and the
/// pool's), the source named by `source(attribute)`.
template <class Key, std::size_t N, class... Index>
void put_fields(FactSet& facts, const json& ev, const std::array<FieldFact<Key>, N>& fields,
                std::string (*source)(const char*), Index... index) {
  for (const FieldFact<Key>& f : fields)
    put_field(facts, ev, f.field, f.key(index...), source(f.attribute), f.convert);
}

void put_summary_status(FactSet& facts, Status st, const std::string& source,
                        const std::string& reason) {
  for (const auto& k : summary_keys())
    if (facts.find(k) == nullptr) facts.put_status(k, st, source, reason);
}

void put_failure(FactSet& facts, const std::string& reason) {
  facts.put_ok(std::string(fact_keys::hsa::status), std::string("error"), "hsa probe");
  facts.put_ok(std::string(fact_keys::hsa::error), reason, "hsa probe");
}

void convert(const ProbeContext& ctx, const child::Result& run, const Events& ev, FactSet& facts) {
  const double timeout = ctx.options.runtime_timeout_s;
  const bool ended_badly = !run.ok();
  const std::string ending = child::describe_end(run, timeout);
  // A child that hung or crashed leaves the doctor unable to judge the runtime: the facts below
  // say what happened, and the probe's status says it did not finish (halo-doctor slurm leaves
  // the node alone then, docs/slurm.md).
  if (ended_badly)
    mark_probe_incomplete(facts, "hsa", fmt::format("the ROCr child process {}", ending));

  // 1. The library.
  std::vector<std::string> load_errors;
  if (ev.load) load_errors = (*ev.load).value("errors", std::vector<std::string>{});
  if (ev.load_failed) load_errors = (*ev.load_failed).value("errors", std::vector<std::string>{});
  facts.put_ok(std::string(fact_keys::hsa::load_errors), load_errors, "dlopen");
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
  facts.put_ok(std::string(fact_keys::hsa::library_path), path, "dlopen + dladdr");
  if (auto v = rocm_version_of(path))
    facts.put_ok(std::string(fact_keys::hsa::rocm_version), v->version, v->source);
  else
    facts.put_status(std::string(fact_keys::hsa::rocm_version), Status::missing, path,
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
  facts.put_ok(std::string(fact_keys::hsa::init_status), init_str, "hsa_init + hsa_status_string");
  facts.put_ok(std::string(fact_keys::hsa::init_code), static_cast<std::int64_t>(code), "hsa_init");
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
      facts.put_ok(std::string(fact_keys::hsa::runtime_version),
                   fmt::format("{}.{}", s["version_major"].get<unsigned>(),
                               s["version_minor"].get<unsigned>()),
                   vsrc);
    else
      facts.put_status(std::string(fact_keys::hsa::runtime_version), Status::missing, vsrc,
                       "not reported by this ROCr: " +
                           dump_json(s.value("errors", json::object())));
  }

  // 3. Agents and pools, as far as the child got.
  std::int64_t gpu = 0;
  for (const json& a : ev.agents) {
    const std::size_t i = a.value("index", std::size_t{0});
    put_fields(facts, a, kAgentFields, agent_source, i);
    const bool is_gpu = a.value("device_type", 99u) == kDeviceGpu;
    if (is_gpu) {
      put_field(facts, a, "wavefront_size", fact_keys::hsa::agent_wavefront_size(i),
                agent_source("HSA_AGENT_INFO_WAVEFRONT_SIZE"), as_int_value);
    } else {
      facts.put_status(fact_keys::hsa::agent_wavefront_size(i), Status::missing,
                       agent_source("HSA_AGENT_INFO_WAVEFRONT_SIZE"), "not a GPU agent");
    }
    static const RE2 gfx_re("gfx[0-9a-f]+");
    const std::string name = a.value("name", "");
    if (is_gpu && RE2::FullMatch(name, gfx_re))
      facts.put_ok(fact_keys::hsa::agent_gfx_target(i), name, agent_source("HSA_AGENT_INFO_NAME"));
    else
      facts.put_status(
          fact_keys::hsa::agent_gfx_target(i), Status::missing, agent_source("HSA_AGENT_INFO_NAME"),
          is_gpu ? "the GPU agent's name is not a gfx target: " + name : "not a GPU agent");

    std::optional<std::int64_t> coarse;
    const auto pit = ev.pools.find(i);
    const std::vector<json> none;
    const std::vector<json>& pools = pit == ev.pools.end() ? none : pit->second;
    if (auto pf = ev.pools_failed.find(i); pf != ev.pools_failed.end())
      facts.put_status(fact_keys::hsa::agent_pool_count(i), Status::error,
                       "hsa_amd_agent_iterate_memory_pools", pf->second);
    else
      facts.put_ok(fact_keys::hsa::agent_pool_count(i), static_cast<std::int64_t>(pools.size()),
                   "hsa_amd_agent_iterate_memory_pools");
    for (const json& p : pools) {
      const std::size_t pi = p.value("index", std::size_t{0});
      put_fields(facts, p, kPoolFields, pool_source, i, pi);
      const std::string fsrc = pool_source("HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS");
      if (p.contains("global_flags")) {
        const auto flags = p["global_flags"].get<std::uint32_t>();
        facts.put_ok(fact_keys::hsa::agent_pool_global_flags(i, pi),
                     static_cast<std::int64_t>(flags), fsrc);
        facts.put_ok(fact_keys::hsa::agent_pool_kernarg(i, pi),
                     (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) != 0, fsrc);
        facts.put_ok(fact_keys::hsa::agent_pool_fine_grained(i, pi),
                     (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) != 0, fsrc);
        facts.put_ok(fact_keys::hsa::agent_pool_coarse_grained(i, pi),
                     (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) != 0, fsrc);
        facts.put_ok(fact_keys::hsa::agent_pool_extended_fine_grained(i, pi),
                     (flags & kGlobalFlagExtendedFineGrained) != 0, fsrc);
        if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) != 0 && !coarse &&
            p.contains("size"))
          coarse = as_int64(p["size"]);
      } else {
        for (const PoolKey key : kFlagKeys)
          facts.put_status(key(i, pi), Status::missing, fsrc,
                           p.value("segment", 0u) == kSegmentGlobal
                               ? "not reported by this ROCr"
                               : "only GLOBAL pools have flags");
      }
    }

    if (is_gpu) {
      const std::int64_t g = gpu++;
      const std::string src = fmt::format("derived: {}", fact_keys::hsa::prefix::agent(i));
      facts.put_ok(fact_keys::hsa::gpu_agent(g), static_cast<std::int64_t>(i), src);
      if (const Fact* f = facts.find(fact_keys::hsa::agent_gfx_target(i))) {
        Fact copy = *f;
        copy.key = fact_keys::hsa::gpu_gfx_target(g);
        facts.put(copy);
      }
      if (const Fact* f = facts.find(fact_keys::hsa::agent_apu(i))) {
        Fact copy = *f;
        copy.key = fact_keys::hsa::gpu_apu(g);
        facts.put(copy);
      }
      const std::string pools_src =
          fmt::format("derived: {}", fact_keys::hsa::prefix::agent_pool(i, "*"));
      if (coarse)
        facts.put_ok(fact_keys::hsa::gpu_coarse_pool_bytes(g), *coarse,
                     pools_src + ": first GLOBAL coarse-grained pool");
      else
        facts.put_status(fact_keys::hsa::gpu_coarse_pool_bytes(g), Status::missing, pools_src,
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
  facts.put_ok(std::string(fact_keys::hsa::agent_count),
               static_cast<std::int64_t>(ev.agents.size()), "hsa_iterate_agents");
  facts.put_ok(std::string(fact_keys::hsa::gpu_count), gpu,
               "hsa_iterate_agents: agents with HSA_DEVICE_TYPE_GPU");
  put_summary_status(facts, Status::missing, "hsa_iterate_agents", "ROCr lists no GPU agent");
  if (ended_badly) {
    // Everything was read; only hsa_shut_down or the exit misbehaved. Keep the facts, say so.
    put_failure(facts, fmt::format("ROCr ({}) {} {}", path, ending, step_after(ev)));
    return;
  }
  facts.put_ok(std::string(fact_keys::hsa::status), std::string("ok"), "hsa probe");
  facts.put_status(std::string(fact_keys::hsa::error), Status::missing, "hsa probe", "no error");
}

/// parse_events() and convert() on untrusted lines: a report without the protocol's shape (a
/// field of the wrong type throws nlohmann::json's type_error) is a failure fact, never an
/// exception that would end the run (found by tests/fuzz/fuzz_hsa_child.cpp).
void decode(const ProbeContext& ctx, const child::Result& run,
            const std::vector<std::string>& lines, FactSet& facts) {
  FactSet out;
  try {
    convert(ctx, run, parse_events(lines), out);
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
    for (const std::string_view k :
         {fact_keys::hsa::status, fact_keys::hsa::error, fact_keys::hsa::load_errors})
      facts.put_status(std::string(k), Status::missing, "hsa probe", skip);
    put_summary_status(facts, Status::missing, "hsa probe", skip);
    return;
  }
  const std::vector<std::string> candidates =
      library_candidates(ctx.options.hsa_library, std::getenv("ROCM_PATH"), ctx.root.is_live());
  const child::Result run =
      run_in_child([&](int fd) { child_body(fd, candidates); }, ctx.options.runtime_timeout_s);
  decode(ctx, run, child::complete_lines(run.out), facts);
}

} // namespace

void decode_child_lines(const ProbeContext& ctx, const std::vector<std::string>& lines,
                        FactSet& facts) {
  child::Result run; // a child that ended normally, having written `lines`
  run.end = child::End::exited;
  run.exit_code = 0;
  decode(ctx, run, lines, facts);
}

} // namespace hsa

std::unique_ptr<Probe> make_hsa_probe() {
  return std::make_unique<BasicProbe>("hsa", hsa::collect);
}

} // namespace halo::probes
