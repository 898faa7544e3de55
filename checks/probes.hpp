// SPDX-License-Identifier: MIT
// The built-in probe modules, one per file in checks/. Each factory returns a probe whose
// declarations()/source()/reads() document what it produces and reads (docs/facts.md is generated
// from them: `halo-doctor facts --declared --format markdown`).
#pragma once

#include <halo/probe.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace halo::probes {

/// A probe defined by data and one collect function; every module in checks/ builds one.
class BasicProbe : public Probe {
public:
  using Collect = std::function<void(const ProbeContext&, FactSet&)>;
  /// `decls`: the facts it provides; `source`: where they come from (Markdown, cited);
  /// `reads`: the paths or globs it reads.
  BasicProbe(std::string id, std::vector<FactDecl> decls, std::string source,
             std::vector<std::string> reads, Collect collect)
      : BasicProbe(std::move(id), std::move(decls), {}, std::move(source), std::move(reads),
                   std::move(collect)) {}
  /// The same, for a probe that reads other probes' facts: `inputs`, their key patterns
  /// (Probe::inputs).
  BasicProbe(std::string id, std::vector<FactDecl> decls, std::vector<std::string> inputs,
             std::string source, std::vector<std::string> reads, Collect collect)
      : id_(std::move(id)), decls_(std::move(decls)), inputs_(std::move(inputs)),
        source_(std::move(source)), reads_(std::move(reads)), collect_(std::move(collect)) {}
  std::string_view id() const override { return id_; }
  std::vector<FactDecl> declarations() const override { return decls_; }
  std::vector<std::string> inputs() const override { return inputs_; }
  std::string source() const override { return source_; }
  std::vector<std::string> reads() const override { return reads_; }
  std::vector<std::string> env_reads() const override { return env_reads_; }
  void collect(const ProbeContext& ctx, FactSet& facts) const override { collect_(ctx, facts); }
  /// Declares the environment variables the probe reads (Probe::env_reads).
  void set_env_reads(std::vector<std::string> names) { env_reads_ = std::move(names); }

private:
  std::string id_;
  std::vector<FactDecl> decls_;
  std::vector<std::string> inputs_;
  std::string source_;
  std::vector<std::string> reads_;
  std::vector<std::string> env_reads_;
  Collect collect_;
};

std::unique_ptr<Probe> make_kernel_probe();           // checks/kernel.cpp
std::unique_ptr<Probe> make_os_probe();               // checks/os.cpp
std::unique_ptr<Probe> make_memory_probe();           // checks/memory.cpp
std::unique_ptr<Probe> make_amdgpu_module_probe();    // checks/amdgpu_module.cpp
std::unique_ptr<Probe> make_module_file_probe();      // checks/module_file.cpp (libkmod, child)
std::unique_ptr<Probe> make_ttm_probe();              // checks/ttm.cpp
std::unique_ptr<Probe> make_modprobe_probe();         // checks/modprobe.cpp
std::unique_ptr<Probe> make_pci_probe();              // checks/pci.cpp
std::unique_ptr<Probe> make_drm_probe();              // checks/drm.cpp
std::unique_ptr<Probe> make_kfd_topology_probe();     // checks/kfd_topology.cpp
std::unique_ptr<Probe> make_device_access_probe();    // checks/device_access.cpp
std::unique_ptr<Probe> make_environment_probe();      // checks/environment.cpp
std::unique_ptr<Probe> make_numa_probe();             // checks/numa.cpp
std::unique_ptr<Probe> make_ras_probe();              // checks/ras.cpp
std::unique_ptr<Probe> make_xgmi_probe();             // checks/xgmi.cpp
std::unique_ptr<Probe> make_gpu_firmware_probe();     // checks/gpu_firmware.cpp
std::unique_ptr<Probe> make_gpu_metrics_probe();      // checks/gpu_metrics.cpp
std::unique_ptr<Probe> make_host_tuning_probe();      // checks/host_tuning.cpp
std::unique_ptr<Probe> make_framework_deep_probe();   // checks/framework_deep.cpp
std::unique_ptr<Probe> make_runenv_probe();           // checks/runenv.cpp
std::unique_ptr<Probe> make_wsl_probe();              // checks/wsl.cpp (WSL2: /dev/dxg, librocdxg)
std::unique_ptr<Probe> make_kernel_log_probe();       // checks/kernel_log.cpp
std::unique_ptr<Probe> make_secure_boot_probe();      // checks/secure_boot.cpp
std::unique_ptr<Probe> make_initramfs_probe();        // checks/initramfs.cpp
std::unique_ptr<Probe> make_hsa_probe();              // checks/hsa.cpp (ROCr, in a child process)
std::unique_ptr<Probe> make_libdrm_probe();           // checks/libdrm.cpp (libdrm_amdgpu queries)
std::unique_ptr<Probe> make_boot_stack_probe();       // checks/boot_stack.cpp
std::unique_ptr<Probe> make_firmware_package_probe(); // checks/firmware_package.cpp
std::unique_ptr<Probe> make_framework_probe();        // checks/framework.cpp (PyTorch, from files)
std::unique_ptr<Probe> make_plan_probe();             // checks/plan.cpp (the training run given)
std::unique_ptr<Probe> make_derived_probe();          // checks/derived.cpp (runs last)

} // namespace halo::probes
