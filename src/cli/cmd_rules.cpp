// SPDX-License-Identifier: MIT
// halo-doctor rules (the catalogue) and halo-doctor explain RULE_ID.
#include "commands.hpp"
#include "common.hpp"

#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <memory>

namespace halo::cli {

Runner add_rules_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto test = std::make_shared<bool>(false);
  auto format = std::make_shared<std::string>(to_string(ReportFormat::text));
  auto* sub = app.add_subcommand("rules", "Print the rule catalogue: id, severity, area, title");
  // The options are built only when this command is the one parsed (commands.hpp).
  sub->preparse_callback([sub, o, test, format](std::size_t) {
    sub->add_option("--rules", o->rules_dir, "Load rules from DIR instead of the built-in set")
        ->option_text("DIR");
    sub->add_option("--format", *format, "Catalogue format")
        ->check(CLI::IsMember(format_names({ReportFormat::text, ReportFormat::json})));
    sub->add_flag(
        "--test", *test,
        "Run every rule's examples and check that they reach each skip reason and each fail "
        "case; exit 1 when one does not");
  });
  return [sub, o, test, format]() {
    if (!*sub) return -1;
    const ProbeRegistry& reg = probe_set();
    o->rule_examples = *test;
    const RuleSet rs = load_rule_set(doctor_options(*o), reg);
    if (!*test) {
      if (*format == to_string(ReportFormat::json))
        write_stdout(dump_json(json_catalogue(rs), 2) + "\n");
      else
        write_stdout_text(text_catalogue(rs));
      return 0;
    }
    std::size_t examples = 0;
    for (const auto& r : rs.rules)
      examples += r.examples.size();
    const auto failures = check_rule_examples(rs);
    for (const auto& f : failures)
      write_stdout_text(terminal_safe(f.where) + ": " + terminal_safe(f.problem) + "\n");
    write_stdout_text(fmt::format("{}: {} rules, {} examples, {} problems\n",
                                  failures.empty() ? "PASS" : "FAIL", rs.rules.size(), examples,
                                  failures.size()));
    return failures.empty() ? exit_code::ok : exit_code::failed;
  };
}

Runner add_explain_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto id = std::make_shared<std::string>();
  auto* sub = app.add_subcommand(
      "explain", "Explain one rule: why it matters, how to fix it, sources, and "
                 "its verdict with this machine's values (or --root/--facts/--bundle)");
  // The options are built only when this command is the one parsed (commands.hpp).
  sub->preparse_callback([sub, o, id](std::size_t) {
    sub->add_option("RULE_ID", *id, "The rule id (see halo-doctor rules)")->required();
    add_probe_options(sub, *o);
    sub->add_option("--rules", o->rules_dir, "Load rules from DIR instead of the built-in set")
        ->option_text("DIR");
  });
  return [sub, o, id]() {
    if (!*sub) return -1;
    const ProbeRegistry& reg = probe_set();
    const DoctorOptions d = doctor_options(*o);
    const RuleSet rs = load_rule_set(d, reg);
    const Rule* r = rs.find(*id);
    if (r == nullptr) throw InputError(unknown_rule_message(rs, *id));
    // The rule judged on the machine (or the --root, --facts, --bundle given), as `check` would.
    const FactSet facts = gather_facts(d, reg);
    const Params params = rule_params(d);
    RuleSet one;
    one.rules.push_back(*r);
    const ExplainMachine machine{facts, params, evaluate(one, facts, params), input_name(d)};
    write_stdout_text(text_explain(*r, &machine));
    return 0;
  };
}

} // namespace halo::cli
