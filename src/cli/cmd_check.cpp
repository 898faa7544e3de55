// halo-doctor check: probes, then rules, then the report; the exit code is the gate.
#include "commands.hpp"
#include "common.hpp"

#include <halo/report.hpp>
#include <halo/version.hpp>

#include <memory>

namespace halo::cli {

namespace {
struct CheckOptions {
  CommonOptions common;
  std::string format = "text";
  std::string output;
  std::string fail_on = "error";
  std::string color = "auto";
  bool quiet = false;
  bool verbose = false;
};

FailOn parse_fail_on(const std::string& s) {
  if (s == "info") return FailOn::info;
  if (s == "warning") return FailOn::warning;
  if (s == "never") return FailOn::never;
  return FailOn::error;
}

int run(const CheckOptions& o) {
  const ProbeRegistry reg = builtin_probes();
  const RuleSet rules = load_rules(o.common, reg);
  const FactSet facts = gather(o.common, reg);
  const auto results = evaluate(rules, facts, rule_params(o.common));
  ReportContext ctx;
  ctx.tool_version = kVersion;
  if (o.common.facts_file.empty()) {
    const Root root(o.common.root);
    auto host = root.read_trimmed("/proc/sys/kernel/hostname");
    if (host.ok()) ctx.hostname = host.text;
  } else {
    ctx.hostname = "(replayed facts)";
  }
  ctx.kernel = facts.get<std::string>("kernel.release").value_or("");
  ctx.os = facts.get<std::string>("os.pretty_name").value_or("");
  ctx.ruleset_version = rules.version;
  ctx.ruleset_digest = rules.digest;
  ctx.root = o.common.facts_file.empty() ? o.common.root : o.common.facts_file;
  ctx.exit_code = gate_exit_code(results, parse_fail_on(o.fail_on));
  const bool to_stdout = o.output.empty() || o.output == "-";
  const TextOptions text{to_stdout && use_color(o.color), o.quiet, o.verbose};
  write_output(o.output, render_report(o.format, results, ctx, facts, text));
  return ctx.exit_code;
}
} // namespace

Runner add_check_command(CLI::App& app) {
  auto o = std::make_shared<CheckOptions>();
  auto* sub = app.add_subcommand(
      "check",
      "Probe this machine, evaluate the rules and report. Exit 0: nothing failed at or above "
      "--fail-on; 1: a failure; 2: usage or input error; 4: only failures pending a reboot; 70: "
      "internal error");
  add_probe_options(sub, o->common);
  add_rule_options(sub, o->common);
  sub->add_option("--format", o->format, "Report format")->check(CLI::IsMember(report_formats()));
  sub->add_option("-o,--output", o->output,
                  "Write the report to FILE (atomically) instead of stdout");
  sub->add_option("--fail-on", o->fail_on, "Lowest severity that fails the gate")
      ->check(CLI::IsMember({"error", "warning", "info", "never"}));
  sub->add_option("--color", o->color, "Colour the text report (auto honours NO_COLOR and TTYs)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  sub->add_flag("-q,--quiet", o->quiet, "Print only failures, errors and the summary");
  sub->add_flag("-v,--verbose", o->verbose, "Also print evidence of passing and skipped rules");
  return [sub, o]() { return *sub ? run(*o) : -1; };
}

} // namespace halo::cli
