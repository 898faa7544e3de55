// SPDX-License-Identifier: MIT
// The built-in probe modules, in one folder of checks/ per fact family (checks/gpus/, checks/ttm/,
// ...; the map: src/core/fact_families.cpp). Each factory returns a probe (reads the machine) or a
// derivation (reads only other probes' facts) whose declarations()/source()/inputs() document what
// it produces and reads (docs/facts.md is generated from them: `halo-doctor facts --declared
// --format markdown`).
#pragma once

#include <halo/probe.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace halo::probes {

/// One entry of a checks/<folder>/facts.json file, compiled in: a probe's id, the file, where its
/// facts come from, and the facts it declares in the file's order.
struct DeclaredProbe {
  std::string_view id;   ///< "ttm" (Probe::id)
  std::string_view file; ///< "checks/ttm/facts.json"
  /// Probe::source(): where the facts come from, one paragraph of Markdown with its sources
  /// cited (docs/facts.md prints it under the probe's table); never empty.
  std::string_view source;
  std::span<const FactDecl> facts; ///< never empty (the schema requires one at least)
};

/// Every entry of checks/*/facts.json, sorted by id. Generated at build time by
/// halo-facts-compile (src/tools/facts_compile.cpp), which validates the files first (schema,
/// unique ids and patterns, each pattern's family in its file's folder); static storage, so
/// neither this nor declared_facts() parses or copies anything.
std::span<const DeclaredProbe> declared_probes();

/// The checks/<folder>/facts.json entry of built-in probe `probe_id`: static storage, valid for
/// the whole program. Throws std::logic_error, a programming error, when no file declares
/// `probe_id` (a probe added without its facts.json entry): the registry of built-in probes cannot
/// be built then.
const DeclaredProbe& declared_probe(std::string_view probe_id);

/// The declarations of built-in probe `probe_id` (checks/<folder>/facts.json), in the file's
/// order: declared_probe(probe_id).facts (and its std::logic_error).
std::span<const FactDecl> declared_facts(std::string_view probe_id);

/// A probe defined by data and one collect function; every module in checks/ builds one. Its
/// facts and its source text (where they come from) are its entry of checks/<folder>/facts.json
/// (declared_probe(id)); the constructors throw std::logic_error when there is none.
class BasicProbe : public Probe {
public:
  using Collect = std::function<void(const ProbeContext&, FactSet&)>;
  /// `reads`: the paths or globs it reads.
  BasicProbe(std::string id, std::vector<std::string> reads, Collect collect)
      : BasicProbe(std::move(id), {}, std::move(reads), std::move(collect)) {}
  /// The same, for a probe that reads other probes' facts: `inputs`, their key patterns
  /// (Probe::inputs).
  BasicProbe(std::string id, std::vector<std::string> inputs, std::vector<std::string> reads,
             Collect collect)
      : id_(std::move(id)), declared_(&declared_probe(id_)), inputs_(std::move(inputs)),
        reads_(std::move(reads)), collect_(std::move(collect)) {}
  std::string_view id() const override { return id_; }
  std::span<const FactDecl> declarations() const override { return declared_->facts; }
  std::vector<std::string> inputs() const override { return inputs_; }
  /// The facts.json entry's source, or the text set_source() gave.
  std::string source() const override {
    return source_ ? *source_ : std::string(declared_->source);
  }
  std::vector<std::string> reads() const override { return reads_; }
  std::vector<std::string> env_reads() const override { return env_reads_; }
  void collect(const ProbeContext& ctx, FactSet& facts) const override { collect_(ctx, facts); }
  /// Declares the environment variables the probe reads (Probe::env_reads).
  void set_env_reads(std::vector<std::string> names) { env_reads_ = std::move(names); }
  /// Replaces the source text, for a probe whose source is computed from its code (the
  /// environment probe lists the variables it reads, env_reads()); every other probe's source is
  /// the data of its facts.json entry.
  void set_source(std::string text) { source_ = std::move(text); }

private:
  std::string id_;
  const DeclaredProbe* declared_;
  std::vector<std::string> inputs_;
  std::optional<std::string> source_;
  std::vector<std::string> reads_;
  std::vector<std::string> env_reads_;
  Collect collect_;
};

/// A derivation defined by data and one derive function (include/halo/probe.hpp Derivation): the
/// facts it reads (`inputs`: exact keys or `*` patterns, never `**`); the facts it provides and
/// where they come from (its source text) are its entry of checks/<folder>/facts.json
/// (declared_probe(id); the constructor throws std::logic_error when there is none).
class BasicDerivation : public Derivation {
public:
  using Derive = std::function<void(const DeriveContext&, FactSet&)>;
  BasicDerivation(std::string id, std::vector<std::string> inputs, Derive derive)
      : id_(std::move(id)), declared_(&declared_probe(id_)), inputs_(std::move(inputs)),
        derive_(std::move(derive)) {}
  std::string_view id() const override { return id_; }
  std::span<const FactDecl> declarations() const override { return declared_->facts; }
  std::vector<std::string> inputs() const override { return inputs_; }
  std::string source() const override { return std::string(declared_->source); }
  void derive(const DeriveContext& ctx, FactSet& facts) const override { derive_(ctx, facts); }

private:
  std::string id_;
  const DeclaredProbe* declared_;
  std::vector<std::string> inputs_;
  Derive derive_;
};

// Probes: they read the machine (through ProbeContext::root) or a runtime.
std::unique_ptr<Probe> make_kernel_probe();        // checks/kernel_args/kernel.cpp
std::unique_ptr<Probe> make_os_probe();            // checks/host/os.cpp
std::unique_ptr<Probe> make_memory_probe();        // checks/host/memory.cpp
std::unique_ptr<Probe> make_amdgpu_module_probe(); // checks/kernel_args/amdgpu_module.cpp
std::unique_ptr<Probe>
make_module_file_probe();                     // checks/kernel_args/module_file.cpp (libkmod, child)
std::unique_ptr<Probe> make_ttm_probe();      // checks/ttm/ttm.cpp
std::unique_ptr<Probe> make_modprobe_probe(); // checks/kernel_args/modprobe.cpp
std::unique_ptr<Probe> make_pci_probe();      // checks/gpus/pci.cpp
std::unique_ptr<Probe> make_drm_probe();      // checks/gpus/drm.cpp
std::unique_ptr<Probe> make_kfd_topology_probe();   // checks/gpus/kfd_topology.cpp
std::unique_ptr<Probe> make_device_access_probe();  // checks/host/device_access.cpp
std::unique_ptr<Probe> make_environment_probe();    // checks/framework/environment.cpp
std::unique_ptr<Probe> make_numa_probe();           // checks/host/numa.cpp
std::unique_ptr<Probe> make_ras_probe();            // checks/gpus/ras.cpp
std::unique_ptr<Probe> make_xgmi_probe();           // checks/gpus/xgmi.cpp
std::unique_ptr<Probe> make_gpu_firmware_probe();   // checks/gpus/gpu_firmware.cpp
std::unique_ptr<Probe> make_gpu_metrics_probe();    // checks/gpus/gpu_metrics.cpp
std::unique_ptr<Probe> make_host_tuning_probe();    // checks/host/host_tuning.cpp
std::unique_ptr<Probe> make_framework_deep_probe(); // checks/framework/framework_deep.cpp
std::unique_ptr<Probe> make_runenv_probe();         // checks/host/runenv.cpp
std::unique_ptr<Probe> make_wsl_probe();         // checks/host/wsl.cpp (WSL2: /dev/dxg, librocdxg)
std::unique_ptr<Probe> make_kernel_log_probe();  // checks/kernel_log/kernel_log.cpp
std::unique_ptr<Probe> make_secure_boot_probe(); // checks/boot/secure_boot.cpp
std::unique_ptr<Probe> make_initramfs_probe();   // checks/boot/initramfs.cpp
std::unique_ptr<Probe> make_hsa_probe();        // checks/runtime/hsa.cpp (ROCr, in a child process)
std::unique_ptr<Probe> make_libdrm_probe();     // checks/gpus/libdrm.cpp (libdrm_amdgpu queries)
std::unique_ptr<Probe> make_boot_stack_probe(); // checks/boot/boot_stack.cpp
std::unique_ptr<Probe> make_firmware_package_probe(); // checks/firmware/firmware_package.cpp
std::unique_ptr<Probe>
make_framework_probe(); // checks/framework/framework.cpp (PyTorch, from files)

// Derivations: they read only other probes' facts and the options (ProbeRegistry::rederive runs
// them again on replayed facts).
std::unique_ptr<Probe> make_rocm_install_probe();      // checks/runtime/rocm_install.cpp
std::unique_ptr<Probe> make_rocm_version_derivation(); // checks/runtime/rocm_version.cpp
std::unique_ptr<Probe> make_plan_probe();          // checks/plan/plan.cpp (the training run given)
std::unique_ptr<Probe> make_gpu_list_derivation(); // checks/gpus/gpu_list.cpp
std::unique_ptr<Probe> make_gpu_binding_derivation();       // checks/gpus/gpu_list.cpp
std::unique_ptr<Probe> make_gpu_cards_derivation();         // checks/gpus/gpu_cards.cpp
std::unique_ptr<Probe> make_gpu_visibility_derivation();    // checks/gpus/gpu_visibility.cpp
std::unique_ptr<Probe> make_gpu_aotriton_derivation();      // checks/gpus/gpu_visibility.cpp
std::unique_ptr<Probe> make_gpu_usable_memory_derivation(); // checks/gpus/gpu_visibility.cpp
std::unique_ptr<Probe> make_host_derivation();              // checks/host/host_derive.cpp
std::unique_ptr<Probe> make_framework_env_derivation();     // checks/framework/framework_derive.cpp
std::unique_ptr<Probe> make_framework_torch_derivation();   // checks/framework/framework_derive.cpp
std::unique_ptr<Probe> make_framework_deep_capacity_derivation(); // the same file
std::unique_ptr<Probe> make_kernel_log_derivation();    // checks/kernel_log/kernel_log_derive.cpp
std::unique_ptr<Probe> make_modparam_derivation();      // checks/kernel_args/driver_derive.cpp
std::unique_ptr<Probe> make_amdgpu_driver_derivation(); // checks/kernel_args/driver_derive.cpp
std::unique_ptr<Probe> make_gttsize_derivation();       // checks/kernel_args/driver_derive.cpp
std::unique_ptr<Probe> make_cmdline_suspects_derivation(); // checks/kernel_args/suspects_derive.cpp
std::unique_ptr<Probe> make_ttm_configured_derivation();   // checks/ttm/ttm_derive.cpp
std::unique_ptr<Probe> make_plan_gpu_derivation();         // checks/plan/plan_gpu.cpp

} // namespace halo::probes
