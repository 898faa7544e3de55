// The explicit list of built-in probes, in the order they run. No static registration:
// adding a probe is one line here and one file in checks/ (docs/adding-a-probe.md).
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
  r.add(probes::make_ras_probe());          // after drm, whose drm.amd_cards it reads
  r.add(probes::make_xgmi_probe());         // the same
  r.add(probes::make_gpu_firmware_probe()); // the same
  r.add(probes::make_gpu_metrics_probe());  // the same
  r.add(probes::make_kfd_topology_probe());
  r.add(probes::make_environment_probe()); // before device_access, which reads env.sudo_uid
  r.add(probes::make_device_access_probe());
  r.add(probes::make_numa_probe());
  r.add(probes::make_host_tuning_probe());
  r.add(probes::make_runenv_probe());
  r.add(probes::make_kernel_log_probe());
  r.add(probes::make_secure_boot_probe());
  // after kernel, amdgpu_module and secure_boot, whose release, initstate and Secure Boot it reads
  r.add(probes::make_module_file_probe());
  r.add(probes::make_initramfs_probe()); // after kernel_log, whose firmware failures it reads
  r.add(probes::make_hsa_probe());
  r.add(probes::make_libdrm_probe());
  r.add(probes::make_boot_stack_probe());
  r.add(probes::make_firmware_package_probe());
  r.add(probes::make_framework_probe());
  r.add(probes::make_framework_deep_probe());
  r.add(probes::make_plan_probe());
  r.add(probes::make_derived_probe());
  return r;
}

} // namespace halo
