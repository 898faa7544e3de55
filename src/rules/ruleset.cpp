// SPDX-License-Identifier: MIT
// What a loaded rule set answers (include/halo/rules.hpp): a rule's highest severity, a rule by
// id, and the rule id closest to a mistyped one (for `--rule ID` and policies' messages).
#include <halo/rules.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo {

Severity Rule::max_severity() const {
  Severity s = Severity::info;
  for (const auto& f : fail)
    s = std::max(s, f.severity);
  return s;
}

const Rule* RuleSet::find(std::string_view id) const {
  for (const auto& r : rules)
    if (r.id == id) return &r;
  return nullptr;
}

std::optional<std::string> closest_rule_id(const RuleSet& rules, std::string_view id) {
  auto lower = [](std::string_view v) {
    std::string out(v);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  };
  const std::string want = lower(id.substr(0, 256));
  std::optional<std::string> best;
  std::size_t best_d = std::string::npos;
  std::vector<std::size_t> row;
  for (const auto& r : rules.rules) {
    const std::string& have = r.id;
    // Levenshtein distance, one row at a time.
    row.resize(have.size() + 1);
    for (std::size_t j = 0; j <= have.size(); ++j)
      row[j] = j;
    for (std::size_t i = 1; i <= want.size(); ++i) {
      std::size_t diag = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= have.size(); ++j) {
        const std::size_t up = row[j];
        row[j] =
            std::min({row[j] + 1, row[j - 1] + 1, diag + (want[i - 1] == have[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    std::size_t d = row[have.size()];
    const bool contains = !want.empty() && (have.find(want) != std::string::npos ||
                                            (want.find(have) != std::string::npos));
    if (contains) d = std::min<std::size_t>(d, 1);
    const std::size_t limit = std::max<std::size_t>(2, std::max(want.size(), have.size()) / 3);
    if (d <= limit && d < best_d) {
      best_d = d;
      best = have;
    }
  }
  return best;
}

} // namespace halo
