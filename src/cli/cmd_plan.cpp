// SPDX-License-Identifier: MIT
// halo-doctor plan: will this training run fit on this machine, and is it configured for its GPU
// (docs/plan.md). The model and training configurations are read first (bad input: exit 2,
// nothing probed); then the machine is probed as by `check`, the plan rules are evaluated, and the
// estimate, the verdict and the findings are reported.
#include "commands.hpp"
#include "common.hpp"

#include <halo/checks.hpp>
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/plan.hpp>
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <system_error>

namespace halo::cli {

void add_plan_options(CLI::App* sub, PlanOptions& o) {
  sub->add_option("--model", o.model,
                  "The model: a Hugging Face model directory, its config.json, or a hub cache "
                  "directory (models--ORG--NAME); read locally, never downloaded")
      ->option_text("DIR|FILE");
  sub->add_option("--config", o.configs,
                  "Training configuration: TrainingArguments JSON (args.json), axolotl YAML, "
                  "torchtune YAML or accelerate YAML; repeatable, later files win")
      ->option_text("FILE ...");
  sub->add_option("--method", o.method, "Fine-tuning method (overrides the configuration)")
      ->check(CLI::IsMember({"full", "lora", "qlora"}));
  sub->add_option("--batch", o.batch, "Micro-batch: sequences per GPU per step")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->option_text("SEQUENCES");
  sub->add_option("--seq", o.seq, "Tokens per sequence")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 26))
      ->option_text("TOKENS");
  sub->add_option("--grad-accum", o.grad_accum, "Gradient accumulation steps")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->option_text("STEPS");
  sub->add_option("--gradient-checkpointing", o.checkpointing,
                  "Gradient (activation) checkpointing on or off")
      ->check(CLI::IsMember({"true", "false"}));
  sub->add_option("--optim", o.optim,
                  "Optimizer, as TrainingArguments.optim names it (adamw_torch, adamw_bnb_8bit, "
                  "paged_adamw_8bit, adafactor, sgd, ...)")
      ->option_text("NAME");
  sub->add_option("--lora-r", o.lora_r, "LoRA rank")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16))
      ->option_text("RANK");
  sub->add_option("--load-dtype", o.load_dtype,
                  "The dtype the base model is loaded in (from_pretrained torch_dtype)")
      ->check(CLI::IsMember({"bfloat16", "float16", "float32", "auto"}));
}

std::shared_ptr<const plan::Plan> build_plan(const PlanOptions& o) {
  if (o.model.empty()) {
    if (!o.configs.empty() || !o.method.empty() || (o.batch != 0) || (o.seq != 0) ||
        (o.grad_accum != 0) || !o.checkpointing.empty() || !o.optim.empty() || (o.lora_r != 0) ||
        !o.load_dtype.empty())
      throw InputError("--config and the run's options need --model (the model to train)");
    return nullptr;
  }
  plan::Overrides ov;
  if (o.method == "full") ov.method = plan::Method::full;
  if (o.method == "lora") ov.method = plan::Method::lora;
  if (o.method == "qlora") ov.method = plan::Method::qlora;
  if (o.batch != 0) ov.micro_batch = o.batch;
  if (o.seq != 0) ov.seq_len = o.seq;
  if (o.grad_accum != 0) ov.grad_accum = o.grad_accum;
  if (!o.checkpointing.empty()) ov.gradient_checkpointing = o.checkpointing == "true";
  if (!o.optim.empty()) ov.optim = o.optim;
  if (o.lora_r != 0) ov.lora_r = o.lora_r;
  if (!o.load_dtype.empty()) ov.load_dtype = o.load_dtype;
  return std::make_shared<const plan::Plan>(plan::make_plan(o.model, o.configs, ov));
}

namespace {

struct Options {
  CommonOptions common;
  PlanOptions plan;
  std::string format{to_string(ReportFormat::text)};
  std::string fail_on = "error";
  std::string color = "auto";
  std::string policy_file;
  std::string output;
  bool measure = false;
  bool verbose = false;
  double measure_timeout_s = 600.0;
};

/// --measure runs the training run on the GPU of the machine the doctor runs on, with that
/// machine's interpreter: a --root other than / (a fixture or a mounted system), a --facts file
/// or a --bundle describe another system, and a measurement beside their capacity would judge a
/// run on one machine by another's memory (issue 47 §5). Refused, exit 2, before anything runs.
void refuse_measure_elsewhere(const Options& o) {
  if (!o.measure) return;
  std::string what;
  std::error_code ec;
  if (!o.common.bundle.empty())
    what = "--bundle replays another machine's capture";
  else if (!o.common.facts_file.empty())
    what = "--facts replays facts saved elsewhere";
  else if (!std::filesystem::equivalent(o.common.root, "/", ec))
    what = fmt::format("--root {} describes the system under that directory",
                       terminal_safe(o.common.root));
  if (what.empty()) return;
  throw InputError(fmt::format(
      "--measure runs the training run on this machine's GPU with this machine's Python, which "
      "{} does not describe: the measurement would be judged against another system's memory. "
      "Drop --measure (the estimate alone), or run plan --measure on that machine",
      what));
}

int run(Options& o, const CLI::Option* reserve_flag) {
  refuse_measure_elsewhere(o);
  if (o.plan.model.empty())
    throw InputError("plan needs --model (a model directory or config.json)");
  o.common.probe.plan = build_plan(o.plan);
  if (o.measure) {
    // The run on this machine's GPU with the user's own frameworks (include/halo/plan.hpp
    // plan::measure); it never throws: what could not be measured is a status with its reason.
    require_python_exists(o.common);
    auto measured = std::make_shared<plan::Plan>(*o.common.probe.plan);
    // A progress line per message of the child on a terminal (the run can take minutes), never
    // in a log or a pipe (isatty(3) on stderr); the child's words escaped (halo::one_line), written
    // by the one writer of stderr (halo::write_stderr_text).
    std::function<void(std::string_view)> progress;
    if (::isatty(STDERR_FILENO) == 1)
      progress = [](std::string_view text) {
        write_stderr_text(fmt::format("halo-doctor plan --measure: {}\n", one_line(text)));
      };
    measured->measured =
        plan::measure(*measured, o.common.probe.python, o.measure_timeout_s, progress);
    o.common.probe.plan = measured;
  }
  // The plan rules, unless --only names others.
  const auto plan_rules = [](const RuleSet& rs, const Policy*) {
    std::vector<std::string> ids;
    for (const auto& r : rs.rules)
      if (r.area == plan::kRuleArea) ids.push_back(r.id);
    return ids;
  };
  DoctorOptions d = doctor_options(o.common);
  d.policy_file = o.policy_file;
  d.reserve_given = reserve_flag->count() > 0;
  const Evaluation ev = run_checks(probe_set(), d, plan_rules);
  const plan::Plan& p = *o.common.probe.plan;
  PlanReportData data{p, ev.facts, ev.results, std::nullopt};
  if (auto cap = ev.facts.get_int(keys::plan_capacity_bytes))
    data.limits = plan::find_limits(p, *cap);

  const ReportContext ctx = report_context(ev, d, parse_fail_on(o.fail_on));

  // Strings from the user's files may hold bytes that are not UTF-8: escaped as \xNN
  // (dump_json), as check's reports do, never nlohmann's type_error 316 (exit 70).
  if (o.format == to_string(ReportFormat::json))
    write_output(o.output, dump_json(plan_json_report(data, ctx), 2) + "\n");
  else
    write_text_output(o.output, plan_text_report(data, ctx,
                                                 TextOptions{o.output.empty() && use_color(o.color),
                                                             false, o.verbose}));
  return ctx.exit_code;
}

} // namespace

Runner add_plan_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "plan",
      "Will this training run fit on this machine, and is it configured for its GPU? Reads the "
      "model's config.json and the training configuration, probes the machine, prints the "
      "itemised memory estimate, the verdict (fits, tight, does not fit) and the findings. Exit "
      "codes as for check: 0, 1 (a finding at or above --fail-on), 2 (bad input), 4, 70");
  // The options are built only when this command is the one parsed (commands.hpp).
  sub->preparse_callback([sub, o](std::size_t) {
    add_plan_options(sub, o->plan);
    add_probe_options(sub, o->common);
    add_rule_options(sub, o->common);
    sub->add_option("--format", o->format, "Report format")
        ->check(CLI::IsMember(format_names({ReportFormat::text, ReportFormat::json})));
    sub->add_option("-o,--output", o->output, "Write the report to PATH (atomically)");
    sub->add_option("--fail-on", o->fail_on, "Lowest severity that fails the gate")
        ->check(CLI::IsMember({"error", "warning", "info", "never"}));
    sub->add_option("--color", o->color, "Colour the text report (auto honours NO_COLOR and TTYs)")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    sub->add_option("--policy", o->policy_file, "Site policy FILE (docs/policy.md)");
    sub->add_flag("-v,--verbose", o->verbose,
                  "Also list the rules that passed or were skipped, and why each finding matters "
                  "(as check -v)");
    sub->add_flag("--measure", o->measure,
                  "Also run the training run for a few steps on this machine's GPU with the "
                  "interpreter --python names (random weights, nothing downloaded) and judge the "
                  "fit by the measured peak (this machine: not with --root, --facts or --bundle; "
                  "docs/plan.md)");
    sub->add_option("--measure-timeout", o->measure_timeout_s,
                    "Seconds the measuring child may take before it is killed (--measure)")
        ->check(CLI::Range(5.0, 3600.0));
  });
  return [sub, o]() {
    if (!*sub) return -1;
    return run(*o, sub->get_option("--reserve"));
  };
}

} // namespace halo::cli
