// SPDX-License-Identifier: MIT
// halo-doctor fleet compare: which node differs from the majority (include/halo/fleet.hpp).
#include <halo/error.hpp>
#include <halo/fleet.hpp>
#include <halo/probe.hpp>
#include <halo/rules.hpp>

#include <catch2/catch.hpp>

#include <string>

using namespace halo;

TEST_CASE("fleet compare: the majority value, ties to the earliest node, error-level rows",
          "[fleet]") {
  auto node = [](const std::string& name, const std::string& kernel, const std::string& os) {
    fleet::Node n;
    n.name = name;
    n.facts.put_ok("kernel.release", kernel, "/proc/sys/kernel/osrelease");
    n.facts.put_ok("os.pretty_name", os, "/etc/os-release");
    return n;
  };
  // The built-in quantities (rules/fleet.json's "compare" list).
  const auto quantities = load_builtin_rules(nullptr, false).fleet_compare;
  // Three nodes, one with another kernel: it alone differs, and the kernel is error-level.
  auto c = fleet::compare({node("a", "6.8.0-79-generic", "Ubuntu 22.04"),
                           node("b", "6.8.0-79-generic", "Ubuntu 22.04"),
                           node("c", "6.8.0-40-generic", "Ubuntu 22.04")},
                          quantities);
  REQUIRE(c.rows.size() == 2);
  CHECK(c.rows[0].label == "kernel");
  CHECK(c.rows[0].majority == "6.8.0-79-generic");
  CHECK(c.rows[0].differs == std::vector<bool>{false, false, true});
  CHECK(c.error_difference());
  // Only a warning-level quantity differs: no error-level difference.
  c = fleet::compare({node("a", "6.8", "Ubuntu 22.04"), node("b", "6.8", "Ubuntu 24.04")},
                     quantities);
  CHECK(c.rows[1].differs == std::vector<bool>{false, true}); // tie: the earliest node's value
  CHECK_FALSE(c.error_difference());
  // A fact no node could read is not a row.
  for (const auto& r : c.rows)
    CHECK(r.pattern != "hsa.rocm_version");
}

TEST_CASE("the fleet comparison's quantities are data in rules/fleet.json, checked on load",
          "[fleet][rules]") {
  const ProbeRegistry reg = builtin_probes();
  // The built-in list: every fact provided by some probe, the kernel first and error-level.
  const RuleSet rs = load_builtin_rules(&reg);
  REQUIRE(rs.fleet_compare.size() >= 20);
  CHECK(rs.fleet_compare.front().pattern == "kernel.release");
  CHECK(rs.fleet_compare.front().severity == Severity::error);
  auto load = [&](const std::string& compare) {
    const std::string text = R"({"area": "x", "rules": [],
  "compare": )" + compare + "}";
    return parse_rules_file(text, "rules/fleet.json", &reg);
  };
  CHECK_NOTHROW(load(R"([{"fact": "gpu.*.gfx_target", "label": "gfx", "severity": "warning"}])"));
  CHECK_THROWS_WITH(
      load(R"([{"fact": "gpu.*.gfx_targt", "label": "gfx", "severity": "error"}])"),
      Catch::Contains("rules/fleet.json:2: compare/0/fact: no probe provides the fact"));
  CHECK_THROWS_WITH(load(R"([{"fact": "gpu.count", "label": "GPUs", "severity": "info"}])"),
                    Catch::Contains("compare/0/severity: must be error or warning"));
  CHECK_THROWS_WITH(load(R"([{"fact": "gpu.count", "label": "GPUs"}])"),
                    Catch::Contains("compare/0: needs exactly"));
  CHECK_THROWS_WITH(load(R"([{"fact": "gpu.count", "label": "a", "severity": "error"},
               {"fact": "gpu.count", "label": "b", "severity": "error"}])"),
                    Catch::Contains("compare/1/fact: 'gpu.count' is compared twice"));
  // The schema (rules/schema.json) refuses what it describes: an unknown member.
  CHECK_THROWS_WITH(
      load(R"([{"fact": "gpu.count", "label": "GPUs", "severity": "error", "x": 1}])"),
      Catch::Contains("compare/0"));
}
