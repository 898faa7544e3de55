// SPDX-License-Identifier: MIT
// Site policy: parsing with file:line errors, application (severity, skip, waivers, expiry) and
// the gate ignoring waived failures.
#include <halo/error.hpp>
#include <halo/policy.hpp>
#include <halo/report.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fstream>

using namespace halo;

namespace {
Result failing(std::string id, Severity s) {
  Result r;
  r.id = std::move(id);
  r.area = "memory";
  r.status = Outcome::fail;
  r.severity = s;
  r.message = "TTM limit too low";
  return r;
}

std::string error_of(std::string_view text) {
  try {
    parse_policy(text, "site.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kPolicy = R"({
  "policy_version": 1,
  "thresholds": {"reserve_gib": 8, "min_kernel": "6.14"},
  "severity": {"gfx1151-kernel-min": "error"},
  "skip": [{"rule": "instinct-iommu-pt", "reason": "no Instinct cards in this lab"}],
  "waivers": [
    {"rule": "ttm-limit-low", "reason": "fixed at next maintenance", "owner": "alice", "expires": "2026-03-31"}
  ]
})";
} // namespace

TEST_CASE("policy: parses every section", "[policy]") {
  const Policy p = parse_policy(kPolicy, "site.json");
  CHECK(p.reserve_gib == 8);
  CHECK(p.min_kernel == "6.14");
  CHECK_FALSE(p.min_rocm.has_value());
  CHECK(p.severity.at("gfx1151-kernel-min") == Severity::error);
  REQUIRE(p.skip.size() == 1);
  REQUIRE(p.waivers.size() == 1);
  CHECK(p.waivers[0].owner == "alice");
  CHECK(p.waivers[0].line == 7);
  Params params;
  add_policy_params(p, params);
  CHECK(params.at("min_kernel") == "6.14");
}

TEST_CASE("policy: a waiver in force marks the failure waived and the gate passes", "[policy]") {
  const Policy p = parse_policy(kPolicy, "site.json");
  std::vector<Result> rs{failing("ttm-limit-low", Severity::error)};
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::failed);
  apply_policy(p, rs, "2026-03-31"); // the last day still holds
  REQUIRE(rs[0].waiver.has_value());
  CHECK(rs[0].status == Outcome::fail);
  CHECK(rs[0].waived());
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::ok);

  ReportContext ctx;
  const auto j = json_report(rs, ctx);
  CHECK(j["results"][0]["waived"]["owner"] == "alice");
  CHECK(j["results"][0]["waived"]["expires"] == "2026-03-31");
  CHECK(j["results"][0]["status"] == "fail");
  CHECK(text_report(rs, ctx, {}).find("WAIVED") != std::string::npos);
}

TEST_CASE("policy: an expired waiver fails again and says so", "[policy]") {
  const Policy p = parse_policy(kPolicy, "site.json");
  std::vector<Result> rs{failing("ttm-limit-low", Severity::error)};
  apply_policy(p, rs, "2026-04-01");
  CHECK_FALSE(rs[0].waiver.has_value());
  CHECK(rs[0].message.find("expired on 2026-03-31") != std::string::npos);
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::failed);
  CHECK_FALSE(json_report(rs, ReportContext{})["results"][0].contains("waived"));
}

TEST_CASE("policy: severity overrides and skips", "[policy]") {
  const Policy p = parse_policy(kPolicy, "site.json");
  std::vector<Result> rs{failing("gfx1151-kernel-min", Severity::warning),
                         failing("instinct-iommu-pt", Severity::warning)};
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::ok);
  apply_policy(p, rs, "2026-01-01");
  CHECK(rs[0].severity == Severity::error);
  CHECK(rs[1].status == Outcome::skip);
  CHECK(rs[1].message == "skipped by site policy: no Instinct cards in this lab");
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::failed);
}

TEST_CASE("policy: errors name the file and the line", "[policy]") {
  CHECK(error_of("{\n  \"waivers\": [\n    {\"rule\": \"x\",\n")
            .rfind("site.json:4: not valid JSON", 0) == 0);
  CHECK(error_of("{\n  \"thresholds\": {\n    \"reserve\": 8\n  }\n}") ==
        "site.json:3: thresholds/reserve: unknown key 'reserve'");
  CHECK(error_of("{\n  \"severity\": {\n    \"a\": \"warning\",\n    \"b\": \"fatal\"\n  }\n}") ==
        "site.json:4: severity/b: must be \"error\", \"warning\" or \"info\"");
  CHECK(error_of(R"({
  "waivers": [
    {"rule": "a", "reason": "r", "owner": "o", "expires": "2026-01-01"},
    {"rule": "b", "reason": "r", "owner": "o",
     "expires": "31/12/2026"}
  ]
})") == "site.json:5: waivers/1/expires: '31/12/2026' is not a date YYYY-MM-DD");
  // Calendar days only: February has no 31st, and 2027 is not a leap year.
  for (const char* bad : {"2026-02-31", "2027-02-29", "2026-04-31", "2026-13-01", "2026-00-10"})
    CHECK(error_of(fmt::format(R"({{"waivers": [{{"rule": "a", "reason": "r", "owner": "o",
      "expires": "{}"}}]}})",
                               bad)) ==
          fmt::format("site.json:2: waivers/0/expires: '{}' is not a date YYYY-MM-DD", bad));
  CHECK(error_of(R"({"waivers": [{"rule": "a", "reason": "r", "owner": "o",
      "expires": "2028-02-29"}]})")
            .find("expires") == std::string::npos);
  CHECK(error_of("{\n  \"waivers\": [\n    {\"rule\": \"a\", \"reason\": \"r\", \"expires\": "
                 "\"2026-01-01\"}\n  ]\n}") == "site.json:3: waivers/0: 'owner' is required");
  CHECK(error_of("{\"thresholds\": {\"reserve_gib\": -1}}") ==
        "site.json:1: thresholds/reserve_gib: must be an integer number of GiB from 0 to 4096");
  CHECK(error_of("[]") == "site.json:1: policy: must be a JSON object");
}

TEST_CASE("policy: unknown rule ids name their line", "[policy]") {
  const RuleSet rules = load_builtin_rules(nullptr);
  const Policy ok = parse_policy(kPolicy, "site.json");
  CHECK_NOTHROW(check_policy_rule_ids(ok, rules));
  const Policy bad =
      parse_policy("{\n  \"severity\": {\n    \"no-such-rule\": \"info\"\n  }\n}", "site.json");
  CHECK_THROWS_WITH(check_policy_rule_ids(bad, rules),
                    "site.json:3: unknown rule id 'no-such-rule' (see halo-doctor rules)");
}

TEST_CASE("policy: the shipped example parses and names real rules", "[policy]") {
  const Policy p = load_policy_file(std::string(HALO_DOCS_DIR) + "/examples/policy.json");
  CHECK_NOTHROW(check_policy_rule_ids(p, load_builtin_rules(nullptr)));
  CHECK_FALSE(p.waivers.empty());
}

TEST_CASE("policy: today's date has the YYYY-MM-DD shape", "[policy]") {
  const std::string d = today_local_date();
  REQUIRE(d.size() == 10);
  CHECK(d[4] == '-');
  CHECK(d[7] == '-');
}

TEST_CASE("docs/policy.schema.json is enforced: what it refuses is refused with file and line",
          "[policy]") {
  // The hand checks do not look at "$schema"; the published schema says it is a string.
  CHECK(error_of("{\n  \"$schema\": 5\n}") ==
        "site.json:2: $schema: Value type not permitted by 'type' constraint. (schema)");
  // The example the docs ship passes both.
  CHECK(error_of(R"({"policy_version": 1, "thresholds": {"min_kernel": "6.14"}})") == "");
}
