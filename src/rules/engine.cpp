// SPDX-License-Identifier: MIT
// Evaluating rules against facts: three-valued conditions, templates, results, the gate.
#include <halo/rules.hpp>
#include <halo/sanitize.hpp>
#include <halo/units.hpp>

#include <fmt/format.h>

#include <re2/re2.h>

#include <algorithm>
#include <cmath>

namespace halo {

std::string_view to_string(Outcome o) {
  switch (o) {
  case Outcome::pass:
    return "pass";
  case Outcome::fail:
    return "fail";
  case Outcome::skip:
    return "skip";
  case Outcome::error:
    return "error";
  }
  return "error";
}

std::string_view to_string(Severity s) {
  switch (s) {
  case Severity::info:
    return "info";
  case Severity::warning:
    return "warning";
  case Severity::error:
    return "error";
  }
  return "error";
}

std::optional<Severity> parse_severity(std::string_view s) {
  if (s == "info") return Severity::info;
  if (s == "warning") return Severity::warning;
  if (s == "error") return Severity::error;
  return std::nullopt;
}

int compare_versions(std::string_view a, std::string_view b) {
  // The leading dotted numbers ("6.18.4" of "6.18.4-200.fc43.x86_64"), each kept as its digits
  // without leading zeros, so numbers of any length compare without overflow.
  auto parts = [](std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) {
      const std::size_t start = i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0)
        ++i;
      std::string_view d = s.substr(start, i - start);
      while (d.size() > 1 && d.front() == '0')
        d.remove_prefix(1);
      out.push_back(d);
      if (i < s.size() && s[i] == '.')
        ++i;
      else
        break;
    }
    return out;
  };
  auto pa = parts(a);
  auto pb = parts(b);
  const std::size_t n = std::max(pa.size(), pb.size());
  pa.resize(n, "0");
  pb.resize(n, "0");
  for (std::size_t i = 0; i < n; ++i) {
    if (pa[i].size() != pb[i].size()) return pa[i].size() < pb[i].size() ? -1 : 1;
    if (pa[i] != pb[i]) return pa[i] < pb[i] ? -1 : 1;
  }
  return 0;
}

namespace {

using Tri = std::optional<bool>;

std::optional<double> as_number(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  return std::nullopt;
}

/// Resolves an operand to JSON; nullopt (and the key recorded) when its fact is not ok.
std::optional<nlohmann::json> resolve(const Operand& o, const FactSet& facts, const Params& params,
                                      std::vector<std::string>* unknown) {
  if (o.literal) return *o.literal;
  nlohmann::json base;
  if (!o.param.empty()) {
    auto it = params.find(o.param);
    if (it == params.end()) {
      // min_kernel and min_rocm exist only when a policy sets them (docs/policy.md).
      if (unknown != nullptr) unknown->push_back("policy thresholds." + o.param);
      return std::nullopt;
    }
    base = it->second;
  } else {
    const Fact* f = facts.find(o.fact);
    if (f == nullptr || !f->ok()) {
      if (unknown != nullptr) unknown->push_back(o.fact);
      return std::nullopt;
    }
    base = value_to_json(f->value);
  }
  if (o.times == 1.0 && o.plus == 0.0) return base;
  auto n = as_number(base);
  if (!n) return std::nullopt;
  return *n * o.times + o.plus;
}

Tri compare_one(const Fact& f, const Condition& c, const nlohmann::json& rhs) {
  const nlohmann::json lhs = value_to_json(f.value);
  auto ln = as_number(lhs);
  auto rn = as_number(rhs);
  switch (c.op) {
  case Op::eq:
  case Op::ne: {
    bool equal = (ln && rn) ? *ln == *rn : lhs == rhs;
    return c.op == Op::eq ? equal : !equal;
  }
  case Op::lt:
  case Op::le:
  case Op::gt:
  case Op::ge:
    if (!ln || !rn) return std::nullopt;
    if (c.op == Op::lt) return *ln < *rn;
    if (c.op == Op::le) return *ln <= *rn;
    if (c.op == Op::gt) return *ln > *rn;
    return *ln >= *rn;
  case Op::in:
  case Op::not_in: {
    bool found = std::any_of(rhs.begin(), rhs.end(), [&](const nlohmann::json& e) {
      auto en = as_number(e);
      return (ln && en) ? *ln == *en : lhs == e;
    });
    return c.op == Op::in ? found : !found;
  }
  case Op::matches:
    if (!lhs.is_string()) return std::nullopt;
    {
      // RE2: linear in the length of the fact (the loader checked the pattern compiles).
      const RE2 re(rhs.get<std::string>(), RE2::Quiet);
      if (!re.ok()) return std::nullopt;
      return RE2::FullMatch(lhs.get<std::string>(), re);
    }
  case Op::contains:
    if (lhs.is_array()) return std::find(lhs.begin(), lhs.end(), rhs) != lhs.end();
    // The operand may be another fact (`{"fact": "gpu.this.gfx_target"}`) whose value is not
    // a string: then the substring test cannot be made, and the leaf is unknown.
    if (lhs.is_string() && rhs.is_string())
      return lhs.get<std::string>().find(rhs.get<std::string>()) != std::string::npos;
    return std::nullopt;
  case Op::contains_any:
    if (!lhs.is_array()) return std::nullopt;
    return std::any_of(rhs.begin(), rhs.end(), [&](const nlohmann::json& e) {
      return std::find(lhs.begin(), lhs.end(), e) != lhs.end();
    });
  case Op::empty:
    if (!lhs.is_array() && !lhs.is_string()) return std::nullopt;
    return (lhs.is_string() ? lhs.get<std::string>().empty() : lhs.empty()) == rhs.get<bool>();
  case Op::version_lt:
  case Op::version_ge: {
    if (!lhs.is_string() || !rhs.is_string()) return std::nullopt;
    int cmp = compare_versions(lhs.get<std::string>(), rhs.get<std::string>());
    return c.op == Op::version_lt ? cmp < 0 : cmp >= 0;
  }
  case Op::exists:
  case Op::status:
    break;
  }
  return std::nullopt;
}

Tri eval_leaf(const Condition& c, const FactSet& facts, const Params& params,
              std::vector<std::string>* unknown) {
  const bool wildcard = c.fact.find('*') != std::string::npos;
  std::vector<const Fact*> matched = facts.match(c.fact);
  if (c.op == Op::exists) {
    bool any_ok =
        std::any_of(matched.begin(), matched.end(), [](const Fact* f) { return f->ok(); });
    // A fact whose probe was not run (--no-runtime, no host root in a container) may exist on
    // the machine: whether it exists is unknown, not false.
    if (!any_ok) {
      for (const Fact* f : matched) {
        if (!f->not_probed()) continue;
        if (unknown != nullptr) unknown->push_back(f->key);
        return std::nullopt;
      }
    }
    return any_ok == c.operand.literal->get<bool>();
  }
  if (c.op == Op::status) {
    auto want = parse_status(c.operand.literal->get<std::string>());
    if (matched.empty()) return want == Status::missing;
    return std::any_of(matched.begin(), matched.end(),
                       [&](const Fact* f) { return f->status == want; });
  }
  if (matched.empty()) {
    if (wildcard) return false;
    if (unknown != nullptr) unknown->push_back(c.fact);
    return std::nullopt;
  }
  auto rhs = resolve(c.operand, facts, params, unknown);
  if (!rhs) return std::nullopt;
  bool saw_unknown = false;
  for (const Fact* f : matched) {
    if (!f->ok()) {
      saw_unknown = true;
      if (unknown != nullptr) unknown->push_back(f->key);
      continue;
    }
    Tri t = compare_one(*f, c, *rhs);
    if (t == true) return true;
    if (!t) {
      saw_unknown = true;
      if (unknown != nullptr) unknown->push_back(f->key);
    }
  }
  if (saw_unknown) return std::nullopt;
  return false;
}

} // namespace

Tri eval_condition(const Condition& c, const FactSet& facts, const Params& params,
                   std::vector<std::string>* unknown_keys) {
  switch (c.kind) {
  case Condition::Kind::leaf:
    return eval_leaf(c, facts, params, unknown_keys);
  case Condition::Kind::all: {
    bool saw_unknown = false;
    for (const auto& ch : c.children) {
      Tri t = eval_condition(ch, facts, params, unknown_keys);
      if (t == false) return false;
      if (!t) saw_unknown = true;
    }
    if (saw_unknown) return std::nullopt;
    return true;
  }
  case Condition::Kind::any:
  case Condition::Kind::none: {
    bool saw_unknown = false;
    bool any_true = false;
    for (const auto& ch : c.children) {
      Tri t = eval_condition(ch, facts, params, unknown_keys);
      if (t == true) {
        any_true = true;
        break;
      }
      if (!t) saw_unknown = true;
    }
    if (any_true) return c.kind == Condition::Kind::any;
    if (saw_unknown) return std::nullopt;
    return c.kind != Condition::Kind::any;
  }
  }
  return std::nullopt;
}

std::string expand_template(std::string_view tmpl, const FactSet& facts, const Params& params) {
  std::string out;
  std::size_t i = 0;
  while (i < tmpl.size()) {
    std::size_t open = tmpl.find('{', i);
    if (open == std::string_view::npos) {
      out.append(tmpl.substr(i));
      break;
    }
    std::size_t close = tmpl.find('}', open);
    if (close == std::string_view::npos) {
      out.append(tmpl.substr(i));
      break;
    }
    out.append(tmpl.substr(i, open - i));
    std::string_view inner = tmpl.substr(open + 1, close - open - 1);
    std::string_view fn;
    std::string_view key = inner;
    if (auto colon = inner.find(':'); colon != std::string_view::npos) {
      fn = inner.substr(0, colon);
      key = inner.substr(colon + 1);
    }
    const bool looks_like_key = !key.empty() && std::all_of(key.begin(), key.end(), [](char ch) {
      return std::islower(static_cast<unsigned char>(ch)) != 0 ||
             std::isdigit(static_cast<unsigned char>(ch)) != 0 || ch == '.' || ch == '_' ||
             ch == '-';
    });
    if (!looks_like_key) {
      out.append(tmpl.substr(open, close - open + 1));
      i = close + 1;
      continue;
    }
    if (fn == "param") {
      auto it = params.find(key);
      out += it == params.end()
                 ? "?"
                 : (it->second.is_string() ? it->second.get<std::string>() : dump_json(it->second));
    } else if (fn == "gib" || fn == "pages_gib") {
      auto n = facts.get_number(key);
      // In floating point throughout: a pages_limit of 2^61 pages is 2^73 bytes, and casting
      // that back to int64 was undefined (it printed -8589934592.00 GiB).
      out += n ? units::gib_of(
                     *n * (fn == "pages_gib" ? static_cast<double>(units::kTtmPageBytes) : 1.0))
               : "?";
    } else if (fn == "watts") {
      // Microwatts (hwmon power1_*) as watts: "450 W".
      auto n = facts.get_number(key);
      out += n ? format_value(Value{*n / 1e6}) + " W" : "?";
    } else {
      const Fact* f = facts.find(key);
      out += (f != nullptr && f->ok()) ? format_value(f->value) : "?";
    }
    i = close + 1;
  }
  return out;
}

namespace {

/// Expands templates in every string of a fix; a string that is exactly "{key}" takes the
/// fact's JSON value (a list fact becomes a list and is spliced into a surrounding list).
nlohmann::json expand_fix(const nlohmann::json& j, const FactSet& facts, const Params& params) {
  if (j.is_string()) {
    const auto s = j.get<std::string>();
    if (s.size() > 2 && s.front() == '{' && s.back() == '}' &&
        s.find('{', 1) == std::string::npos && s.find(':') == std::string::npos) {
      const Fact* f = facts.find(s.substr(1, s.size() - 2));
      if (f != nullptr && f->ok()) return value_to_json(f->value);
    }
    return expand_template(s, facts, params);
  }
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : j) {
      auto x = expand_fix(e, facts, params);
      if (e.is_string() && x.is_array()) {
        for (auto& y : x)
          out.push_back(std::move(y));
      } else {
        out.push_back(std::move(x));
      }
    }
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items())
      out[expand_template(k, facts, params)] = expand_fix(v, facts, params);
    return out;
  }
  return j;
}

std::vector<Evidence> collect_evidence(const Rule& r, const FactSet& facts,
                                       const std::vector<std::string>& extra) {
  std::vector<Evidence> out;
  // Views of the facts' keys and the rule's patterns, which outlive this call.
  std::vector<std::string_view> seen;
  auto add = [&](const Fact& f) {
    if (std::find(seen.begin(), seen.end(), f.key) != seen.end()) return;
    seen.push_back(f.key);
    out.push_back(Evidence{f.key, f.ok() ? value_to_json(f.value) : nlohmann::json(nullptr),
                           std::string(to_string(f.status)), f.source, f.reason, f.probe});
  };
  auto add_pattern = [&](const std::string& pattern) {
    auto m = facts.match(pattern);
    if (m.empty() && pattern.find('*') == std::string::npos) {
      if (std::find(seen.begin(), seen.end(), pattern) != seen.end()) return;
      seen.push_back(pattern);
      out.push_back(Evidence{pattern, nullptr, "missing", "", "not collected", ""});
    }
    for (const Fact* f : m)
      add(*f);
  };
  for (const auto& p : r.evidence)
    add_pattern(p);
  for (const auto& k : extra)
    add_pattern(k);
  return out;
}

/// The facts a condition that held turned on (Result::proof): each leaf's fact and operand fact
/// that is ok, and the fact of an `exists` or `status` leaf whatever its state (those two hold on
/// a fact that could not be read). A fact that is not ok in any other leaf left that leaf unknown,
/// so the verdict did not rest on it. Where one child alone decides a group (the first false child
/// of a false `all`, the first true child of a true `any` or of a false `none`: evaluation stops
/// there), only that child's facts are the proof; the branches it made moot are not. An
/// `exists: true` leaf on an absent fact only rules its branch out and is left out.
void proof_keys(const Condition& c, const FactSet& facts, const Params& params,
                std::vector<std::string>& keys) {
  if (c.kind != Condition::Kind::leaf) {
    const Tri group = eval_condition(c, facts, params, nullptr);
    // The child value that decides the group on its own, if the group's value is decided by one.
    std::optional<bool> decisive;
    if (c.kind == Condition::Kind::all && group == false) decisive = false;
    if (c.kind == Condition::Kind::any && group == true) decisive = true;
    if (c.kind == Condition::Kind::none && group == false) decisive = true;
    for (const auto& child : c.children) {
      if (decisive) {
        if (eval_condition(child, facts, params, nullptr) == *decisive) {
          proof_keys(child, facts, params, keys);
          return;
        }
        continue;
      }
      proof_keys(child, facts, params, keys);
    }
    return;
  }
  // An `exists: true` leaf that is false (the fact is absent) only rules out the branch it guards
  // (an Ubuntu kernel's ABI field on Fedora): the verdict rests on the branches that were judged,
  // so the absent fact is not shown as proof (issue 46 item 3: no `<missing>` noise).
  if (c.op == Op::exists && c.operand.literal && c.operand.literal->is_boolean() &&
      c.operand.literal->get<bool>() && eval_leaf(c, facts, params, nullptr) == false)
    return;
  const bool any_state = c.op == Op::exists || c.op == Op::status;
  auto add = [&](const std::string& key) {
    if (key.empty()) return;
    const auto matched = facts.match(key);
    if (matched.empty() && any_state && key.find('*') == std::string::npos) keys.push_back(key);
    for (const Fact* f : matched)
      if (f->ok() || any_state) keys.push_back(f->key);
  };
  add(c.fact);
  add(c.operand.fact);
}

/// Evidence for exactly `keys`, in their order, once each.
std::vector<Evidence> evidence_of(const std::vector<std::string>& keys, const FactSet& facts) {
  Rule bare;
  return collect_evidence(bare, facts, keys);
}

std::string describe_unknown(const std::vector<std::string>& keys, const FactSet& facts) {
  std::vector<std::string> parts;
  for (const auto& k : keys) {
    const Fact* f = facts.find(k);
    std::string s = f == nullptr ? fmt::format("{} (not collected)", k)
                                 : fmt::format("{} ({}{}{})", k, to_string(f->status),
                                               f->reason.empty() ? "" : ": ", f->reason);
    if (std::find(parts.begin(), parts.end(), s) == parts.end()) parts.push_back(s);
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

/// The reason to skip when every unknown fact belongs to a probe that was not run on request
/// (--no-runtime, a runtime probe under --root); empty otherwise.
std::string not_probed_reason(const std::vector<std::string>& keys, const FactSet& facts) {
  if (keys.empty()) return {};
  std::string reason;
  for (const auto& k : keys) {
    const Fact* f = facts.find(k);
    if (f == nullptr || !f->not_probed()) return {};
    if (reason.empty()) reason = f->reason.substr(kNotProbedPrefix.size());
  }
  return "not checked: the probe was not run (" + reason + ")";
}

} // namespace

Params default_params(std::int64_t reserve_gib) {
  return Params{{"reserve_gib", reserve_gib},
                {"reserve_bytes", reserve_gib * 1024LL * 1024 * 1024}};
}

namespace {
/// A result for `r` before it is judged: the rule's id, title, area, why and sources.
Result result_for(const Rule& r) {
  Result res;
  res.id = r.id;
  res.title = r.title;
  res.area = r.area;
  res.severity = r.max_severity();
  res.why = r.why;
  res.sources = r.sources;
  res.subsumes = r.subsumes;
  res.fix = nullptr;
  return res;
}
} // namespace

Result evaluate_rule(const Rule& r, const FactSet& facts, const Params& params) {
  Result res = result_for(r);
  std::vector<std::string> unknown;
  bool decided = false;
  for (const auto& pre : r.applies) {
    Tri a = eval_condition(pre.when, facts, params, &unknown);
    if (a == true) continue;
    if (a == false) {
      res.status = Outcome::skip;
      res.message = expand_template(pre.skip_reason, facts, params);
      res.evidence = collect_evidence(r, facts, {});
    } else if (auto why = not_probed_reason(unknown, facts); !why.empty()) {
      res.status = Outcome::skip;
      res.message = why;
      res.evidence = collect_evidence(r, facts, unknown);
    } else {
      res.status = Outcome::error;
      res.message = "could not tell whether this rule applies: " + describe_unknown(unknown, facts);
      res.evidence = collect_evidence(r, facts, unknown);
      res.proof = evidence_of(unknown, facts);
    }
    decided = true;
    break;
  }
  if (decided) return res;
  unknown.clear();
  const FailCase* hit = nullptr;
  for (const auto& fc : r.fail) {
    Tri t = eval_condition(fc.when, facts, params, &unknown);
    if (t == true) {
      hit = &fc;
      break;
    }
  }
  if (hit != nullptr) {
    res.status = Outcome::fail;
    res.severity = hit->severity;
    res.message = expand_template(hit->message, facts, params);
    if (const auto& fix = hit->fix.is_null() ? r.fix : hit->fix; !fix.is_null())
      res.fix = expand_fix(fix, facts, params);
    if (r.pending_when)
      res.pending_reboot = eval_condition(*r.pending_when, facts, params, nullptr) == true;
    res.evidence = collect_evidence(r, facts, {});
    std::vector<std::string> keys;
    proof_keys(hit->when, facts, params, keys);
    if (res.pending_reboot) proof_keys(*r.pending_when, facts, params, keys);
    res.proof = evidence_of(keys, facts);
  } else if (auto why = not_probed_reason(unknown, facts); !why.empty()) {
    res.status = Outcome::skip;
    res.message = why;
    res.evidence = collect_evidence(r, facts, unknown);
  } else if (!unknown.empty()) {
    res.status = Outcome::error;
    res.message = "could not be checked: " + describe_unknown(unknown, facts);
    res.evidence = collect_evidence(r, facts, unknown);
    res.proof = evidence_of(unknown, facts);
  } else {
    res.status = Outcome::pass;
    res.message = expand_template(r.pass_message, facts, params);
    res.evidence = collect_evidence(r, facts, {});
  }
  return res;
}

namespace {

/// Replaces the `gpu.this.` segment pair by `gpu.N.` wherever it starts a key: at the start of
/// the text or after '.', '{' or ':' (`hsa.gpu.this.x`, `{gib:gpu.this.x}`).
std::string bind_text(std::string_view text, std::int64_t index) {
  const std::string needle = fmt::format("gpu.{}.", kThisGpu);
  // index -1 stands for every GPU: `gpu.*.` (a pattern, for evidence).
  const std::string with = index < 0 ? std::string("gpu.*.") : fmt::format("gpu.{}.", index);
  std::string out;
  std::size_t from = 0;
  for (std::size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + 1)) {
    if (pos > 0 && text[pos - 1] != '.' && text[pos - 1] != '{' && text[pos - 1] != ':') continue;
    out.append(text.substr(from, pos - from)).append(with);
    from = pos + needle.size();
  }
  out.append(text.substr(from));
  return out;
}

void collect_fact_keys(const Condition& c, std::vector<std::string>& out) {
  if (!c.fact.empty()) out.push_back(c.fact);
  if (!c.operand.fact.empty()) out.push_back(c.operand.fact);
  for (const auto& child : c.children)
    collect_fact_keys(child, out);
}

void bind_condition(Condition& c, std::int64_t index) {
  c.fact = bind_text(c.fact, index);
  c.operand.fact = bind_text(c.operand.fact, index);
  for (auto& child : c.children)
    bind_condition(child, index);
}

nlohmann::json bind_json(const nlohmann::json& j, std::int64_t index) {
  if (j.is_string()) return bind_text(j.get<std::string>(), index);
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& x : j)
      out.push_back(bind_json(x, index));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items())
      out[bind_text(k, index)] = bind_json(v, index);
    return out;
  }
  return j;
}

} // namespace

Rule bind_to_gpu(const Rule& rule, std::int64_t index) {
  Rule r = rule;
  r.scope = Scope::host;
  if (r.gpus) {
    r.applies.insert(r.applies.begin(), *r.gpus);
    r.gpus.reset();
  }
  for (auto& pre : r.applies) {
    bind_condition(pre.when, index);
    pre.skip_reason = bind_text(pre.skip_reason, index);
  }
  for (auto& fc : r.fail) {
    bind_condition(fc.when, index);
    fc.message = bind_text(fc.message, index);
    fc.fix = bind_json(fc.fix, index);
  }
  if (r.pending_when) bind_condition(*r.pending_when, index);
  r.pass_message = bind_text(r.pass_message, index);
  r.fix = bind_json(r.fix, index);
  for (auto& e : r.evidence)
    e = bind_text(e, index);
  return r;
}

GpuRef gpu_ref(const FactSet& facts, std::int64_t index) {
  GpuRef g;
  g.index = index;
  g.pci_slot = facts.get<std::string>(keys::gpu(index, "pci_slot")).value_or("");
  g.gfx_target = facts.get<std::string>(keys::gpu(index, "gfx_target")).value_or("");
  g.name = facts.get<std::string>(keys::gpu(index, "name")).value_or("");
  g.hip_device = facts.get_int(keys::gpu(index, "hip_device"));
  return g;
}

std::string describe_gpu(const GpuRef& g) {
  std::vector<std::string> parts;
  for (const std::string* s : {&g.pci_slot, &g.gfx_target})
    if (!s->empty()) parts.push_back(*s);
  if (parts.empty()) return fmt::format("GPU {}", g.index);
  return fmt::format("GPU {} ({})", g.index, fmt::join(parts, ", "));
}

std::vector<Result> evaluate(const RuleSet& rules, const FactSet& facts, const Params& params) {
  std::vector<Result> out;
  out.reserve(rules.rules.size());
  // gpu.count comes from facts that may be a replayed file: bounded, so a forged count cannot
  // make the engine loop for hours (KFD itself has at most a few hundred nodes).
  constexpr std::int64_t kMaxGpus = 1024;
  const std::int64_t gpus =
      std::clamp<std::int64_t>(facts.get_int(keys::gpu_count).value_or(0), 0, kMaxGpus);
  for (const Rule& r : rules.rules) {
    if (r.scope == Scope::host) {
      out.push_back(evaluate_rule(r, facts, params));
      continue;
    }
    std::size_t judged = 0;
    for (std::int64_t i = 0; i < gpus; ++i) {
      const Rule bound = bind_to_gpu(r, i);
      // A GPU the filter leaves out gets no result; one whose filter is unknown is judged (the
      // result says which facts could not be read).
      if (r.gpus && eval_condition(bound.applies.front().when, facts, params, nullptr) == false)
        continue;
      Result res = evaluate_rule(bound, facts, params);
      res.gpu = gpu_ref(facts, i);
      out.push_back(std::move(res));
      ++judged;
    }
    if (judged == 0) {
      // No GPU, or none the filter keeps: the rule is skipped once, for the host.
      Result res = result_for(r);
      res.status = Outcome::skip;
      // In WSL2 PCI, DRM and KFD list no GPU while the Windows driver has one: say so
      // (wsl.no_gpu_message, checks/host/wsl.cpp) instead of "no AMD GPU found".
      const std::string no_gpu = facts.get<std::string>(keys::wsl_no_gpu_message).value_or("");
      res.message = gpus == 0 || !r.gpus
                        ? (gpus == 0 && !no_gpu.empty() ? no_gpu : std::string("no AMD GPU found"))
                        : expand_template(r.gpus->skip_reason, facts, params);
      // Evidence: the filter's facts of every GPU (gpu.*.gfx_target), which show why none is
      // judged.
      if (r.gpus) {
        std::vector<std::string> keys;
        collect_fact_keys(r.gpus->when, keys);
        for (auto& k : keys)
          k = bind_text(k, -1);
        Rule bare;
        res.evidence = collect_evidence(bare, facts, keys);
      }
      out.push_back(std::move(res));
    }
  }
  return out;
}

int gate_exit_code(const std::vector<Result>& results, FailOn fail_on) {
  if (fail_on == FailOn::never) return exit_code::ok;
  const auto threshold = static_cast<Severity>(static_cast<int>(fail_on));
  bool any = false;
  bool all_pending = true;
  for (const auto& r : results) {
    if (r.status != Outcome::fail || r.severity < threshold || r.waived()) continue;
    any = true;
    if (!r.pending_reboot) all_pending = false;
  }
  if (!any) return exit_code::ok;
  return all_pending ? exit_code::pending_reboot : exit_code::failed;
}

} // namespace halo
