// SPDX-License-Identifier: MIT
// halo-doctor slurm health-check | prolog | epilog: the check, bounded in time, then drain or
// resume the node through scontrol (docs/slurm.md). The decision is src/slurm (halo/slurm.hpp).
#include "commands.hpp"
#include "common.hpp"

#include <halo/child.hpp>
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/report.hpp>
#include <halo/sanitize.hpp>
#include <halo/slurm.hpp>
#include <halo/version.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>

namespace halo::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct SlurmOptions {
  slurm::Mode mode = slurm::Mode::health_check;
  CommonOptions common;
  std::string fail_on = "error";
  std::string policy_file;
  std::string node;
  std::string report_dir = "/var/log/halo-doctor";
  std::string scontrol = "scontrol";
  std::string slurm_conf;
  double timeout_s = 45.0;
  double scontrol_timeout_s = 5.0;
  std::string pending_reboot = "drain";
  bool drain_on_internal_error = false;
  bool dry_run = false;
  bool no_syslog = false;
  std::size_t reason_max = slurm::kDefaultReasonMax;
};

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0));
}

/// What the forked check sends back: the verdict, the reports, or why it could not run.
struct CheckOutcome {
  slurm::Verdict verdict;
  std::string text_report;
  std::string json_report;
  std::vector<std::string> failure_lines; ///< "rule-id: message" per failing result, for syslog
};

/// The body of the check child: the whole `check` pipeline; writes one JSON line to `fd`.
void check_child(const SlurmOptions& o, bool reserve_given, int fd) {
  nlohmann::json out;
  try {
    const bool job = o.mode != slurm::Mode::health_check;
    DefaultOnly default_only;
    if (job) {
      default_only = [mode = o.mode](const RuleSet& all, const Policy* policy) {
        const auto& chosen = policy == nullptr             ? std::nullopt
                             : mode == slurm::Mode::prolog ? policy->slurm_prolog_rules
                                                           : policy->slurm_epilog_rules;
        std::vector<std::string> ids;
        if (chosen) {
          ids = *chosen;
        } else {
          for (const auto& r : all.rules)
            if (r.volatile_verdict) ids.push_back(r.id);
        }
        // An empty --only means every rule: an empty selection must not turn into that.
        if (ids.empty())
          throw InputError(fmt::format(
              "slurm {}: no rule to evaluate (no rule is \"volatile\" and the policy names none "
              "in slurm.{}); name them with --only",
              slurm::to_string(mode), slurm::to_string(mode)));
        return ids;
      };
    }
    DoctorOptions d = doctor_options(o.common);
    d.policy_file = o.policy_file;
    d.reserve_given = reserve_given;
    const Evaluation ev = run_checks(probe_set(), d, default_only);
    const FailOn fail_on = parse_fail_on(o.fail_on);
    ReportContext ctx;
    ctx.tool_version = kVersion;
    ctx.hostname = ev.facts.get<std::string>(keys::host_name).value_or("");
    ctx.kernel = ev.facts.get<std::string>(keys::kernel_release).value_or("");
    ctx.os = ev.facts.get<std::string>(keys::os_pretty_name).value_or("");
    ctx.ruleset_version = ev.rules.version;
    ctx.ruleset_digest = ev.rules.digest;
    ctx.root = o.common.root;
    ctx.fail_on = fail_on;
    ctx.exit_code = gate_exit_code(ev.results, fail_on);
    ctx.finished_unix_seconds = std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    const slurm::Verdict v = slurm::verdict_from_results(ev.results, fail_on);
    out["failed"] = v.failed;
    out["pending"] = v.pending;
    out["cleared"] = v.cleared;
    // Every rule evaluated: a health check (no default_only) without --only or --skip.
    out["complete"] = !job && d.only.empty() && d.skip.empty();
    nlohmann::json incomplete = nlohmann::json::array();
    for (const auto& p : incomplete_probes(ev.facts))
      incomplete.push_back({{"id", p.id}, {"reason", p.reason}});
    out["incomplete"] = incomplete;
    std::vector<std::string> lines;
    for (const auto& r : ev.results)
      if (r.status == Outcome::fail && !r.waived())
        lines.push_back(fmt::format("{}: {}", r.id, r.message));
    out["failure_lines"] = lines;
    out["text"] =
        render_report(to_string(ReportFormat::text), ev.results, ctx, ev.facts, TextOptions{});
    out["json"] =
        render_report(to_string(ReportFormat::json), ev.results, ctx, ev.facts, TextOptions{});
  } catch (const InputError& e) {
    out = {{"input_error", e.what()}};
  } catch (const std::exception& e) {
    out = {{"internal_error", e.what()}};
  }
  child::write_all(fd, dump_json(out) + "\n");
}

/// Runs the check in a child process with the time limit `budget`: a probe stuck in the kernel
/// cannot hold the run past slurmd's limit.
CheckOutcome run_check(const SlurmOptions& o, bool reserve_given, double budget_s) {
  CheckOutcome res;
  child::Limits limits;
  limits.time_limit = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(budget_s > 0 ? std::min(budget_s, 86400.0) : 0.0));
  limits.max_output_bytes = std::size_t{8} << 20;
  limits.on_overflow = child::Overflow::kill;
  const child::Result run =
      child::run_function([&](int fd) { check_child(o, reserve_given, fd); }, limits);
  const std::vector<std::string> lines = child::complete_lines(run.out);
  auto internal = [&](std::string phrase, std::string detail) {
    res.verdict.internal_error = std::move(phrase);
    res.verdict.internal_detail = std::move(detail);
    return res;
  };
  if (run.end != child::End::exited || lines.empty())
    return internal(run.end == child::End::timed_out ? "timed out" : "crashed",
                    fmt::format("the check {}", child::describe_end(run, budget_s)));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(lines.front());
  } catch (const nlohmann::json::exception& e) {
    return internal("crashed", fmt::format("the check sent an unreadable answer: {}", e.what()));
  }
  if (j.contains("input_error"))
    return internal("policy or rules error", j["input_error"].get<std::string>());
  if (j.contains("internal_error"))
    return internal("internal error", j["internal_error"].get<std::string>());
  res.verdict.failed = j.value("failed", std::vector<std::string>{});
  res.verdict.pending = j.value("pending", std::vector<std::string>{});
  res.verdict.cleared = j.value("cleared", std::vector<std::string>{});
  res.verdict.complete = j.value("complete", false);
  res.text_report = j.value("text", "");
  res.json_report = j.value("json", "");
  res.failure_lines = j.value("failure_lines", std::vector<std::string>{});
  std::vector<std::string> incomplete;
  for (const auto& p : j.value("incomplete", nlohmann::json::array()))
    incomplete.push_back(fmt::format("probe {}: {}", p.value("id", "?"), p.value("reason", "")));
  if (!incomplete.empty()) {
    res.verdict.internal_error = "a probe did not finish";
    res.verdict.internal_detail = fmt::format("{}", fmt::join(incomplete, "; "));
  }
  return res;
}

class Log {
public:
  explicit Log(bool use_syslog) : syslog_(use_syslog) {
    if (syslog_) ::openlog("halo-doctor", LOG_PID, LOG_DAEMON);
  }
  ~Log() {
    if (syslog_) ::closelog();
  }
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;
  Log(Log&&) = delete;
  Log& operator=(Log&&) = delete;
  /// To syslog (the journal reads /dev/log), and to stderr with --debug only: slurmd logs a
  /// failing program's output (stdout and stderr) in slurmd.log, where the one summary line on
  /// stdout is what belongs.
  void write(int priority, const std::string& line) const {
    if (syslog_) ::syslog(priority, "%s", line.c_str());
    spdlog::debug("{}", line);
  }

private:
  bool syslog_;
};

std::string short_hostname() {
  std::array<char, 256> buf = {};
  if (::gethostname(buf.data(), buf.size() - 1) != 0) return {};
  std::string h(buf.data());
  return h.substr(0, h.find('.'));
}

/// Time left before `deadline`, at most `cap`.
std::chrono::milliseconds left(Clock::time_point deadline, double cap_s) {
  const auto rest = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(std::chrono::milliseconds(0), std::min(rest, ms(cap_s)));
}

int run(const SlurmOptions& opts, bool reserve_given, bool runtime_timeout_given) {
  const auto started = Clock::now();
  SlurmOptions o = opts;
  const Clock::time_point deadline = started + ms(o.timeout_s);
  const Log log(!o.no_syslog);
  const std::string mode(slurm::to_string(o.mode));

  // The time plan: the check gets what two scontrol calls leave, and ROCr's child fits in it.
  const double check_budget = o.timeout_s - 2 * o.scontrol_timeout_s;
  if (check_budget < 1.0)
    throw InputError(fmt::format("--timeout {:g} s leaves no time for the check after two scontrol "
                                 "calls of --scontrol-timeout {:g} s",
                                 o.timeout_s, o.scontrol_timeout_s));
  if (o.common.probe.runtime_timeout_s > check_budget * 0.8) {
    if (runtime_timeout_given)
      spdlog::warn("--runtime-timeout {:g} s does not fit in --timeout {:g} s; using {:g} s",
                   o.common.probe.runtime_timeout_s, o.timeout_s, check_budget * 0.8);
    o.common.probe.runtime_timeout_s = check_budget * 0.8;
  }
  std::map<std::string, std::string> env;
  if (!o.slurm_conf.empty()) env["SLURM_CONF"] = o.slurm_conf;

  CheckOutcome check = run_check(o, reserve_given, check_budget);

  // The full report: a file per mode under --report-dir, and the failures in the journal.
  if (!o.report_dir.empty() && !check.text_report.empty()) {
    try {
      std::filesystem::create_directories(o.report_dir);
      write_output(fmt::format("{}/slurm-{}.txt", o.report_dir, mode), check.text_report);
      write_output(fmt::format("{}/slurm-{}.json", o.report_dir, mode), check.json_report);
    } catch (const std::exception& e) {
      log.write(LOG_WARNING, fmt::format("{}: the report could not be written to {}: {}", mode,
                                         o.report_dir, e.what()));
    }
  }
  for (const auto& line : check.failure_lines)
    log.write(LOG_WARNING, fmt::format("{}: {}", mode, line));
  if (!check.verdict.internal_error.empty())
    log.write(LOG_ERR, fmt::format("{}: could not check the node ({}): {}", mode,
                                   check.verdict.internal_error, check.verdict.internal_detail));

  // The node: --node, SLURMD_NODENAME (slurmd sets it for HealthCheckProgram, Prolog and Epilog:
  // slurm.conf(5) and src/slurmd/slurmd/slurmd.c run_script_health_check), else the node slurm.conf
  // maps this host to, else `hostname -s`.
  std::string node_name = o.node;
  if (node_name.empty())
    if (const char* n = std::getenv("SLURMD_NODENAME"); n != nullptr) node_name = n;
  std::string scontrol_error;
  if (node_name.empty()) {
    const std::string host = short_hostname();
    const auto all = slurm::run_bounded({o.scontrol, "-o", "show", "node"}, env,
                                        left(deadline, o.scontrol_timeout_s));
    if (all.ok())
      node_name = slurm::node_for_host(slurm::parse_show_node(all.output), host).value_or(host);
    else
      node_name = host;
  }

  std::optional<slurm::Node> node;
  const auto shown = slurm::run_bounded({o.scontrol, "-o", "show", "node", node_name}, env,
                                        left(deadline, o.scontrol_timeout_s));
  if (shown.ok()) {
    for (auto& n : slurm::parse_show_node(shown.output))
      if (n.name == node_name) node = std::move(n);
    if (!node) scontrol_error = fmt::format("scontrol does not list node {}", node_name);
  } else {
    scontrol_error =
        !shown.error.empty()
            ? shown.error
            : fmt::format("scontrol -o show node {} failed (status {}): {}", node_name,
                          shown.exit_code, shown.output.substr(0, shown.output.find('\n')));
  }
  if (!scontrol_error.empty())
    log.write(LOG_ERR, fmt::format("{}: cannot read node {}: {}", mode, node_name, scontrol_error));

  slurm::Settings settings;
  settings.mode = o.mode;
  settings.pending_reboot =
      o.pending_reboot == "leave" ? slurm::PendingReboot::leave : slurm::PendingReboot::drain;
  settings.drain_on_internal_error = o.drain_on_internal_error;
  settings.reason_max = o.reason_max;
  slurm::Decision d = slurm::decide(check.verdict, node, settings);

  std::vector<std::string> update;
  if (d.action == slurm::Action::drain)
    update = {o.scontrol, "update", "nodename=" + node_name, "state=drain", "reason=" + d.reason};
  else if (d.action == slurm::Action::resume)
    update = {o.scontrol, "update", "nodename=" + node_name, "state=resume"};
  if (!update.empty() && o.dry_run) {
    d.summary += fmt::format(" (dry run: not running {})", fmt::join(update, " "));
  } else if (!update.empty()) {
    const auto r = slurm::run_bounded(update, env, left(deadline, o.scontrol_timeout_s));
    if (!r.ok()) {
      const std::string why =
          !r.error.empty()
              ? r.error
              : fmt::format("status {}: {}", r.exit_code, r.output.substr(0, r.output.find('\n')));
      d.summary += fmt::format("; scontrol update failed: {}", why);
      if (o.mode == slurm::Mode::health_check) d.exit_code = exit_code::internal;
    }
  }
  const double took = std::chrono::duration<double>(Clock::now() - started).count();
  std::string line = fmt::format("halo-doctor slurm {}: {} ({:.1f} s, exit {})", mode, d.summary,
                                 took, d.exit_code);
  if (!check.verdict.internal_detail.empty())
    line += fmt::format(": {}", check.verdict.internal_detail);
  if (!scontrol_error.empty()) line += fmt::format(": {}", scontrol_error);
  log.write(d.exit_code == 0 ? LOG_INFO : LOG_WARNING, line);
  write_stdout_text(line + "\n");
  return d.exit_code;
}

Runner add_mode(CLI::App* slurm, slurm::Mode mode, const char* help, double timeout,
                double scontrol_timeout, double runtime_timeout) {
  auto o = std::make_shared<SlurmOptions>();
  o->mode = mode;
  o->timeout_s = timeout;
  o->scontrol_timeout_s = scontrol_timeout;
  o->common.probe.runtime_timeout_s = runtime_timeout;
  auto* sub = slurm->add_subcommand(std::string(slurm::to_string(mode)), help);
  // The options are built only when this command is the one parsed (commands.hpp).
  sub->preparse_callback([sub, o](std::size_t) {
    add_probe_options(sub, o->common);
    add_rule_options(sub, o->common);
    sub->add_option("--policy", o->policy_file, "Site policy FILE (docs/policy.md)")
        ->option_text("FILE");
    sub->add_option("--fail-on", o->fail_on, "Lowest severity that drains the node")
        ->check(CLI::IsMember({"error", "warning", "info", "never"}));
    sub->add_option("--node", o->node,
                    "Slurm node name (default: $SLURMD_NODENAME, else the node whose NodeName or "
                    "NodeHostName is this host's short name, else `hostname -s`)")
        ->option_text("NAME");
    sub->add_option("--report-dir", o->report_dir,
                    "Write the full report to DIR/slurm-MODE.txt and .json (\"\": none)")
        ->capture_default_str()
        ->option_text("DIR");
    sub->add_option("--scontrol", o->scontrol, "scontrol program (a path, or a name in $PATH)")
        ->capture_default_str()
        ->option_text("PATH");
    sub->add_option("--slurm-conf", o->slurm_conf,
                    "slurm.conf for scontrol (sets SLURM_CONF; HealthCheckProgram runs with an "
                    "empty environment)")
        ->option_text("FILE");
    sub->add_option("--timeout", o->timeout_s,
                    "Seconds the whole run may take, scontrol included (slurmd kills a "
                    "HealthCheckProgram after 60 s)")
        ->check(CLI::Range(2.0, 3600.0))
        ->capture_default_str()
        ->option_text("SECONDS");
    sub->add_option("--scontrol-timeout", o->scontrol_timeout_s,
                    "Seconds one scontrol call may take")
        ->check(CLI::Range(0.1, 600.0))
        ->capture_default_str()
        ->option_text("SECONDS");
    sub->add_option("--pending-reboot", o->pending_reboot,
                    "Failures that wait only for a reboot: drain the node with a reboot reason, or "
                    "leave it")
        ->check(CLI::IsMember({"drain", "leave"}))
        ->capture_default_str();
    sub->add_flag("--drain-on-internal-error", o->drain_on_internal_error,
                  "Drain the node when the doctor cannot judge it (bad policy, a hung runtime "
                  "probe, the check past its time); default: log it and leave the node as it is");
    sub->add_option("--reason-max", o->reason_max, "Longest drain reason, in characters")
        ->check(CLI::Range(20, 1000))
        ->capture_default_str()
        ->option_text("CHARACTERS");
    sub->add_flag("--dry-run", o->dry_run, "Read the node's state but do not change it");
    sub->add_flag("--no-syslog", o->no_syslog, "Do not log to syslog (the journal)");
  });
  return [sub, o]() {
    if (!*sub) return -1;
    return run(*o, sub->get_option("--reserve")->count() > 0,
               sub->get_option("--runtime-timeout")->count() > 0);
  };
}

} // namespace

Runner add_slurm_command(CLI::App& app) {
  auto* slurm = app.add_subcommand(
      "slurm",
      "Run as Slurm's HealthCheckProgram, Prolog or Epilog: check this node, drain it with "
      "a reason naming the failing rules, resume it when halo-doctor drained it and it is "
      "healthy again (docs/slurm.md)");
  slurm->require_subcommand(1);
  std::vector<Runner> modes = {
      add_mode(slurm, slurm::Mode::health_check,
               "HealthCheckProgram: every rule; exit 0 healthy, 1 drained for failures, 4 reboot "
               "pending, 70 could not check",
               45.0, 5.0, 10.0),
      add_mode(slurm, slurm::Mode::prolog,
               "Prolog: the volatile rules (or the policy's slurm.prolog); exit non-zero keeps the "
               "job off the node",
               9.0, 2.0, 4.0),
      add_mode(slurm, slurm::Mode::epilog,
               "Epilog: the volatile rules (or the policy's slurm.epilog) after the job; exit "
               "non-zero when the node was drained",
               9.0, 2.0, 4.0),
  };
  return [slurm, modes]() {
    if (!*slurm) return -1;
    for (const auto& m : modes) {
      const int rc = m();
      if (rc >= 0) return rc;
    }
    return -1;
  };
}

} // namespace halo::cli
