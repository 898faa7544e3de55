// SPDX-License-Identifier: MIT
// The explicit list of built-in probes and derivations. No static registration: adding one is a
// line here and a file in its family's folder of checks/ (docs/adding-a-probe.md). The order they
// run in is computed from the facts each declares it reads (Probe::inputs, ProbeRegistry::resolve);
// this list only breaks ties between probes that do not depend on each other.
#include "probes.hpp"

namespace halo {

ProbeRegistry builtin_probes() {
  ProbeRegistry r;
  r.add(probes::make_kernel_probe());
  r.add(probes::make_os_probe());
  r.add(probes::make_memory_probe());
  r.add(probes::make_amdgpu_module_probe());
  r.add(probes::make_ttm_probe());
  r.add(probes::make_modprobe_probe());
  r.add(probes::make_pci_probe());
  r.add(probes::make_drm_probe());
  r.add(probes::make_ras_probe());
  r.add(probes::make_xgmi_probe());
  r.add(probes::make_gpu_firmware_probe());
  r.add(probes::make_gpu_metrics_probe());
  r.add(probes::make_kfd_topology_probe());
  r.add(probes::make_environment_probe());
  r.add(probes::make_device_access_probe());
  r.add(probes::make_numa_probe());
  r.add(probes::make_host_tuning_probe());
  r.add(probes::make_runenv_probe());
  r.add(probes::make_wsl_probe());
  r.add(probes::make_kernel_log_probe());
  r.add(probes::make_secure_boot_probe());
  r.add(probes::make_module_file_probe());
  r.add(probes::make_initramfs_probe());
  r.add(probes::make_hsa_probe());
  r.add(probes::make_libdrm_probe());
  r.add(probes::make_boot_stack_probe());
  r.add(probes::make_firmware_package_probe());
  r.add(probes::make_framework_probe());
  r.add(probes::make_framework_deep_probe());
  r.add(probes::make_rocm_install_probe());
  r.add(probes::make_plan_probe());
  // The derivations, in the order the old single `derived` stage ran them (ties only: each runs
  // after the probes and derivations whose facts it reads).
  r.add(probes::make_gpu_list_derivation());
  r.add(probes::make_gpu_cards_derivation());
  r.add(probes::make_host_derivation());
  r.add(probes::make_framework_env_derivation());
  r.add(probes::make_framework_torch_derivation());
  r.add(probes::make_gpu_aotriton_derivation());
  r.add(probes::make_gpu_visibility_derivation());
  r.add(probes::make_modparam_derivation());
  r.add(probes::make_gpu_binding_derivation());
  r.add(probes::make_kernel_log_derivation());
  r.add(probes::make_amdgpu_driver_derivation());
  r.add(probes::make_ttm_configured_derivation());
  r.add(probes::make_gttsize_derivation());
  r.add(probes::make_cmdline_suspects_derivation());
  r.add(probes::make_gpu_usable_memory_derivation());
  r.add(probes::make_plan_gpu_derivation());
  r.add(probes::make_rocm_version_derivation());
  r.add(probes::make_framework_deep_capacity_derivation());
  r.resolve();
  return r;
}

} // namespace halo
