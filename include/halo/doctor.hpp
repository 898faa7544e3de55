// SPDX-License-Identifier: MIT
// The doctor's pipeline (issue 33): gather the facts (probe a root, replay a bundle or a facts
// file), derive, load the rules, evaluate them, apply the site policy, and describe the run for
// the reports. Every command that judges a machine calls into it; only src/cli knows the command
// line (src/cli/common.cpp maps its options onto DoctorOptions). Library halo_doctor
// (src/doctor/), above the core (halo_core); it is handed the probes (a ProbeRegistry) by the
// program's top, which alone links halo_checks (issue 42 item 4).
#pragma once

#include <halo/fact.hpp>
#include <halo/probe.hpp>
#include <halo/report.hpp>
#include <halo/result.hpp>
#include <halo/rules.hpp>

#include <functional>
#include <string>
#include <vector>

namespace halo {

struct Policy;

/// What to read and how to judge it. Where the facts come from: `bundle` (a capture bundle,
/// extracted and probed as a root), else `facts_file` (a `facts --format json` file, replayed),
/// else `root` (a directory probed as /); `add_facts` files are merged over them.
struct DoctorOptions {
  std::string root = "/";             ///< --root DIR
  std::string facts_file;             ///< --facts FILE
  std::string bundle;                 ///< --bundle FILE.tar.gz
  std::vector<std::string> add_facts; ///< --add-facts FILE, in order
  /// The probes' options: reserve (GiB), runtime, host root, the training run, the framework.
  /// `probe.reserve_gib` is also the rules' reserve_gib/reserve_bytes; `probe.plan` set, the
  /// rules of area "plan" are evaluated.
  ProbeOptions probe;
  std::string rules_dir;         ///< --rules DIR; empty: the built-in rules (load_builtin_rules)
  bool rule_examples = false;    ///< read each rule's examples too (`rules --test`)
  std::vector<std::string> only; ///< --only: rule ids to evaluate (empty: all)
  std::vector<std::string> skip; ///< --skip: rule ids not to evaluate
  std::string policy_file;       ///< --policy FILE (docs/policy.md); empty: none
  /// --reserve was given: it wins over the policy's reserve_gib.
  bool reserve_given = false;
};

/// The facts the rules judge: the root probed (or the bundle extracted and probed, its runtime
/// facts merged first; or the facts file read), the --add-facts files merged, and the derivations
/// run again over merged or replayed facts. Throws InputError for a --root or --host-root that is
/// not a directory, a bad facts file or bundle, or --bundle with --facts.
FactSet gather_facts(const DoctorOptions& o, const ProbeRegistry& registry);

/// The built-in rules or --rules DIR (validated at run time), kept to --only and minus --skip.
/// Throws InputError for an invalid rules file or an unknown id in --only or --skip.
RuleSet load_rule_set(const DoctorOptions& o, const ProbeRegistry& registry);

/// The run parameters rules read: reserve_gib and reserve_bytes (from probe.reserve_gib).
Params rule_params(const DoctorOptions& o);

/// "unknown rule id 'ID'; did you mean 'X'? (see halo-doctor rules)" for explain, --only and
/// --skip (closest_rule_id; the suggestion only when one is close).
std::string unknown_rule_message(const RuleSet& rules, const std::string& id);

/// What `check` computes before it reports.
struct Evaluation {
  RuleSet rules;
  FactSet facts;
  std::vector<Result> results;
};

/// Chooses the rule ids to evaluate when --only is not given (`halo-doctor slurm prolog`): gets
/// every loaded rule and the policy (nullptr without one).
using DefaultOnly = std::function<std::vector<std::string>(const RuleSet&, const Policy*)>;

/// The whole pipeline over `probes` (the program's top builds the built-in set, halo/checks.hpp,
/// and passes it; the doctor never names checks/): loads the policy (its reserve_gib applies unless
/// --reserve was given) and checks its rule ids, loads the rules with --only/--skip (or
/// `default_only` when --only is empty; without a training run the plan rules are left out unless
/// --only names them), gathers the facts, evaluates and applies the policy. Throws InputError for
/// bad input.
Evaluation run_checks(const ProbeRegistry& probes, DoctorOptions o,
                      const DefaultOnly& default_only = {});

/// What the facts were read from, as the reports name it: the bundle, else the facts file, else
/// the root.
std::string input_name(const DoctorOptions& o);

/// The report context of an evaluation, as `check` and `plan` fill it: the tool and rule-set
/// versions, the host's name, kernel, OS and where the doctor ran (facts), the Python environment
/// judged, the input (input_name), the gate threshold and its exit code. Durations and timestamps
/// are the caller's.
ReportContext report_context(const Evaluation& ev, const DoctorOptions& o, FailOn fail_on);

} // namespace halo
