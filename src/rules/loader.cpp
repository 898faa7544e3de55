// SPDX-License-Identifier: MIT
// Loading and validating rules/*.json. The only place that knows the rule file syntax.
#include <halo/digest.hpp>
#include <halo/error.hpp>
#include <halo/fleet_quantity.hpp>
#include <halo/io.hpp>
#include <halo/probe.hpp>
#include <halo/rules.hpp>
#include <halo/schema.hpp>

#include <fmt/format.h>

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace halo {
namespace {

const std::map<std::string_view, Op, std::less<>>& op_names() {
  static const std::map<std::string_view, Op, std::less<>> m = {
      {"eq", Op::eq},
      {"ne", Op::ne},
      {"lt", Op::lt},
      {"le", Op::le},
      {"gt", Op::gt},
      {"ge", Op::ge},
      {"in", Op::in},
      {"not_in", Op::not_in},
      {"exists", Op::exists},
      {"status", Op::status},
      {"matches", Op::matches},
      {"contains", Op::contains},
      {"contains_any", Op::contains_any},
      {"empty", Op::empty},
      {"version_lt", Op::version_lt},
      {"version_ge", Op::version_ge},
  };
  return m;
}

/// Run parameters a rule may read: --reserve, and the versions a site policy sets
/// (thresholds.min_kernel, thresholds.min_rocm; docs/policy.md).
const std::set<std::string, std::less<>> kParams = {"reserve_gib", "reserve_bytes", "min_kernel",
                                                    "min_rocm"};

/// Named conditions from rules/predicates.json: name -> the condition's JSON.
using Predicates = std::map<std::string, nlohmann::json, std::less<>>;

/// The file of named conditions, read before the rules files and never as one.
constexpr std::string_view kPredicatesFile = "predicates.json";

/// The name op_names() gives `op`, for messages.
std::string_view op_name(Op op) {
  for (const auto& [name, o] : op_names())
    if (o == op) return name;
  return "?";
}

/// The declared types of the facts a rule's key can name: for a literal key the one
/// declaration that governs it (ProbeRegistry::declaration_for); for a key with `*` every
/// declaration it may match. Empty when nothing declares it (`bench.**`, merged from halo-bench,
/// is declared in docs/bench.md, not by a probe) or there is no registry: then nothing is checked.
std::vector<const FactDecl*> declarations_of(const ProbeRegistry* registry, std::string_view key) {
  std::vector<const FactDecl*> out;
  if (registry == nullptr) return out;
  if (key.find('*') == std::string_view::npos) {
    if (const FactDecl* d = registry->declaration_for(key)) out.push_back(d);
    return out;
  }
  for (const FactDecl& d : registry->declarations())
    if (patterns_overlap(d.pattern, key)) out.push_back(&d);
  return out;
}

bool numeric(FactType t) {
  return t == FactType::integer || t == FactType::number;
}

/// True when JSON value `v` is what a fact of type `t` can equal: the engine compares numbers
/// numerically and strings, booleans and lists exactly (src/rules/engine.cpp compare_one), so a
/// string fact never equals the number 0 (issue 45: `amdgpu.param.gpu_recovery` was text, and
/// `eq: 0` never held). `exact`: an example's value, which becomes the fact itself, so an int
/// fact takes only an integer.
bool json_fits(FactType t, const nlohmann::json& v, bool exact) {
  switch (t) {
  case FactType::boolean:
    return v.is_boolean();
  case FactType::integer:
    return exact ? v.is_number_integer() : v.is_number();
  case FactType::number:
    return v.is_number();
  case FactType::string:
    return v.is_string();
  case FactType::list:
    return v.is_array() &&
           std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_string(); });
  }
  return false;
}

/// "a number", "a string", ...: what a JSON literal is, for messages.
std::string json_kind(const nlohmann::json& v) {
  if (v.is_boolean()) return fmt::format("the boolean {}", v.dump());
  if (v.is_number()) return fmt::format("the number {}", v.dump());
  if (v.is_string()) return fmt::format("the string {}", v.dump());
  if (v.is_array()) return fmt::format("the list {}", v.dump());
  return v.dump();
}

/// Context for error messages: file, rule line, rule id and a path inside the rule.
struct Where {
  std::string_view file;
  std::size_t line;
  std::string_view rule_id;
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw InputError(fmt::format("{}:{}: rule '{}': {}: {}", file, line, rule_id, path, what));
  }
};

class Parser {
public:
  Parser(const Where& where, const ProbeRegistry* registry, bool gpu_scope,
         const Predicates* predicates = nullptr)
      : w_(where), registry_(registry), gpu_scope_(gpu_scope), predicates_(predicates) {}

  void check_fact(const std::string& path, const std::string& key) const {
    if (key.empty()) w_.fail(path, "\"fact\" must be a non-empty string");
    if (!gpu_scope_ && (key.rfind(this_gpu_prefix(), 0) == 0 ||
                        key.find("." + this_gpu_prefix()) != std::string::npos))
      w_.fail(path, fmt::format(R"('{}' names the judged GPU, which needs "scope": "gpu")", key));
    if (registry_ != nullptr && !registry_->provides(key))
      w_.fail(path, fmt::format("no probe provides the fact '{}'", key));
  }

  Operand operand(const std::string& path, const nlohmann::json& j, Op op) const {
    Operand o;
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if (k == "fact" && v.is_string()) {
          o.fact = v.get<std::string>();
          check_fact(path, o.fact);
        } else if (k == "param" && v.is_string()) {
          o.param = v.get<std::string>();
          if (!kParams.contains(o.param)) w_.fail(path, fmt::format("unknown param '{}'", o.param));
        } else if (k == "times" && v.is_number()) {
          o.times = v.get<double>();
        } else if (k == "plus" && v.is_number()) {
          o.plus = v.get<double>();
        } else {
          w_.fail(path, fmt::format("unexpected operand key '{}'", k));
        }
      }
      if (o.fact.empty() == o.param.empty())
        w_.fail(path, "an operand object needs one of fact or param");
      return o;
    }
    switch (op) {
    case Op::in:
    case Op::not_in:
    case Op::contains_any:
      if (!j.is_array()) w_.fail(path, "this operator needs a list");
      break;
    case Op::exists:
    case Op::empty:
      if (!j.is_boolean()) w_.fail(path, "this operator needs true or false");
      break;
    case Op::status:
      if (!j.is_string() || !parse_status(j.get<std::string>()))
        w_.fail(path, "status must be one of ok, missing, denied, error");
      break;
    case Op::matches:
      if (!j.is_string()) w_.fail(path, "matches needs a regular expression string");
      // RE2 syntax (linear-time matching, no backtracking: `(a+)+$` cannot take exponential
      // time); backreferences and lookaround are refused here with RE2's reason.
      if (const RE2 re(j.get<std::string>(), RE2::Quiet); !re.ok())
        w_.fail(path, fmt::format("bad regular expression: {}", re.error()));
      break;
    case Op::version_lt:
    case Op::version_ge:
    case Op::contains:
      if (!j.is_string()) w_.fail(path, "this operator needs a string");
      break;
    case Op::lt:
    case Op::le:
    case Op::gt:
    case Op::ge:
      if (!j.is_number()) w_.fail(path, "this operator needs a number");
      break;
    default:
      break;
    }
    o.literal = j;
    return o;
  }

  Condition condition(const std::string& path, const nlohmann::json& j) const {
    if (!j.is_object()) w_.fail(path, "a condition must be an object");
    if (j.contains("predicate")) {
      // A named condition from rules/predicates.json, expanded here: the rule then holds it as
      // if written out (and its facts are checked in this rule's scope).
      if (j.size() != 1 || !j["predicate"].is_string())
        w_.fail(path, "{\"predicate\": NAME} stands alone");
      const std::string name = j["predicate"].get<std::string>();
      if (predicates_ == nullptr) w_.fail(path, fmt::format("unknown predicate '{}'", name));
      const auto it = predicates_->find(name);
      if (it == predicates_->end())
        w_.fail(path, fmt::format("unknown predicate '{}' (rules/predicates.json)", name));
      const Parser inner(w_, registry_, gpu_scope_, nullptr); // no predicate inside a predicate
      return inner.condition(path + "(" + name + ")", it->second);
    }
    Condition c;
    for (const char* group : {"all", "any", "none"}) {
      if (!j.contains(group)) continue;
      if (j.size() != 1) w_.fail(path, fmt::format("\"{}\" must stand alone in its object", group));
      const auto& arr = j[group];
      if (!arr.is_array() || arr.empty())
        w_.fail(path, fmt::format("\"{}\" needs a non-empty list", group));
      c.kind = std::string_view(group) == "all"   ? Condition::Kind::all
               : std::string_view(group) == "any" ? Condition::Kind::any
                                                  : Condition::Kind::none;
      for (std::size_t i = 0; i < arr.size(); ++i)
        c.children.push_back(condition(fmt::format("{}.{}[{}]", path, group, i), arr[i]));
      return c;
    }
    if (!j.contains("fact") || !j["fact"].is_string())
      w_.fail(path, R"(a condition needs "all", "any", "none" or "fact")");
    c.kind = Condition::Kind::leaf;
    c.fact = j["fact"].get<std::string>();
    check_fact(path, c.fact);
    if (j.size() != 2) w_.fail(path, "a fact condition needs exactly one operator");
    for (const auto& [k, v] : j.items()) {
      if (k == "fact") continue;
      auto it = op_names().find(k);
      if (it == op_names().end()) w_.fail(path, fmt::format("unknown operator '{}'", k));
      c.op = it->second;
      c.operand = operand(fmt::format("{}.{}", path, k), v, c.op);
      check_types(fmt::format("{}.{}", path, k), c);
    }
    return c;
  }

  /// Checks a leaf's operator and operand against the declared type of its fact (and of an
  /// operand fact): a comparison that can never hold on what the probe produces fails the load.
  /// A key with `*` passes when one of the declarations it may match fits.
  void check_types(const std::string& path, const Condition& c) const {
    if (c.op == Op::exists || c.op == Op::status) return;
    const auto decls = declarations_of(registry_, c.fact);
    if (decls.empty()) return;
    std::vector<FactType> operand_types;
    bool operand_numeric = false;
    if (!c.operand.fact.empty()) {
      for (const FactDecl* d : declarations_of(registry_, c.operand.fact))
        operand_types.push_back(d->type);
      // A scaled operand ({"fact", "times", "plus"}) is a number (engine.cpp resolve).
      operand_numeric = c.operand.times != 1.0 || c.operand.plus != 0.0;
    } else if (!c.operand.param.empty()) {
      return; // run parameters: reserve_* are numbers, min_* versions (docs/policy.md)
    }
    std::string why;
    auto fits = [&](FactType t) {
      switch (c.op) {
      case Op::eq:
      case Op::ne:
        if (c.operand.literal) return json_fits(t, *c.operand.literal, false);
        if (operand_numeric) return numeric(t);
        return operand_types.empty() || std::ranges::any_of(operand_types, [&](FactType o) {
                 return o == t || (numeric(o) && numeric(t));
               });
      case Op::lt:
      case Op::le:
      case Op::gt:
      case Op::ge:
        return numeric(t) && (operand_types.empty() || operand_numeric ||
                              std::ranges::any_of(operand_types, numeric));
      case Op::in:
      case Op::not_in:
        return !c.operand.literal ||
               std::all_of(c.operand.literal->begin(), c.operand.literal->end(),
                           [&](const nlohmann::json& e) { return json_fits(t, e, false); });
      case Op::matches:
      case Op::version_lt:
      case Op::version_ge:
        return t == FactType::string;
      case Op::contains:
        return t == FactType::string || t == FactType::list;
      case Op::contains_any:
        return t == FactType::list;
      case Op::empty:
        return t == FactType::string || t == FactType::list;
      case Op::exists:
      case Op::status:
        return true;
      }
      return true;
    };
    if (std::ranges::any_of(decls, [&](const FactDecl* d) { return fits(d->type); })) return;
    const FactDecl* d = decls.front();
    const std::string rhs =
        c.operand.literal
            ? json_kind(*c.operand.literal)
            : fmt::format("the fact '{}'{}", c.operand.fact,
                          operand_types.empty()
                              ? std::string()
                              : fmt::format(" ({})", fact_type_name(operand_types.front())));
    w_.fail(path, fmt::format("'{}' is declared {} (`{}`, checks/*/facts.json): `{}` with {} "
                              "never holds on what its probe produces",
                              c.fact, fact_type_name(d->type), d->pattern, op_name(c.op), rhs));
  }

  /// Checks an example's value for `key` against the fact's declared type (checks/*/facts.json):
  /// an example that gives a string fact as a number tests a fact the probe never produces.
  void check_example_type(const std::string& path, const std::string& key,
                          const nlohmann::json& v) const {
    if (v.is_null() || v.is_object()) return; // removed, or a fact that could not be read
    for (const FactDecl* d : declarations_of(registry_, key))
      if (!json_fits(d->type, v, /*exact=*/true))
        w_.fail(path,
                fmt::format("'{}' is declared {} (`{}`, checks/*/facts.json), but the example "
                            "gives {}",
                            key, fact_type_name(d->type), d->pattern, json_kind(v)));
  }

  /// "gpu.this.": the judged GPU's facts in a per-GPU rule.
  static std::string this_gpu_prefix() { return fmt::format("gpu.{}.", kThisGpu); }

private:
  const Where& w_;
  const ProbeRegistry* registry_;
  bool gpu_scope_;
  const Predicates* predicates_;
};

/// The offset of a rule's `"id": "ID"` value in its file's text, or npos.
std::size_t offset_of_id(std::string_view text, std::string_view id) {
  const std::string needle = fmt::format("\"{}\"", id);
  std::size_t pos = 0;
  while ((pos = text.find(needle, pos)) != std::string_view::npos) {
    std::size_t before = text.rfind("\"id\"", pos);
    if (before != std::string_view::npos &&
        text.substr(before, pos - before).find_first_of(",{}") == std::string_view::npos)
      return pos;
    pos += needle.size();
  }
  return std::string_view::npos;
}

/// 1-based lines of offsets asked for in increasing order (the rules of a file, in file order),
/// counting each newline once; an earlier offset starts over.
class LineCursor {
public:
  explicit LineCursor(std::string_view text) : text_(text) {}
  std::size_t line_at(std::size_t offset) {
    offset = std::min(offset, text_.size());
    if (offset < pos_) {
      pos_ = 0;
      line_ = 1;
    }
    line_ += static_cast<std::size_t>(
        std::count(text_.begin() + static_cast<std::ptrdiff_t>(pos_),
                   text_.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
    pos_ = offset;
    return line_;
  }

private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
};

std::vector<std::string> string_list(const Where& w, const std::string& path,
                                     const nlohmann::json& j) {
  if (!j.is_array()) w.fail(path, "must be a list of strings");
  std::vector<std::string> out;
  for (const auto& e : j) {
    if (!e.is_string()) w.fail(path, "must be a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

const std::set<std::string, std::less<>> kRuleKeys = {
    "id",           "area",         "title", "applies", "skip_reason", "fail",
    "pending_when", "pass_message", "why",   "fix",     "evidence",    "sources",
    "volatile",     "examples",     "scope", "gpus",    "subsumes"};
const std::set<std::string, std::less<>> kFixKeys = {"summary", "kernel_args", "modprobe", "sysctl",
                                                     "groups",  "udev",        "env",      "manual",
                                                     "reboot",  "initramfs"};

/// The `"fix"` object of a rule or of one fail case (`path` names it in errors); null when the
/// object has none.
nlohmann::json fix_object(const Where& w, const std::string& path, const nlohmann::json& owner) {
  if (!owner.contains("fix") || owner["fix"].is_null()) return nullptr;
  const auto& f = owner["fix"];
  if (!f.is_object()) w.fail(path, "must be an object");
  for (const auto& [k, v] : f.items())
    if (!kFixKeys.contains(k)) w.fail(fmt::format("{}.{}", path, k), "unknown fix kind");
  return f;
}

/// The line of the first occurrence of the JSON string `s` at or after `from`, or `fallback`.
std::size_t line_of_string(std::string_view text, std::size_t from, const std::string& s,
                           std::size_t fallback) {
  const std::size_t pos = text.find(nlohmann::json(s).dump(), from);
  return pos == std::string_view::npos ? fallback : line_of_offset(text, pos);
}

/// Puts one example fact: a value, `null` (absent: removes a base fact) or
/// {"status": "missing"|"denied"|"error", "reason": "..."} (a fact that could not be read).
void put_example_fact(const Where& w, const std::string& path, const std::string& key,
                      const nlohmann::json& v, FactSet& facts) {
  constexpr std::string_view kSource = "rule example";
  if (v.is_null()) {
    FactSet rest;
    for (const auto& [k, f] : facts.all())
      if (k != key) rest.put(f);
    facts = std::move(rest);
    return;
  }
  if (v.is_object()) {
    const std::string status_name =
        v.contains("status") && v["status"].is_string() ? v["status"].get<std::string>() : "";
    const Status status = parse_status(status_name).value_or(Status::ok);
    const bool reason_ok = !v.contains("reason") || v["reason"].is_string();
    if (status == Status::ok || !reason_ok || v.size() != (v.contains("reason") ? 2U : 1U))
      w.fail(path, "a fact that could not be read is {\"status\": \"missing\"|\"denied\"|"
                   "\"error\", \"reason\": \"...\"}");
    facts.put_status(key, status, std::string(kSource), v.value("reason", std::string()));
    return;
  }
  try {
    facts.put_ok(key, value_from_json(v), std::string(kSource));
  } catch (const std::invalid_argument& e) {
    w.fail(path, e.what());
  }
}

std::vector<RuleExample> parse_examples(const Where& w, const Parser& p, const nlohmann::json& ej,
                                        std::string_view text, std::size_t rule_offset,
                                        bool gpu_scope) {
  if (!ej.is_object() || !ej.contains("cases") || !ej["cases"].is_array() || ej["cases"].empty())
    w.fail("examples", R"(needs {"base": FACTS, "cases": [EXAMPLE, ...]})");
  for (const auto& [k, v] : ej.items())
    if (k != "base" && k != "cases") w.fail("examples." + k, "unknown key");
  auto put_all = [&](const std::string& path, const nlohmann::json& fj, FactSet& facts) {
    if (!fj.is_object()) w.fail(path, "must be an object of fact key to value");
    for (const auto& [key, v] : fj.items()) {
      const std::string where = fmt::format("{}.{}", path, key);
      p.check_fact(where, key);
      if (key.find('*') != std::string::npos) w.fail(where, "names a pattern, not a fact");
      if (key.find(Parser::this_gpu_prefix()) != std::string::npos)
        w.fail(where, "an example names GPUs by index (gpu.0.*), not gpu.this");
      p.check_example_type(where, key, v);
      put_example_fact(w, where, key, v, facts);
    }
  };
  FactSet base;
  if (ej.contains("base")) put_all("examples.base", ej["base"], base);
  static const std::set<std::string, std::less<>> kKeys = {
      "name", "facts", "params", "expect", "severity", "pending_reboot", "message", "gpu"};
  std::vector<RuleExample> out;
  std::set<std::string, std::less<>> names;
  for (std::size_t i = 0; i < ej["cases"].size(); ++i) {
    const auto& cj = ej["cases"][i];
    const std::string path = fmt::format("examples.cases[{}]", i);
    if (!cj.is_object() || !cj.contains("name") || !cj["name"].is_string() ||
        !cj.contains("expect") || !cj["expect"].is_string())
      w.fail(path, R"(needs a "name" and an "expect" string)");
    for (const auto& [k, v] : cj.items())
      if (!kKeys.contains(k)) w.fail(fmt::format("{}.{}", path, k), "unknown key");
    RuleExample ex;
    ex.name = cj["name"].get<std::string>();
    if (!names.insert(ex.name).second) w.fail(path, fmt::format("a second example '{}'", ex.name));
    ex.line = line_of_string(text, rule_offset, ex.name, w.line);
    ex.facts = base;
    if (cj.contains("facts")) put_all(path + ".facts", cj["facts"], ex.facts);
    std::int64_t reserve_gib = 4;
    if (cj.contains("params")) {
      const auto& pj = cj["params"];
      if (!pj.is_object() || pj.size() != 1 || !pj.contains("reserve_gib") ||
          !pj["reserve_gib"].is_number_integer())
        w.fail(path + ".params", "may set only {\"reserve_gib\": INTEGER}");
      reserve_gib = pj["reserve_gib"].get<std::int64_t>();
      if (reserve_gib < 0 || reserve_gib > std::int64_t{1024} * 1024)
        w.fail(path + ".params.reserve_gib", "must be between 0 and 1048576");
    }
    ex.params = default_params(reserve_gib);
    const std::string expect = cj["expect"].get<std::string>();
    if (expect == "pass")
      ex.expect = Outcome::pass;
    else if (expect == "fail")
      ex.expect = Outcome::fail;
    else if (expect == "skip")
      ex.expect = Outcome::skip;
    else if (expect == "error")
      ex.expect = Outcome::error;
    else
      w.fail(path + ".expect", "must be pass, fail, skip or error");
    if (cj.contains("severity")) {
      const auto sev = cj["severity"].is_string()
                           ? parse_severity(cj["severity"].get<std::string>())
                           : std::nullopt;
      if (!sev) w.fail(path + ".severity", "must be error, warning or info");
      ex.severity = sev;
    }
    if ((ex.expect == Outcome::fail) != ex.severity.has_value())
      w.fail(path + ".severity", R"(is given exactly when "expect" is "fail")");
    if (cj.contains("pending_reboot")) {
      if (!cj["pending_reboot"].is_boolean() || ex.expect != Outcome::fail)
        w.fail(path + ".pending_reboot", R"(is true or false, and only when "expect" is "fail")");
      ex.pending_reboot = cj["pending_reboot"].get<bool>();
    }
    if (cj.contains("gpu")) {
      if (!cj["gpu"].is_number_integer() || cj["gpu"].get<std::int64_t>() < 0 ||
          cj["gpu"].get<std::int64_t>() > 4096)
        w.fail(path + ".gpu", "must be a GPU index between 0 and 4096");
      ex.gpu = cj["gpu"].get<std::int64_t>();
      if (!gpu_scope)
        w.fail(path + ".gpu", R"(only a per-GPU rule ("scope": "gpu") judges one GPU)");
    }
    if (cj.contains("message")) {
      if (!cj["message"].is_string() || cj["message"].get<std::string>().empty())
        w.fail(path + ".message", "must be a non-empty string (a part of the expected message)");
      ex.message = cj["message"].get<std::string>();
    }
    out.push_back(std::move(ex));
  }
  return out;
}

} // namespace

// Defined in the generated embedded_rules.cpp (cmake/EmbedRules.cmake).
std::string embedded_rules_schema();

namespace {
// The `compare` list of a rules file: src/fleet/quantities.cpp.
using fleet::parse_fleet_compare;

std::vector<Rule> parse_rules_text(std::string_view text, std::string_view file,
                                   const ProbeRegistry* registry, bool examples, bool schema_check,
                                   const Predicates* predicates,
                                   std::vector<FleetQuantity>* compare = nullptr) {
  // Without examples (every command but `rules --test`) their values are dropped while parsing:
  // they are most of the rules' text.
  const auto drop_examples = [](int /*depth*/, nlohmann::json::parse_event_t event,
                                nlohmann::json& parsed) {
    return event != nlohmann::json::parse_event_t::key || parsed != "examples";
  };
  const nlohmann::json doc =
      parse_json_input(text, file, /*comments=*/true, kMaxJsonDepth,
                       examples ? nlohmann::json::parser_callback_t(nullptr) : drop_examples);

  if (!doc.is_object() || !doc.contains("rules") || !doc["rules"].is_array())
    throw InputError(fmt::format("{}:1: a rules file is an object with a \"rules\" list", file));
  if (doc.contains("area") && !doc["area"].is_string())
    throw InputError(fmt::format("{}:1: \"area\" must be a string", file));
  const std::string file_area = doc.value("area", std::string());
  if (doc.contains("compare")) {
    auto quantities = parse_fleet_compare(doc["compare"], text, file, registry);
    if (compare != nullptr) compare->insert(compare->end(), quantities.begin(), quantities.end());
  }
  std::vector<Rule> out;
  std::size_t index = 0;
  LineCursor lines(text);
  for (const auto& rj : doc["rules"]) {
    const std::string fallback_id = fmt::format("#{}", index++);
    if (!rj.is_object() || !rj.contains("id") || !rj["id"].is_string())
      throw InputError(fmt::format("{}: rule {}: needs an \"id\" string", file, fallback_id));
    Rule r;
    r.id = rj["id"].get<std::string>();
    r.file = std::string(file);
    const std::size_t id_at = offset_of_id(text, r.id);
    r.line = id_at == std::string_view::npos ? 0 : lines.line_at(id_at);
    const Where w{file, r.line, r.id};
    static const RE2 id_re("[a-z0-9]+(-[a-z0-9]+)*");
    if (!RE2::FullMatch(r.id, id_re)) w.fail("id", "ids are lower-case words joined by '-'");
    for (const auto& [k, v] : rj.items())
      if (!kRuleKeys.contains(k)) w.fail(k, "unknown key");
    auto str = [&](const char* key, bool required) {
      if (!rj.contains(key)) {
        if (required) w.fail(key, "is required");
        return std::string();
      }
      if (!rj[key].is_string()) w.fail(key, "must be a string");
      return rj[key].get<std::string>();
    };
    r.title = str("title", true);
    r.area = rj.contains("area") ? str("area", true) : file_area;
    if (r.area.empty()) w.fail("area", "is required (in the rule or the file)");
    const std::string skip_reason = str("skip_reason", false);
    r.pass_message = str("pass_message", true);
    r.why = str("why", true);
    if (rj.contains("volatile")) {
      if (!rj["volatile"].is_boolean()) w.fail("volatile", "must be true or false");
      r.volatile_verdict = rj["volatile"].get<bool>();
    }
    if (rj.contains("scope")) {
      const std::string scope = str("scope", true);
      if (scope == "gpu")
        r.scope = Scope::gpu;
      else if (scope != "host")
        w.fail("scope", R"(must be "host" or "gpu")");
    }
    const Parser p(w, registry, r.scope == Scope::gpu, predicates);
    if (rj.contains("gpus")) {
      const auto& gj = rj["gpus"];
      if (r.scope != Scope::gpu) w.fail("gpus", R"(needs "scope": "gpu")");
      if (!gj.is_object() || !gj.contains("when") || !gj.contains("skip_reason") ||
          !gj["skip_reason"].is_string() || gj.size() != 2)
        w.fail("gpus", R"(needs exactly {"when": CONDITION, "skip_reason": "..."})");
      r.gpus =
          Precondition{p.condition("gpus.when", gj["when"]), gj["skip_reason"].get<std::string>()};
    }
    if (rj.contains("applies") && rj["applies"].is_array()) {
      if (!skip_reason.empty())
        w.fail("skip_reason", "goes inside each precondition when \"applies\" is a list");
      for (std::size_t i = 0; i < rj["applies"].size(); ++i) {
        const auto& pj = rj["applies"][i];
        const std::string path = fmt::format("applies[{}]", i);
        if (!pj.is_object() || !pj.contains("when") || !pj.contains("skip_reason") ||
            !pj["skip_reason"].is_string() || pj.size() != 2)
          w.fail(path, R"(needs exactly {"when": CONDITION, "skip_reason": "..."})");
        r.applies.push_back(Precondition{p.condition(path + ".when", pj["when"]),
                                         pj["skip_reason"].get<std::string>()});
      }
    } else if (rj.contains("applies")) {
      if (skip_reason.empty()) w.fail("skip_reason", "is required when \"applies\" is given");
      r.applies.push_back(Precondition{p.condition("applies", rj["applies"]), skip_reason});
    } else if (!skip_reason.empty()) {
      w.fail("skip_reason", "needs \"applies\"");
    }
    if (!rj.contains("fail") || !rj["fail"].is_array() || rj["fail"].empty())
      w.fail("fail", "needs a non-empty list of {severity, when, message}");
    for (std::size_t i = 0; i < rj["fail"].size(); ++i) {
      const auto& fj = rj["fail"][i];
      const std::string path = fmt::format("fail[{}]", i);
      if (!fj.is_object() || !fj.contains("severity") || !fj.contains("when") ||
          !fj.contains("message") || !fj["message"].is_string() || !fj["severity"].is_string())
        w.fail(path, "needs severity, when and message");
      auto sev = parse_severity(fj["severity"].get<std::string>());
      if (!sev) w.fail(path + ".severity", "must be error, warning or info");
      r.fail.push_back(FailCase{*sev, p.condition(path + ".when", fj["when"]),
                                fj["message"].get<std::string>(),
                                fix_object(w, path + ".fix", fj)});
    }
    if (rj.contains("pending_when"))
      r.pending_when = p.condition("pending_when", rj["pending_when"]);
    r.fix = fix_object(w, "fix", rj);
    if (rj.contains("evidence")) r.evidence = string_list(w, "evidence", rj["evidence"]);
    if (rj.contains("subsumes")) r.subsumes = string_list(w, "subsumes", rj["subsumes"]);
    for (const auto& e : r.evidence)
      p.check_fact("evidence", e);
    if (!rj.contains("sources")) w.fail("sources", "is required: every rule names its sources");
    r.sources = string_list(w, "sources", rj["sources"]);
    if (examples && rj.contains("examples")) {
      const std::size_t offset = text.find(nlohmann::json(r.id).dump());
      r.examples =
          parse_examples(w, p, rj["examples"], text, offset == std::string_view::npos ? 0 : offset,
                         r.scope == Scope::gpu);
    }
    out.push_back(std::move(r));
  }
  // rules/schema.json defines the language: a file it rejects is refused even where the checks
  // above (which come first for their precise messages) let it through. The built-in rules skip
  // this at start-up; `rules --test` (CI's rules.examples) checks them.
  if (schema_check) {
    static const nlohmann::json schema = nlohmann::json::parse(embedded_rules_schema());
    validate_against_schema(schema, doc, text, file);
  }
  return out;
}

/// Reads rules/predicates.json: {"predicates": {NAME: {"means": TEXT, "when": CONDITION}}}.
/// Each condition is checked as a rule's would be (facts some probe provides; gpu.this allowed,
/// since a per-GPU rule may use it); a predicate may not name another.
Predicates parse_predicates(std::string_view text, std::string_view file,
                            const ProbeRegistry* registry) {
  const nlohmann::json doc = parse_json_input(text, file, /*comments=*/true);
  if (!doc.is_object() || doc.size() != 1 || !doc.contains("predicates") ||
      !doc["predicates"].is_object())
    throw InputError(
        fmt::format("{}:1: a predicates file is {{\"predicates\": {{NAME: ...}}}}", file));
  static const RE2 name_re("[a-z][a-z0-9]*(_[a-z0-9]+)*");
  Predicates out;
  for (const auto& [name, pj] : doc["predicates"].items()) {
    const Where w{file, line_of_string(text, 0, name, 1), name};
    if (!RE2::FullMatch(name, name_re)) w.fail("name", "predicate names are lower_snake_case");
    if (!pj.is_object() || pj.size() != 2 || !pj.contains("means") || !pj["means"].is_string() ||
        !pj.contains("when"))
      w.fail("predicate", R"(needs exactly {"means": "...", "when": CONDITION})");
    const Parser p(w, registry, /*gpu_scope=*/true, nullptr);
    (void)p.condition("when", pj["when"]);
    out.emplace(name, pj["when"]);
  }
  return out;
}

RuleSet finish(const std::vector<std::pair<std::string, std::string>>& files, std::string version,
               const ProbeRegistry* registry, bool examples, bool schema_check,
               std::string_view digest = {}) {
  RuleSet set;
  set.version = std::move(version);
  std::map<std::string, std::string, std::less<>> seen;
  std::string all_text;
  Predicates predicates;
  for (const auto& [name, text] : files)
    if (std::filesystem::path(name).filename() == kPredicatesFile)
      predicates = parse_predicates(text, name, registry);
  for (const auto& [name, text] : files) {
    // The digest covers each file's name (not its directory) and contents: the same rules read
    // from rules/, /usr/share/halo-doctor/rules or the binary give the same digest.
    if (digest.empty())
      all_text += std::filesystem::path(name).filename().string() + "\n" + text + "\n";
    if (std::filesystem::path(name).filename() == kPredicatesFile) continue;
    for (auto& r : parse_rules_text(text, name, registry, examples, schema_check, &predicates,
                                    &set.fleet_compare)) {
      auto [it, inserted] = seen.emplace(r.id, name);
      if (!inserted)
        throw InputError(fmt::format("{}:{}: rule id '{}' is also defined in {}", name, r.line,
                                     r.id, it->second));
      set.rules.push_back(std::move(r));
    }
  }
  // `subsumes` names rules of this set, never the rule itself (a typo would silently group
  // nothing).
  for (const auto& r : set.rules)
    for (const auto& id : r.subsumes)
      if (id == r.id || !seen.contains(id))
        throw InputError(fmt::format("{}:{}: rule '{}': subsumes: {}", r.file, r.line, r.id,
                                     id == r.id ? std::string("names the rule itself")
                                                : fmt::format("no rule '{}'", id)));
  set.digest = digest.empty() ? "sha256:" + sha256_hex(all_text) : std::string(digest);
  return set;
}
} // namespace

std::vector<Rule> parse_rules_file(std::string_view text, std::string_view file,
                                   const ProbeRegistry* registry, bool examples) {
  return parse_rules_text(text, file, registry, examples, /*schema_check=*/true, nullptr);
}

RuleSet load_rules_dir(const std::string& dir, const ProbeRegistry* registry, bool examples) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(fmt::format("{}: the rules directory does not exist", dir));
  std::vector<fs::path> paths;
  // predicates.json is read too; finish() tells it from the rules files.
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json" && e.path().filename() != "schema.json")
      paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) throw InputError(fmt::format("{}: no *.json rules files", dir));
  std::vector<std::pair<std::string, std::string>> files;
  files.reserve(paths.size());
  // Regular files of bounded size only: a FIFO or a device named *.json is an error, not a hang.
  for (const auto& p : paths)
    files.emplace_back(p.string(), read_input_file(p.string()));
  std::string version = "local";
  const fs::path vpath = fs::path(dir) / "VERSION";
  if (fs::exists(vpath, ec)) {
    version = read_input_file(vpath.string(), 4096);
    version = version.substr(0, version.find('\n'));
  }
  return finish(files, version, registry, examples, /*schema_check=*/true);
}

// Defined in the generated embedded_rules.cpp (cmake/EmbedRules.cmake).
std::vector<std::pair<std::string, std::string>> embedded_rule_files();
std::string embedded_rules_version();
std::string embedded_rules_digest();

RuleSet load_builtin_rules_json(const ProbeRegistry* registry, bool examples) {
  // The build checked the built-in rules (halo-rules-compile); `rules --test` checks them again
  // with their examples: the schema, every fact provided by a probe.
  return finish(embedded_rule_files(), embedded_rules_version(), examples ? registry : nullptr,
                examples, /*schema_check=*/examples, embedded_rules_digest());
}

} // namespace halo
