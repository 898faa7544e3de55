// SPDX-License-Identifier: MIT
#include <halo/error.hpp>
#include <halo/fact.hpp>
#include <halo/io.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace halo {

std::string_view to_string(Status s) {
  switch (s) {
  case Status::ok:
    return "ok";
  case Status::missing:
    return "missing";
  case Status::denied:
    return "denied";
  case Status::error:
    return "error";
  }
  return "error";
}

std::optional<Status> parse_status(std::string_view s) {
  if (s == "ok") return Status::ok;
  if (s == "missing") return Status::missing;
  if (s == "denied") return Status::denied;
  if (s == "error") return Status::error;
  return std::nullopt;
}

std::string format_value(const Value& v) {
  struct Visitor {
    std::string operator()(std::monostate /*unused*/) const { return "-"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return fmt::format("{:.6g}", d); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const std::vector<std::string>& l) const {
      return l.empty() ? std::string("(none)") : fmt::format("{}", fmt::join(l, ", "));
    }
  };
  return std::visit(Visitor{}, v);
}

nlohmann::json value_to_json(const Value& v) {
  struct Visitor {
    nlohmann::json operator()(std::monostate /*unused*/) const { return nullptr; }
    nlohmann::json operator()(bool b) const { return b; }
    nlohmann::json operator()(std::int64_t i) const { return i; }
    nlohmann::json operator()(double d) const { return d; }
    nlohmann::json operator()(const std::string& s) const { return s; }
    nlohmann::json operator()(const std::vector<std::string>& l) const { return l; }
  };
  return std::visit(Visitor{}, v);
}

Value value_from_json(const nlohmann::json& j) {
  if (j.is_null()) return std::monostate{};
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_unsigned() &&
      j.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) // 2^64-1 is not -1
    throw std::invalid_argument("an integer value must fit a signed 64-bit integer");
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) {
    std::vector<std::string> out;
    for (const auto& e : j) {
      if (!e.is_string()) throw std::invalid_argument("a list value may hold only strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  throw std::invalid_argument("a value must be null, bool, number, string or list of strings");
}

void FactSet::put(Fact f) {
  if (f.probe.empty()) f.probe = producer_;
  std::string key = f.key;
  star_keys_ = star_keys_ || key.find('*') != std::string::npos;
  // A facts file lists its keys in ascending order (facts_to_json writes the map in order), and
  // the fleet reader puts a thousand of them per node: a key after the last one goes in at the
  // end, which with that hint costs amortized constant time instead of a search
  // ([associative.reqmts]: a_uniq.emplace_hint(p, args)).
  if (!facts_.empty() && facts_.rbegin()->first < key) {
    facts_.emplace_hint(facts_.end(), std::move(key), std::move(f));
    return;
  }
  facts_.insert_or_assign(std::move(key), std::move(f));
}

void FactSet::put_ok(std::string key, Value v, std::string source) {
  put(Fact{std::move(key), std::move(v), Status::ok, std::move(source), {}, {}});
}

void FactSet::put_status(std::string key, Status s, std::string source, std::string reason) {
  put(Fact{std::move(key), std::monostate{}, s, std::move(source), std::move(reason), {}});
}

const Fact* FactSet::find(std::string_view key) const {
  if (guard_ != nullptr) (*guard_)(key);
  auto it = facts_.find(key);
  return it == facts_.end() ? nullptr : &it->second;
}

std::optional<std::int64_t> FactSet::get_int(std::string_view key) const {
  const Fact* f = find(key);
  if (f == nullptr || !f->ok()) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(&f->value)) return *i;
  if (const auto* d = std::get_if<double>(&f->value)) {
    if (std::isfinite(*d) && std::floor(*d) == *d) return static_cast<std::int64_t>(*d);
  }
  return std::nullopt;
}

std::optional<double> FactSet::get_number(std::string_view key) const {
  const Fact* f = find(key);
  if (f == nullptr || !f->ok()) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(&f->value)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&f->value)) return *d;
  return std::nullopt;
}

bool key_matches(std::string_view pattern, std::string_view key) {
  bool key_left = true;
  while (true) {
    const std::size_t dot = pattern.find('.');
    const bool last_pattern = dot == std::string_view::npos;
    const std::string_view p = pattern.substr(0, dot);
    pattern = last_pattern ? std::string_view() : pattern.substr(dot + 1);
    if (p == "**" && last_pattern) return key_left && !key.empty();
    if (!key_left) return false;
    const std::size_t key_dot = key.find('.');
    key_left = key_dot != std::string_view::npos;
    const std::string_view k = key.substr(0, key_dot);
    key = key_left ? key.substr(key_dot + 1) : std::string_view();
    if (p != "*" && k != "*" && p != k) return false;
    if (last_pattern) return !key_left;
  }
}

bool patterns_overlap(std::string_view a, std::string_view b) {
  while (true) {
    // One search for each segment's dot (this runs some thousand times while the registry
    // orders the probes).
    const std::size_t a_dot = a.find('.');
    const std::size_t b_dot = b.find('.');
    const bool a_last = a_dot == std::string_view::npos;
    const bool b_last = b_dot == std::string_view::npos;
    const std::string_view sa = a.substr(0, a_dot);
    const std::string_view sb = b.substr(0, b_dot);
    a = a_last ? std::string_view() : a.substr(a_dot + 1);
    b = b_last ? std::string_view() : b.substr(b_dot + 1);
    // A trailing `**` takes this segment of the other pattern and whatever follows it.
    if ((sa == "**" && a_last) || (sb == "**" && b_last)) return true;
    if (sa != "*" && sb != "*" && sa != sb) return false;
    if (a_last || b_last) return a_last && b_last;
  }
}

namespace {
using FactMap = std::map<std::string, Fact, std::less<>>;

/// The keys of `facts` that start with `prefix` and match `pattern` (key_matches), in key order:
/// the map's sorted range of the prefix, each key tested.
void scan_prefix(const FactMap& facts, std::string_view prefix, std::string_view pattern,
                 std::vector<FactMap::const_pointer>& out) {
  for (auto it = facts.lower_bound(prefix);
       it != facts.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
    if (key_matches(pattern, it->first)) out.push_back(&*it);
}

/// The keys of `facts` matching `prefix` + `rest`, in key order, where `prefix` is empty or the
/// pattern's segments before `rest` with their dots, and no key holds a `*`. A literal segment
/// narrows the prefix; a `*` followed by more segments visits each distinct segment under the
/// prefix once (the keys `prefix` + `c` + "." + anything are one contiguous range of the sorted
/// map, which ends before `prefix` + `c` + "/", '/' being the character after '.'), so a
/// per-GPU pattern such as "gpu.*.vbios" costs a search per GPU, not a test of every gpu.N.*
/// key; a last `*` or `**` tests the keys under the prefix.
void match_under(const FactMap& facts, std::string prefix, std::string_view rest,
                 std::string_view pattern, std::vector<FactMap::const_pointer>& out) {
  while (true) {
    if (rest.find('*') == std::string_view::npos) { // the rest is literal: one key
      prefix += rest;
      if (auto it = facts.find(prefix); it != facts.end()) out.push_back(&*it);
      return;
    }
    const std::size_t dot = rest.find('.');
    const std::string_view seg = rest.substr(0, dot);
    if (dot == std::string_view::npos) { // a last `*` or `**`, or a segment holding a `*`
      scan_prefix(facts, prefix, pattern, out);
      return;
    }
    if (seg != "*") { // a literal segment ("**" before the end is literal too: key_matches)
      if (seg.find('*') != std::string_view::npos) {
        scan_prefix(facts, prefix, pattern, out);
        return;
      }
      prefix.append(rest.substr(0, dot + 1));
      rest.remove_prefix(dot + 1);
      continue;
    }
    const std::string_view after = rest.substr(dot + 1);
    const std::size_t n = prefix.size();
    auto it = facts.lower_bound(prefix);
    while (it != facts.end() && it->first.compare(0, n, prefix) == 0) {
      const std::size_t end = it->first.find('.', n);
      if (end == std::string::npos) { // `prefix` + `c` alone: the `*` needs more segments
        ++it;
        continue;
      }
      std::string child(it->first, 0, end + 1); // prefix + c + "."
      match_under(facts, child, after, pattern, out);
      child.back() = '/';
      it = facts.lower_bound(child);
    }
    return;
  }
}
} // namespace

std::vector<const Fact*> FactSet::match(std::string_view pattern) const {
  std::vector<const Fact*> out;
  if (pattern.find('*') == std::string_view::npos) {
    if (const Fact* f = find(pattern)) out.push_back(f);
    return out;
  }
  std::vector<FactMap::const_pointer> found;
  if (star_keys_) {
    // A `*` in a key stands for any segment (key_matches): every key is tested.
    scan_prefix(facts_, {}, pattern, found);
  } else {
    match_under(facts_, std::string(), pattern, pattern, found);
  }
  out.reserve(found.size());
  for (const auto* entry : found) {
    if (guard_ != nullptr) (*guard_)(entry->first);
    out.push_back(&entry->second);
  }
  return out;
}

const std::map<std::string, Fact, std::less<>>& FactSet::all() const {
  if (guard_ != nullptr)
    throw std::logic_error("a probe may not iterate every fact: it reads by key or pattern");
  return facts_;
}

void FactSet::merge(const FactSet& other) {
  for (const auto& [k, f] : other.facts_)
    put(f);
}

nlohmann::json facts_to_json(const FactSet& facts, std::string_view tool_name,
                             std::string_view tool_version) {
  nlohmann::json out;
  out["schema_version"] = 1;
  out["tool"] = {{"name", tool_name}, {"version", tool_version}};
  nlohmann::json& fj = out["facts"] = nlohmann::json::object();
  for (const auto& [k, f] : facts.all()) {
    nlohmann::json e;
    e["status"] = to_string(f.status);
    e["value"] = value_to_json(f.value);
    e["source"] = f.source;
    if (!f.reason.empty()) e["reason"] = f.reason;
    if (!f.probe.empty()) e["probe"] = f.probe;
    fj[k] = std::move(e);
  }
  return out;
}

FactSet facts_from_json_text(std::string_view text, std::string_view origin) {
  const nlohmann::json j = parse_json_input(text, origin);
  auto fail = [&](const std::string& what) {
    throw InputError(fmt::format("{}: not a halo-doctor facts file: {}", origin, what));
  };
  if (!j.is_object()) fail("the top level must be an object");
  if (!j.contains("schema_version") || j["schema_version"] != 1) fail("schema_version must be 1");
  if (!j.contains("facts") || !j["facts"].is_object()) fail("\"facts\" must be an object");
  FactSet out;
  for (const auto& [key, e] : j["facts"].items()) {
    if (!e.is_object() || !e.contains("status") || !e["status"].is_string())
      fail(fmt::format("fact '{}' needs an object with a \"status\" string", key));
    auto st = parse_status(e["status"].get<std::string>());
    if (!st) fail(fmt::format("fact '{}' has an unknown status", key));
    Fact f;
    f.key = key;
    f.status = *st;
    try {
      f.value = e.contains("value") ? value_from_json(e["value"]) : Value{};
    } catch (const std::invalid_argument& ex) {
      fail(fmt::format("fact '{}': {}", key, ex.what()));
    }
    if (e.contains("source") && e["source"].is_string()) f.source = e["source"];
    if (e.contains("reason") && e["reason"].is_string()) f.reason = e["reason"];
    if (e.contains("probe") && e["probe"].is_string()) f.probe = e["probe"];
    out.put(std::move(f));
  }
  return out;
}

std::size_t line_of_offset(std::string_view text, std::size_t offset) {
  const std::string_view before = text.substr(0, std::min(offset, text.size()));
  return 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
}

bool Fact::not_probed() const {
  return status == Status::missing &&
         std::string_view(reason).substr(0, kNotProbedPrefix.size()) == kNotProbedPrefix;
}

std::string keys::gpu(std::int64_t index, std::string_view field) {
  return fmt::format("gpu.{}.{}", index, field);
}

std::string keys::gpu(std::string_view index, std::string_view field) {
  return fmt::format("gpu.{}.{}", index, field);
}

std::string keys::hsa_gpu(std::string_view index, std::string_view field) {
  return fmt::format("hsa.gpu.{}.{}", index, field);
}

std::string keys::modprobe_option(std::string_view module, std::string_view param) {
  return fmt::format("modprobe.options.{}.{}", module, param);
}

std::string keys::probe_status(std::string_view id) {
  return fmt::format("probe.{}.status", id);
}

} // namespace halo
