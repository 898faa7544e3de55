// Fleet comparison (issue 16): which nodes of a lab differ from the others in driver, firmware,
// kernel, ROCm, partitions and settings, from their saved facts (`halo-doctor facts --format json`)
// or capture bundles (`halo-doctor capture`). `halo-doctor fleet compare FILE...` prints it.
#pragma once

#include <halo/fact.hpp>
#include <halo/result.hpp>

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace halo::fleet {

/// One compared quantity: a fact key pattern (`*` = one segment: every GPU or card), its name for
/// people, and how much a node that differs from the majority matters (error: the node is the odd
/// one out and the exit code says so; warning: reported only).
struct CompareKey {
  std::string_view pattern;
  std::string_view label;
  Severity severity;
};

/// What is compared, in report order. Facts a node could not read show as "(missing)" and
/// count as a value of their own.
inline constexpr auto kCompareKeys = std::to_array<CompareKey>({
    {"kernel.release", "kernel", Severity::error},
    {"amdgpu.version", "amdgpu driver (DKMS version)", Severity::error},
    {"hsa.rocm_version", "ROCm runtime", Severity::error},
    {"gpu.count", "GPUs", Severity::error},
    {"gpu.*.gfx_target", "gfx targets", Severity::error},
    {"drm.*.current_compute_partition", "compute partitions", Severity::error},
    {"drm.*.current_memory_partition", "memory partitions", Severity::error},
    {"gpu.*.mes_fw_version_hex", "MES firmware", Severity::error},
    {"xgmi.*.hive_size", "XGMI hive sizes", Severity::error},
    {"gpu.*.pcie.current_width", "PCIe link widths", Severity::warning},
    {"fw.*.vbios_version", "VBIOS", Severity::warning},
    {"fw.*.mec", "MEC firmware", Severity::warning},
    {"fw.*.sos", "PSP SOS firmware", Severity::warning},
    {"fw.*.smc", "SMU firmware", Severity::warning},
    {"firmware.package_version", "linux-firmware package", Severity::warning},
    {"gpu.*.perf_level", "DPM performance levels", Severity::warning},
    {"os.pretty_name", "OS", Severity::warning},
    {"ttm.pages_limit_bytes", "TTM pages_limit (bytes)", Severity::warning},
    {"numa.balancing", "NUMA balancing", Severity::warning},
    {"host.cpufreq_governors", "CPU frequency governors", Severity::warning},
    {"host.cpuidle_c2_enabled_cpus", "CPUs with C2 enabled", Severity::warning},
    {"host.thp_enabled", "transparent hugepages", Severity::warning},
    {"user.limits.memlock_soft", "locked-memory limit (ulimit -l)", Severity::warning},
    {"framework.torch.version", "PyTorch", Severity::warning},
});

/// A node's facts and its name (`host.name`, else the file it came from).
struct Node {
  std::string name;
  std::string origin;
  FactSet facts;
};

/// One compared quantity across the nodes: each node's value as text, the majority value (the
/// most frequent; on a tie, the value of the earliest node among the tied), and which nodes
/// differ from it.
struct Row {
  std::string label;
  std::string pattern;
  Severity severity = Severity::warning;
  std::vector<std::string> values;
  std::string majority;
  std::vector<bool> differs;
  bool uniform() const;
};

struct Comparison {
  std::vector<std::string> nodes;
  std::vector<Row> rows; ///< quantities at least one node could read
  /// True when some node differs from the majority on an error-severity quantity.
  bool error_difference() const;
};

/// Compares the nodes on kCompareKeys. A quantity with a `*` is the node's matching facts'
/// values in key order, joined with ", " ("16, 16, 8, 16"), or "VALUE xN" when all N are equal.
Comparison compare(const std::vector<Node>& nodes);

/// The comparison as a table for people: one row per quantity, one column per node, `*` after a
/// value that differs from the majority; uniform rows are listed by name only unless `all`.
std::string comparison_text(const Comparison& c, bool all);

/// The comparison as JSON: {"nodes": [...], "rows": [{label, fact, severity, uniform, majority,
/// values: [{node, value, differs}]}], "error_difference": bool}.
nlohmann::json comparison_json(const Comparison& c);

} // namespace halo::fleet
