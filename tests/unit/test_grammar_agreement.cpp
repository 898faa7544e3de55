// SPDX-License-Identifier: MIT
// One grammar (issue 10): rules/schema.json defines the rule language and docs/policy.schema.json
// the policy format. The loaders check a document by hand first, for messages that name the
// rule and say what is wrong, and then against the schema. These tests prove the hand checks
// never refuse what the schema accepts (the disagreement the issue found: a documented policy
// parameter refused by the loader), except for the checks a JSON Schema cannot express, listed
// in kSemantic. They mutate real documents, every built-in rule and docs/examples/policy.json,
// node by node: remove a member, add an unknown one, give a value another type.
#include <halo/checks.hpp>
#include <halo/error.hpp>
#include <halo/policy.hpp>
#include <halo/probe.hpp>
#include <halo/rules.hpp>
#include <halo/schema.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace halo;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Hand-check refusals a JSON Schema cannot express: they depend on the probes, the predicates
/// file, RE2, or other rules. Anything else the hand checks refuse, the schema must refuse too.
const std::vector<std::string> kSemantic = {
    "no probe provides the fact",  // the probe registry's declarations
    "checks/*/facts.json",         // a value of another type than the fact's declaration
    "names the judged GPU",        // gpu.this.* outside "scope": "gpu"
    "unknown predicate",           // rules/predicates.json
    "bad regular expression",      // RE2's syntax
    "names a pattern, not a fact", // an example's fact key with a wildcard
    "a second example",            // example names are unique within a rule
    "is not a date",               // 2026-02-31 (JSON Schema's "format" is not asserted)
    "is compared twice",           // a fleet quantity listed twice (uniqueItems sees whole items)
};

bool semantic(const std::string& what) {
  return std::ranges::any_of(
      kSemantic, [&](const std::string& s) { return what.find(s) != std::string::npos; });
}

/// Values of every JSON type, and a few of the grammar's own shapes, to put in place of a node.
std::vector<nlohmann::json> replacements() {
  return {nlohmann::json("x"),
          nlohmann::json(""),
          nlohmann::json(0),
          nlohmann::json(-1),
          nlohmann::json(2.5),
          nlohmann::json(true),
          nlohmann::json(nullptr),
          nlohmann::json::array(),
          nlohmann::json::object(),
          nlohmann::json::array({"x"}),
          nlohmann::json{{"fact", "mem.total_bytes"}}};
}

/// Calls `visit` with every mutation of `doc` under the JSON pointer `at`: each member removed,
/// an unknown member added to each object, each value replaced (replacements()). Subtrees named
/// in `skip` are left whole.
void mutate(const nlohmann::json& doc, const nlohmann::json::json_pointer& at,
            const std::vector<std::string>& skip,
            const std::function<void(const nlohmann::json&, const std::string&)>& visit) {
  const nlohmann::json& node = doc.at(at);
  for (const auto& r : replacements()) {
    if (r == node || at.empty()) continue;
    nlohmann::json m = doc;
    m[at] = r;
    visit(m, fmt::format("{} = {}", at.to_string(), r.dump()));
  }
  if (node.is_object()) {
    {
      nlohmann::json m = doc;
      m[at]["zz_unknown"] = 1;
      visit(m, at.to_string() + " + zz_unknown");
    }
    for (const auto& [k, v] : node.items()) {
      nlohmann::json m = doc;
      m[at].erase(k);
      visit(m, fmt::format("{} - {}", at.to_string(), k));
      if (std::find(skip.begin(), skip.end(), k) == skip.end()) mutate(doc, at / k, skip, visit);
    }
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      nlohmann::json m = doc;
      m[at].erase(i);
      visit(m, fmt::format("{} - [{}]", at.to_string(), i));
      mutate(doc, at / i, skip, visit);
    }
  }
}

/// A mutation's description with its indexes left out.
std::string shape(const std::string& what) {
  std::string out;
  for (const char c : what)
    if (c < '0' || c > '9' || out.empty() || out.back() != 'N')
      out += (c >= '0' && c <= '9') ? 'N' : c;
  return out;
}

/// The hand checks' verdict alone: the loader's message when it refuses before the schema
/// (schema messages end in "(schema)"), else empty.
std::string hand_refusal(const std::function<void()>& load) {
  try {
    load();
  } catch (const InputError& e) {
    std::string what = e.what();
    if (what.size() >= 8 && what.compare(what.size() - 8, 8, "(schema)") == 0) return "";
    return what;
  }
  return "";
}

bool schema_accepts(const nlohmann::json& schema, const nlohmann::json& doc) {
  const std::string text = doc.dump(2);
  try {
    validate_against_schema(schema, nlohmann::json::parse(text), text, "doc");
  } catch (const InputError&) {
    return false;
  }
  return true;
}

} // namespace

TEST_CASE("the rule loader's own checks refuse nothing rules/schema.json accepts",
          "[rules][schema]") {
  const ProbeRegistry reg = builtin_probes();
  const nlohmann::json schema =
      nlohmann::json::parse(slurp(fs::path(HALO_RULES_DIR) / "schema.json"));
  std::size_t mutations = 0;
  std::size_t refused = 0;
  std::vector<std::string> disagreements;
  std::set<std::string> shapes;
  // The verdicts on one mutated document of rules file NAME. One mutation per position in the
  // grammar: "/rules/0/fail/1/when/all/0/gt = \"x\"" stands for every fail case's and every
  // all-list member's.
  auto judge = [&](const std::string& name) {
    return [&, name](const nlohmann::json& m, const std::string& what) {
      if (!shapes.insert(shape(what)).second) return;
      ++mutations;
      const std::string text = m.dump(2);
      const std::string hand =
          hand_refusal([&] { (void)parse_rules_file(text, "rules/" + name, &reg, false); });
      if (hand.empty() || semantic(hand)) return;
      ++refused;
      if (schema_accepts(schema, m))
        disagreements.push_back(fmt::format("{}: {} -> {}", name, what, hand));
    };
  };
  for (const auto& e : fs::directory_iterator(HALO_RULES_DIR)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".json" || name == "schema.json" || name == "predicates.json")
      continue;
    const nlohmann::json file = nlohmann::json::parse(slurp(e.path()), nullptr, true, true);
    for (const auto& rule : file.at("rules")) {
      // One rule per document, in its file's area; its examples are mutated by the examples'
      // own tests (test_rule_loader.cpp), not here: they hold most of the nodes.
      const nlohmann::json doc{{"area", file.value("area", "")},
                               {"rules", nlohmann::json::array({rule})}};
      mutate(doc, nlohmann::json::json_pointer("/rules/0"), {"examples"}, judge(name));
    }
  }
  // The fleet comparison's list (rules/fleet.json "compare").
  const nlohmann::json fleet =
      nlohmann::json::parse(slurp(fs::path(HALO_RULES_DIR) / "fleet.json"), nullptr, true, true);
  const nlohmann::json compare_doc{
      {"area", "x"}, {"rules", nlohmann::json::array()}, {"compare", fleet.at("compare")}};
  mutate(compare_doc, nlohmann::json::json_pointer("/compare"), {}, judge("fleet.json"));
  INFO(mutations << " mutations, " << refused << " refused by the hand checks");
  for (const auto& d : disagreements)
    UNSCOPED_INFO(d);
  CHECK(disagreements.empty());
  CHECK(mutations > 1000);
  CHECK(refused > 500);
}

TEST_CASE("the policy loader's own checks refuse nothing docs/policy.schema.json accepts",
          "[policy][schema]") {
  const nlohmann::json schema =
      nlohmann::json::parse(slurp(fs::path(HALO_DOCS_DIR) / "policy.schema.json"));
  nlohmann::json doc =
      nlohmann::json::parse(slurp(fs::path(HALO_DOCS_DIR) / "examples" / "policy.json"));
  // Every part of the format: a Slurm section beside the example's.
  doc["slurm"] = {{"prolog", {"kfd-access"}}, {"epilog", {"gpu-hang-in-log"}}};
  REQUIRE(schema_accepts(schema, doc));
  REQUIRE(hand_refusal([&] { (void)parse_policy(doc.dump(2), "policy.json"); }).empty());
  std::size_t mutations = 0;
  std::size_t refused = 0;
  std::vector<std::string> disagreements;
  mutate(doc, nlohmann::json::json_pointer(""), {},
         [&](const nlohmann::json& m, const std::string& what) {
           ++mutations;
           const std::string hand =
               hand_refusal([&] { (void)parse_policy(m.dump(2), "policy.json"); });
           if (hand.empty() || semantic(hand)) return;
           ++refused;
           if (schema_accepts(schema, m)) disagreements.push_back(what + " -> " + hand);
         });
  INFO(mutations << " mutations, " << refused << " refused by the hand checks");
  for (const auto& d : disagreements)
    UNSCOPED_INFO(d);
  CHECK(disagreements.empty());
  CHECK(mutations > 200);
  CHECK(refused > 100);
}
