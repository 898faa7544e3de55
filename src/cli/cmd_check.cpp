// SPDX-License-Identifier: MIT
// halo-doctor check: probes, then rules, then the reports; the exit code is the gate.
#include "commands.hpp"
#include "common.hpp"

#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/policy.hpp>
#include <halo/redact.hpp>
#include <halo/report.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

namespace halo::cli {

namespace {
struct CheckOptions {
  CommonOptions common;
  std::string format{to_string(ReportFormat::text)};
  std::vector<std::string> outputs;
  std::string fail_on = "error";
  std::string color = "auto";
  std::string policy_file;
  PlanOptions plan;
  bool quiet = false;
  bool verbose = false;
  /// --python, repeatable here: one report per Python environment, in the order given.
  std::vector<std::string> pythons;
};

/// One report destination: a format and a file, or stdout when `path` is empty.
struct Output {
  std::string format;
  std::string path;
};

bool known_format(std::string_view f) {
  const auto formats = report_formats();
  return std::find(formats.begin(), formats.end(), f) != formats.end();
}

/// Resolves the --output values and --format into destinations. `FORMAT:PATH` writes FORMAT to
/// PATH, `FORMAT:` or `FORMAT:-` writes it to stdout, a bare PATH (or "-") takes --format
/// instead of stdout. When no output names stdout, stdout carries --format. At most one output
/// may be stdout and a file may be named once.
std::vector<Output> resolve_outputs(const CheckOptions& o) {
  std::vector<Output> outs;
  bool stdout_named = false;
  bool bare_file = false;
  for (const auto& spec : o.outputs) {
    Output out;
    const auto colon = spec.find(':');
    if (colon != std::string::npos && known_format(spec.substr(0, colon))) {
      out.format = spec.substr(0, colon);
      out.path = spec.substr(colon + 1);
    } else if (colon != std::string::npos && colon > 0 &&
               spec.find('/') > colon) { // "xml:out.xml": a format prefix we do not know
      throw InputError(fmt::format("--output {}: unknown format '{}' (one of: {})", spec,
                                   spec.substr(0, colon), fmt::join(report_formats(), ", ")));
    } else {
      out.format = o.format;
      out.path = spec;
      if (spec != "-") bare_file = true;
    }
    if (out.path == "-") out.path.clear();
    if (out.path.empty()) {
      if (stdout_named)
        throw InputError(fmt::format("--output {}: only one report can go to stdout", spec));
      stdout_named = true;
    } else {
      for (const auto& prev : outs)
        if (!prev.path.empty() && std::filesystem::weakly_canonical(prev.path) ==
                                      std::filesystem::weakly_canonical(out.path))
          throw InputError(fmt::format("--output {}: {} is already written by another --output",
                                       spec, out.path));
    }
    outs.push_back(std::move(out));
  }
  // The historical `-o FILE` moves the --format report off stdout; FORMAT:PATH adds a report.
  if (!stdout_named && !bare_file) outs.push_back(Output{o.format, ""});
  return outs;
}

/// The format on stdout, if any.
std::optional<std::string> stdout_format(const std::vector<Output>& outs) {
  for (const auto& out : outs)
    if (out.path.empty()) return out.format;
  return std::nullopt;
}

/// The gate of several environments' reports: a failure in any (1) wins over only failures
/// pending a reboot (4), which wins over a pass (0).
int combined_exit_code(const std::vector<int>& codes) {
  if (std::ranges::find(codes, 1) != codes.end()) return 1;
  if (std::ranges::find(codes, 4) != codes.end()) return 4;
  return codes.empty() ? 0 : codes.front();
}

int run(const CheckOptions& opts, const CLI::Option* reserve_flag) {
  const auto started = std::chrono::steady_clock::now();
  CheckOptions o = opts;
  const std::vector<Output> outs = resolve_outputs(o);
  if (o.pythons.size() > 1)
    for (const auto& out : outs)
      if (!multi_report_format(out.format))
        throw InputError(fmt::format(
            "--python is given {} times, but --format {} reports one Python environment: give "
            "--python once per run, or use the text or json format",
            o.pythons.size(), out.format));
  o.common.probe.plan = build_plan(o.plan); // --model: the plan rules join the check

  // One evaluation per Python environment (the framework probe judges the one --python names);
  // without --python, the environment training will see.
  std::vector<std::string> pythons = o.pythons;
  if (pythons.empty()) pythons.emplace_back();
  std::vector<Evaluation> evs;
  std::vector<ReportContext> ctxs;
  evs.reserve(pythons.size());
  ctxs.reserve(pythons.size());
  for (const auto& python : pythons) {
    CommonOptions one = o.common;
    one.probe.python = python;
    DoctorOptions d = doctor_options(one); // refuses a --python that names no file (exit 2)
    d.policy_file = o.policy_file;
    d.reserve_given = reserve_flag->count() > 0;
    evs.push_back(run_checks(probe_set(), d));
    ctxs.push_back(report_context(evs.back(), d, parse_fail_on(o.fail_on)));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto finished = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  std::vector<int> codes;
  for (auto& ctx : ctxs) {
    ctx.duration_seconds = seconds;
    ctx.finished_unix_seconds = finished;
    codes.push_back(ctx.exit_code);
  }

  for (const auto& out : outs) {
    const bool to_stdout = out.path.empty();
    const TextOptions text{to_stdout && use_color(o.color), o.quiet, o.verbose,
                           terminal_width(to_stdout)};
    if (evs.size() == 1 && parse_report_format(out.format) == ReportFormat::markdown) {
      // A report to share learns the identities from the root as `capture` does, so the
      // report and a bundle of the same machine use the same pseudonyms
      // (include/halo/redact.hpp). A facts file or a replayed bundle has only its facts.
      const DoctorOptions d = doctor_options(o.common);
      const bool live_root = d.bundle.empty() && d.facts_file.empty();
      const Root root(live_root ? d.root : std::string("/"));
      const Redactor redactor(live_root ? &root : nullptr, evs[0].facts);
      write_output(out.path, markdown_report(evs[0].results, ctxs[0], evs[0].facts, redactor));
      continue;
    }
    if (evs.size() == 1) {
      write_output(out.path,
                   render_report(out.format, evs[0].results, ctxs[0], evs[0].facts, text));
      continue;
    }
    std::vector<ReportPart> parts;
    for (std::size_t i = 0; i < evs.size(); ++i)
      parts.push_back(ReportPart{evs[i].results, ctxs[i], evs[i].facts});
    write_output(out.path, render_reports(out.format, parts, text));
  }
  // node-problem-detector reads the exit code of its plugin as 0 OK, 1 problem, 2 unknown.
  if (const auto f = stdout_format(outs); f && parse_report_format(*f) == ReportFormat::npd)
    return npd_exit_code(evs[0].results, ctxs[0].fail_on);
  return combined_exit_code(codes);
}

/// check's options, in the order --help lists them, in groups: what to judge, the output, the
/// gate, and the training run that --model adds (plan's options).
void add_options(CLI::App* sub, CheckOptions& o) {
  constexpr const char* kJudge = "What to judge";
  constexpr const char* kOutput = "Output";
  constexpr const char* kGate = "Gate (the exit code)";
  constexpr const char* kRun = "A training run to judge too (as `halo-doctor plan` does)";
  add_probe_options(sub, o.common);
  // check alone takes --python more than once: one report per environment.
  sub->remove_option(sub->get_option("--python"));
  sub->add_option("--python", o.pythons,
                  "The Python environment to judge: the venv or prefix this interpreter belongs "
                  "to (read without running it), and the interpreter --framework-deep runs "
                  "(default: the active venv or conda environment's, else python3 on PATH); "
                  "repeatable: one report per environment (text and json), failing if any fails")
      ->allow_extra_args(false)
      ->option_text("PATH ...");
  add_rule_options(sub, o.common);
  for (CLI::Option* opt : sub->get_options())
    if (opt->get_name() != "--help") opt->group(kJudge);
  sub->add_option("--format", o.format, "Report format on stdout (default text)")
      ->check(CLI::IsMember(report_formats()))
      ->option_text(fmt::format("{}", fmt::join(report_formats(), "|")))
      ->group(kOutput);
  sub->add_option("-o,--output", o.outputs,
                  "Also write FORMAT to PATH (atomically) as FORMAT:PATH, repeatable; FORMAT: or "
                  "FORMAT:- puts that report on stdout instead of --format (one stdout report at "
                  "most); a bare PATH writes --format there instead of stdout")
      ->allow_extra_args(false)
      ->option_text("[FORMAT:]PATH ...")
      ->group(kOutput);
  sub->add_option("--fail-on", o.fail_on,
                  "Lowest severity that fails the gate (exit 1; default error)")
      ->check(CLI::IsMember({"error", "warning", "info", "never"}))
      ->option_text("error|warning|info|never")
      ->group(kGate);
  sub->add_option("--color", o.color,
                  "Colour the text report (default auto: a terminal, unless NO_COLOR is set)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->option_text("auto|always|never")
      ->group(kOutput);
  sub->add_option("--policy", o.policy_file,
                  "Site policy FILE (JSON, docs/policy.md): thresholds, severity overrides, "
                  "skipped rules, waivers")
      ->option_text("FILE")
      ->group(kGate);
  const std::size_t before = sub->get_options().size();
  add_plan_options(sub, o.plan);
  const auto all = sub->get_options();
  for (std::size_t i = before; i < all.size(); ++i)
    all[i]->group(kRun);
  sub->add_flag("-q,--quiet", o.quiet, "One line per finding, then the summary and the next step")
      ->group(kOutput);
  sub->add_flag("-v,--verbose", o.verbose,
                "Also every passing and skipped rule, every fact each rule read, why "
                "it matters and its sources")
      ->group(kOutput);
}
} // namespace

Runner add_check_command(CLI::App& app) {
  auto o = std::make_shared<CheckOptions>();
  auto* sub = app.add_subcommand(
      "check",
      "Probe this machine, evaluate the rules and report. Exit 0: nothing failed at or above "
      "--fail-on; 1: a failure; 2: usage or input error; 4: only failures pending a reboot; 70: "
      "internal error or a report that could not be written. With --format npd "
      "(node-problem-detector): 0 OK, 1 problem, 2 unknown");
  // The options are built only when `check` is the command parsed (commands.hpp).
  sub->preparse_callback([sub, o](std::size_t) { add_options(sub, *o); });
  return [sub, o]() {
    if (!*sub) return -1;
    try {
      return run(*o, sub->get_option("--reserve"));
    } catch (const std::exception& e) {
      // node-problem-detector needs its one line and "unknown" whatever went wrong.
      if (parse_report_format(o->format) != ReportFormat::npd) throw;
      spdlog::error("{}", e.what());
      write_stdout_text("halo-doctor could not run: see the node's journal\n");
      return 2;
    }
  };
}

} // namespace halo::cli
