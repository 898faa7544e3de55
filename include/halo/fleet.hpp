// SPDX-License-Identifier: MIT
// Fleet comparison (issue 16): which nodes of a lab differ from the others in driver, firmware,
// kernel, ROCm, partitions and settings, from their saved facts (`halo-doctor facts --format json`)
// or capture bundles (`halo-doctor capture`). `halo-doctor fleet compare FILE...` prints it.
#pragma once

#include <halo/fact.hpp>
#include <halo/fleet_quantity.hpp>
#include <halo/result.hpp>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace halo {
class ProbeRegistry;
struct RederivePlan;
} // namespace halo

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
  /// Adds a node by its values of the quantities, in their order (values_of()).
  void add_values(std::string name, const std::string& origin, std::vector<std::string> values);
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
  /// One quantity's values: each distinct value once, and per node the index of its value (a
  /// fleet's nodes mostly share their values: 10,000 nodes cost 4 bytes each per quantity).
  struct Column {
    std::vector<std::string> distinct;
    std::map<std::string, std::uint32_t, std::less<>> index;
    std::vector<std::uint32_t> ids; ///< [node]
  };
  std::vector<Column> values_; ///< [quantity]
};

/// A node's value of each quantity as text, in their order: what Accumulator::add keeps. A quantity
/// with a `*` is the node's matching facts' values in key order, joined with ", ", or "VALUE xN"
/// when all N are equal; an unread fact is "(STATUS)", an absent one "(not collected)" or "(none)".
std::vector<std::string> values_of(const FactSet& facts,
                                   const std::vector<FleetQuantity>& quantities);

/// One input of `fleet compare`, read and reduced to its values of the quantities.
struct NodeValues {
  bool readable = false;
  std::string name;   ///< host.name, else the file name (readable), or the file name (unreadable)
  std::string reason; ///< why it could not be replayed (not readable)
  std::vector<std::string> values; ///< values_of() (readable)
};

/// Reads the inputs of `fleet compare` (docs/fleet.md). A capture bundle (`.tar.gz`) is replayed as
/// `check --bundle` replays it; a facts file as `check --facts` does (gather_facts), except that
/// when the fast reader is built (fast_reader()) and the file lies in its strict subset of the
/// facts format (read_facts_subset), only the facts the quantities can depend on are kept and only
/// the derivations producing them run again (plan_rederive): the values are the same. read() is
/// const and may run on several threads at once.
class Reader {
public:
  Reader(const ProbeRegistry& registry, std::vector<FleetQuantity> quantities);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  Reader(Reader&&) = delete;
  Reader& operator=(Reader&&) = delete;
  /// One input: unreadable (a file that cannot be read or replayed, InputError, or whose
  /// gpu.count is an error: a count beyond what hardware has, checks/gpus/gpus.hpp) with its
  /// reason, or its host name and values. Other exceptions (programming errors) propagate.
  [[nodiscard]] NodeValues read(const std::string& path) const;
  /// The plan of the derivations the quantities depend on (with gpu.count and host.name).
  [[nodiscard]] const RederivePlan& plan() const { return *plan_; }
  [[nodiscard]] const std::vector<FleetQuantity>& quantities() const { return quantities_; }

private:
  const ProbeRegistry& registry_;
  std::vector<FleetQuantity> quantities_;
  std::unique_ptr<RederivePlan> plan_;
};

/// True when the fast facts reader is built in (simdjson found at configure time; the portable
/// release build has no static simdjson archive and reads every file with nlohmann json).
bool fast_reader();

/// The fast reader (simdjson's On Demand API) of a facts file's text: the facts whose keys
/// `plan.reads_key()`, as facts_from_json_text reads them. It accepts only a strict subset of
/// what facts_from_json_text accepts (one top-level object of "schema_version": 1, "tool" an
/// object of strings and "facts"; each fact an object of "status" (a known status), "value" (null,
/// bool, an integer within int64, a decimal number, a string, a list of strings), and "source",
/// "reason", "probe" strings; no key twice in an object but "facts"'s; nothing after the
/// document) and reads every string of it (escapes and UTF-8 checked), so any file it accepts
/// facts_from_json_text accepts with the same values. Anything else, a malformed file included,
/// is std::nullopt: the caller reads it with facts_from_json_text, whose message names the
/// error. Always std::nullopt without fast_reader().
std::optional<FactSet> read_facts_subset(std::string_view text, const RederivePlan& plan);

/// Reads `inputs` with `reader` on up to `threads` threads (at least one), a bounded window of
/// files ahead of the one added next, and adds them to an Accumulator in input order: the
/// comparison is the one reading them one by one gives, and no fact set outlives its file.
Comparison compare_files(const std::vector<std::string>& inputs, const Reader& reader,
                         unsigned threads);

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
