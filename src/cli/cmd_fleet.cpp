// SPDX-License-Identifier: MIT
// halo-doctor fleet compare FILE...: which nodes of a lab differ from the others (docs/fleet.md).
// Each FILE is a node's saved facts (`halo-doctor facts --format json`) or capture bundle
// (`halo-doctor capture`, .tar.gz), replayed as `check --facts` / `check --bundle` do.
#include "commands.hpp"
#include "common.hpp"

#include <halo/error.hpp>
#include <halo/fleet.hpp>
#include <halo/rules.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <thread>

namespace halo::cli {
namespace {

struct Options {
  std::vector<std::string> inputs;
  std::string format{to_string(ReportFormat::text)};
  std::string output;
  bool all = false;
};

int run(const Options& o) {
  if (o.inputs.size() < 2)
    throw InputError("fleet compare needs the facts files or bundles of at least two nodes");
  const ProbeRegistry& reg = probe_set();
  // The quantities are data (rules/fleet.json's `compare` list), built into the binary. Each node
  // is read, reduced to its values of them, and let go (issue 35: a fleet of 1,000 8-GPU nodes in
  // bounded memory), on every core the machine has (issue 42: the files are independent).
  const RuleSet rules = load_builtin_rules(nullptr, /*examples=*/false);
  const fleet::Reader reader(reg, rules.fleet_compare);
  const fleet::Comparison c =
      fleet::compare_files(o.inputs, reader, std::max(1U, std::thread::hardware_concurrency()));
  if (o.format == to_string(ReportFormat::json))
    write_output(o.output, dump_json(fleet::comparison_json(c), 2) + "\n");
  else // the fleet report has no colours: every escape sequence in it came from a node's file
    write_output(o.output, terminal_safe(fleet::comparison_text(c, o.all)));
  if (!c.unreadable.empty()) return 2; // bad input, though the others were compared
  return c.error_difference() ? 1 : 0;
}

} // namespace

Runner add_fleet_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("fleet", "Compare the nodes of a fleet (docs/fleet.md)");
  auto* cmp = sub->add_subcommand(
      "compare",
      "Which nodes differ from the others in kernel, driver, ROCm, GPUs, partitions, firmware and "
      "settings, from each node's `facts --format json` file or capture bundle. Exit 0: no node "
      "differs on an error-level quantity; 1: one does; 2: bad input (a node whose file cannot "
      "be replayed is named and the others are still compared)");
  // The options are built only when this command is the one parsed (commands.hpp).
  cmp->preparse_callback([cmp, o](std::size_t) {
    cmp->add_option("FILE", o->inputs, "A node's facts file (JSON) or capture bundle (.tar.gz)")
        ->required();
    cmp->add_option("--format", o->format, "Output format")
        ->check(CLI::IsMember(format_names({ReportFormat::text, ReportFormat::json})));
    cmp->add_option("-o,--output", o->output, "Write the comparison to PATH (atomically)")
        ->option_text("PATH");
    cmp->add_flag("--all", o->all, "Also print the quantities that are the same on every node");
  });
  sub->require_subcommand(1);
  return [cmp, o]() {
    if (!*cmp) return -1;
    return run(*o);
  };
}

} // namespace halo::cli
