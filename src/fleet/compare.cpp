// SPDX-License-Identifier: MIT
// The fleet comparison (include/halo/fleet.hpp).
#include <halo/fleet.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace halo::fleet {
namespace {

/// A node's value of one quantity as text.
std::string value_of(const FactSet& facts, std::string_view pattern) {
  std::vector<std::string> parts;
  if (pattern.find('*') == std::string_view::npos) {
    const Fact* f = facts.find(pattern);
    if (f == nullptr) return "(not collected)";
    if (!f->ok()) return fmt::format("({})", to_string(f->status));
    return format_value(f->value);
  }
  for (const Fact* f : facts.match(pattern))
    parts.push_back(f->ok() ? format_value(f->value) : fmt::format("({})", to_string(f->status)));
  if (parts.empty()) return "(none)";
  // Eight GPUs with one value read as "16 x8".
  if (parts.size() > 1 && std::all_of(parts.begin(), parts.end(),
                                      [&](const std::string& p) { return p == parts.front(); }))
    return fmt::format("{} x{}", parts.front(), parts.size());
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : ", ") + p;
  return out;
}

/// True when the text is one of the placeholders value_of writes for an unread quantity.
bool unread(const std::string& v) {
  return !v.empty() && v.front() == '(';
}

} // namespace

bool Row::uniform() const {
  return std::none_of(differs.begin(), differs.end(), [](bool d) { return d; });
}

bool Comparison::error_difference() const {
  return std::any_of(rows.begin(), rows.end(),
                     [](const Row& r) { return r.severity == Severity::error && !r.uniform(); });
}

Comparison compare(const std::vector<Node>& nodes, const std::vector<FleetQuantity>& quantities) {
  Comparison c;
  for (const auto& n : nodes)
    c.nodes.push_back(n.name);
  for (const auto& key : quantities) {
    Row row;
    row.label = key.label;
    row.pattern = key.pattern;
    row.severity = key.severity;
    for (const auto& n : nodes)
      row.values.push_back(value_of(n.facts, key.pattern));
    if (std::all_of(row.values.begin(), row.values.end(), unread)) continue;
    std::map<std::string, std::size_t> count;
    for (const auto& v : row.values)
      ++count[v];
    std::size_t best = 0;
    for (const auto& v : row.values) // the earliest node's value wins a tie
      if (count[v] > best) {
        best = count[v];
        row.majority = v;
      }
    for (const auto& v : row.values)
      row.differs.push_back(v != row.majority);
    c.rows.push_back(std::move(row));
  }
  return c;
}

std::string comparison_text(const Comparison& c, bool all) {
  std::string out;
  std::vector<std::string> same;
  std::size_t width = 8;
  for (const auto& r : c.rows)
    width = std::max(width, r.label.size());
  std::vector<std::size_t> col(c.nodes.size(), 0);
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    col[i] = c.nodes[i].size();
    for (const auto& r : c.rows)
      col[i] = std::max(col[i], r.values[i].size() + 1);
  }
  std::string header = fmt::format("{:<{}}", "", width + 2);
  for (std::size_t i = 0; i < c.nodes.size(); ++i)
    header += fmt::format("  {:<{}}", c.nodes[i], col[i]);
  std::string body;
  for (const auto& r : c.rows) {
    if (r.uniform() && !all) {
      same.push_back(r.label);
      continue;
    }
    std::string line =
        fmt::format("{} {:<{}}", r.uniform() ? ' ' : (r.severity == Severity::error ? '!' : '~'),
                    r.label, width + 1);
    for (std::size_t i = 0; i < r.values.size(); ++i)
      line += fmt::format("  {:<{}}", r.values[i] + (r.differs[i] ? "*" : ""), col[i]);
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    body += line + "\n";
  }
  while (!header.empty() && header.back() == ' ')
    header.pop_back();
  out += header + "\n" + body;
  if (!same.empty()) {
    std::string list;
    for (const auto& s : same)
      list += (list.empty() ? "" : ", ") + s;
    out += fmt::format("\nthe same on every node: {}\n", list);
  }
  out += fmt::format(
      "\n{} nodes; * marks a value that differs from the majority; ! an error-level quantity, ~ a "
      "warning-level one\n",
      c.nodes.size());
  out += c.error_difference()
             ? "result: a node differs from the others on an error-level quantity\n"
             : "result: no node differs on an error-level quantity\n";
  return out;
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    nlohmann::json values = nlohmann::json::array();
    for (std::size_t i = 0; i < r.values.size(); ++i)
      values.push_back({{"node", c.nodes[i]}, {"value", r.values[i]}, {"differs", r.differs[i]}});
    rows.push_back({{"label", r.label},
                    {"fact", r.pattern},
                    {"severity", std::string(to_string(r.severity))},
                    {"uniform", r.uniform()},
                    {"majority", r.majority},
                    {"values", values}});
  }
  return {{"schema_version", 1},
          {"nodes", c.nodes},
          {"rows", rows},
          {"error_difference", c.error_difference()}};
}

} // namespace halo::fleet
