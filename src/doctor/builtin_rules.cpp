// SPDX-License-Identifier: MIT
// The built-in rule set (issue 33), library halo_doctor. The build validated rules/*.json and
// compiled them (src/tools/rules_compile.cpp, generated compiled_rules.cpp); start-up decodes that
// form. Only `rules --test` asks for the examples, and reads them from the embedded JSON text.
#include <halo/rules.hpp>

namespace halo {

// Defined in the generated compiled_rules.cpp (halo-rules-compile).
std::string_view compiled_rules();

RuleSet load_builtin_rules(const ProbeRegistry* registry, bool examples) {
  if (examples) return load_builtin_rules_json(registry, /*examples=*/true);
  return decode_rules(compiled_rules());
}

} // namespace halo
