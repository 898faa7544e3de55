// SPDX-License-Identifier: MIT
// halo-doctor fleet compare FILE...: which nodes of a lab differ from the others (docs/fleet.md).
// Each FILE is a node's saved facts (`halo-doctor facts --format json`) or capture bundle
// (`halo-doctor capture`, .tar.gz), replayed as `check --facts` / `check --bundle` do.
#include "commands.hpp"
#include "common.hpp"

#include <halo/error.hpp>
#include <halo/fleet.hpp>
#include <halo/rules.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>

namespace halo::cli {
namespace {

struct Options {
  std::vector<std::string> inputs;
  std::string format = "text";
  std::string output;
  bool all = false;
};

bool is_bundle(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.size() > 7 && name.compare(name.size() - 7, 7, ".tar.gz") == 0;
}

int run(const Options& o) {
  if (o.inputs.size() < 2)
    throw InputError("fleet compare needs the facts files or bundles of at least two nodes");
  const ProbeRegistry reg = builtin_probes();
  std::vector<fleet::Node> nodes;
  for (const auto& in : o.inputs) {
    CommonOptions c;
    (is_bundle(in) ? c.bundle : c.facts_file) = in;
    c.no_runtime = true;
    fleet::Node n;
    n.origin = in;
    n.facts = gather(c, reg);
    n.name = n.facts.get<std::string>(keys::host_name).value_or("");
    if (n.name.empty()) n.name = std::filesystem::path(in).filename().string();
    nodes.push_back(std::move(n));
  }
  // Two nodes with the same host name (two captures of one machine) stay apart by file.
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (std::size_t j = i + 1; j < nodes.size(); ++j)
      if (nodes[i].name == nodes[j].name)
        nodes[j].name += " (" + std::filesystem::path(nodes[j].origin).filename().string() + ")";
  // The quantities are data (rules/fleet.json's `compare` list), built into the binary.
  const RuleSet rules = load_builtin_rules(nullptr, /*examples=*/false);
  const fleet::Comparison c = fleet::compare(nodes, rules.fleet_compare);
  write_output(o.output, o.format == "json" ? fleet::comparison_json(c).dump(2) + "\n"
                                            : fleet::comparison_text(c, o.all));
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
      "differs on an error-level quantity; 1: one does; 2: bad input");
  cmp->add_option("FILE", o->inputs, "A node's facts file (JSON) or capture bundle (.tar.gz)")
      ->required();
  cmp->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmp->add_option("-o,--output", o->output, "Write the comparison to PATH (atomically)");
  cmp->add_flag("--all", o->all, "Also print the quantities that are the same on every node");
  sub->require_subcommand(1);
  return [cmp, o]() {
    if (!*cmp) return -1;
    return run(*o);
  };
}

} // namespace halo::cli
