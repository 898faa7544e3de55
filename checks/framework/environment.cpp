// SPDX-License-Identifier: MIT
// Probe: the environment training will see, read from /proc/self/environ (NUL-separated): the
// ROCm runtime (HSA_*, ROCR_*), HIP (HIP_*, GPU_*), rocBLAS, PyTorch allocator and BLAS
// variables. Keys are lower-cased: HSA_OVERRIDE_GFX_VERSION -> env.hsa_override_gfx_version.
#include "env_key.hpp"
#include "gpus/gfx.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace halo::probes {
namespace {

/// The variables this probe reads (Probe::env_reads): exact names or `PREFIX*`, the `env` of its
/// checks/framework/facts.json entry. Also the capture bundle's allow-list for the environment:
/// nothing else is kept there. Besides the ROCm runtime, HIP, rocBLAS, PyTorch allocator and
/// BLAS, RCCL and MIOpen variables, it names flash_attn's backend choice (FLASH_ATTENTION_*,
/// flash_attn/flash_attn_interface.py) and PyTorch's AOTriton tier switch
/// (TORCH_ROCM_AOTRITON_*, sdp_utils.cpp); SUDO_UID (under sudo, device access is judged for the
/// invoking user: checks/host/device_access.cpp); CONTAINER_ID (distrobox, distrobox-enter); and
/// the debugging switches of the derived env.debug_settings (AMD_SERIALIZE_*, AMD_LOG_LEVEL,
/// PYTORCH_NO_*_MEMORY_CACHING).
const std::vector<std::string>& env_names() {
  static const std::vector<std::string> names = declared_env_reads("environment");
  return names;
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  const EnvironRead env = read_environ(ctx.root, env_names());
  if (!env.ok()) {
    facts.put_status(std::string(fact_keys::env::names), env.status, env.source, env.reason);
    return;
  }
  std::vector<std::string> names;
  for (const auto& [name, value] : env.vars) {
    names.push_back(name);
    facts.put_ok(env_key(name), value, env.source);
  }
  std::sort(names.begin(), names.end());
  facts.put_ok(std::string(fact_keys::env::names), names, env.source);
  if (auto v = facts.get<std::string>(env_key("HSA_OVERRIDE_GFX_VERSION"))) {
    if (auto g = gfx_from_override(*v))
      facts.put_ok(std::string(fact_keys::env::hsa_override_gfx_target), *g, env.source);
    else
      facts.put_status(std::string(fact_keys::env::hsa_override_gfx_target), Status::error,
                       env.source,
                       "HSA_OVERRIDE_GFX_VERSION is not MAJOR.MINOR.STEPPING: '" + *v + "'");
  }
}

} // namespace

std::unique_ptr<Probe> make_environment_probe() {
  auto probe = std::make_unique<BasicProbe>("environment", collect);
  // The source text names the variables read: its facts.json entry is a format string whose `{}`
  // is that list (computed here, so the text cannot drift from env_reads()).
  probe->set_source(
      fmt::format(fmt::runtime(declared_probe(probe->id()).source), fmt::join(env_names(), ", ")));
  return probe;
}

} // namespace halo::probes
