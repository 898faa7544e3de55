// SPDX-License-Identifier: MIT
// The explicit list of built-in probes. No static registration: adding a probe is one line here
// and one file in checks/ (docs/adding-a-probe.md). The order they run in is computed from the
// facts each declares it reads (Probe::inputs, ProbeRegistry::resolve); this list only breaks
// ties between probes that do not depend on each other.
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
  r.add(probes::make_plan_probe());
  r.add(probes::make_derived_probe());
  r.resolve();
  return r;
}

} // namespace halo
