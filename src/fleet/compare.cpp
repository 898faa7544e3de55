// SPDX-License-Identifier: MIT
// The fleet comparison (include/halo/fleet.hpp).
#include <halo/fleet.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

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

std::vector<Group> Row::groups() const {
  std::vector<Group> out;
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t i = 0; i < values.size(); ++i) {
    auto [it, added] = index.try_emplace(values[i], out.size());
    if (added) out.push_back(Group{values[i], {}});
    out[it->second].nodes.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&](const Group& a, const Group& b) {
    if ((a.value == majority) != (b.value == majority)) return a.value == majority;
    return a.nodes.size() > b.nodes.size(); // stable: ties keep their earliest node's order
  });
  return out;
}

Accumulator::Accumulator(std::vector<FleetQuantity> quantities)
    : quantities_(std::move(quantities)), values_(quantities_.size()) {}

std::vector<std::string> values_of(const FactSet& facts,
                                   const std::vector<FleetQuantity>& quantities) {
  std::vector<std::string> out;
  out.reserve(quantities.size());
  for (const auto& q : quantities)
    out.push_back(value_of(facts, q.pattern));
  return out;
}

void Accumulator::add(std::string name, const std::string& origin, const FactSet& facts) {
  add_values(std::move(name), origin, values_of(facts, quantities_));
}

void Accumulator::add_values(std::string name, const std::string& origin,
                             std::vector<std::string> values) {
  if (values.size() != quantities_.size())
    throw std::logic_error("Accumulator::add_values: one value per quantity");
  nodes_.push_back(std::move(name));
  origins_.push_back(origin);
  for (std::size_t q = 0; q < quantities_.size(); ++q) {
    Column& col = values_[q];
    auto it = col.index.find(values[q]);
    if (it == col.index.end()) {
      if (col.distinct.size() >= UINT32_MAX)
        throw std::length_error("fleet compare: too many values");
      it = col.index.emplace(values[q], static_cast<std::uint32_t>(col.distinct.size())).first;
      col.distinct.push_back(std::move(values[q]));
    }
    col.ids.push_back(it->second);
  }
}

void Accumulator::add_unreadable(std::string name, const std::string& origin, std::string reason) {
  unreadable_.emplace_back(nodes_.size() + unreadable_.size(), std::move(reason));
  // Kept apart from the compared nodes: its label is made unique with theirs in finish().
  unreadable_names_.emplace_back(std::move(name), origin);
}

namespace {

/// Comparison::nodes' rule for the labels of `names` (host names) read from `origins`.
std::vector<std::string> unique_labels(const std::vector<std::string>& names,
                                       const std::vector<std::string>& origins) {
  std::map<std::string, std::size_t, std::less<>> seen;
  for (const auto& n : names)
    ++seen[n];
  std::vector<std::string> labels;
  labels.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i)
    labels.push_back(seen[names[i]] > 1
                         ? names[i] + " (" + std::filesystem::path(origins[i]).filename().string() +
                               ")"
                         : names[i]);
  // Still the same (one file name in two directories, one file given twice): the first keeps
  // the label, each later one gets " #N" (N its input position) until it is unique, never taking
  // a label another input has as it is (a host name that reads like a label).
  const std::set<std::string, std::less<>> reserved(labels.begin(), labels.end());
  std::set<std::string, std::less<>> used;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (used.contains(labels[i])) {
      const std::string mark = fmt::format(" #{}", i + 1);
      labels[i] += mark;
      while (used.contains(labels[i]) || reserved.contains(labels[i]))
        labels[i] += mark;
    }
    used.insert(labels[i]);
  }
  return labels;
}

} // namespace

Comparison Accumulator::finish() const {
  Comparison c;
  // Labels over every input in input order, the unreadable ones included.
  std::vector<std::string> names;
  std::vector<std::string> origins;
  std::vector<int> which; // index into nodes_ (>= 0) or -1 - index into unreadable_
  std::size_t k = 0;
  std::size_t u = 0;
  while (k < nodes_.size() || u < unreadable_.size()) {
    if (u < unreadable_.size() && unreadable_[u].first == k + u) {
      names.push_back(unreadable_names_[u].first);
      origins.push_back(unreadable_names_[u].second);
      which.push_back(-1 - static_cast<int>(u++));
    } else {
      names.push_back(nodes_[k]);
      origins.push_back(origins_[k]);
      which.push_back(static_cast<int>(k++));
    }
  }
  const auto labels = unique_labels(names, origins);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (which[i] >= 0)
      c.nodes.push_back(labels[i]);
    else
      c.unreadable.push_back(
          {labels[i], unreadable_[static_cast<std::size_t>(-1 - which[i])].second});
  }
  for (std::size_t q = 0; q < quantities_.size(); ++q) {
    Row row;
    row.label = quantities_[q].label;
    row.pattern = quantities_[q].pattern;
    row.severity = quantities_[q].severity;
    row.values.reserve(values_[q].ids.size());
    for (const std::uint32_t id : values_[q].ids)
      row.values.push_back(values_[q].distinct[id]);
    if (std::all_of(row.values.begin(), row.values.end(), unread)) continue;
    std::map<std::string, std::size_t, std::less<>> count;
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

Comparison compare(const std::vector<Node>& nodes, const std::vector<FleetQuantity>& quantities) {
  Accumulator acc(quantities);
  for (const auto& n : nodes)
    acc.add(n.name, n.origin, n.facts);
  return acc.finish();
}

std::string compress_names(std::vector<std::string> names) {
  // Slurm's hostlist (src/common/hostlist.c): a name is a prefix and a trailing number; names of
  // one prefix and one number width become prefix[a-b,c].
  struct Key {
    std::string prefix;
    std::size_t width;
    bool operator<(const Key& o) const {
      return std::tie(prefix, width) < std::tie(o.prefix, o.width);
    }
  };
  std::map<Key, std::vector<std::uint64_t>> numbered;
  std::vector<std::string> plain;
  for (auto& n : names) {
    std::size_t d = n.size();
    while (d > 0 && n[d - 1] >= '0' && n[d - 1] <= '9')
      --d;
    const std::size_t width = n.size() - d;
    if (width == 0 || width > 18) {
      plain.push_back(n);
      continue;
    }
    numbered[Key{n.substr(0, d), width}].push_back(std::stoull(n.substr(d)));
  }
  std::vector<std::string> parts;
  for (auto& [key, nums] : numbered) {
    std::sort(nums.begin(), nums.end());
    nums.erase(std::unique(nums.begin(), nums.end()), nums.end());
    if (nums.size() == 1) {
      parts.push_back(fmt::format("{}{:0{}}", key.prefix, nums[0], key.width));
      continue;
    }
    std::string ranges;
    for (std::size_t i = 0; i < nums.size();) {
      std::size_t j = i;
      while (j + 1 < nums.size() && nums[j + 1] == nums[j] + 1)
        ++j;
      if (!ranges.empty()) ranges += ',';
      ranges += fmt::format("{:0{}}", nums[i], key.width);
      if (j > i) ranges += fmt::format("-{:0{}}", nums[j], key.width);
      i = j + 1;
    }
    parts.push_back(fmt::format("{}[{}]", key.prefix, ranges));
  }
  // Names the same up to their number (the same host name captured twice) are listed as they are.
  std::sort(plain.begin(), plain.end());
  parts.insert(parts.end(), plain.begin(), plain.end());
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : ",") + p;
  return out;
}

namespace {

constexpr std::size_t kColumns = 100;

/// `text` (words separated by `sep`) after `first`, wrapped at kColumns with `indent` spaces.
void wrap(std::string& out, std::string first, const std::string& text, char sep,
          std::size_t indent) {
  std::string line = std::move(first);
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    std::string word =
        text.substr(start, end - start) + (end < text.size() ? std::string(1, sep) : "");
    if (line.size() + word.size() > kColumns && line.size() > indent) {
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      out += line + "\n";
      line = std::string(indent, ' ');
    }
    line += word;
    start = end + 1;
  }
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  out += line + "\n";
}

std::string nodes_of(const Comparison& c, const Group& g) {
  std::vector<std::string> names;
  names.reserve(g.nodes.size());
  for (std::size_t i : g.nodes)
    names.push_back(c.nodes[i]);
  return compress_names(std::move(names));
}

std::string count_text(std::size_t n) {
  return n == 1 ? std::string("1 node") : fmt::format("{} nodes", n);
}

} // namespace

std::string comparison_text(const Comparison& c, bool all) {
  std::string out;
  for (const auto& u : c.unreadable)
    out += fmt::format("! {} could not be compared: {}\n", u.node, u.reason);
  if (!c.unreadable.empty()) out += "\n";
  std::vector<std::string> same;
  for (const auto& r : c.rows) {
    if (r.uniform() && !all) {
      same.push_back(r.label);
      continue;
    }
    const char mark = r.uniform() ? ' ' : (r.severity == Severity::error ? '!' : '~');
    out += fmt::format("{} {}\n", mark, r.label);
    const auto groups = r.groups();
    for (std::size_t k = 0; k < groups.size(); ++k) {
      const Group& g = groups[k];
      if (k == 0) {
        out += fmt::format("    {}  ({}{})\n", g.value, count_text(g.nodes.size()),
                           groups.size() > 1 ? ", the majority" : ", every node");
        continue;
      }
      wrap(out, fmt::format("    {}  ({}): ", g.value, count_text(g.nodes.size())), nodes_of(c, g),
           ',', 8);
    }
  }
  if (!same.empty()) {
    std::string list;
    for (const auto& s : same)
      list += (list.empty() ? "" : ", ") + s;
    out += "\n";
    wrap(out, "the same on every node: ", list, ' ', 2);
  }
  out += fmt::format("\n{} nodes; ! an error-level quantity differs, ~ a warning-level one\n",
                     c.nodes.size());
  out += !c.unreadable.empty()
             ? fmt::format("result: {} node(s) could not be compared\n", c.unreadable.size())
         : c.error_difference()
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
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& g : r.groups()) {
      nlohmann::json names = nlohmann::json::array();
      for (std::size_t i : g.nodes)
        names.push_back(c.nodes[i]);
      groups.push_back({{"value", g.value}, {"count", g.nodes.size()}, {"nodes", names}});
    }
    rows.push_back({{"label", r.label},
                    {"fact", r.pattern},
                    {"severity", std::string(to_string(r.severity))},
                    {"uniform", r.uniform()},
                    {"majority", r.majority},
                    {"values", values},
                    {"groups", groups}});
  }
  nlohmann::json unreadable = nlohmann::json::array();
  for (const auto& u : c.unreadable)
    unreadable.push_back({{"node", u.node}, {"reason", u.reason}});
  return {{"schema_version", 1},
          {"nodes", c.nodes},
          {"unreadable", unreadable},
          {"rows", rows},
          {"error_difference", c.error_difference()}};
}

} // namespace halo::fleet
