// SPDX-License-Identifier: MIT
// halo-doctor fleet compare: which node differs from the majority (include/halo/fleet.hpp).
#include <halo/checks.hpp>
#include <halo/error.hpp>
#include <halo/fleet.hpp>
#include <halo/probe.hpp>
#include <halo/rules.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
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

TEST_CASE("fleet compare: host lists as Slurm writes them", "[fleet]") {
  using fleet::compress_names;
  CHECK(compress_names({"node03", "node01", "node02", "node07"}) == "node[01-03,07]");
  CHECK(compress_names({"gpu001"}) == "gpu001");
  // Another width or prefix is another list; names without a number are kept as they are.
  CHECK(compress_names({"n1", "n2", "n10", "login", "gpu01", "gpu02"}) ==
        "gpu[01-02],login,n10,n[1-2]");
  CHECK(compress_names({"a (x.json)", "a"}) == "a,a (x.json)");
  CHECK(compress_names({}).empty());
  // Duplicates are one entry; a 20-digit number is not parsed (no overflow).
  CHECK(compress_names({"n5", "n5"}) == "n5");
  CHECK(compress_names({"n99999999999999999999"}) == "n99999999999999999999");
}

TEST_CASE("fleet compare: nodes grouped by value, the majority first, streaming", "[fleet]") {
  const auto quantities = load_builtin_rules(nullptr, false).fleet_compare;
  fleet::Accumulator acc(quantities);
  auto facts = [](const std::string& kernel) {
    FactSet f;
    f.put_ok("kernel.release", kernel, "/proc/sys/kernel/osrelease");
    return f;
  };
  const std::vector<std::string> kernels = {"6.8", "6.5", "6.8", "6.1", "6.5", "6.8", "6.8"};
  for (std::size_t i = 0; i < kernels.size(); ++i)
    acc.add("n" + std::to_string(i + 1), "n.json", facts(kernels[i]));
  acc.add("n1", "/facts/again.json", facts("6.8")); // one host captured twice
  const fleet::Comparison c = acc.finish();
  REQUIRE(c.nodes.size() == 8);
  CHECK(c.nodes[0] == "n1 (n.json)"); // both captures of n1 say which file they are
  CHECK(c.nodes[7] == "n1 (again.json)");
  CHECK(c.nodes[1] == "n2");
  REQUIRE(c.rows.size() == 1);
  const auto g = c.rows[0].groups();
  REQUIRE(g.size() == 3);
  CHECK(g[0].value == "6.8");
  CHECK(g[0].nodes == std::vector<std::size_t>{0, 2, 5, 6, 7});
  CHECK(g[1].value == "6.5");
  CHECK(g[1].nodes == std::vector<std::size_t>{1, 4});
  CHECK(g[2].value == "6.1");
  const std::string text = fleet::comparison_text(c, false);
  CHECK(text.find("    6.8  (5 nodes, the majority)\n") != std::string::npos);
  CHECK(text.find("    6.5  (2 nodes): n[2,5]\n") != std::string::npos);
  CHECK(text.find("    6.1  (1 node): n4\n") != std::string::npos);
}

TEST_CASE("fleet compare: each node's label is unique and stable in input order (issue 44)",
          "[fleet]") {
  const auto quantities = load_builtin_rules(nullptr, false).fleet_compare;
  FactSet f;
  f.put_ok("kernel.release", std::string("6.8"), "/proc/sys/kernel/osrelease");
  fleet::Accumulator acc(quantities);
  // Redacted bundles are all redacted-host; two share the file name too; one host name reads
  // like another node's label; one file could not be replayed.
  acc.add("redacted-host", "/a/node.tar.gz", f);
  acc.add("redacted-host", "/b/node.tar.gz", f);
  acc.add("redacted-host (node.tar.gz) #2", "/c/x.json", f);
  acc.add_unreadable("bad.json", "/d/bad.json", "/d/bad.json:1: not JSON");
  acc.add("redacted-host", "/e/other.tar.gz", f);
  acc.add("lone", "/f/lone.json", f);
  const fleet::Comparison c = acc.finish();
  CHECK(c.nodes == std::vector<std::string>{
                       "redacted-host (node.tar.gz)", "redacted-host (node.tar.gz) #2 #2",
                       "redacted-host (node.tar.gz) #2", "redacted-host (other.tar.gz)", "lone"});
  REQUIRE(c.unreadable.size() == 1);
  CHECK(c.unreadable[0].node == "bad.json");
  CHECK(c.unreadable[0].reason == "/d/bad.json:1: not JSON");
  CHECK(fleet::comparison_text(c, false).find("! bad.json could not be compared: /d/bad.json:1") !=
        std::string::npos);
  CHECK_FALSE(c.error_difference());
}

TEST_CASE("fleet compare: a long host list wraps at 100 columns", "[fleet]") {
  const auto quantities = load_builtin_rules(nullptr, false).fleet_compare;
  fleet::Accumulator acc(quantities);
  for (int i = 0; i < 600; ++i) {
    FactSet f;
    // every third node odd: no ranges, a long list
    f.put_ok("kernel.release", i % 3 == 0 ? std::string("6.1") : std::string("6.8"),
             "/proc/sys/kernel/osrelease");
    acc.add(fmt::format("rack{:03d}", i), "x.json", f);
  }
  const std::string text = fleet::comparison_text(acc.finish(), false);
  std::size_t widest = 0;
  std::size_t lines = 0;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t nl = text.find('\n', start);
    widest = std::max(widest, nl - start);
    ++lines;
    start = nl + 1;
  }
  CHECK(widest <= 100);
  CHECK(lines > 10); // 200 numbers of 4 characters need about 9 lines of 100 columns
  CHECK(text.find("(200 nodes): rack[000,003,006,") != std::string::npos);
}
