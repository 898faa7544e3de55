// SPDX-License-Identifier: MIT
// Running the rules' own examples (`halo-doctor rules --test`): each rule in rules/*.json carries
// small fact sets and the verdict it must give on them, like a policy's tests in OPA/conftest.
#include <halo/rules.hpp>

#include <fmt/format.h>

#include <set>

namespace halo {
namespace {

std::string describe(Outcome o, std::optional<Severity> s, bool pending) {
  if (o != Outcome::fail || !s) return std::string(to_string(o));
  return fmt::format("fail ({}{})", to_string(*s), pending ? ", pending reboot" : "");
}

} // namespace

std::vector<ExampleFailure> check_rule_examples(const RuleSet& rules) {
  std::vector<ExampleFailure> out;
  for (const Rule& r : rules.rules) {
    const std::string rule_where = fmt::format("{}:{}: rule '{}'", r.file, r.line, r.id);
    if (r.examples.empty()) {
      out.push_back({rule_where, "has no examples"});
      continue;
    }
    // Which precondition skipped and which fail case decided, found by the message each one
    // expands to on the example's facts (the engine reports the message, not the index).
    std::set<std::size_t> skipped_by;
    std::set<std::size_t> failed_by;
    // A per-GPU rule is judged for the example's GPU, its `gpus` filter as applies[0].
    const bool per_gpu = r.scope == Scope::gpu;
    const std::size_t shift = per_gpu && r.gpus ? 1 : 0;
    for (const RuleExample& ex : r.examples) {
      const Rule bound = per_gpu ? bind_to_gpu(r, ex.gpu) : r;
      const Result res = evaluate_rule(bound, ex.facts, ex.params);
      const std::string where =
          fmt::format("{}:{}: rule '{}' example '{}'", r.file, ex.line, r.id, ex.name);
      const bool pending = res.status == Outcome::fail && res.pending_reboot;
      const std::optional<Severity> sev =
          res.status == Outcome::fail ? std::optional<Severity>(res.severity) : std::nullopt;
      if (res.status != ex.expect || sev != ex.severity ||
          (ex.expect == Outcome::fail && pending != ex.pending_reboot)) {
        out.push_back({where, fmt::format("expected {}, got {}: {}",
                                          describe(ex.expect, ex.severity, ex.pending_reboot),
                                          describe(res.status, sev, pending), res.message)});
        continue;
      }
      if (!ex.message.empty() && res.message.find(ex.message) == std::string::npos) {
        out.push_back({where, fmt::format("expected a message with \"{}\", got: {}", ex.message,
                                          res.message)});
        continue;
      }
      for (std::size_t i = 0; i < bound.applies.size(); ++i)
        if (res.status == Outcome::skip &&
            res.message == expand_template(bound.applies[i].skip_reason, ex.facts, ex.params))
          skipped_by.insert(i);
      for (std::size_t i = 0; i < bound.fail.size(); ++i)
        if (res.status == Outcome::fail &&
            res.message == expand_template(bound.fail[i].message, ex.facts, ex.params))
          failed_by.insert(i);
    }
    if (shift == 1 && !skipped_by.contains(0))
      out.push_back({rule_where,
                     fmt::format("no example is left out by gpus (\"{}\")", r.gpus->skip_reason)});
    for (std::size_t i = 0; i < r.applies.size(); ++i)
      if (!skipped_by.contains(i + shift))
        out.push_back({rule_where, fmt::format("no example is skipped by applies[{}] (\"{}\")", i,
                                               r.applies[i].skip_reason)});
    for (std::size_t i = 0; i < r.fail.size(); ++i)
      if (!failed_by.contains(i))
        out.push_back({rule_where, fmt::format("no example fails by fail[{}]", i)});
  }
  return out;
}

} // namespace halo
