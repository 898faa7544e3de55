// halo-doctor facts: every fact with its status and source (text or the JSON that --facts reads).
#include "commands.hpp"
#include "common.hpp"

#include <halo/report.hpp>
#include <halo/sanitize.hpp>
#include <halo/version.hpp>

#include <memory>

namespace halo::cli {

Runner add_facts_command(CLI::App& app) {
  struct Options {
    CommonOptions common;
    std::string format = "text";
    std::string output;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("facts", "Print every fact with its status and source");
  add_probe_options(sub, o->common);
  sub->add_option("--format", o->format, "Output format (json is what check --facts reads)")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_option("-o,--output", o->output, "Write to FILE (atomically) instead of stdout");
  return [sub, o]() {
    if (!*sub) return -1;
    const ProbeRegistry reg = builtin_probes();
    const FactSet facts = gather(o->common, reg);
    write_output(o->output, o->format == "json"
                                ? dump_json(facts_to_json(facts, "halo-doctor", kVersion), 2) + "\n"
                                : text_facts(facts));
    return 0;
  };
}

} // namespace halo::cli
