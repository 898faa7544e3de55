// SPDX-License-Identifier: MIT
// The built-in probes' fact declarations and source texts by probe id: a binary search over the
// tables halo-facts-compile generates from checks/*/facts.json
// (build/generated/declared_facts.cpp).
#include "probes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace halo::probes {

const DeclaredProbe& declared_probe(std::string_view probe_id) {
  const std::span<const DeclaredProbe> all = declared_probes();
  const auto it = std::ranges::lower_bound(all, probe_id, {}, &DeclaredProbe::id);
  if (it == all.end() || it->id != probe_id)
    throw std::logic_error(fmt::format(
        "probe '{}' has no fact declarations: add its entry to the checks/<folder>/facts.json of "
        "its family",
        probe_id));
  return *it;
}

std::span<const FactDecl> declared_facts(std::string_view probe_id) {
  return declared_probe(probe_id).facts;
}

} // namespace halo::probes
