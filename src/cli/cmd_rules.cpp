// halo-doctor rules (the catalogue) and halo-doctor explain RULE_ID.
#include "commands.hpp"
#include "common.hpp"

#include <halo/error.hpp>
#include <halo/report.hpp>

#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace halo::cli {

Runner add_rules_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto* sub = app.add_subcommand("rules", "Print the rule catalogue: id, severity, area, title");
  sub->add_option("--rules", o->rules_dir, "Load rules from DIR instead of the built-in set");
  return [sub, o]() {
    if (!*sub) return -1;
    const ProbeRegistry reg = builtin_probes();
    std::cout << text_catalogue(load_rules(*o, reg));
    return 0;
  };
}

Runner add_explain_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto id = std::make_shared<std::string>();
  auto* sub =
      app.add_subcommand("explain", "Explain one rule: why it matters, how to fix it, sources");
  sub->add_option("RULE_ID", *id, "The rule id (see halo-doctor rules)")->required();
  sub->add_option("--rules", o->rules_dir, "Load rules from DIR instead of the built-in set");
  return [sub, o, id]() {
    if (!*sub) return -1;
    const ProbeRegistry reg = builtin_probes();
    const RuleSet rs = load_rules(*o, reg);
    const Rule* r = rs.find(*id);
    if (r == nullptr)
      throw InputError(fmt::format("unknown rule id '{}' (see halo-doctor rules)", *id));
    std::cout << text_explain(*r);
    return 0;
  };
}

} // namespace halo::cli
