// The halo-doctor command line: the only place that knows CLI11. Exceptions stop here.
#include <halo/error.hpp>
#include <halo/probe.hpp>
#include <halo/report.hpp>
#include <halo/rules.hpp>
#include <halo/version.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <unistd.h>

namespace {

struct Options {
  std::string root = "/";
  std::string rules_dir;
  std::string facts_file;
  std::vector<std::string> add_facts;
  std::string format = "text";
  std::string fail_on = "error";
  std::vector<std::string> only;
  std::vector<std::string> skip;
  std::int64_t reserve_gib = 4;
  std::string color = "auto";
  bool quiet = false;
  bool verbose = false;
  bool no_runtime = false;
  std::string output;
};

std::string read_file_or_throw(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw halo::InputError(fmt::format("{}: cannot be read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return ::isatty(STDOUT_FILENO) != 0;
}

halo::FailOn parse_fail_on(const std::string& s) {
  if (s == "info") return halo::FailOn::info;
  if (s == "warning") return halo::FailOn::warning;
  if (s == "never") return halo::FailOn::never;
  return halo::FailOn::error;
}

/// Probes the root (or replays --facts) and merges --add-facts files.
halo::FactSet gather(const Options& o, const halo::ProbeRegistry& reg) {
  halo::ProbeOptions po;
  po.reserve_gib = o.reserve_gib;
  po.no_runtime = o.no_runtime;
  std::error_code ec;
  if (o.facts_file.empty() && !std::filesystem::is_directory(o.root, ec))
    throw halo::InputError(fmt::format("{}: --root is not a directory", o.root));
  halo::Root root(o.root);
  const halo::ProbeContext ctx{root, po};
  halo::FactSet facts;
  if (!o.facts_file.empty()) {
    facts = halo::facts_from_json_text(read_file_or_throw(o.facts_file), o.facts_file);
  } else {
    facts = reg.collect(ctx);
  }
  for (const auto& f : o.add_facts) facts.merge(halo::facts_from_json_text(read_file_or_throw(f), f));
  if (!o.facts_file.empty() || !o.add_facts.empty()) reg.rederive(ctx, facts);
  return facts;
}

halo::RuleSet load_rules(const Options& o, const halo::ProbeRegistry& reg) {
  halo::RuleSet rs = o.rules_dir.empty() ? halo::load_builtin_rules(&reg) : halo::load_rules_dir(o.rules_dir, &reg);
  auto check_ids = [&](const std::vector<std::string>& ids, const char* flag) {
    for (const auto& id : ids)
      if (rs.find(id) == nullptr) throw halo::InputError(fmt::format("{}: unknown rule id '{}' (see halo-doctor rules)", flag, id));
  };
  check_ids(o.only, "--only");
  check_ids(o.skip, "--skip");
  if (!o.only.empty() || !o.skip.empty()) {
    std::vector<halo::Rule> kept;
    for (auto& r : rs.rules) {
      const bool in_only = o.only.empty() || std::find(o.only.begin(), o.only.end(), r.id) != o.only.end();
      const bool in_skip = std::find(o.skip.begin(), o.skip.end(), r.id) != o.skip.end();
      if (in_only && !in_skip) kept.push_back(std::move(r));
    }
    rs.rules = std::move(kept);
  }
  return rs;
}

void emit(const Options& o, const std::string& text) {
  if (o.output.empty() || o.output == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  const std::string tmp = o.output + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw halo::InputError(fmt::format("{}: cannot be written", o.output));
    out << text;
  }
  std::filesystem::rename(tmp, o.output);
}

std::string fact_string(const halo::FactSet& f, const char* key) {
  auto v = f.get<std::string>(key);
  return v.value_or("");
}

int run_check(const Options& o) {
  const halo::ProbeRegistry reg = halo::builtin_probes();
  halo::RuleSet rules = load_rules(o, reg);
  halo::FactSet facts = gather(o, reg);
  halo::Params params{{"reserve_gib", o.reserve_gib}, {"reserve_bytes", o.reserve_gib * 1024LL * 1024 * 1024}};
  auto results = halo::evaluate(rules, facts, params);
  halo::ReportContext ctx;
  ctx.tool_version = halo::kVersion;
  halo::Root root(o.root);
  auto host = root.read_trimmed("/proc/sys/kernel/hostname");
  ctx.hostname = o.facts_file.empty() && host.ok() ? host.text : fact_string(facts, "host.name");
  ctx.kernel = fact_string(facts, "kernel.release");
  ctx.os = fact_string(facts, "os.pretty_name");
  ctx.ruleset_version = rules.version;
  ctx.ruleset_digest = rules.digest;
  ctx.root = o.facts_file.empty() ? o.root : o.facts_file;
  ctx.exit_code = halo::gate_exit_code(results, parse_fail_on(o.fail_on));
  if (o.format == "json") emit(o, halo::json_report(results, ctx).dump(2) + "\n");
  else emit(o, halo::text_report(results, ctx, {use_color(o.color) && o.output.empty(), o.quiet, o.verbose}));
  return ctx.exit_code;
}

int run_facts(const Options& o) {
  const halo::ProbeRegistry reg = halo::builtin_probes();
  halo::FactSet facts = gather(o, reg);
  if (o.format == "json") emit(o, halo::facts_to_json(facts, "halo-doctor", halo::kVersion).dump(2) + "\n");
  else emit(o, halo::text_facts(facts));
  return 0;
}

int run_bench(const std::vector<std::string>& args) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> candidates;
  if (!ec) {
    candidates.push_back(self.parent_path() / "halo-bench");
    candidates.push_back(self.parent_path() / "bench" / "halo-bench");
    candidates.push_back(self.parent_path().parent_path() / "libexec" / "halo-doctor" / "halo-bench");
  }
  for (const auto& c : candidates) {
    if (::access(c.c_str(), X_OK) != 0) continue;
    std::vector<std::string> argv_s{c.string()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(c.c_str(), argv.data());
    spdlog::error("cannot run {}: {}", c.string(), std::strerror(errno));
    return halo::exit_code::internal;
  }
  std::cerr << "halo-doctor bench: the GPU benchmark (halo-bench) is not built.\n"
               "Build it on the GPU machine with its ROCm or CUDA toolchain:\n"
               "  cmake -S . -B build -DHALO_BENCH=hip -DCMAKE_HIP_ARCHITECTURES=gfx1151   # or -DHALO_BENCH=cuda\n"
               "  cmake --build build -j && sudo cmake --install build\n"
               "See docs/bench.md.\n";
  return halo::exit_code::usage;
}

void add_common(CLI::App* sub, Options& o, bool with_rules) {
  sub->add_option("--root", o.root, "Read the system under DIR instead of / (a fixture, or a host mounted in a container)")->check(CLI::ExistingDirectory);
  sub->add_option("--facts", o.facts_file, "Use the facts saved by `halo-doctor facts --format json` instead of probing");
  sub->add_option("--add-facts", o.add_facts, "Merge facts from FILE (e.g. halo-bench --json output) into the probed ones");
  sub->add_option("--reserve", o.reserve_gib, "GiB of memory left to the OS when recommending the TTM limit")->check(CLI::Range(0, 4096));
  sub->add_flag("--no-runtime", o.no_runtime, "Do not load ROCr or libdrm (sysfs only)");
  sub->add_option("--format", o.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  sub->add_option("-o,--output", o.output, "Write the report to FILE (atomically) instead of stdout");
  if (!with_rules) return;
  sub->add_option("--rules", o.rules_dir, "Load rules from DIR instead of the built-in set");
  sub->add_option("--fail-on", o.fail_on, "Lowest severity that fails the gate")->check(CLI::IsMember({"error", "warning", "info", "never"}));
  sub->add_option("--only", o.only, "Evaluate only these rule ids")->delimiter(',');
  sub->add_option("--skip", o.skip, "Do not evaluate these rule ids")->delimiter(',');
  sub->add_option("--color", o.color, "Colour the text report (auto honours NO_COLOR and TTYs)")->check(CLI::IsMember({"auto", "always", "never"}));
  sub->add_flag("-q,--quiet", o.quiet, "Print only failures, errors and the summary");
  sub->add_flag("-v,--verbose", o.verbose, "Also print evidence for passing and skipped rules, and debug logs");
}

} // namespace

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("halo");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("halo-doctor: %l: %v");
  spdlog::set_level(spdlog::level::warn);

  CLI::App app{"halo-doctor: preflight and configuration doctor for AMD GPU (ROCm) machines that train ML models"};
  app.set_version_flag("--version", fmt::format("halo-doctor {} (git {})", halo::kVersion, halo::kGitRevision));
  app.require_subcommand(1);
  Options o;
  auto* check = app.add_subcommand("check", "Probe this machine, evaluate the rules and report (exit 0 ok, 1 failed, 2 usage, 4 pending reboot, 70 internal)");
  add_common(check, o, true);
  auto* facts = app.add_subcommand("facts", "Print every fact with its status and source");
  add_common(facts, o, false);
  auto* rules = app.add_subcommand("rules", "Print the rule catalogue");
  rules->add_option("--rules", o.rules_dir, "Load rules from DIR instead of the built-in set");
  std::string explain_id;
  auto* explain = app.add_subcommand("explain", "Explain one rule: why, fix, sources");
  explain->add_option("RULE_ID", explain_id, "The rule id")->required();
  explain->add_option("--rules", o.rules_dir, "Load rules from DIR instead of the built-in set");
  std::vector<std::string> bench_args;
  auto* bench = app.add_subcommand("bench", "Run the GPU microbenchmark (halo-bench), if it was built");
  bench->allow_extras();
  bench->prefix_command();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return halo::exit_code::usage;
  }
  if (o.verbose) spdlog::set_level(spdlog::level::debug);
  if (o.quiet) spdlog::set_level(spdlog::level::err);

  try {
    if (*check) return run_check(o);
    if (*facts) return run_facts(o);
    const halo::ProbeRegistry reg = halo::builtin_probes();
    if (*rules) {
      std::cout << halo::text_catalogue(load_rules(o, reg));
      return 0;
    }
    if (*explain) {
      auto rs = load_rules(o, reg);
      const halo::Rule* r = rs.find(explain_id);
      if (r == nullptr) throw halo::InputError(fmt::format("unknown rule id '{}' (see halo-doctor rules)", explain_id));
      std::cout << halo::text_explain(*r);
      return 0;
    }
    if (*bench) return run_bench(bench->remaining());
  } catch (const halo::InputError& e) {
    spdlog::error("{}", e.what());
    return halo::exit_code::usage;
  } catch (const std::exception& e) {
    spdlog::critical("internal error: {}", e.what());
    return halo::exit_code::internal;
  }
  return halo::exit_code::usage;
}
