// SPDX-License-Identifier: MIT
// The quantities `halo-doctor fleet compare` sets side by side (docs/fleet.md) and the parser of
// their declaration, the `compare` list of a rules file (rules/fleet.json). The rule loader
// (src/rules/loader.cpp) calls the parser for every rules file; the comparison itself is
// include/halo/fleet.hpp.
#pragma once

#include <halo/result.hpp>

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace halo {

class ProbeRegistry;

/// One quantity `halo-doctor fleet compare` sets side by side (docs/fleet.md), from the
/// `compare` list of a rules file (rules/fleet.json): a fact key pattern (`*` = one segment:
/// every GPU or card), its name for people, and how much a node that differs from the majority
/// matters (error: the comparison fails, exit 1; warning: reported only).
struct FleetQuantity {
  std::string pattern;
  std::string label;
  Severity severity = Severity::warning;
};

namespace fleet {

/// A rules file's `compare` list: each entry exactly {"fact", "label", "severity"}, the fact a
/// non-empty key pattern provided by some probe (checked when `registry` is given), the label
/// non-empty, the severity error or warning, no fact twice. `text` and `file` are the rules
/// file's text and name, for the message. Throws InputError "FILE:LINE: compare/N/KEY: what".
std::vector<FleetQuantity> parse_fleet_compare(const nlohmann::json& list, std::string_view text,
                                               std::string_view file,
                                               const ProbeRegistry* registry);

} // namespace fleet
} // namespace halo
