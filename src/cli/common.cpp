// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <halo/bundle.hpp>
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/plan.hpp>
#include <halo/policy.hpp>
#include <halo/sanitize.hpp>
#include <halo/version.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace halo::cli {

CLI::Validator finite_number() {
  return {[](std::string& s) -> std::string {
            double v = 0;
            const char* end = s.data() + s.size();
            const auto [p, ec] = std::from_chars(s.data(), end, v);
            if (ec != std::errc() || p != end || !std::isfinite(v))
              return fmt::format("'{}' is not a finite number", s);
            return {};
          },
          "FINITE"};
}

void add_probe_options(CLI::App* sub, CommonOptions& o) {
  sub->add_option(
      "--root", o.root,
      "Read the system under DIR instead of / (a fixture, or a host mounted in a container)");
  sub->add_option("--facts", o.facts_file,
                  "Use the facts saved by `halo-doctor facts --format json` instead of probing");
  sub->add_option("--bundle", o.bundle,
                  "Replay a capture bundle written by `halo-doctor capture` (FILE.tar.gz)");
  sub->add_option(
      "--add-facts", o.add_facts,
      "Merge facts from FILE (e.g. `halo-doctor bench --json FILE`) into the probed ones");
  sub->add_option("--reserve", o.reserve_gib,
                  "GiB of memory left to the OS when recommending the TTM limit")
      ->check(CLI::Range(0, 4096));
  sub->add_flag("--no-runtime", o.no_runtime, "Do not load ROCr or libdrm (sysfs only)");
  sub->add_option("--hsa-library", o.hsa_library,
                  "ROCr library (libhsa-runtime64.so.1) to load first; with --root DIR, a replay "
                  "library for a fixture (docs/hsa.md)");
  sub->add_option("--host-root", o.host_root,
                  "The host's / as mounted in this container (docker -v /:/host:ro: --host-root "
                  "/host); toolbox and distrobox are found at /run/host without it");
  sub->add_option("--runtime-timeout", o.runtime_timeout_s,
                  "Seconds the ROCr queries may take before they count as hung")
      ->check(finite_number())
      ->check(CLI::Range(0.1, 600.0));
  sub->add_flag("--framework-deep", o.framework_deep,
                "Also ask PyTorch itself: import torch in a child process and query its GPUs "
                "(docs/framework.md)");
  sub->add_option("--python", o.python,
                  "The Python environment to judge: the venv or prefix this interpreter belongs "
                  "to (read without running it), and the interpreter --framework-deep runs "
                  "(default: the active venv or conda environment's, else python3 on PATH)");
  sub->add_option("--framework-timeout", o.framework_timeout_s,
                  "Seconds importing torch and querying the GPUs may take (--framework-deep)")
      ->check(finite_number())
      ->check(CLI::Range(1.0, 600.0));
}

void add_rule_options(CLI::App* sub, CommonOptions& o) {
  sub->add_option("--rules", o.rules_dir, "Load rules from DIR instead of the built-in set");
  sub->add_option("--only", o.only, "Evaluate only these rule ids")->delimiter(',');
  sub->add_option("--skip", o.skip, "Do not evaluate these rule ids")->delimiter(',');
}

ProbeOptions probe_options(const CommonOptions& o) {
  ProbeOptions po;
  po.reserve_gib = o.reserve_gib;
  po.no_runtime = o.no_runtime;
  po.hsa_library = o.hsa_library;
  po.runtime_timeout_s = o.runtime_timeout_s;
  po.host_root = o.host_root;
  po.plan = o.plan;
  po.framework_deep = o.framework_deep;
  po.python = o.python;
  po.framework_timeout_s = o.framework_timeout_s;
  return po;
}

std::string read_file_or_throw(const std::string& path) {
  return read_input_file(path);
}

void require_python_exists(const CommonOptions& o) {
  if (o.python.empty() || !o.bundle.empty() || !o.facts_file.empty()) return;
  std::error_code ec;
  if (std::filesystem::weakly_canonical(o.root, ec) != "/" || ec) return;
  // lstat-free: a dangling link names no interpreter either.
  if (!std::filesystem::exists(o.python, ec))
    throw InputError(fmt::format("--python {}: no such file (give the path of the interpreter "
                                 "whose environment to judge, e.g. ~/venv/bin/python)",
                                 o.python));
  if (std::filesystem::is_directory(o.python, ec))
    throw InputError(fmt::format("--python {}: is a directory, not an interpreter (e.g. {}/bin/"
                                 "python)",
                                 o.python, o.python));
}

FactSet gather(const CommonOptions& o, const ProbeRegistry& reg) {
  require_python_exists(o);
  if (!o.bundle.empty()) {
    if (!o.facts_file.empty()) throw InputError("--bundle and --facts cannot be combined");
    const ExtractedBundle bundle(o.bundle);
    CommonOptions replay = o;
    replay.bundle.clear();
    replay.root = bundle.root().string();
    if (auto rt = bundle.runtime_facts_file(); !rt.empty())
      replay.add_facts.insert(replay.add_facts.begin(), rt);
    return gather(replay, reg);
  }
  const ProbeOptions po = probe_options(o);
  std::error_code ec;
  if (o.facts_file.empty() && !std::filesystem::is_directory(o.root, ec))
    throw InputError(fmt::format("{}: --root is not a directory", o.root));
  const Root root(o.facts_file.empty() ? o.root : std::string("/nonexistent-halo-root"));
  if (!o.host_root.empty() && !std::filesystem::is_directory(o.host_root, ec))
    throw InputError(fmt::format("{}: --host-root is not a directory", o.host_root));
  const HostRoot host = detect_host_root(root, o.host_root);
  const ProbeContext ctx{root, po, &host};
  FactSet facts = o.facts_file.empty()
                      ? reg.collect(ctx)
                      : facts_from_json_text(read_file_or_throw(o.facts_file), o.facts_file);
  for (const auto& f : o.add_facts)
    facts.merge(facts_from_json_text(read_file_or_throw(f), f));
  if (!o.facts_file.empty() || !o.add_facts.empty()) reg.rederive(ctx, facts);
  return facts;
}

std::string unknown_rule_message(const RuleSet& rules, const std::string& id) {
  const auto near = closest_rule_id(rules, id);
  return fmt::format("unknown rule id '{}'{} (see halo-doctor rules)", id,
                     near ? fmt::format("; did you mean '{}'?", *near) : std::string());
}

RuleSet load_rules(const CommonOptions& o, const ProbeRegistry& reg) {
  RuleSet rs = o.rules_dir.empty() ? load_builtin_rules(&reg, o.rule_examples)
                                   : load_rules_dir(o.rules_dir, &reg, o.rule_examples);
  auto check_ids = [&](const std::vector<std::string>& ids, const char* flag) {
    for (const auto& id : ids)
      if (rs.find(id) == nullptr)
        throw InputError(fmt::format("{}: {}", flag, unknown_rule_message(rs, id)));
  };
  check_ids(o.only, "--only");
  check_ids(o.skip, "--skip");
  if (o.only.empty() && o.skip.empty()) return rs;
  std::vector<Rule> kept;
  for (auto& r : rs.rules) {
    const bool in_only =
        o.only.empty() || std::find(o.only.begin(), o.only.end(), r.id) != o.only.end();
    const bool in_skip = std::find(o.skip.begin(), o.skip.end(), r.id) != o.skip.end();
    if (in_only && !in_skip) kept.push_back(std::move(r));
  }
  rs.rules = std::move(kept);
  return rs;
}

Evaluation evaluate_checks(CommonOptions o, const std::string& policy_file, bool reserve_given,
                           const DefaultOnly& default_only) {
  const ProbeRegistry reg = builtin_probes();
  std::optional<Policy> policy;
  std::optional<RuleSet> all;
  auto all_rules = [&]() -> const RuleSet& {
    if (!all) {
      CommonOptions unfiltered = o;
      unfiltered.only.clear();
      unfiltered.skip.clear();
      all = load_rules(unfiltered, reg);
    }
    return *all;
  };
  if (!policy_file.empty()) {
    policy = load_policy_file(policy_file);
    if (policy->reserve_gib && !reserve_given) o.reserve_gib = *policy->reserve_gib;
    check_policy_rule_ids(*policy, all_rules());
  }
  if (o.only.empty() && default_only) {
    o.only = default_only(all_rules(), policy ? &*policy : nullptr);
    // --skip wins over the default selection.
    std::erase_if(o.only, [&](const std::string& id) {
      return std::find(o.skip.begin(), o.skip.end(), id) != o.skip.end();
    });
  }
  Evaluation ev;
  ev.rules = load_rules(o, reg);
  // Without a training run the plan rules would only skip: leave them out of the report.
  if (!o.plan && o.only.empty())
    std::erase_if(ev.rules.rules, [](const Rule& r) { return r.area == plan::kRuleArea; });
  ev.facts = gather(o, reg);
  Params params = rule_params(o);
  if (policy) add_policy_params(*policy, params);
  ev.results = evaluate(ev.rules, ev.facts, params);
  if (policy) apply_policy(*policy, ev.results, today_local_date());
  return ev;
}

ReportContext report_context(const Evaluation& ev, const CommonOptions& o, FailOn fail_on) {
  ReportContext ctx;
  ctx.tool_version = kVersion;
  ctx.hostname = ev.facts.get<std::string>(keys::host_name).value_or("");
  ctx.kernel = ev.facts.get<std::string>(keys::kernel_release).value_or("");
  ctx.os = ev.facts.get<std::string>(keys::os_pretty_name).value_or("");
  ctx.runs_in = ev.facts.get<std::string>(keys::host_runs_in).value_or("");
  if (const Fact* torch = ev.facts.find(keys::framework_torch_version)) {
    auto& py = ctx.python;
    py.judged = true;
    const Fact* site = ev.facts.find(keys::framework_python_env);
    if (torch->ok() && site != nullptr && site->ok()) {
      py.site = ev.facts.get<std::string>(keys::framework_python_env).value_or("");
      py.basis = site->source;
      py.torch = ev.facts.get<std::string>(keys::framework_torch_version).value_or("");
      py.build = ev.facts.get<std::string>(keys::framework_torch_build).value_or("");
      py.hip = ev.facts.get<std::string>(keys::framework_torch_hip_version).value_or("");
      py.rocm = ev.facts.get<std::string>(keys::framework_torch_rocm_version).value_or("");
      py.gfx_targets = ev.facts.get<std::vector<std::string>>(keys::framework_torch_kernel_targets)
                           .value_or(std::vector<std::string>{});
    } else {
      py.basis = torch->reason.empty() ? std::string(to_string(torch->status)) : torch->reason;
    }
  }
  ctx.virtualization = ev.facts.get<std::string>(keys::host_virtualization).value_or("");
  ctx.ruleset_version = ev.rules.version;
  ctx.ruleset_digest = ev.rules.digest;
  ctx.root = !o.bundle.empty() ? o.bundle : o.facts_file.empty() ? o.root : o.facts_file;
  ctx.fail_on = fail_on;
  ctx.exit_code = gate_exit_code(ev.results, fail_on);
  return ctx;
}

FailOn parse_fail_on(const std::string& s) {
  if (s == "info") return FailOn::info;
  if (s == "warning") return FailOn::warning;
  if (s == "never") return FailOn::never;
  return FailOn::error;
}

Params rule_params(const CommonOptions& o) {
  return default_params(o.reserve_gib);
}

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    write_stdout(text);
    return;
  }
  write_output_file(path, text);
}

void write_text_output(const std::string& path, const std::string& text) {
  write_output(path, terminal_safe(text, /*keep_sgr=*/true));
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

} // namespace halo::cli
