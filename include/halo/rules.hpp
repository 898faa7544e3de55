// SPDX-License-Identifier: MIT
// The declarative rule set: rules/*.json, loaded, validated and evaluated against facts.
// The rule language is documented in docs/rules.md.
#pragma once

#include <halo/fact.hpp>
#include <halo/fleet_quantity.hpp>
#include <halo/result.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace halo {

class ProbeRegistry;

/// The fixed set of comparison operators a rule may use (kube-bench / goss style; no shell).
enum class Op {
  eq,
  ne,
  lt,
  le,
  gt,
  ge, // numbers compare numerically, strings and bools by equality
  in,
  not_in,  // value is (not) one of a literal list
  exists,  // operand true: the fact is ok; false: it is not ok (never unknown)
  status,  // the fact's status equals the operand ("missing", "denied", ...)
  matches, // string fully matches an RE2 regular expression (RE2::FullMatch: linear time, no
           // backreferences; src/rules/engine.cpp)
  contains,
  contains_any, // a list holds the string / any of the strings; a string holds a substring
  empty,        // operand true: the list or string is empty
  version_lt,
  version_ge, // dotted numeric versions ("6.18.4" < "6.18.10")
};

/// The right-hand side of a comparison: a literal, another fact (optionally scaled:
/// `fact * times + plus`), or a run parameter (`reserve_bytes`).
struct Operand {
  std::optional<nlohmann::json> literal;
  std::string fact;
  std::string param;
  double times = 1.0;
  double plus = 0.0;
};

/// A condition tree. Leaves compare one fact (a `*` segment means "any matching fact").
/// Evaluation is three-valued: a leaf whose fact is not ok is unknown, `all` is false if any
/// child is false, `any` is true if any child is true, otherwise unknown propagates.
struct Condition {
  enum class Kind { all, any, none, leaf };
  Kind kind = Kind::leaf;
  std::vector<Condition> children;
  std::string fact;
  Op op = Op::eq;
  Operand operand;
};

/// Values a rule may read with `{"param": NAME}` and `{param:NAME}`: reserve_gib, reserve_bytes.
using Params = std::map<std::string, nlohmann::json, std::less<>>;

/// One worked example of a rule (`"examples"` in rules/*.json, docs/rules.md): a small fact set
/// and the verdict the rule must give on it. `halo-doctor rules --test` runs them all; they pin
/// each threshold from both sides, each skip reason and each fail case.
struct RuleExample {
  std::string name;
  FactSet facts; ///< the rule's `base` facts with this example's changes applied
  Params params; ///< run parameters (default: --reserve 4)
  Outcome expect = Outcome::pass;
  std::optional<Severity> severity; ///< required when expect is fail
  bool pending_reboot = false;      ///< checked when expect is fail
  std::string message;              ///< when not empty: a part the result's message must contain
  std::int64_t gpu = 0;             ///< per-GPU rules: the GPU the example judges (`gpu.N.*`)
  std::size_t line = 0;             ///< line of the example's name in its file
};

/// One way a rule can fail, with its severity and message template.
struct FailCase {
  Severity severity = Severity::error;
  Condition when;
  std::string message;
  /// This case's own structured fix (`"fix"` in the fail entry), replacing the rule's when this
  /// case decides: e.g. a container's remedy where the host's would be udev rules. Null: the
  /// rule's fix.
  nlohmann::json fix;
};

/// A precondition: when it is false the rule is skipped with this reason.
struct Precondition {
  Condition when;
  std::string skip_reason;
};

/// Where a rule is evaluated: once for the host, or once per GPU (`"scope": "gpu"`), with
/// `gpu.this.` in its fact keys and templates standing for `gpu.N.` of the GPU being judged.
enum class Scope { host, gpu };

/// The segment that stands for the judged GPU's index in a per-GPU rule (`gpu.this.apu`).
inline constexpr std::string_view kThisGpu = "this";

/// A rule as loaded from rules/*.json.
struct Rule {
  std::string id;   ///< public contract, never reused (`ttm-limit-low`)
  std::string area; ///< grouping in the text report (memory, driver, access, ...)
  std::string title;
  /// Checked in order; the first that is false skips the rule with its reason. In the file:
  /// `"applies": COND, "skip_reason": "..."` or `"applies": [{"when": COND, "skip_reason":
  /// "..."}]`.
  std::vector<Precondition> applies;
  Scope scope = Scope::host;
  /// Per-GPU rules only: which GPUs the rule judges (`"gpus": {"when": COND, "skip_reason": ..}`).
  /// A GPU for which it is false gets no result; when no GPU is left, the rule is skipped once
  /// with this reason.
  std::optional<Precondition> gpus;
  std::vector<FailCase> fail;            ///< evaluated in order; the first that holds decides
  std::optional<Condition> pending_when; ///< fail + this: pending_reboot true
  std::string pass_message;
  std::string why;
  nlohmann::json fix;                ///< structured fix template (docs/rules.md), null when none
  std::vector<std::string> evidence; ///< fact key patterns shown as evidence
  std::vector<std::string> sources;  ///< URLs
  /// `"subsumes": [ids]`: rules whose failure this rule's fix also resolves (one cause, this
  /// rule's remedy the stricter: gfx1151-kernel-min's 6.18.4 covers gfx1151-cwsr-hang's 6.18).
  /// When both fail, the text report shows them as one finding under this one, with this rule's
  /// fix; each keeps its own result in the JSON report (docs/rules.md).
  std::vector<std::string> subsumes;
  /// `"volatile": true`: the verdict can change while the machine is up, between two jobs,
  /// without a reboot or a configuration change (device access, the driver's state, the runtime,
  /// GPU errors). `halo-doctor slurm prolog` and `epilog` evaluate only these rules by default.
  bool volatile_verdict = false;
  std::vector<RuleExample> examples; ///< worked examples, run by `halo-doctor rules --test`
  std::string file;
  std::size_t line = 0;

  /// The highest severity among the fail cases (what the catalogue shows).
  Severity max_severity() const;
};

/// A loaded rule set with its version and the SHA-256 of its canonical text.
struct RuleSet {
  std::string version;
  std::string digest;
  std::vector<Rule> rules;
  /// The fleet comparison's quantities, in report order (every file's `compare` list, in file
  /// order).
  std::vector<FleetQuantity> fleet_compare;
  const Rule* find(std::string_view id) const;
};

/// Loads one rules file's text. Throws InputError "FILE:LINE: ..." for JSON syntax errors,
/// unknown keys or operators, bad severities and facts no probe provides (when `registry` is
/// given).
std::vector<Rule> parse_rules_file(std::string_view text, std::string_view file,
                                   const ProbeRegistry* registry, bool examples = true);

/// Loads every `*.json` in a directory (except schema.json), in name order. Duplicate ids are an
/// InputError naming both files.
RuleSet load_rules_dir(const std::string& dir, const ProbeRegistry* registry, bool examples = true);

/// The rule set built into the binary from rules/. The build validated it as load_rules_dir does
/// (src/tools/rules_compile.cpp: an invalid rule fails the build); without examples it is decoded
/// from its compiled form (decode_rules, no JSON read, `registry` unused), with them it is read
/// from the embedded JSON text (load_builtin_rules_json). Defined in src/doctor/builtin_rules.cpp,
/// library halo_doctor.
RuleSet load_builtin_rules(const ProbeRegistry* registry, bool examples = true);

/// The built-in rules read from the JSON text embedded at build time (cmake/EmbedRules.cmake):
/// with `examples` (`rules --test`) the schema and, when `registry` is given, every fact are
/// checked as for --rules DIR. Throws InputError "rules/FILE.json:LINE: ..." for an invalid rule.
RuleSet load_builtin_rules_json(const ProbeRegistry* registry, bool examples);

/// The compiled form of a rule set: its rules (every field but the examples), version, digest and
/// fleet quantities as a flat byte string (src/rules/compiled.cpp). Written at build time by
/// halo-rules-compile after the rules were validated; decode_rules(encode_rules(s)) equals `s`
/// without examples.
std::string encode_rules(const RuleSet& rules);

/// Reads what encode_rules wrote, without validating the rules again. Throws std::runtime_error
/// for a blob of another format version or a truncated one.
RuleSet decode_rules(std::string_view blob);

/// The parameters of a run with `--reserve GIB`: reserve_gib and reserve_bytes (GiB in bytes).
Params default_params(std::int64_t reserve_gib = 4);

/// Evaluates one host rule, or one per-GPU rule already bound to its GPU (bind_to_gpu). Never
/// throws for missing facts: they produce an `error` result.
Result evaluate_rule(const Rule& rule, const FactSet& facts, const Params& params);

/// A per-GPU rule with `gpu.this.` replaced by `gpu.N.` in every fact key, template and evidence
/// pattern, and its `gpus` filter turned into its first precondition.
Rule bind_to_gpu(const Rule& rule, std::int64_t index);

/// The GPU `gpu.N` as the derived facts describe it (gpu.N.pci_slot, gfx_target, name,
/// hip_device).
GpuRef gpu_ref(const FactSet& facts, std::int64_t index);

/// Evaluates every rule: a host rule once, a per-GPU rule once for each GPU (gpu.count, in index
/// order) its `gpus` filter keeps, each result naming its GPU. Never throws for missing facts: they
/// produce `error` results.
std::vector<Result> evaluate(const RuleSet& rules, const FactSet& facts, const Params& params);

/// Evaluates one condition (exposed for tests): true, false or std::nullopt (unknown), and the
/// keys of facts that made it unknown.
std::optional<bool> eval_condition(const Condition& c, const FactSet& facts, const Params& params,
                                   std::vector<std::string>* unknown_keys);

/// One example that did not get its verdict, or a part of a rule no example reaches.
struct ExampleFailure {
  std::string where;   ///< "FILE:LINE: rule 'ID'" plus " example 'NAME'" when about one example
  std::string problem; ///< "expected fail (error), got pass: <message>" or "no example ..."
};

/// Runs every rule's examples (Rule::examples) and checks their coverage: each precondition must
/// skip some example and each fail case must decide some example (a pass is not required: some
/// rules always find something once they apply). An empty result means every example holds.
std::vector<ExampleFailure> check_rule_examples(const RuleSet& rules);

/// Compares dotted numeric versions ("6.14.0" vs "6.15"): -1, 0 or 1. Non-numeric tails
/// ("-rc6", "-200.fc43") are ignored; missing components count as 0.
int compare_versions(std::string_view a, std::string_view b);

/// Expands `{fact.key}`, `{gib:fact.key}` (bytes as GiB), `{pages_gib:fact.key}` (4 KiB pages as
/// GiB), `{watts:fact.key}` (microwatts as watts, "450 W") and `{param:name}` in a message or fix
/// template. Unknown facts render as "?".
std::string expand_template(std::string_view tmpl, const FactSet& facts, const Params& params);

/// The rule id of `rules` closest to `id` (Levenshtein distance, case-insensitive) when it is
/// close enough to be a typo (at most a third of the longer id's length, at least 2 edits) or one
/// contains the other; std::nullopt otherwise. For "did you mean" in `explain`, --only, --skip.
std::optional<std::string> closest_rule_id(const RuleSet& rules, std::string_view id);

/// Ids of rules that code outside the rule engine must name (rules/*.json holds the rules;
/// tests/source/key_literals.py keeps the ids out of src/ as literals).
namespace rule_ids {
/// An APU's TTM pages_limit keeps the GPU from most of system RAM (rules/memory.json): its fix
/// computes the recommended limit, so `halo-doctor fix` prefers its value (src/fix/merge.cpp).
inline constexpr std::string_view ttm_limit_low = "ttm-limit-low";
/// The TTM limit leaves the operating system too little memory (rules/memory.json): its fix
/// sets the recommended limit too, and wins like ttm_limit_low.
inline constexpr std::string_view ttm_limit_overcommit = "ttm-limit-overcommit";
/// The training run fits in the GPU's memory (rules/plan.json): its result is the plan's verdict,
/// pass = fits, a warning = tight, an error = does not fit (src/report/plan.cpp).
inline constexpr std::string_view plan_memory_fit = "plan-memory-fit";
} // namespace rule_ids

} // namespace halo
