// SPDX-License-Identifier: MIT
#include "derivation.hpp"

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

void alias_fields(FactSet& facts, const std::string& to, const std::string& from,
                  std::initializer_list<const char*> fields, const std::string& why) {
  for (const char* field : fields)
    alias(facts, to + "." + field, from.empty() ? std::string() : from + "." + field, why);
}

std::string member_with(const FactSet& facts, std::string_view pattern, std::string_view value) {
  const std::string_view field = pattern.substr(pattern.rfind('.'));
  for (const Fact* f : facts.match(pattern))
    if (f->ok() && std::get_if<std::string>(&f->value) != nullptr &&
        std::get<std::string>(f->value) == value)
      return f->key.substr(0, f->key.size() - field.size());
  return {};
}

} // namespace halo::probes
