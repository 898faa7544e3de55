// SPDX-License-Identifier: MIT
// The built-in probes' fact declarations and source texts by probe id: a binary search over the
// tables halo-facts-compile generates from checks/*/facts.json
// (build/generated/declared_facts.cpp).
#include "probes.hpp"

#include <halo/fact.hpp>
#include <halo/fact_keys.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace halo::probes {

// The keys code outside the probes names (include/halo/fact.hpp halo::keys: src/ cannot include
// the generated header, which a build step linking halo_core writes) are the declared ones, checked
// here at compile time against <halo/fact_keys.hpp> (issue 42): a key renamed or dropped in a
// facts.json without its constant fails the build, not a rule at run time.
namespace {
namespace fk = fact_keys;

/// True if some declared pattern starts with `prefix`.
constexpr bool declared_prefix(std::string_view prefix) {
  return std::ranges::any_of(fk::kPatterns,
                             [&](std::string_view p) { return p.starts_with(prefix); });
}

/// True if the pattern `head` + `field` (head "gpu.*." or "hsa.gpu.*.") is declared.
constexpr bool declared_field(std::string_view head, std::string_view field) {
  return std::ranges::any_of(fk::kPatterns, [&](std::string_view p) {
    return p.size() == head.size() + field.size() && p.starts_with(head) && p.ends_with(field);
  });
}

static_assert(fk::declared(keys::host_name));
static_assert(fk::declared(keys::kernel_release));
static_assert(fk::declared(keys::gpu_count));
static_assert(fk::declared(keys::plan_gpu));
static_assert(fk::declared(keys::plan_capacity_bytes));
static_assert(fk::declared(keys::plan_capacity_with_ttm_fix_bytes));
static_assert(fk::declared(keys::host_virtualization));
static_assert(fk::declared(keys::os_pretty_name));
static_assert(fk::declared(keys::host_runs_in));
static_assert(fk::declared(keys::wsl_wsl2));
static_assert(fk::declared(keys::wsl_dxg_exists));
static_assert(fk::declared(keys::wsl_no_gpu_message));
static_assert(fk::declared(keys::framework_python_env));
static_assert(fk::declared(keys::framework_torch_version));
static_assert(fk::declared(keys::framework_torch_build));
static_assert(fk::declared(keys::framework_torch_hip_version));
static_assert(fk::declared(keys::framework_torch_rocm_version));
static_assert(fk::declared(keys::framework_torch_kernel_targets));
static_assert(fk::declared(keys::hsa_rocm_version));
static_assert(fk::declared(keys::mem_total_bytes));
static_assert(fk::declared(keys::ttm_module));
static_assert(fk::declared(keys::ttm_pages_limit_bytes));
static_assert(fk::declared(keys::ttm_recommended_bytes));
static_assert(fk::declared(keys::ttm_max_limit_bytes));
static_assert(fk::declared(keys::os_id));
static_assert(fk::declared(keys::user_uid));
static_assert(fk::declared(keys::user_name));
static_assert(fk::declared(keys::env_sudo_user));
static_assert(fk::declared(keys::boot_stack));
static_assert(fk::declared(keys::boot_evidence));
static_assert(fk::declared(keys::boot_grub_d_files));
static_assert(fk::declared(keys::boot_nixos_kernel_param_lines));
static_assert(fk::declared(keys::boot_initramfs_tool));
static_assert(fk::declared(keys::runenv_host_root));
static_assert(fk::declared(keys::kernel_log_lines));
static_assert(fk::declared(keys::kernel_log_firmware_on_disk));
static_assert(declared_prefix(keys::hsa_prefix));
static_assert(declared_prefix(keys::libdrm_prefix));
static_assert(declared_prefix(keys::framework_prefix));
static_assert(declared_prefix(keys::amdgpu_module_prefix));
static_assert(declared_prefix(keys::wsl_prefix));
static_assert(declared_field("gpu.*.", keys::gpu_field::pci_slot));
static_assert(declared_field("gpu.*.", keys::gpu_field::gfx_target));
static_assert(declared_field("gpu.*.", keys::gpu_field::name));
static_assert(declared_field("gpu.*.", keys::gpu_field::gtt_total_bytes));
static_assert(declared_field("gpu.*.", keys::gpu_field::vram_total_bytes));
static_assert(declared_field("gpu.*.", keys::gpu_field::usable_bytes));
static_assert(declared_field("gpu.*.", keys::gpu_field::pcie_current_speed_gts));
static_assert(declared_field("gpu.*.", keys::gpu_field::pcie_max_speed_gts));
static_assert(declared_field("gpu.*.", keys::gpu_field::pcie_current_width));
static_assert(declared_field("gpu.*.", keys::gpu_field::pcie_max_width));
static_assert(declared_field("gpu.*.", keys::gpu_field::temp_junction_mc));
static_assert(declared_field("gpu.*.", keys::gpu_field::temp_mem_mc));
static_assert(declared_field("gpu.*.", keys::gpu_field::temp_edge_mc));
static_assert(declared_field("gpu.*.", keys::gpu_field::power_cap_uw));
static_assert(declared_field("gpu.*.", keys::gpu_field::power_cap_default_uw));
static_assert(declared_field("gpu.*.", keys::gpu_field::metrics_socket_power_w));
static_assert(declared_field("gpu.*.", keys::gpu_field::metrics_throttle_thermal));
static_assert(declared_field("gpu.*.", keys::gpu_field::metrics_throttle_power));
static_assert(declared_field("gpu.*.", keys::gpu_field::metrics_throttle_current));
static_assert(declared_field("gpu.*.", keys::gpu_field::xgmi_hive_size));
static_assert(declared_field("gpu.*.", keys::gpu_field::partition_nodes));
static_assert(declared_field("hsa.gpu.*.", keys::hsa_gpu_field::coarse_pool_bytes));
} // namespace

const DeclaredProbe& declared_probe(std::string_view probe_id) {
  const std::span<const DeclaredProbe> all = declared_probes();
  const auto it = std::ranges::lower_bound(all, probe_id, {}, &DeclaredProbe::id);
  if (it == all.end() || it->id != probe_id)
    throw std::logic_error(fmt::format(
        "probe '{}' has no fact declarations: add its entry to the checks/<folder>/facts.json of "
        "its family",
        probe_id));
  return *it;
}

std::span<const FactDecl> declared_facts(std::string_view probe_id) {
  return declared_probe(probe_id).facts;
}

const DeclaredProbe& declared_probe(std::string_view probe_id, bool derivation) {
  const DeclaredProbe& p = declared_probe(probe_id);
  if (p.derivation != derivation)
    throw std::logic_error(
        fmt::format("probe '{}': its entry in {} {} \"derivation\": true, but it is built as a {}",
                    probe_id, p.file, p.derivation ? "says" : "lacks",
                    derivation ? "derivation (BasicDerivation)" : "probe (BasicProbe)"));
  return p;
}

std::vector<std::string> declared_env_reads(std::string_view probe_id) {
  return to_strings(declared_probe(probe_id).env);
}

} // namespace halo::probes
