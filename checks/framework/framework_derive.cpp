// SPDX-License-Identifier: MIT
// The framework family's derivations (no files): PyTorch's allocator settings and the debugging
// switches left in the environment, HSA_OVERRIDE_GFX_VERSION against each GPU, the torch wheel's
// ROCm release, kernel targets and companions, and what `--framework-deep` saw against what
// device 0 could give.
#include "derivation.hpp"
#include "env_key.hpp"
#include "framework/alloc_conf.hpp"
#include "gpus/gfx.hpp"
#include "gpus/gpus.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace halo::probes {
namespace {

/// PyTorch's allocator settings: each of PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF and
/// PYTORCH_HIP_ALLOC_CONF that is set, checked as c10 parses it (checks/framework/alloc_conf.hpp),
/// and whether the HIP name is shadowed: c10/cuda/CUDAAllocatorConfig.h reads
/// PYTORCH_CUDA_ALLOC_CONF and only when it is unset PYTORCH_HIP_ALLOC_CONF.
void derive_alloc_conf(FactSet& facts) {
  const Fact* names = facts.find(fact_keys::env::names);
  if (names == nullptr || names->status != Status::ok) {
    for (const std::string_view k :
         {fact_keys::framework::alloc_conf_vars, fact_keys::framework::alloc_conf_problems,
          fact_keys::framework::alloc_conf_shadowed})
      facts.put_status(std::string(k), Status::missing, "derived",
                       "the environment could not be read");
    return;
  }
  std::vector<std::string> vars;
  std::vector<std::string> problems;
  for (const char* var :
       {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"}) {
    const auto v = facts.get<std::string>(env_key(var));
    if (!v) continue;
    vars.emplace_back(var);
    for (const auto& p : alloc_conf_problems(*v))
      problems.push_back(fmt::format("{}={}: {}", var, v->substr(0, 200), p));
  }
  const std::string src = "derived: c10/core/AllocatorConfig.cpp parseArgs";
  facts.put_ok(std::string(fact_keys::framework::alloc_conf_vars), vars, src);
  facts.put_ok(std::string(fact_keys::framework::alloc_conf_problems), problems, src);
  const auto cuda = facts.get<std::string>(env_key("PYTORCH_CUDA_ALLOC_CONF"));
  const auto hip = facts.get<std::string>(env_key("PYTORCH_HIP_ALLOC_CONF"));
  facts.put_ok(std::string(fact_keys::framework::alloc_conf_shadowed), cuda && hip && *cuda != *hip,
               "derived: c10/cuda/CUDAAllocatorConfig.h (the CUDA name first, HIP only if unset)");
}

/// env.debug_settings: debugging switches of HIP, ROCr and PyTorch left in the environment
/// training will see, each as "NAME=VALUE (what it costs)". AMD_SERIALIZE_KERNEL and
/// AMD_SERIALIZE_COPY (1, 2 or 3) make every kernel or copy wait (HIP's environment variables
/// reference); PYTORCH_NO_CUDA_MEMORY_CACHING / PYTORCH_NO_HIP_MEMORY_CACHING=1 turn PyTorch's
/// caching allocator off (docs/source/notes/cuda.rst and hip.rst); HSA_ENABLE_SDMA=0 moves copies
/// from the DMA engines to shader blits (a hang-diagnosis toggle: reference/amd-gpu-facts.md 2.5);
/// AMD_LOG_LEVEL of 3 or more logs every API call.
void derive_debug_settings(FactSet& facts) {
  struct Switch {
    const char* name; ///< the variable (its fact: env_key(name))
    bool (*on)(std::string_view);
    const char* cost;
  };
  static const std::array<Switch, 6> kSwitches{{
      {"AMD_SERIALIZE_KERNEL", [](std::string_view v) { return v == "1" || v == "2" || v == "3"; },
       "every kernel launch waits for the GPU"},
      {"AMD_SERIALIZE_COPY", [](std::string_view v) { return v == "1" || v == "2" || v == "3"; },
       "every copy waits for the GPU"},
      {"PYTORCH_NO_CUDA_MEMORY_CACHING", [](std::string_view v) { return v == "1"; },
       "PyTorch's caching allocator is off: every tensor is a hipMalloc and hipFree"},
      {"PYTORCH_NO_HIP_MEMORY_CACHING", [](std::string_view v) { return v == "1"; },
       "PyTorch's caching allocator is off: every tensor is a hipMalloc and hipFree"},
      {"HSA_ENABLE_SDMA", [](std::string_view v) { return v == "0"; },
       "copies run as shader blits instead of on the DMA engines"},
      {"AMD_LOG_LEVEL",
       [](std::string_view v) { return v.size() == 1 && v[0] >= '3' && v[0] <= '9'; },
       "HIP logs every API call"},
  }};
  // Without the environment (env.names not ok: /proc/self/environ unreadable), nothing is known.
  if (const Fact* names = facts.find(fact_keys::env::names); names == nullptr || !names->ok()) {
    facts.put_status(std::string(fact_keys::env::debug_settings), Status::missing, kDerived,
                     names == nullptr || names->reason.empty()
                         ? std::string("the environment was not read")
                         : "the environment was not read: " + names->reason);
    return;
  }
  std::vector<std::string> on;
  for (const auto& sw : kSwitches)
    if (auto v = facts.get<std::string>(env_key(sw.name)); v && sw.on(*v))
      on.push_back(fmt::format("{}={} ({})", sw.name, *v, sw.cost));
  facts.put_ok(std::string(fact_keys::env::debug_settings), on,
               "derived: AMD_SERIALIZE_KERNEL, AMD_SERIALIZE_COPY, PYTORCH_NO_{CUDA,HIP}_MEMORY_"
               "CACHING, HSA_ENABLE_SDMA, AMD_LOG_LEVEL of the environment");
}

/// env.hsa_override_*: the gfx version ROCr reports for each GPU node under
/// HSA_OVERRIDE_GFX_VERSION[_<node>], against each GPU's own target.
void derive_hsa_override(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  const VisibleGpus visible = visible_gpus(facts);
  const auto& rocr = visible.rocr;
  const std::string& src = visible.source;
  // The gfx version ROCr reports for each GPU node: libhsakmt's topology_sysfs_get_node_props()
  // (libhsakmt/src/topology.c) reads HSA_OVERRIDE_GFX_VERSION_<node> for the node first, then
  // HSA_OVERRIDE_GFX_VERSION. <node> is libhsakmt's node number: the CPU nodes and the GPU nodes
  // it supports, in KFD sysfs order, which is the KFD node number (gpu.N.kfd_node) when it
  // supports every node. A value that is not MAJOR.MINOR.STEPPING (sscanf "%u.%u.%u%c" != 3, or
  // major > 63, minor or stepping > 255) makes the node's read fail (HSAKMT_STATUS_ERROR), and
  // with it ROCr's topology.
  std::vector<std::string> mismatch;
  std::vector<std::string> per_gpu;
  std::vector<std::string> invalid;
  const auto global = facts.get<std::string>(env_key("HSA_OVERRIDE_GFX_VERSION"));
  bool any = global.has_value();
  for (std::int64_t i = 0; i < n; ++i) {
    const auto node = facts.get<std::string>(fact_keys::gpu::kfd_node(i));
    std::optional<std::string> value;
    std::string var = "HSA_OVERRIDE_GFX_VERSION";
    if (node) {
      value = facts.get<std::string>(env_key(var + "_" + *node));
      if (value) var += "_" + *node;
    }
    if (!value) value = global;
    if (!value) continue;
    any = true;
    const auto target = gfx_from_override(*value);
    const std::string setting = fmt::format("{}={}", var, *value);
    if (!target) {
      if (std::find(invalid.begin(), invalid.end(), setting) == invalid.end())
        invalid.push_back(setting);
      continue;
    }
    const auto g = facts.get<std::string>(fact_keys::gpu::gfx_target(i));
    per_gpu.push_back(fmt::format("{} ({}): {} ({})", fact_keys::gpu::prefix::key(i),
                                  g.value_or("unknown target"), setting, *target));
    const bool seen = std::find(rocr.begin(), rocr.end(), i) != rocr.end();
    if (seen && g && *g != *target)
      mismatch.push_back(fmt::format("{} ({}) runs {} code ({})", fact_keys::gpu::prefix::key(i),
                                     *g, *target, setting));
  }
  // Per-node variables of nodes that are no GPU here are still read by nobody: not listed.
  if (auto names = facts.get<std::vector<std::string>>(fact_keys::env::names))
    for (const auto& name : *names)
      if (name.starts_with("HSA_OVERRIDE_GFX_VERSION_")) any = true;
  facts.put_ok(std::string(fact_keys::env::hsa_override_set), any, "derived: /proc/self/environ");
  if (any) {
    facts.put_ok(std::string(fact_keys::env::hsa_override_mismatch), mismatch, src);
    facts.put_ok(std::string(fact_keys::env::hsa_override_per_gpu), per_gpu, src);
    facts.put_ok(std::string(fact_keys::env::hsa_override_invalid), invalid, src);
  } else {
    for (const std::string_view k :
         {fact_keys::env::hsa_override_mismatch, fact_keys::env::hsa_override_per_gpu,
          fact_keys::env::hsa_override_invalid})
      facts.put_status(
          std::string(k), Status::missing, kDerived,
          "neither HSA_OVERRIDE_GFX_VERSION nor HSA_OVERRIDE_GFX_VERSION_<node> is set");
  }
}

/// A Python package version "2.5.1+rocm6.2" split into its release ("2.5.1") and its local
/// version label ("rocm6.2"; PEP 440: after '+'; "" without one).
std::pair<std::string, std::string> split_local(const std::string& v) {
  const auto plus = v.find('+');
  return {v.substr(0, plus), plus == std::string::npos ? std::string() : v.substr(plus + 1)};
}

/// The first two numbers of a release ("2.5.1" -> {2, 5}); nullopt for anything else.
std::optional<std::pair<int, int>> major_minor(const std::string& release) {
  int major = 0;
  int minor = 0;
  const char* b = release.data();
  const char* e = b + release.size();
  auto r = std::from_chars(b, e, major);
  if (r.ec != std::errc() || r.ptr == e || *r.ptr != '.') return std::nullopt;
  r = std::from_chars(r.ptr + 1, e, minor);
  if (r.ec != std::errc() || major < 0 || major > 99 || minor < 0 || minor > 999)
    return std::nullopt;
  return std::make_pair(major, minor);
}

/// framework.companion_problems: torchvision and torchaudio that do not belong to the torch
/// beside them. Each release is built against one torch release (torchvision's README table:
/// torch 2.N pairs with torchvision 0.(N+15), torch 1.N with 0.(N+1); torchaudio 2.N with torch
/// 2.N, torch 1.N with torchaudio 0.N) and one build of it (the same local version label:
/// "+rocm6.2" with "+rocm6.2"; a PyPI wheel without a label is the CUDA build on Linux x86-64).
/// Their compiled operators are loaded into torch's process: a mismatch fails at import or at the
/// first call ("operator torchvision::nms does not exist", undefined symbols).
void derive_framework_companions(FactSet& facts) {
  const auto torch = facts.get<std::string>(fact_keys::framework::torch_version);
  if (!torch) {
    facts.put_status(std::string(fact_keys::framework::companion_problems), Status::missing,
                     kDerived,
                     fmt::format("no torch found ({})", fact_keys::framework::torch_version));
    return;
  }
  const auto [torch_release, torch_local] = split_local(*torch);
  const auto tmm = major_minor(torch_release);
  std::vector<std::string> problems;
  struct Companion {
    const char* pkg;
    std::string_view version; ///< framework.<pkg>.version
    std::string_view build;   ///< framework.<pkg>.build
  };
  for (const auto& [pkg, version_key, build_key] :
       {Companion{"torchvision", fact_keys::framework::torchvision_version,
                  fact_keys::framework::torchvision_build},
        Companion{"torchaudio", fact_keys::framework::torchaudio_version,
                  fact_keys::framework::torchaudio_build}}) {
    const auto v = facts.get<std::string>(version_key);
    if (!v) continue;
    const auto [release, local] = split_local(*v);
    const auto mm = major_minor(release);
    if (tmm && mm) {
      const bool vision = std::string_view(pkg) == "torchvision";
      std::pair<int, int> want{0, 0};
      if (tmm->first == 1)
        want = vision ? std::make_pair(0, tmm->second + 1) : std::make_pair(0, tmm->second);
      else
        want = vision ? std::make_pair(0, tmm->second + 15) : *tmm;
      if (*mm != want)
        problems.push_back(fmt::format("{} {} pairs with another torch than {} (it wants {} {}.{})",
                                       pkg, *v, *torch, pkg, want.first, want.second));
    }
    // The build its compiled operators are linked against (framework.<pkg>.build, from
    // DT_NEEDED) decides over the label: an unlabelled source build can be ROCm, and a
    // labelled wheel that needs libc10_cuda.so is CUDA.
    const auto build = facts.get<std::string>(build_key);
    const auto torch_build = facts.get<std::string>(fact_keys::framework::torch_build);
    if (build && torch_build) {
      if (*build != *torch_build)
        problems.push_back(fmt::format(
            "{} {} is a {} build ({}) but torch {} is a {} build: its operators cannot run on "
            "this torch's GPU",
            pkg, *v, *build, facts.find(build_key)->source, *torch, *torch_build));
      continue;
    }
    if (local != torch_local)
      problems.push_back(fmt::format(
          "{} {} {} but torch {} {}", pkg, *v,
          local.empty() ? std::string("has no build label (a PyPI wheel without one is the CUDA "
                                      "build on Linux)")
                        : "is the " + local + " build",
          *torch,
          torch_local.empty() ? std::string("has none") : "is the " + torch_local + " build"));
  }
  facts.put_ok(std::string(fact_keys::framework::companion_problems), problems,
               fmt::format("derived: {}, {}, {}", fact_keys::framework::torch_version,
                           fact_keys::framework::torchvision_version,
                           fact_keys::framework::torchaudio_version));
}

/// framework.torch.kernel_targets: the gfx processors a ROCm PyTorch has GPU code for, both its own
/// (libtorch_hip.so's offload bundles: framework.torch.offload_targets) and its BLAS kernels
/// (rocBLAS/hipBLASLt file names: framework.torch.gfx_targets); a GPU needs both, so it is the
/// intersection of those that could be read, generic targets expanded to their processors.
void derive_framework_kernel_targets(FactSet& facts) {
  std::optional<std::set<std::string>> targets;
  std::vector<std::string> used;
  std::vector<std::string> reasons;
  for (const std::string_view key :
       {fact_keys::framework::torch_offload_targets, fact_keys::framework::torch_gfx_targets}) {
    const Fact* f = facts.find(key);
    const auto list = facts.get<std::vector<std::string>>(key);
    if (f == nullptr || f->status != Status::ok || !list) {
      reasons.push_back(fmt::format("{}: {}", key,
                                    f == nullptr        ? std::string("not probed")
                                    : f->reason.empty() ? std::string(to_string(f->status))
                                                        : f->reason));
      continue;
    }
    const std::vector<std::string> with_generic = with_generic_processors(*list);
    std::set<std::string> expanded(with_generic.begin(), with_generic.end());
    if (targets) {
      std::set<std::string> both;
      std::set_intersection(targets->begin(), targets->end(), expanded.begin(), expanded.end(),
                            std::inserter(both, both.end()));
      targets = std::move(both);
    } else {
      targets = std::move(expanded);
    }
    used.emplace_back(key);
  }
  if (!targets) {
    facts.put_status(std::string(fact_keys::framework::torch_kernel_targets), Status::missing,
                     kDerived, fmt::format("{}", fmt::join(reasons, "; ")));
    return;
  }
  facts.put_ok(std::string(fact_keys::framework::torch_kernel_targets),
               std::vector<std::string>(targets->begin(), targets->end()),
               fmt::format("derived: {}{}", fmt::join(used, " and "),
                           used.size() == 2 ? " (both needed: the intersection)" : ""));
}

/// framework.torch.offload_kernel_targets: the gfx processors PyTorch's own kernels
/// (libtorch_hip.so's offload bundles) run on, generic targets expanded to their processors (a
/// gfx11-generic bundle runs on gfx1151: LLVM AMDGPUUsage). torch-missing-gfx-target tells by it
/// whether a GPU's failure is torch's own code ("invalid device function") or a ROCm math library's
/// (rocBLAS, hipBLASLt: their own messages). Not ok: offload_targets' status and reason.
void derive_framework_offload_kernel_targets(FactSet& facts) {
  const Fact* f = facts.find(fact_keys::framework::torch_offload_targets);
  if (f == nullptr) return;
  const auto list =
      facts.get<std::vector<std::string>>(fact_keys::framework::torch_offload_targets);
  if (f->status != Status::ok || !list) {
    facts.put_status(
        std::string(fact_keys::framework::torch_offload_kernel_targets),
        f->status == Status::ok ? Status::error : f->status, kDerived,
        f->status == Status::ok
            ? fmt::format("{} is not a list", fact_keys::framework::torch_offload_targets)
            : f->reason);
    return;
  }
  facts.put_ok(std::string(fact_keys::framework::torch_offload_kernel_targets),
               with_generic_processors(*list),
               fmt::format("derived: {}, generic targets expanded (LLVM AMDGPUUsage)",
                           fact_keys::framework::torch_offload_targets));
}

/// framework.flash_attn.kernel_targets and framework.bitsandbytes.kernel_targets: the gfx
/// processors a companion library has GPU code for, its listed targets with each generic target's
/// processors added (a flash_attn or bitsandbytes built only for gfx11-generic runs on gfx1151).
/// A listed fact that is not ok passes its status and reason on.
void derive_companion_kernel_targets(FactSet& facts) {
  for (const auto& [from, to] : {std::pair{fact_keys::framework::flash_attn_offload_targets,
                                           fact_keys::framework::flash_attn_kernel_targets},
                                 std::pair{fact_keys::framework::bitsandbytes_library_targets,
                                           fact_keys::framework::bitsandbytes_kernel_targets}}) {
    const Fact* f = facts.find(from);
    if (f == nullptr) continue;
    const auto list = facts.get<std::vector<std::string>>(from);
    if (f->status != Status::ok || !list) {
      facts.put_status(std::string(to), f->status == Status::ok ? Status::error : f->status,
                       kDerived,
                       f->status == Status::ok ? fmt::format("{} is not a list", from) : f->reason);
      continue;
    }
    facts.put_ok(std::string(to), with_generic_processors(*list),
                 fmt::format("derived: {}, generic targets expanded (LLVM AMDGPUUsage)", from));
  }
}

/// framework.torch.rocm_version: the ROCm release (MAJOR.MINOR) a ROCm wheel was built on and
/// bundles (pytorch.org wheels copy libamdhip64 and libhsa-runtime64 into torch/lib; TheRock's
/// keep them in _rocm_sdk_core): torch.version.hip is HIP's version, whose major and minor are the
/// ROCm release's ("6.2.41133-dd7f95766" is ROCm 6.2.0, "7.1.25424" ROCm 7.1). Its third field
/// is a build number, not the ROCm patch release, so only MAJOR.MINOR is derived.
void derive_framework_rocm_version(FactSet& facts) {
  const auto hip = facts.get<std::string>(fact_keys::framework::torch_hip_version);
  if (!hip) {
    const Fact* f = facts.find(fact_keys::framework::torch_hip_version);
    facts.put_status(std::string(fact_keys::framework::torch_rocm_version), Status::missing,
                     kDerived,
                     f == nullptr || f->reason.empty() ? std::string("no ROCm build of torch found")
                                                       : f->reason);
    return;
  }
  static const RE2 kMajorMinor(R"(([0-9]{1,3})\.([0-9]{1,3})(?:[.+-].*)?)");
  std::string major;
  std::string minor;
  if (!RE2::FullMatch(*hip, kMajorMinor, &major, &minor)) {
    facts.put_status(std::string(fact_keys::framework::torch_rocm_version), Status::error, kDerived,
                     fmt::format("torch.version.hip '{}' is not MAJOR.MINOR[.BUILD]", *hip));
    return;
  }
  facts.put_ok(std::string(fact_keys::framework::torch_rocm_version),
               fmt::format("{}.{}", major, minor),
               fmt::format("derived: {} (HIP's major.minor is the ROCm release's)",
                           fact_keys::framework::torch_hip_version));
}

/// framework.deep.device0_expected_bytes: what HIP device 0 could give one process (an APU: its
/// carve-out or the TTM limit `halo-doctor fix` sets, whichever is larger; a discrete GPU: its
/// VRAM); framework.deep.device0_seen_ratio: PyTorch's total_memory of device 0 over that.
void derive_framework_deep(FactSet& facts) {
  const auto total = facts.get_int(fact_keys::framework::deep_device0_total_bytes);
  const auto dev0 = facts.get_int(fact_keys::gpu::device0);
  if (!total || !dev0) {
    // Not asked (no --framework-deep): not probed either, with the deep probe's reason.
    const Fact* deep = facts.find(fact_keys::framework::deep_status);
    const std::string why = deep != nullptr && deep->not_probed()
                                ? deep->reason
                                : "PyTorch's device 0 or HIP device 0 is unknown";
    for (const std::string_view k : {fact_keys::framework::deep_device0_expected_bytes,
                                     fact_keys::framework::deep_device0_seen_ratio})
      facts.put_status(std::string(k), Status::missing, kDerived, why);
    return;
  }
  const auto vram = facts.get_int(fact_keys::gpu::vram_total_bytes(*dev0));
  const auto rec = facts.get_int(fact_keys::ttm::recommended_bytes);
  std::optional<std::int64_t> expected;
  if (facts.get<bool>(fact_keys::gpu::apu(*dev0)) == true && vram && rec)
    expected = std::max(*vram, *rec);
  else if (facts.get<bool>(fact_keys::gpu::apu(*dev0)) == false && vram)
    expected = *vram;
  if (!expected || *expected <= 0) {
    for (const std::string_view k : {fact_keys::framework::deep_device0_expected_bytes,
                                     fact_keys::framework::deep_device0_seen_ratio})
      facts.put_status(std::string(k), Status::missing, kDerived,
                       "HIP device 0's memory is unknown");
    return;
  }
  facts.put_ok(std::string(fact_keys::framework::deep_device0_expected_bytes), *expected,
               fmt::format("derived: an APU's max(carve-out, {}), a dGPU's VRAM",
                           fact_keys::ttm::recommended_bytes));
  facts.put_ok(std::string(fact_keys::framework::deep_device0_seen_ratio),
               static_cast<double>(*total) / static_cast<double>(*expected),
               fmt::format("derived: {} / {}", fact_keys::framework::deep_device0_total_bytes,
                           fact_keys::framework::deep_device0_expected_bytes));
}

} // namespace

std::unique_ptr<Probe> make_framework_env_derivation() {
  return std::make_unique<BasicDerivation>("framework_env",
                                           [](const DeriveContext& /*ctx*/, FactSet& facts) {
                                             derive_alloc_conf(facts);
                                             derive_debug_settings(facts);
                                             derive_hsa_override(facts);
                                           });
}

std::unique_ptr<Probe> make_framework_torch_derivation() {
  return std::make_unique<BasicDerivation>("framework_torch",
                                           [](const DeriveContext& /*ctx*/, FactSet& facts) {
                                             derive_framework_companions(facts);
                                             derive_framework_kernel_targets(facts);
                                             derive_framework_offload_kernel_targets(facts);
                                             derive_companion_kernel_targets(facts);
                                             derive_framework_rocm_version(facts);
                                           });
}

std::unique_ptr<Probe> make_framework_deep_capacity_derivation() {
  return std::make_unique<BasicDerivation>(
      "framework_deep_capacity",
      [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_framework_deep(facts); });
}

} // namespace halo::probes
