// SPDX-License-Identifier: MIT
// Fleet comparison (issue 16): which nodes of a lab differ from the others in driver, firmware,
// kernel, ROCm, partitions and settings, from their saved facts (`halo-doctor facts --format json`)
// or capture bundles (`halo-doctor capture`). `halo-doctor fleet compare FILE...` prints it.
#pragma once

#include <halo/fact.hpp>
#include <halo/fleet_quantity.hpp>
#include <halo/result.hpp>

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace halo::fleet {

/// A node's facts and its name (`host.name`, else the file it came from).
struct Node {
  std::string name;
  std::string origin;
  FactSet facts;
};

/// The nodes that share one value of a quantity.
struct Group {
  std::string value;
  std::vector<std::size_t> nodes; ///< indices into Comparison::nodes, ascending
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
  /// The nodes grouped by value: the majority first, then the other values by node count
  /// (descending), ties by their earliest node.
  std::vector<Group> groups() const;
};

/// A node whose file could not be replayed (unreadable, not a facts file or bundle, a count
/// beyond what hardware has): it is named with its reason and the others are still compared.
struct Unreadable {
  std::string node; ///< its label (Comparison::nodes rules)
  std::string reason;
};

struct Comparison {
  /// Each node's label, in input order: its host name, unique and stable. A host name that
  /// several inputs share (every redacted bundle is `redacted-host`) gets " (FILE)", FILE the
  /// input's file name; a label still not unique then gets " #N", N the input's position
  /// (1-based), until it is.
  std::vector<std::string> nodes;
  std::vector<Unreadable> unreadable; ///< inputs that could not be replayed, in input order
  std::vector<Row> rows;              ///< quantities at least one node could read
  /// True when some node differs from the majority on an error-level quantity (`unreadable`
  /// inputs are not counted: `fleet compare` exits 2 for them).
  bool error_difference() const;
};

/// Builds a Comparison one node at a time: add() reads a node's values of every quantity and keeps
/// only those strings, so a fleet of 1,000 nodes never holds 1,000 fact sets (issue 35).
class Accumulator {
public:
  explicit Accumulator(std::vector<FleetQuantity> quantities);
  /// Adds a node named `name` (its host name) read from the file `origin`; finish() makes the
  /// names unique (Comparison::nodes).
  void add(std::string name, const std::string& origin, const FactSet& facts);
  /// Adds an input that could not be replayed, with why (Comparison::unreadable).
  void add_unreadable(std::string name, const std::string& origin, std::string reason);
  /// The comparison of the nodes added so far (majorities, differing nodes, unread rows dropped).
  [[nodiscard]] Comparison finish() const;

private:
  std::vector<FleetQuantity> quantities_;
  std::vector<std::string> nodes_;   ///< host names as given
  std::vector<std::string> origins_; ///< the file of each
  /// For each unreadable input: its index among all inputs and the reason.
  std::vector<std::pair<std::size_t, std::string>> unreadable_;
  std::vector<std::pair<std::string, std::string>> unreadable_names_; ///< name and file of each
  std::vector<std::vector<std::string>> values_;                      ///< [quantity][node]
};

/// Compares the nodes on `quantities` (RuleSet::fleet_compare: rules/fleet.json's `compare` list),
/// in their order. A quantity with a `*` is the node's matching facts' values in key order, joined
/// with ", " ("16, 16, 8, 16"), or "VALUE xN" when all N are equal.
Comparison compare(const std::vector<Node>& nodes, const std::vector<FleetQuantity>& quantities);

/// Node names as a compact list, as Slurm's hostlist writes them: names that end in a number of
/// the same width after the same prefix are joined into ranges ("gpu[001-016,018],login1");
/// others are listed as they are. Sorted; `names` is not changed.
std::string compress_names(std::vector<std::string> names);

/// The comparison for people, readable in 100 columns at any fleet size: for each quantity that
/// differs, its label, then one line per value: the majority's value with its node count, then each
/// other value with its node count and its nodes (compress_names, wrapped at 100 columns). The
/// quantities that are the same everywhere are listed by name (with their values if `all`).
std::string comparison_text(const Comparison& c, bool all);

/// The comparison as JSON: {"nodes": [...], "rows": [{label, fact, severity, uniform, majority,
/// values: [{node, value, differs}], groups: [{value, count, nodes: [...]}]}],
/// "error_difference": bool}.
nlohmann::json comparison_json(const Comparison& c);

} // namespace halo::fleet
