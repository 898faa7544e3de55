// SPDX-License-Identifier: MIT
// The doctor's pipeline: facts -> derivations -> rules -> policy -> report context
// (include/halo/doctor.hpp).
#include <halo/bundle.hpp>
#include <halo/doctor.hpp>
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/plan.hpp>
#include <halo/policy.hpp>
#include <halo/version.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace halo {

FactSet gather_facts(const DoctorOptions& o, const ProbeRegistry& registry) {
  if (!o.bundle.empty()) {
    if (!o.facts_file.empty()) throw InputError("--bundle and --facts cannot be combined");
    const ExtractedBundle bundle(o.bundle);
    DoctorOptions replay = o;
    replay.bundle.clear();
    replay.root = bundle.root().string();
    // The runtime facts are read through the bundle's Root (RESOLVE_IN_ROOT), never by path.
    const auto rt = bundle.runtime_facts_text(kMaxInputBytes);
    if (!rt) return gather_facts(replay, registry);
    const Root root(replay.root);
    const HostRoot host = detect_host_root(root, replay.probe.host_root);
    const ProbeContext ctx{root, replay.probe, &host};
    FactSet facts = registry.collect(ctx);
    facts.merge(facts_from_json_text(*rt, o.bundle + ":" + kBundleRuntimeFacts));
    for (const auto& f : o.add_facts)
      facts.merge(facts_from_json_text(read_input_file(f), f));
    registry.rederive(replay.probe, facts);
    return facts;
  }
  std::error_code ec;
  if (o.facts_file.empty() && !std::filesystem::is_directory(o.root, ec))
    throw InputError(fmt::format("{}: --root is not a directory", o.root));
  if (!o.probe.host_root.empty() && !std::filesystem::is_directory(o.probe.host_root, ec))
    throw InputError(fmt::format("{}: --host-root is not a directory", o.probe.host_root));
  if (!o.facts_file.empty()) {
    FactSet facts = facts_from_json_text(read_input_file(o.facts_file), o.facts_file);
    for (const auto& f : o.add_facts)
      facts.merge(facts_from_json_text(read_input_file(f), f));
    // Facts replayed from a file read no machine: only the derivations run on them again, and
    // they get the options alone (DeriveContext has no Root).
    registry.rederive(o.probe, facts);
    return facts;
  }
  const Root root(o.root);
  const HostRoot host = detect_host_root(root, o.probe.host_root);
  const ProbeContext ctx{root, o.probe, &host};
  FactSet facts = registry.collect(ctx);
  for (const auto& f : o.add_facts)
    facts.merge(facts_from_json_text(read_input_file(f), f));
  if (!o.add_facts.empty()) registry.rederive(o.probe, facts);
  return facts;
}

std::string unknown_rule_message(const RuleSet& rules, const std::string& id) {
  const auto near = closest_rule_id(rules, id);
  return fmt::format("unknown rule id '{}'{} (see halo-doctor rules)", id,
                     near ? fmt::format("; did you mean '{}'?", *near) : std::string());
}

RuleSet load_rule_set(const DoctorOptions& o, const ProbeRegistry& registry) {
  RuleSet rs = o.rules_dir.empty() ? load_builtin_rules(&registry, o.rule_examples)
                                   : load_rules_dir(o.rules_dir, &registry, o.rule_examples);
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

Params rule_params(const DoctorOptions& o) {
  return default_params(o.probe.reserve_gib);
}

Evaluation run_checks(const ProbeRegistry& probes, DoctorOptions o,
                      const DefaultOnly& default_only) {
  std::optional<Policy> policy;
  std::optional<RuleSet> all;
  auto all_rules = [&]() -> const RuleSet& {
    if (!all) {
      DoctorOptions unfiltered = o;
      unfiltered.only.clear();
      unfiltered.skip.clear();
      all = load_rule_set(unfiltered, probes);
    }
    return *all;
  };
  if (!o.policy_file.empty()) {
    policy = load_policy_file(o.policy_file);
    if (policy->reserve_gib && !o.reserve_given) o.probe.reserve_gib = *policy->reserve_gib;
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
  ev.rules = load_rule_set(o, probes);
  // Without a training run the plan rules would only skip: leave them out of the report.
  if (!o.probe.plan && o.only.empty())
    std::erase_if(ev.rules.rules, [](const Rule& r) { return r.area == plan::kRuleArea; });
  ev.facts = gather_facts(o, probes);
  Params params = rule_params(o);
  if (policy) add_policy_params(*policy, params);
  ev.results = evaluate(ev.rules, ev.facts, params);
  if (policy) apply_policy(*policy, ev.results, today_local_date());
  return ev;
}

std::string input_name(const DoctorOptions& o) {
  return !o.bundle.empty() ? o.bundle : o.facts_file.empty() ? o.root : o.facts_file;
}

ReportContext report_context(const Evaluation& ev, const DoctorOptions& o, FailOn fail_on) {
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
  ctx.root = input_name(o);
  ctx.fail_on = fail_on;
  ctx.exit_code = gate_exit_code(ev.results, fail_on);
  return ctx;
}

} // namespace halo
