// SPDX-License-Identifier: MIT
// Reporters: text for people, JSON (schema_version 1) for machines.
#pragma once

#include <halo/fact.hpp>
#include <halo/plan.hpp>
#include <halo/result.hpp>
#include <halo/rules.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo {

/// What the report says about the run besides the results.
struct ReportContext {
  std::string tool_version;
  std::string hostname;
  std::string kernel;
  std::string os;
  std::string ruleset_version;
  std::string ruleset_digest;
  std::string root; ///< "/" or the --root / --facts origin
  /// Where the doctor ran: "host" (bare metal or a VM), "wsl2" (docs/wsl.md) or the container
  /// kind ("docker", "podman", "toolbox", "distrobox", "kubernetes", "lxc", ...): fact
  /// host.runs_in.
  std::string runs_in;
  /// Whether the machine is a virtual machine: "none", a hypervisor as systemd-detect-virt names
  /// it ("kvm", "qemu", "vmware", "microsoft", ...) or "vm-other"; empty when unknown (fact
  /// host.virtualization).
  std::string virtualization;
  /// The Python environment the framework probe judged (docs/framework.md), from the facts
  /// framework.python_env and framework.torch.*; `judged` is false when the probe did not run
  /// (a --facts file or bundle without it).
  struct PythonEnv {
    bool judged = false;
    std::string site;  ///< the site directory torch was found in; empty when none was
    std::string basis; ///< how the environment was chosen (found), or why no torch was (not found)
    std::string torch; ///< torch.__version__ from torch/version.py, "2.10.0+rocm7.1"
    std::string build; ///< "rocm", "cuda" or "cpu"
    std::string hip;   ///< torch.version.hip, "7.1.25424"; empty unless a ROCm build
    std::string rocm;  ///< the ROCm release the wheel bundles, "7.1" (MAJOR.MINOR)
    std::vector<std::string> gfx_targets; ///< gfx targets it has kernels for (kernel_targets)
  } python;
  int exit_code = 0;
  /// Wall-clock seconds the run took from start to results (steady clock, `check`); reported
  /// by the junit (`time`) and prometheus (`halo_doctor_run_duration_seconds`) formats.
  double duration_seconds = 0.0;
  /// When the run finished, seconds since the Unix epoch; 0 leaves it out of the reports.
  std::int64_t finished_unix_seconds = 0;
  /// The `--fail-on` threshold of the run (the npd format's OK/problem line follows it).
  FailOn fail_on = FailOn::error;
};

/// Result counts shared by the reporters. `fail` includes waived and pending-reboot failures;
/// `failed_by_severity` is indexed by Severity (info, warning, error).
struct Summary {
  int pass = 0;
  int fail = 0;
  int skip = 0;
  int error = 0;
  std::array<int, 3> failed_by_severity{};
  int pending_reboot = 0;
  int waived = 0;
  int failed(Severity s) const { return failed_by_severity.at(static_cast<std::size_t>(s)); }
};

/// Counts results by outcome, failures by severity, pending-reboot and waived failures.
Summary summarize(const std::vector<Result>& results);

/// Options of the text reporter.
struct TextOptions {
  bool color = false;
  bool quiet = false;   ///< one line per finding, then the summary and the next step
  bool verbose = false; ///< passing and skipped rules with their evidence too
  /// Columns the report's lines are wrapped to (halo::cli::terminal_width: TIOCGWINSZ on stdout,
  /// then COLUMNS, else 100); at least 40.
  std::size_t width = 100;
};

/// Columns `s` takes on a terminal: an SGR escape sequence (ESC [ ... m) takes none, every other
/// UTF-8 sequence one (the doctor's own text is ASCII; a fact's wide characters may overrun).
std::size_t visible_width(std::string_view s);

/// `line` (no newline) wrapped at spaces to `width` columns, each continuation line starting
/// with `indent` spaces; a word wider than the room left is broken where the line ends. Every
/// line of the result ends with a newline.
std::string wrap_line(std::string_view line, std::size_t width, std::size_t indent);

/// An output format. Its one spelling, on the command line (`--format`, `--output FORMAT:PATH`)
/// and in messages, is to_string(); each command accepts the subset it can write (check all,
/// facts text/json/markdown, plan, rules and fleet text/json).
enum class ReportFormat { text, json, junit, prometheus, npd, markdown };

/// The command-line spelling of `f` ("text", "json", "junit", "prometheus", "npd", "markdown").
std::string_view to_string(ReportFormat f);

/// The format spelled `name`; std::nullopt for any other text.
std::optional<ReportFormat> parse_report_format(std::string_view name);

/// The spellings of `formats`, in the order given (for CLI11's IsMember and help texts).
std::vector<std::string> format_names(std::initializer_list<ReportFormat> formats);

/// The report formats `check --format` accepts: every ReportFormat, in declaration order.
std::vector<std::string> report_formats();

/// Renders results in one of report_formats(); throws std::invalid_argument for others. `facts`
/// are available to formats that export numbers (the text and JSON reports do not need them).
std::string render_report(std::string_view format, const std::vector<Result>& results,
                          const ReportContext& ctx, const FactSet& facts, const TextOptions& text);

/// One Python environment's report, as render_report() takes it (`check --python A --python B`).
struct ReportPart {
  const std::vector<Result>& results;
  const ReportContext& ctx;
  const FactSet& facts;
};

/// True for the formats that can hold several environments' reports in one document: text and
/// JSON.
bool multi_report_format(std::string_view format);

/// The reports of several Python environments in one document, in the order given: text reports
/// one after another with a blank line between; JSON an array of reports (docs/report.schema.json
/// `environments`). Throws std::invalid_argument for a format multi_report_format() refuses.
std::string render_reports(std::string_view format, const std::vector<ReportPart>& parts,
                           const TextOptions& text);

/// The JSON report, schema_version 1 (docs/report.schema.json).
nlohmann::json json_report(const std::vector<Result>& results, const ReportContext& ctx);

/// The text of the JSON reports of `parts`, byte for byte `dump_json(json_report(...), 2)` of
/// the one part's report (or of the array of the parts' reports when `as_array`), plus a
/// newline, written without building the tree (issue 33).
std::string json_report_text(const std::vector<ReportPart>& parts, bool as_array);

/// The JUnit XML report (Jenkins/GitLab flavour, written with pugixml): one <testsuite> per
/// rule area inside <testsuites>, one <testcase> per rule; fail is <failure>, error is <error>,
/// skip and waived failures are <skipped>; the full diagnosis (message, evidence with sources,
/// why, fix, sources) is in <system-out>.
std::string junit_report(const std::vector<Result>& results, const ReportContext& ctx);

/// The Prometheus text exposition for node_exporter's textfile collector: a gauge per rule
/// (`halo_doctor_rule_failed{id,severity,area}` and `halo_doctor_rule_status{...,status}`),
/// counts by status, the exit code, the run time, and the key numeric facts in bytes
/// (mem.total_bytes, ttm.pages_limit_bytes, gpu.N.gtt_total_bytes, gpu.N.vram_total_bytes,
/// hsa.gpu.N.coarse_pool_bytes); facts that are not ok are left out, never exported as 0.
std::string prometheus_report(const std::vector<Result>& results, const ReportContext& ctx,
                              const FactSet& facts);

/// The Kubernetes node-problem-detector custom-plugin message: one line of at most
/// kNpdMaxMessage characters ("OK: ..." or the failing rule ids).
std::string npd_report(const std::vector<Result>& results, const ReportContext& ctx);

/// The Markdown report to paste into a GitHub issue (`check --format markdown`): the machine
/// (host, OS, kernel, each GPU with its gfx target and VRAM/GTT, RAM and the TTM pages_limit,
/// ROCm, PyTorch) as a table, the failing and warning findings and those that could not be
/// checked with evidence and fix, the info-level ones by id, then the counts and exit code.
/// Redacted by the one redactor (include/halo/redact.hpp: host and user names, serial numbers,
/// GPU UUIDs, the machine-id, URL credentials), learnt here from the facts alone; `check` passes
/// the one it learnt from the root as well (the overload in redact.hpp). Every string escaped for
/// CommonMark/GFM (src/report/markdown.cpp).
std::string markdown_report(const std::vector<Result>& results, const ReportContext& ctx,
                            const FactSet& facts);

/// node-problem-detector's plugin exit-code contract: 0 OK (nothing failed at or above
/// `fail_on`), 1 problem (such a failure, pending reboot included), 2 unknown (nothing failed but
/// a rule at or above `fail_on` could not be checked).
int npd_exit_code(const std::vector<Result>& results, FailOn fail_on);

/// Longest npd message line, matching the `max_output_length` of the shipped plugin config.
inline constexpr std::size_t kNpdMaxMessage = 80;

/// The text report (docs/halo-doctor.1 REPORT): grouped by area, failures first, each with the
/// facts that decided it (Result::proof; every evidence fact under --verbose) and its fix once;
/// a failure another failing rule `subsumes` is shown under that one, with that rule's fix only;
/// "could not be checked" results as UNKNOWN; then the counts, why the exit code is what it is,
/// and the next step. --quiet: one line per finding. Lines are wrapped to `opt.width`.
std::string text_report(const std::vector<Result>& results, const ReportContext& ctx,
                        const TextOptions& opt);

/// Renders a structured fix as the commands and lines a person would type (used by the text
/// report and `explain`).
std::vector<std::string> render_fix_lines(const nlohmann::json& fix);

/// What the plan report shows: the plan (plan::make_plan), the facts with the derived capacity,
/// the results of the plan rules, and the largest micro-batch and sequence that fit (absent when
/// the capacity is unknown).
struct PlanReportData {
  const plan::Plan& plan;
  const FactSet& facts;
  const std::vector<Result>& results;
  std::optional<plan::Limits> limits;
};

/// The plan's verdict from the result of rule_ids::plan_memory_fit: "fits" (pass), "tight" (a
/// warning), "does not fit" (an error) or "unknown" (not evaluated, or the capacity was unknown).
std::string plan_verdict(const std::vector<Result>& results);

/// `halo-doctor plan` for people: model, settings with their origins, the itemised estimate in
/// GiB, capacity, verdict, limits, the changes that need less, then the text report of `results`.
std::string plan_text_report(const PlanReportData& d, const ReportContext& ctx,
                             const TextOptions& opt);

/// `halo-doctor plan --format json` (docs/plan.schema.json): sizes in bytes; `report` is the
/// check's JSON report of the plan rules.
nlohmann::json plan_json_report(const PlanReportData& d, const ReportContext& ctx);

/// The facts listing for `halo-doctor facts` in text form: key, value, status, source.
std::string text_facts(const FactSet& facts);

/// The rule catalogue for `halo-doctor rules` in text form.
std::string text_catalogue(const RuleSet& rules);

/// The rule catalogue as JSON for `halo-doctor rules --format json`: {"ruleset_version",
/// "ruleset_digest", "rules": [{id, title, area, scope ("host"|"gpu"), severity (the highest of
/// its fail cases), severities, file, line, sources}]}.
nlohmann::json json_catalogue(const RuleSet& rules);

/// What `explain` read on the machine it describes: the facts (of `/`, --root, --facts or
/// --bundle), the run parameters, and the rule's results there (one per GPU for a per-GPU rule).
struct ExplainMachine {
  const FactSet& facts;
  const Params& params;
  std::vector<Result> results;
  std::string where; ///< "/" or the --root/--facts/--bundle path, for the heading
};

/// One rule in full for `halo-doctor explain RULE_ID`. With `machine`, the message and fix
/// templates are filled in with that machine's values where every fact they name was read there
/// (a template naming a fact it lacks is shown as a template), and a section gives the rule's
/// verdict on it: status, message, and the fix for this machine.
std::string text_explain(const Rule& rule, const ExplainMachine* machine = nullptr);

} // namespace halo
