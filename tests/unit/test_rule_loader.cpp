// SPDX-License-Identifier: MIT
#include <halo/checks.hpp>
#include <halo/error.hpp>
#include <halo/probe.hpp>
#include <halo/rules.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace halo;

namespace {
const std::string kOkRule = R"({"area": "memory", "rules": [
  {"id": "demo-rule", "title": "demo", "pass_message": "fine", "why": "because",
   "fail": [{"severity": "warning", "when": {"fact": "mem.total_bytes", "lt": 1}, "message": "low"}],
   "sources": ["https://example.org"]}]})";
}

TEST_CASE("the built-in rule set loads and holds the public rule ids with their severities",
          "[rules]") {
  const ProbeRegistry reg = builtin_probes();
  RuleSet rs = load_builtin_rules(&reg);
  CHECK(rs.version == "2026.11.0");
  CHECK_THAT(rs.digest, Catch::StartsWith("sha256:"));
  const std::vector<std::pair<std::string, Severity>> contract = {
      {"amdgpu-driver-loaded", Severity::error},
      {"kfd-present", Severity::error},
      {"kfd-access", Severity::error},
      {"render-node-access", Severity::error},
      {"ttm-limit-low", Severity::error},
      {"ttm-limit-overcommit", Severity::error},
      {"ttm-page-pool-mismatch", Severity::info},
      {"ttm-wrong-module", Severity::error},
      {"ttm-pending-reboot", Severity::warning},
      {"amdgpu-gttsize-deprecated", Severity::error},
      {"cmdline-unknown-param", Severity::error},
      {"apu-carveout-large", Severity::warning},
      {"gfx1151-kernel-min", Severity::error},
      {"hsa-override-gfx", Severity::error},
      {"instinct-numa-balancing", Severity::warning},
      {"instinct-iommu-pt", Severity::warning}};
  for (const auto& [id, sev] : contract) {
    INFO(id);
    const Rule* r = rs.find(id);
    REQUIRE(r != nullptr);
    CHECK(r->max_severity() == sev);
    CHECK_FALSE(r->sources.empty());
  }
  // The same rules from the source directory give the same digest as the embedded copy.
  CHECK(load_rules_dir(HALO_RULES_DIR, &reg).digest == rs.digest);
}

TEST_CASE("a rules file with a JSON syntax error names the file and line", "[rules]") {
  try {
    parse_rules_file("{\n  \"rules\": [\n    {\"id\": \"x\",,}\n  ]\n}\n", "rules/bad.json",
                     nullptr);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("rules/bad.json:3:"));
  }
}

TEST_CASE("semantic errors in a rule name the file, the rule's line and the path inside it",
          "[rules]") {
  const ProbeRegistry reg = builtin_probes();
  auto bad = [&](std::string from, const std::string& to) {
    std::string text = kOkRule;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  CHECK_THROWS_WITH(
      parse_rules_file(bad("\"lt\": 1", "\"lower\": 1"), "r.json", &reg),
      Catch::Contains("r.json:2: rule 'demo-rule': fail[0].when: unknown operator 'lower'"));
  CHECK_THROWS_WITH(parse_rules_file(bad("mem.total_bytes", "mem.totl_bytes"), "r.json", &reg),
                    Catch::Contains("no probe provides the fact 'mem.totl_bytes'"));
  CHECK_THROWS_WITH(parse_rules_file(bad("\"warning\"", "\"fatal\""), "r.json", &reg),
                    Catch::Contains("must be error, warning or info"));
  CHECK_THROWS_WITH(
      parse_rules_file(bad(",\n   \"sources\": [\"https://example.org\"]", ""), "r.json", &reg),
      Catch::Contains("every rule names its sources"));
  CHECK_THROWS_WITH(parse_rules_file(bad("\"lt\": 1", "\"lt\": \"one\""), "r.json", &reg),
                    Catch::Contains("needs a number"));
  CHECK_THROWS_WITH(parse_rules_file(bad("\"title\"", "\"titel\""), "r.json", &reg),
                    Catch::Contains("unknown key"));
  CHECK_THROWS_WITH(parse_rules_file(bad("demo-rule", "Demo_Rule"), "r.json", &reg),
                    Catch::Contains("lower-case words"));
  CHECK_THROWS_WITH(parse_rules_file(bad("\"lt\": 1", "\"matches\": \"([\""), "r.json", &reg),
                    Catch::Contains("bad regular expression"));
  CHECK_NOTHROW(parse_rules_file(kOkRule, "r.json", &reg));
  // contains takes another fact as its operand (torch-missing-gfx-target), but not a scaled one.
  // (A string fact holding another: kernel.cmdline and kernel.version are both declared strings.)
  CHECK_NOTHROW(
      parse_rules_file(bad(R"("fact": "mem.total_bytes", "lt": 1)",
                           R"("fact": "kernel.cmdline", "contains": {"fact": "kernel.version"})"),
                       "r.json", &reg));
  // A number fact never holds a string fact: refused with the declared types (issue 45).
  CHECK_THROWS_WITH(parse_rules_file(bad("\"lt\": 1", R"("contains": {"fact": "kernel.version"})"),
                                     "r.json", &reg),
                    Catch::Contains("declared int"));
  CHECK_THROWS_WITH(
      parse_rules_file(
          bad(R"("fact": "mem.total_bytes", "lt": 1)",
              R"("fact": "kernel.cmdline", "contains": {"fact": "kernel.version", "times": 2})"),
          "r.json", &reg),
      Catch::Contains("(schema)"));
}

TEST_CASE("a rules directory rejects duplicate ids and missing directories", "[rules]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "halo-rules-dup";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "a.json") << kOkRule;
  std::ofstream(dir / "b.json") << kOkRule;
  CHECK_THROWS_WITH(load_rules_dir(dir.string(), nullptr), Catch::Contains("also defined in"));
  fs::remove(dir / "b.json");
  CHECK(load_rules_dir(dir.string(), nullptr).rules.size() == 1);
  fs::remove_all(dir);
  CHECK_THROWS_WITH(load_rules_dir(dir.string(), nullptr), Catch::Contains("does not exist"));
}

namespace {
/// A rule with one threshold and a precondition, and examples given by the caller.
std::string rule_with_examples(const std::string& examples) {
  return R"({"area": "memory", "rules": [
  {"id": "demo-rule", "title": "demo", "pass_message": "fine", "why": "because",
   "applies": [{"when": {"fact": "amd.gpu_present", "eq": true}, "skip_reason": "no GPU"}],
   "fail": [{"severity": "warning", "when": {"fact": "mem.total_bytes", "lt": 1000},
             "message": "only {mem.total_bytes} bytes"}],
   "sources": ["https://example.org"],
   "examples": )" +
         examples + "}]}";
}

RuleSet one_file_set(const std::string& text) {
  const ProbeRegistry reg = builtin_probes();
  RuleSet rs;
  rs.rules = parse_rules_file(text, "rules/demo.json", &reg);
  return rs;
}

const std::string kGoodExamples = R"({"base": {"amd.gpu_present": true, "mem.total_bytes": 1000},
  "cases": [
    {"name": "at the threshold", "expect": "pass"},
    {"name": "one below", "facts": {"mem.total_bytes": 999}, "expect": "fail", "severity": "warning",
     "message": "only 999 bytes"},
    {"name": "no GPU", "facts": {"amd.gpu_present": false}, "expect": "skip"},
    {"name": "GPU unknown", "facts": {"amd.gpu_present": null}, "expect": "error"},
    {"name": "meminfo denied", "facts": {"mem.total_bytes": {"status": "denied", "reason": "EACCES"}},
     "expect": "error"}]})";
} // namespace

TEST_CASE("rule examples hold and reach every skip reason and fail case", "[rules][examples]") {
  const RuleSet rs = one_file_set(rule_with_examples(kGoodExamples));
  REQUIRE(rs.rules.at(0).examples.size() == 5);
  CHECK(rs.rules[0].examples[0].line == 9);
  CHECK(rs.rules[0].examples[3].facts.find("amd.gpu_present") == nullptr);
  CHECK(rs.rules[0].examples[4].facts.find("mem.total_bytes")->status == Status::denied);
  CHECK(check_rule_examples(rs).empty());
}

TEST_CASE("a moved threshold makes an example fail, naming the file, line and example",
          "[rules][examples]") {
  std::string text = rule_with_examples(kGoodExamples);
  text.replace(text.find("\"lt\": 1000"), 10, "\"le\": 1000");
  const auto failures = check_rule_examples(one_file_set(text));
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].where == "rules/demo.json:9: rule 'demo-rule' example 'at the threshold'");
  CHECK(failures[0].problem == "expected pass, got fail (warning): only 1000 bytes");
}

TEST_CASE("rule examples that miss a skip reason or a fail case are reported",
          "[rules][examples]") {
  const auto failures = check_rule_examples(one_file_set(rule_with_examples(
      R"({"base": {"amd.gpu_present": true}, "cases": [
          {"name": "plenty", "facts": {"mem.total_bytes": 5000}, "expect": "pass"}]})")));
  REQUIRE(failures.size() == 2);
  CHECK(failures[0].problem == "no example is skipped by applies[0] (\"no GPU\")");
  CHECK(failures[1].problem == "no example fails by fail[0]");
  // A rule without examples is a problem of its own.
  CHECK(check_rule_examples(one_file_set(kOkRule)).at(0).problem == "has no examples");
}

TEST_CASE("a wrong message or pending state in an example is reported", "[rules][examples]") {
  const auto failures = check_rule_examples(one_file_set(rule_with_examples(
      R"({"base": {"amd.gpu_present": true, "mem.total_bytes": 5},
          "cases": [{"name": "low", "expect": "fail", "severity": "warning", "message": "GiB"},
                    {"name": "pending", "expect": "fail", "severity": "warning",
                     "pending_reboot": true}]})")));
  REQUIRE(failures.size() >= 2);
  CHECK(failures[0].problem == "expected a message with \"GiB\", got: only 5 bytes");
  CHECK(failures[1].problem == "expected fail (warning, pending reboot), got fail (warning): only "
                               "5 bytes");
}

TEST_CASE("malformed rule examples are refused with the rule and the path", "[rules][examples]") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"cases": []})", "examples: needs"},
      {R"({"cases": [{"name": "a", "expect": "maybe"}]})", "examples.cases[0].expect: must be"},
      {R"({"cases": [{"name": "a", "expect": "pass", "severity": "error"}]})",
       "examples.cases[0].severity: is given exactly when"},
      {R"({"cases": [{"name": "a", "expect": "fail"}]})",
       "examples.cases[0].severity: is given exactly when"},
      {R"({"cases": [{"name": "a", "expect": "skip", "pending_reboot": true}]})",
       "examples.cases[0].pending_reboot"},
      {R"({"cases": [{"name": "a", "expect": "pass"}, {"name": "a", "expect": "pass"}]})",
       "a second example 'a'"},
      {R"({"base": {"mem.totl_bytes": 1}, "cases": [{"name": "a", "expect": "pass"}]})",
       "no probe provides the fact 'mem.totl_bytes'"},
      {R"({"base": {"gpu.*.apu": true}, "cases": [{"name": "a", "expect": "pass"}]})",
       "names a pattern, not a fact"},
      {R"({"base": {"mem.total_bytes": {"status": "ok"}}, "cases": [{"name": "a", "expect": "pass"}]})",
       "a fact that could not be read is"},
      {R"({"base": {"mem.total_bytes": {"a": 1}}, "cases": [{"name": "a", "expect": "pass"}]})",
       "a fact that could not be read is"},
      {R"({"base": {"mem.total_bytes": [1, 2]}, "cases": [{"name": "a", "expect": "pass"}]})",
       "examples.base.mem.total_bytes"},
      {R"({"cases": [{"name": "a", "expect": "pass", "params": {"reserve_gib": -1}}]})",
       "params.reserve_gib: must be between"},
      {R"({"cases": [{"name": "a", "expect": "pass", "when": 1}]})",
       "examples.cases[0].when: unknown key"},
  };
  for (const auto& [examples, what] : bad) {
    INFO(examples);
    try {
      one_file_set(rule_with_examples(examples));
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::StartsWith("rules/demo.json:2: rule 'demo-rule': "));
      CHECK_THAT(e.what(), Catch::Contains(what));
    }
  }
}

TEST_CASE("every built-in rule carries examples that hold", "[rules][examples]") {
  const ProbeRegistry reg = builtin_probes();
  const RuleSet rs = load_builtin_rules(&reg);
  for (const auto& f : check_rule_examples(rs)) {
    INFO(f.where);
    CHECK(f.problem == "");
  }
}

TEST_CASE(
    "rules/schema.json is the authority: what it refuses is refused, with file, line and path",
    "[rules]") {
  const ProbeRegistry reg = builtin_probes();
  // A key the schema does not know at the top of a file (the rule checks do not look there).
  CHECK_THROWS_WITH(
      parse_rules_file("{\"area\": \"memory\",\n \"rules\": [],\n \"extra\": 1}", "r.json", &reg),
      Catch::StartsWith("r.json:3: extra: ") && Catch::EndsWith("(schema)"));
  // A file-level area that is not a string is an input error, not an internal one.
  CHECK_THROWS_WITH(parse_rules_file(R"({"area": 5, "rules": []})", "r.json", &reg),
                    "r.json:1: \"area\" must be a string");
  // Every built-in rules file passes the schema (and so the loader and schema agree on them).
  CHECK_NOTHROW(load_rules_dir(HALO_RULES_DIR, &reg, true));
}

TEST_CASE("named predicates: defined once in predicates.json, expanded where a rule names them",
          "[rules][predicates]") {
  namespace fs = std::filesystem;
  const ProbeRegistry reg = builtin_probes();
  const fs::path dir = fs::temp_directory_path() / "halo-predicates-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir / name) << text;
  };
  write("predicates.json", R"({"predicates": {"big_memory": {"means": "at least 1000 bytes",
    "when": {"fact": "mem.total_bytes", "ge": 1000}}}})");
  write("demo.json", R"({"area": "memory", "rules": [
  {"id": "demo-rule", "title": "demo", "pass_message": "fine", "why": "because",
   "fail": [{"severity": "warning", "when": {"none": [{"predicate": "big_memory"}]},
             "message": "small"}],
   "sources": ["https://example.org"]}]})");
  const RuleSet rs = load_rules_dir(dir.string(), &reg);
  REQUIRE(rs.rules.size() == 1);
  FactSet f;
  f.put_ok("mem.total_bytes", std::int64_t{999}, "test");
  CHECK(evaluate(rs, f, default_params()).at(0).status == Outcome::fail);
  f.put_ok("mem.total_bytes", std::int64_t{1000}, "test");
  CHECK(evaluate(rs, f, default_params()).at(0).status == Outcome::pass);
  // The predicates file counts in the digest: changing a predicate changes the rule set.
  const std::string digest = rs.digest;
  write("predicates.json", R"({"predicates": {"big_memory": {"means": "at least 2000 bytes",
    "when": {"fact": "mem.total_bytes", "ge": 2000}}}})");
  CHECK(load_rules_dir(dir.string(), &reg).digest != digest);
  // An unknown name, a predicate naming a fact no probe provides, a bad file: input errors.
  write("predicates.json", R"({"predicates": {"other": {"means": "x",
    "when": {"fact": "mem.total_bytes", "ge": 1}}}})");
  CHECK_THROWS_WITH(load_rules_dir(dir.string(), &reg),
                    Catch::Contains("unknown predicate 'big_memory' (rules/predicates.json)"));
  write("predicates.json", R"({"predicates": {"big_memory": {"means": "x",
    "when": {"fact": "mem.totl_bytes", "ge": 1}}}})");
  CHECK_THROWS_WITH(load_rules_dir(dir.string(), &reg),
                    Catch::Contains("no probe provides the fact 'mem.totl_bytes'"));
  write("predicates.json", R"({"predicates": {"big_memory": {"means": "x",
    "when": {"predicate": "big_memory"}}}})");
  CHECK_THROWS_WITH(load_rules_dir(dir.string(), &reg),
                    Catch::Contains("unknown predicate 'big_memory'"));
  write("predicates.json",
        R"({"predicates": {"Big": {"means": "x", "when": {"fact": "mem.total_bytes", "ge": 1}}}})");
  CHECK_THROWS_WITH(load_rules_dir(dir.string(), &reg), Catch::Contains("lower_snake_case"));
  fs::remove_all(dir);
}

TEST_CASE("a site rule compares with the policy's min_kernel, as docs/policy.md documents",
          "[rules][policy]") {
  const ProbeRegistry reg = builtin_probes();
  RuleSet rs;
  rs.rules = parse_rules_file(R"({"area": "kernel", "rules": [
  {"id": "site-kernel-min", "title": "site minimum kernel", "pass_message": "ok", "why": "site",
   "fail": [{"severity": "error", "when": {"fact": "kernel.version", "version_lt": {"param": "min_kernel"}},
             "message": "kernel {kernel.version} is older than {param:min_kernel}"}],
   "sources": ["https://example.org"]}]})",
                              "site.json", &reg);
  FactSet f;
  f.put_ok("kernel.version", std::string("6.12.48"), "test");
  Params p = default_params();
  p["min_kernel"] = "6.14";
  const Result low = evaluate(rs, f, p).at(0);
  CHECK(low.status == Outcome::fail);
  CHECK(low.message == "kernel 6.12.48 is older than 6.14");
  p["min_kernel"] = "6.12";
  CHECK(evaluate(rs, f, p).at(0).status == Outcome::pass);
  // Without a policy the rule cannot judge, and says what is missing.
  const Result unset = evaluate(rs, f, default_params()).at(0);
  CHECK(unset.status == Outcome::error);
  CHECK_THAT(unset.message, Catch::Contains("policy thresholds.min_kernel"));
}

TEST_CASE("the compiled built-in rules are the embedded JSON rules without their examples",
          "[rules][compiled]") {
  // Start-up decodes the form halo-rules-compile wrote at build time (issue 33); it must hold
  // every field the JSON gives, file and line included, and the same version and digest.
  const RuleSet compiled = load_builtin_rules(nullptr, /*examples=*/false);
  const RuleSet json = load_builtin_rules_json(nullptr, /*examples=*/false);
  REQUIRE(compiled.rules.size() == json.rules.size());
  CHECK(compiled.rules.size() > 50);
  CHECK(compiled.version == json.version);
  CHECK(compiled.digest == json.digest);
  CHECK(compiled.fleet_compare.size() == json.fleet_compare.size());
  for (std::size_t i = 0; i < json.rules.size(); ++i) {
    INFO(json.rules[i].id);
    CHECK(compiled.rules[i].id == json.rules[i].id);
    CHECK(compiled.rules[i].file == json.rules[i].file);
    CHECK(compiled.rules[i].line == json.rules[i].line);
    CHECK(compiled.rules[i].line > 0);
    CHECK(compiled.rules[i].examples.empty());
  }
  // Field by field: encode_rules writes every field, so equal bytes mean equal rule sets.
  CHECK(encode_rules(compiled) == encode_rules(json));
  // And the round trip holds on a rule set with examples dropped.
  CHECK(encode_rules(decode_rules(encode_rules(json))) == encode_rules(json));
  // The examples are there when asked for (`rules --test`), from the JSON text.
  const RuleSet with_examples = load_builtin_rules(nullptr, /*examples=*/true);
  CHECK(!with_examples.rules.front().examples.empty());
}

TEST_CASE("a compiled rule set of another format or cut short is refused", "[rules][compiled]") {
  const std::string blob = encode_rules(load_builtin_rules(nullptr, /*examples=*/false));
  CHECK_THROWS_AS(decode_rules("not a rule set"), std::runtime_error);
  CHECK_THROWS_AS(decode_rules(blob.substr(0, blob.size() / 2)), std::runtime_error);
  CHECK_THROWS_AS(decode_rules(blob + "x"), std::runtime_error);
}

TEST_CASE("a compiled rule keeps every kind of JSON value and its number type",
          "[rules][compiled]") {
  // Literal operands and fix templates travel tagged, not as CBOR (issue 33): each kind, nested,
  // must come back the same, signed and unsigned integers and doubles included.
  RuleSet set;
  set.version = "1";
  Rule r;
  r.id = "x";
  r.fix = {{"z", nlohmann::json::array()},
           {"a", {1U, -2, 2.5, 1e300, true, false, nullptr, "s", nlohmann::json::object()}},
           {"m", {{"k", {{"deep", 18446744073709551615ULL}}}}},
           {"neg", -9223372036854775807LL - 1}};
  FailCase f;
  f.when.operand.literal = nlohmann::json(-0.0);
  r.fail.push_back(f);
  set.rules.push_back(r);
  const RuleSet back = decode_rules(encode_rules(set));
  REQUIRE(back.rules.size() == 1);
  CHECK(back.rules[0].fix == r.fix);
  CHECK(back.rules[0].fix.dump() == r.fix.dump());
  CHECK(back.rules[0].fix["a"][0].is_number_unsigned());
  CHECK(back.rules[0].fix["a"][1].type() == nlohmann::json::value_t::number_integer);
  CHECK(back.rules[0].fix["neg"].get<std::int64_t>() == r.fix["neg"].get<std::int64_t>());
  CHECK(back.rules[0].fail[0].fix.is_null());
  REQUIRE(back.rules[0].fail[0].when.operand.literal);
  CHECK(std::signbit(back.rules[0].fail[0].when.operand.literal->get<double>()));
}
