#include <halo/error.hpp>
#include <halo/probe.hpp>
#include <halo/rules.hpp>

#include <catch2/catch.hpp>

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
  CHECK(load_rules_dir(HALO_RULES_DIR, &reg).digest != "");
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
