// SPDX-License-Identifier: MIT
// Results: one per rule, what the reporters print and the fix generator reads.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo {

/// pass: checked and fine; fail: checked and wrong; skip: the rule does not apply here (with the
/// reason); error: the facts it needs could not be read (with the reason), never a silent pass.
enum class Outcome { pass, fail, skip, error };
/// How bad a failure is; `--fail-on` compares against it.
enum class Severity { info, warning, error };

std::string_view to_string(Outcome o);
std::string_view to_string(Severity s);
/// Parses "info" | "warning" | "error".
std::optional<Severity> parse_severity(std::string_view s);

/// One fact shown as evidence: its key, JSON value (null if not ok), status, source (a path
/// inside the root, an API call or `derived: ...`: Fact::source) and the probe that read it
/// (Fact::probe; empty for a fact of no probe).
struct Evidence {
  std::string key;
  nlohmann::json value;
  std::string status;
  std::string source;
  std::string reason;
  std::string probe;
};

/// A site-policy waiver in force for a failing rule (`check --policy FILE`, docs/policy.md):
/// the failure is still reported, marked waived, and does not fail the gate.
struct Waiver {
  std::string reason;
  std::string owner;
  std::string expires; ///< last day the waiver holds, YYYY-MM-DD
};

/// The GPU a per-GPU rule judged (rules with `"scope": "gpu"`, docs/rules.md). GPUs are numbered
/// in KFD topology node order, numerically (ROCr enumerates its GPU agents in that order, so
/// index N is what ROCm calls device N when no *_VISIBLE_DEVICES is set); by DRM card, then PCI
/// slot, where KFD is absent.
struct GpuRef {
  std::int64_t index = 0; ///< N of the `gpu.N.*` facts
  std::string pci_slot;   ///< PCI address, "0000:c3:00.0"; empty when unknown
  std::string gfx_target; ///< "gfx1151"; empty when unknown
  std::string name;       ///< marketing name from the PCI id table ("Radeon 8060S"); may be empty
  /// The device number HIP gives it under the *_VISIBLE_DEVICES of this environment, or
  /// std::nullopt when training here will not see it.
  std::optional<std::int64_t> hip_device;
};

/// "GPU 1 (0000:c3:00.0, gfx942)": how the text, JUnit and NPD reports name a GPU (the JSON
/// report gives every field).
std::string describe_gpu(const GpuRef& g);

/// The verdict of one rule.
struct Result {
  std::string id;
  std::string title;
  std::string area;
  Outcome status = Outcome::pass;
  Severity severity = Severity::info;
  std::string message;
  std::string why;
  std::vector<Evidence> evidence;
  /// The facts that decided a failure: those the deciding fail case (and pending_when, for a
  /// pending one) read and found ok, and those it tested with `exists` or `status` whatever their
  /// state; for a result that could not be checked, the facts it could not read. What the text
  /// report shows as evidence without --verbose (a fact the verdict did not turn on is noise
  /// there); not part of the JSON report, which carries `evidence`.
  std::vector<Evidence> proof;
  /// The rule's `subsumes` (include/halo/rules.hpp): failures shown under this one in the text
  /// report.
  std::vector<std::string> subsumes;
  nlohmann::json fix; ///< expanded structured fix for failures, null otherwise
  bool pending_reboot = false;
  std::vector<std::string> sources;
  /// The GPU this result judged, for a per-GPU rule; absent for a host rule.
  std::optional<GpuRef> gpu;
  /// Set when a site policy waives this failure; absent otherwise (and for expired waivers).
  std::optional<Waiver> waiver;
  /// True for a failure a waiver in force covers: reported, but not counted by the gate.
  bool waived() const { return status == Outcome::fail && waiver.has_value(); }
};

/// The `--fail-on` threshold: a failure at or above it fails the gate; `never` never does.
enum class FailOn { info, warning, error, never };

/// Exit codes of `check` (DESIGN.md): 0 ok, 1 a failure at or above --fail-on, 2 usage or input
/// error, 4 the only such failures are pending a reboot, 70 internal error.
namespace exit_code {
inline constexpr int ok = 0;
inline constexpr int failed = 1;
inline constexpr int usage = 2;
inline constexpr int pending_reboot = 4;
inline constexpr int internal = 70;
} // namespace exit_code

/// Computes the exit code of `check` from its results (waived failures do not count).
int gate_exit_code(const std::vector<Result>& results, FailOn fail_on);

} // namespace halo
