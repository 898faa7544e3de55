// SPDX-License-Identifier: MIT
// halo-doctor facts: every fact with its status and source (text or the JSON that --facts reads).
#include "commands.hpp"
#include "common.hpp"

#include <halo/error.hpp>
#include <halo/report.hpp>
#include <halo/sanitize.hpp>
#include <halo/version.hpp>

#include <memory>

namespace halo::cli {

Runner add_facts_command(CLI::App& app) {
  struct Options {
    CommonOptions common;
    std::string format{to_string(ReportFormat::text)};
    std::string output;
    bool declared = false;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("facts", "Print every fact with its status and source");
  // The options are built only when this command is the one parsed (commands.hpp).
  sub->preparse_callback([sub, o](std::size_t) {
    add_probe_options(sub, o->common);
    sub->add_option("--format", o->format,
                    "Output format (json is what check --facts reads; markdown with --declared)")
        ->check(CLI::IsMember(
            format_names({ReportFormat::text, ReportFormat::json, ReportFormat::markdown})));
    sub->add_flag("--declared", o->declared,
                  "Print the facts the probes declare (key, type, unit, meaning, source) instead "
                  "of probing: markdown is docs/facts.md, json the declarations");
    sub->add_option("-o,--output", o->output, "Write to FILE (atomically) instead of stdout")
        ->option_text("FILE");
  });
  return [sub, o]() {
    if (!*sub) return -1;
    const ProbeRegistry& reg = probe_set();
    if (o->declared) {
      // docs/facts.md is this output (tests/unit/test_fact_declarations.cpp checks it is current).
      write_output(o->output, o->format == to_string(ReportFormat::json)
                                  ? declared_facts_json(reg)
                                  : declared_facts_markdown(reg));
      return 0;
    }
    if (o->format == to_string(ReportFormat::markdown)) {
      throw InputError("--format markdown: only with --declared (the declarations, docs/facts.md)");
    }
    const FactSet facts = gather_facts(doctor_options(o->common), reg);
    write_output(o->output, o->format == to_string(ReportFormat::json)
                                ? dump_json(facts_to_json(facts, "halo-doctor", kVersion), 2) + "\n"
                                : text_facts(facts));
    return 0;
  };
}

} // namespace halo::cli
