// SPDX-License-Identifier: MIT
// Shared pieces of the halo-doctor subcommands. Only src/cli knows CLI11.
#pragma once

#include <halo/doctor.hpp>
#include <halo/fact.hpp>
#include <halo/plan.hpp>
#include <halo/policy.hpp>
#include <halo/probe.hpp>
#include <halo/report.hpp>
#include <halo/result.hpp>
#include <halo/rules.hpp>

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace halo::cli {

/// Options shared by the commands that probe a machine (check, facts, fix, capture, plan, slurm,
/// rules): the doctor's own options, bound to the command line by add_probe_options and
/// add_rule_options, so each option and its default is written once (include/halo/doctor.hpp,
/// issue 42 item 3). `probe.plan` is set from the training-run options (build_plan).
using CommonOptions = DoctorOptions;

/// The options that describe a training run (`plan`, `check --model`).
struct PlanOptions {
  std::string model;
  std::vector<std::string> configs;
  std::string method;
  std::int64_t batch = 0; ///< 0: not given
  std::int64_t seq = 0;
  std::int64_t grad_accum = 0;
  std::string checkpointing; ///< "true", "false" or empty
  std::string optim;
  std::int64_t lora_r = 0;
  std::string load_dtype;
};

/// Adds --model, --config, --method, --batch, --seq, --grad-accum, --gradient-checkpointing,
/// --optim, --lora-r, --load-dtype (src/cli/cmd_plan.cpp).
void add_plan_options(CLI::App* sub, PlanOptions& o);

/// Reads the model and training configurations into a plan; nullptr without --model. Throws
/// InputError for bad input, or for run options given without --model.
std::shared_ptr<const plan::Plan> build_plan(const PlanOptions& o);

/// A CLI11 validator accepting only a finite decimal number: CLI::Range alone lets "nan" through
/// (every comparison with NaN is false), and "inf" or "1e999" are no durations either.
CLI::Validator finite_number();

/// The built-in probes, built once by the program's top (src/cli/main.cpp, from
/// halo/checks.hpp) and handed to the doctor by every command that reads a machine.
const ProbeRegistry& probe_set();

/// Adds --root, --facts, --add-facts, --reserve, --no-runtime, --hsa-library, --runtime-timeout.
void add_probe_options(CLI::App* sub, CommonOptions& o);
/// Adds --rules, --only, --skip.
void add_rule_options(CLI::App* sub, CommonOptions& o);

/// The doctor's options (include/halo/doctor.hpp) for these command-line options; the policy
/// file and whether --reserve was given are the command's and set by it.
DoctorOptions doctor_options(const CommonOptions& o);

/// Throws InputError (exit 2) naming the path when `--python PATH` names no file on the live
/// system (probing /, not --root, --bundle or --facts: a fixture or bundle records the
/// environment's directories, not its interpreters, and the static probe reads those).
void require_python_exists(const CommonOptions& o);

/// Throws InputError (exit 2) when `--root DIR` names no directory, or one with none of proc,
/// sys and etc (an empty or mistyped directory would otherwise probe as a machine with nothing
/// wrong). Not for --bundle or --facts, whose origin is no root.
void require_machine_root(const CommonOptions& o);

/// "error" | "warning" | "info" | "never" as the gate threshold (anything else: error).
FailOn parse_fail_on(const std::string& s);

/// Writes `text` to PATH (halo::write_output_file: regular files atomically, devices and pipes in
/// place, anything else refused), or to stdout for "" or "-". Throws OutputError when it fails.
void write_output(const std::string& path, const std::string& text);

/// write_output for text a person reads (the text, markdown and plan/fleet reports): the text is
/// made terminal-safe first (halo::terminal_safe, SGR colours kept), so a host name, PRETTY_NAME
/// or config value from a bundle or a model file never reaches a terminal as an escape sequence.
void write_text_output(const std::string& path, const std::string& text);

/// The columns the text report on stdout is wrapped to: the terminal's (ioctl(2) TIOCGWINSZ on
/// stdout, tty_ioctl(4)), else $COLUMNS (POSIX's "user's preferred width in column positions"),
/// else 100; between 40 and 1000. `to_stdout` false (a report written to a file): $COLUMNS or 100.
std::size_t terminal_width(bool to_stdout);

/// True if colour should be used on stdout for --color MODE (auto: a TTY, NO_COLOR unset,
/// TERM not dumb).
bool use_color(const std::string& mode);

} // namespace halo::cli
