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
/// facts come from, the facts it declares in the file's order, and what it reads (issue 42: the
/// probe's code no longer lists it; BasicProbe and BasicDerivation take it from here).
struct DeclaredProbe {
  std::string_view id;   ///< "ttm" (Probe::id)
  std::string_view file; ///< "checks/ttm/facts.json"
  /// Probe::source(): where the facts come from, one paragraph of Markdown with its sources
  /// cited (docs/facts.md prints it under the probe's table); never empty.
  std::string_view source;
  std::span<const FactDecl> facts; ///< never empty (the schema requires one at least)
  /// `"derivation": true`: a Derivation, built with BasicDerivation; it has no reads and no env.
  bool derivation = false;
  /// Probe::inputs(): key patterns of other probes' facts (exact segments or `*`), each
  /// overlapping another entry's declaration (halo-facts-compile checks it).
  std::span<const std::string_view> inputs;
  /// Probe::reads(): absolute paths or globs, a comment after a space, and the text of the
  /// `{"described": ...}` reads (places found at run time), in the entry's order.
  std::span<const std::string_view> reads;
  /// Probe::env_reads(): environment variable names or `PREFIX*`.
  std::span<const std::string_view> env;
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

/// declared_probe(probe_id), checked to be a derivation (`derivation` true) or a probe that reads
/// the machine: a std::logic_error, naming the file, when its entry says otherwise (a probe built
/// with the wrong class).
const DeclaredProbe& declared_probe(std::string_view probe_id, bool derivation);

/// The environment variables built-in probe `probe_id` reads, its entry's `env`
/// (Probe::env_reads), as strings: the list a probe hands to read_environ (probe_util.hpp), so
/// what it reads and what it declares are one list.
std::vector<std::string> declared_env_reads(std::string_view probe_id);

/// `views` as strings: what Probe::inputs(), reads() and env_reads() return.
inline std::vector<std::string> to_strings(std::span<const std::string_view> views) {
  return {views.begin(), views.end()};
}

/// A probe defined by data and one collect function; every module in checks/ builds one. Its
/// facts, its source text (where they come from), the facts of other probes it reads (inputs),
/// the paths it reads and its environment variables are its entry of checks/<folder>/facts.json
/// (declared_probe(id)); the constructor throws std::logic_error when there is none, or when the
/// entry is a derivation's.
class BasicProbe : public Probe {
public:
  using Collect = std::function<void(const ProbeContext&, FactSet&)>;
  BasicProbe(std::string id, Collect collect)
      : id_(std::move(id)), declared_(&declared_probe(id_, false)), collect_(std::move(collect)) {}
  std::string_view id() const override { return id_; }
  std::span<const FactDecl> declarations() const override { return declared_->facts; }
  std::vector<std::string> inputs() const override { return to_strings(declared_->inputs); }
  /// The facts.json entry's source, or the text set_source() gave.
  std::string source() const override {
    return source_ ? *source_ : std::string(declared_->source);
  }
  /// The entry's reads, then those add_reads() appended.
  std::vector<std::string> reads() const override {
    std::vector<std::string> out = to_strings(declared_->reads);
    out.insert(out.end(), more_reads_.begin(), more_reads_.end());
    return out;
  }
  std::vector<std::string> env_reads() const override { return to_strings(declared_->env); }
  void collect(const ProbeContext& ctx, FactSet& facts) const override { collect_(ctx, facts); }
  /// Appends reads computed from a table its code reads too, so the two cannot drift: the one
  /// exception to "the reads are the entry's" (the runenv probe's DMI files, kDmiFiles; the
  /// boot_stack probe's tools, kBinDirs x kTools).
  void add_reads(std::vector<std::string> paths) {
    more_reads_.insert(more_reads_.end(), paths.begin(), paths.end());
  }
  /// Replaces the source text, for a probe whose source is computed from its code (the
  /// environment probe lists the variables it reads, env_reads()); every other probe's source is
  /// the data of its facts.json entry.
  void set_source(std::string text) { source_ = std::move(text); }

private:
  std::string id_;
  const DeclaredProbe* declared_;
  std::optional<std::string> source_;
  std::vector<std::string> more_reads_;
  Collect collect_;
};

/// A derivation defined by data and one derive function (include/halo/probe.hpp Derivation): the
/// facts it reads (`inputs`: exact keys or `*` patterns, never `**`), the facts it provides and
/// where they come from (its source text) are its entry of checks/<folder>/facts.json, flagged
/// `"derivation": true` (declared_probe(id); the constructor throws std::logic_error when there
/// is none, or when the entry is not a derivation's).
class BasicDerivation : public Derivation {
public:
  using Derive = std::function<void(const DeriveContext&, FactSet&)>;
  BasicDerivation(std::string id, Derive derive)
      : id_(std::move(id)), declared_(&declared_probe(id_, true)), derive_(std::move(derive)) {}
  std::string_view id() const override { return id_; }
  std::span<const FactDecl> declarations() const override { return declared_->facts; }
  std::vector<std::string> inputs() const override { return to_strings(declared_->inputs); }
  std::string source() const override { return std::string(declared_->source); }
  void derive(const DeriveContext& ctx, FactSet& facts) const override { derive_(ctx, facts); }

private:
  std::string id_;
  const DeclaredProbe* declared_;
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
