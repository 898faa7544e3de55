// SPDX-License-Identifier: MIT
// halo-doctor rules (the catalogue) and halo-doctor explain RULE_ID.
#include "commands.hpp"
#include "common.hpp"

#include <halo/error.hpp>
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace halo::cli {

Runner add_rules_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto test = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("rules", "Print the rule catalogue: id, severity, area, title");
  sub->add_option("--rules", o->rules_dir, "Load rules from DIR instead of the built-in set");
  sub->add_flag(
      "--test", *test,
      "Run every rule's examples and check that they reach each skip reason and each fail "
      "case; exit 1 when one does not");
  return [sub, o, test]() {
    if (!*sub) return -1;
    const ProbeRegistry reg = builtin_probes();
    o->rule_examples = *test;
    const RuleSet rs = load_rules(*o, reg);
    if (!*test) {
      std::cout << text_catalogue(rs);
      return 0;
    }
    std::size_t examples = 0;
    for (const auto& r : rs.rules)
      examples += r.examples.size();
    const auto failures = check_rule_examples(rs);
    for (const auto& f : failures)
      std::cout << terminal_safe(f.where) << ": " << terminal_safe(f.problem) << "\n";
    std::cout << fmt::format("{}: {} rules, {} examples, {} problems\n",
                             failures.empty() ? "PASS" : "FAIL", rs.rules.size(), examples,
                             failures.size());
    return failures.empty() ? exit_code::ok : exit_code::failed;
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
