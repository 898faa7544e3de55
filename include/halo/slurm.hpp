// SPDX-License-Identifier: MIT
// Slurm integration (`halo-doctor slurm health-check | prolog | epilog`, docs/slurm.md): what a
// node's state says, the drain reason halo-doctor writes, the decision to drain, resume or leave
// a node, and a bounded runner for scontrol. Every Slurm behaviour relied on is cited from
// slurm.conf(5) and scontrol(1) of Slurm 22.05 (the release Debian 12 ships) or its source.
#pragma once

#include <halo/result.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo::slurm {

/// Where Slurm runs the doctor: slurm.conf's HealthCheckProgram (every HealthCheckInterval
/// seconds and when slurmd starts), Prolog (before a job's first step on the node, or at
/// allocation with PrologFlags=Alloc) or Epilog (when the allocation is released).
enum class Mode { health_check, prolog, epilog };

/// "health-check", "prolog", "epilog".
std::string_view to_string(Mode m);

/// Every reason halo-doctor writes starts with this. A node is resumed only when its current
/// reason starts with it, so a drain set by an admin or another tool (NHC writes "NHC: ...") is
/// never undone.
inline constexpr std::string_view kReasonPrefix = "halo-doctor:";

/// Default longest reason, in bytes (reasons are ASCII). `sinfo -R` prints the first 20
/// characters by default (format "%20E"); `scontrol show node` and `sinfo -R -o '%60E ...'` print
/// it whole (docs/slurm.md).
inline constexpr std::size_t kDefaultReasonMax = 60;

/// One node as `scontrol -o show node` prints it (src/api/node_info.c slurm_sprint_node_table in
/// 22.05: `Key=Value` fields separated by spaces on one line; `Reason=TEXT [USER@TIME]` comes
/// after the fixed fields, followed only by the optional `Comment=` and `Extra=` fields).
struct Node {
  std::string name;     ///< NodeName=
  std::string hostname; ///< NodeHostName= (empty when not printed)
  std::string state;  ///< State=, base state and flags: "IDLE", "IDLE+DRAIN", "DOWN+NOT_RESPONDING"
  std::string reason; ///< Reason= without the " [USER@TIME]" suffix; empty when none is set

  /// The DRAIN flag is set (draining or drained: `State=IDLE+DRAIN`, `MIXED+DRAIN`, ...).
  bool drain() const;
  /// The base state is DOWN or the FAIL flag is set.
  bool down() const;
  /// The current reason is one halo-doctor wrote (starts with kReasonPrefix).
  bool ours() const;
};

/// Parses the output of `scontrol -o show node [NAME]`: one node per non-empty line. Lines
/// without `NodeName=` are ignored. Never throws.
std::vector<Node> parse_show_node(std::string_view text);

/// The node of `nodes` that slurmd on host `short_hostname` (gethostname() up to the first dot)
/// runs as: the one whose NodeName or NodeHostName equals it (slurm.conf(5) NodeHostname:
/// "Typically this would be the string that "/bin/hostname -s" returns"). std::nullopt when none
/// or more than one match.
std::optional<std::string> node_for_host(const std::vector<Node>& nodes,
                                         std::string_view short_hostname);

/// What the check found, in the shape the decision needs (rule ids only, each once, in report
/// order; a per-GPU rule that fails on several GPUs appears once).
struct Verdict {
  std::vector<std::string> failed;  ///< failing at or above --fail-on, not waived, not pending
  std::vector<std::string> pending; ///< failing at or above --fail-on, waiting for a reboot only
  /// Non-empty when the doctor could not judge the node (bad policy or rules, a probe that threw,
  /// a runtime probe that hung or crashed, the check itself past its deadline): a short phrase
  /// for the reason ("policy or rules error", "timed out", ...).
  std::string internal_error;
  /// The details of internal_error for the log.
  std::string internal_detail;
  /// The rules this run evaluated and found passing: every result of the id passed, or failed
  /// only where the gate does not count it (below --fail-on, waived). A rule skipped or in error
  /// is not here. decide() lifts a halo-doctor drain only when each rule its reason names is.
  std::vector<std::string> cleared;
  /// True when this run evaluated every rule (a health check without --only/--skip): then a
  /// drain whose reason names no rule ("could not check: ...") or not all of them (" +N", "...")
  /// may be lifted too.
  bool complete = false;
};

/// The verdict of evaluated results with the gate's logic (gate_exit_code): failures at or above
/// `fail_on` that no waiver covers, split into those that wait only for a reboot and the others.
/// An id already in `failed` is not repeated in `pending`; `cleared` holds the ids whose every
/// result passed or failed uncounted. internal_error stays empty, complete false.
Verdict verdict_from_results(const std::vector<Result>& results, FailOn fail_on);

/// The rule ids a halo-doctor drain reason (drain_reason) names, and whether it names them all:
/// false for "could not check: ..." and for a reason cut short (" +N" or "...").
struct ReasonRules {
  std::vector<std::string> ids;
  bool all = false;
};
/// Reads `reason` as drain_reason wrote it ("halo-doctor: a,b +2", "halo-doctor: reboot pending:
/// a"). Never throws.
ReasonRules rules_of_reason(std::string_view reason);

/// What to do about pending-reboot failures (`--pending-reboot`).
enum class PendingReboot { drain, leave };

/// The site's choices for the decision.
struct Settings {
  Mode mode = Mode::health_check;
  PendingReboot pending_reboot = PendingReboot::drain;
  bool drain_on_internal_error = false;
  std::size_t reason_max = kDefaultReasonMax;
};

/// The reason for a drain: kReasonPrefix, a space, then `label` (e.g. "reboot pending: ") and the
/// ids joined by ','; ids that do not fit in `max` bytes are replaced by " +N" (the count left
/// out), and at least one id is always named (cut with "..." when even it does not fit). Ids are
/// lower-case words joined by '-', so the reason never holds a quote, newline or '='.
std::string drain_reason(std::string_view label, const std::vector<std::string>& ids,
                         std::size_t max);

/// What halo-doctor does to the node.
enum class Action { none, drain, resume };

/// The decision and the exit code of the run.
struct Decision {
  Action action = Action::none;
  std::string reason;  ///< for Action::drain
  int exit_code = 0;   ///< see decide()
  std::string summary; ///< one line for the log: the verdict and what was (not) done, and why
};

/// Decides what to do with `node` (std::nullopt: its state could not be read).
///
/// - Failures -> drain with the failing rule ids. Pending-reboot failures only -> drain with
///   "reboot pending: ids" (PendingReboot::drain) or leave. Internal error -> leave, or drain with
///   "could not check: ..." when drain_on_internal_error. Clean -> resume.
/// - A resume (clean run, node drained or down with halo-doctor's reason) is done only when this
///   run judged what the drain was for: each rule the reason names is in `cleared`, and a reason
///   that names no rule or not all of them only after a `complete` run. Otherwise the node is
///   left drained and the summary says which rules this run did not judge (issue 44 item 5: an
///   epilog evaluating only the volatile rules lifted a `ttm-limit-low` drain).
/// - A drain is done only when the node has no reason or halo-doctor's own (and not when it is
///   already drained with this very reason); a node with anyone else's reason (an admin's drain or
///   down, "Not responding", NHC) is left as it is. A resume is done only when the node is drained,
///   down or failed with halo-doctor's reason.
/// - Exit codes. health-check: 0 clean, 1 failures, 4 pending reboot only, 70 internal error
///   (slurmd only logs a non-zero status: src/slurmd/slurmd/slurmd.c run_script_health_check);
///   70 also when the node's state could not be read (scontrol missing, failing or hung).
///   prolog and epilog: 0 when the job may go on (clean, internal error without
///   drain_on_internal_error, pending reboot left), else 1 (failures or an internal error with
///   drain_on_internal_error) or 4 (pending reboot drained). slurm.conf(5): a Prolog that fails
///   drains the node and requeues the job held; an Epilog that fails drains the node; Slurm's own
///   drain then keeps halo-doctor's reason (slurmctld's drain_nodes does nothing on a node already
///   drained: src/slurmctld/node_mgr.c _drain_node).
Decision decide(const Verdict& v, const std::optional<Node>& node, const Settings& s);

/// How a bounded command ended.
struct CommandResult {
  bool started = false;   ///< the program was found and exec'd
  std::string error;      ///< why it did not start, or "timed out after N s"
  bool timed_out = false; ///< killed (SIGKILL to its process group) at the time limit
  int exit_code = -1;     ///< exit status when it exited; -1 when killed by a signal
  int signal = 0;         ///< the signal that ended it
  std::string output;     ///< stdout and stderr together, at most 1 MiB
  bool ok() const { return started && !timed_out && exit_code == 0; }
};

/// Runs `argv` (argv[0] a path, or a name looked up in $PATH, or in
/// /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin when PATH is unset) with fork and
/// execve: no shell. The child gets stdin from /dev/null, its own process group, and the current
/// environment with `env_overrides` set. After `timeout` the whole group is killed (SIGKILL) and
/// reaped. Never throws for the command's failures.
CommandResult run_bounded(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env_overrides,
                          std::chrono::milliseconds timeout);

} // namespace halo::slurm
