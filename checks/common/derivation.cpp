// SPDX-License-Identifier: MIT
#include "derivation.hpp"

#include <algorithm>
#include <variant>

namespace halo::probes {

void alias(FactSet& facts, const std::string& to, const std::string& from, const std::string& why) {
  if (const Fact* f = from.empty() ? nullptr : facts.find(from)) {
    Fact c = *f;
    c.key = to;
    facts.put(std::move(c));
  } else {
    facts.put_status(to, Status::missing, kDerived, why);
  }
}

void alias_each(FactSet& facts, bool known,
                std::initializer_list<std::pair<std::string, std::string>> to_from,
                const std::string& why) {
  for (const auto& [to, from] : to_from)
    alias(facts, to, known ? from : std::string(), why);
}

std::optional<std::string> member_with(const FactSet& facts, std::string_view pattern,
                                       std::string_view value) {
  // The `*` is segment `at` of the pattern, so of every key it matches (one segment each).
  const std::string_view head = pattern.substr(0, pattern.find('*'));
  const auto at = std::count(head.begin(), head.end(), '.');
  for (const Fact* f : facts.match(pattern)) {
    if (!f->ok() || std::get_if<std::string>(&f->value) == nullptr ||
        std::get<std::string>(f->value) != value)
      continue;
    std::string_view key = f->key;
    for (auto i = at; i > 0; --i)
      key.remove_prefix(key.find('.') + 1);
    return std::string(key.substr(0, key.find('.')));
  }
  return std::nullopt;
}

} // namespace halo::probes
