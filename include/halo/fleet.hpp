// SPDX-License-Identifier: MIT
// Fleet comparison (issue 16): which nodes of a lab differ from the others in driver, firmware,
// kernel, ROCm, partitions and settings, from their saved facts (`halo-doctor facts --format json`)
// or capture bundles (`halo-doctor capture`). `halo-doctor fleet compare FILE...` prints it.
#pragma once

#include <halo/fact.hpp>
#include <halo/result.hpp>
#include <halo/rules.hpp>

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace halo::fleet {

/// A node's facts and its name (`host.name`, else the file it came from).
struct Node {
  std::string name;
  std::string origin;
  FactSet facts;
};

/// One compared quantity across the nodes: each node's value as text, the majority value (the
/// most frequent; on a tie, the value of the earliest node among the tied), and which nodes
/// differ from it.
struct Row {
  std::string label;
  std::string pattern;
  Severity severity = Severity::warning;
  std::vector<std::string> values;
  std::string majority;
  std::vector<bool> differs;
  bool uniform() const;
};

struct Comparison {
  std::vector<std::string> nodes;
  std::vector<Row> rows; ///< quantities at least one node could read
  /// True when some node differs from the majority on an error-severity quantity.
  bool error_difference() const;
};

/// Compares the nodes on `quantities` (RuleSet::fleet_compare: rules/fleet.json's `compare` list),
/// in their order. A quantity with a `*` is the node's matching facts' values in key order, joined
/// with ", " ("16, 16, 8, 16"), or "VALUE xN" when all N are equal.
Comparison compare(const std::vector<Node>& nodes, const std::vector<FleetQuantity>& quantities);

/// The comparison as a table for people: one row per quantity, one column per node, `*` after a
/// value that differs from the majority; uniform rows are listed by name only unless `all`.
std::string comparison_text(const Comparison& c, bool all);

/// The comparison as JSON: {"nodes": [...], "rows": [{label, fact, severity, uniform, majority,
/// values: [{node, value, differs}]}], "error_difference": bool}.
nlohmann::json comparison_json(const Comparison& c);

} // namespace halo::fleet
