// SPDX-License-Identifier: MIT
// The CI and fleet reporters: JUnit XML (parsed back with pugixml), Prometheus exposition and the
// node-problem-detector line and exit code.
#include "fixture_tree.hpp"

#include <halo/report.hpp>
#include <halo/rules.hpp>

#include <catch2/catch.hpp>
#include <pugixml.hpp>

#include <regex>
#include <sstream>

using namespace halo;
using halo::test::fixture;
using halo::test::probe_root;

namespace {
Result make(std::string id, std::string area, Outcome o, Severity s, std::string msg) {
  Result r;
  r.id = std::move(id);
  r.title = "title of " + r.id;
  r.area = std::move(area);
  r.status = o;
  r.severity = s;
  r.message = std::move(msg);
  r.why = "because <reasons> & more";
  return r;
}

std::vector<Result> sample_results() {
  std::vector<Result> rs;
  rs.push_back(
      make("ttm-limit-low", "memory", Outcome::fail, Severity::error, "TTM limit 62.54 GiB"));
  rs.back().evidence.push_back(Evidence{"ttm.pages_limit_pages", 16394901, "ok",
                                        "/sys/module/ttm/parameters/pages_limit", "", ""});
  rs.back().fix = nlohmann::json{{"summary", "raise the TTM limit"}};
  rs.push_back(make("kfd-access", "access", Outcome::pass, Severity::error, "ok"));
  rs.push_back(make("instinct-iommu-pt", "instinct", Outcome::skip, Severity::warning,
                    "not an Instinct GPU"));
  rs.push_back(
      make("hsa-runtime-init", "runtime", Outcome::error, Severity::error, "ROCr not loaded"));
  rs.push_back(
      make("gfx1151-kernel-min", "kernel", Outcome::fail, Severity::warning, "kernel 6.14"));
  return rs;
}

ReportContext sample_ctx() {
  ReportContext ctx;
  ctx.tool_version = "0.1.0";
  ctx.hostname = "node-7";
  ctx.kernel = "6.17.4";
  ctx.ruleset_version = "2026.11.0";
  ctx.exit_code = 1;
  ctx.duration_seconds = 0.25;
  return ctx;
}

int attr(const pugi::xml_node& n, const char* name) {
  return n.attribute(name).as_int(-1);
}

double sample_value(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return -1;
}
} // namespace

TEST_CASE("junit: one testcase per result, failure/error/skipped by outcome", "[report][junit]") {
  auto rs = sample_results();
  const std::string xml = junit_report(rs, sample_ctx());
  pugi::xml_document doc;
  REQUIRE(doc.load_string(xml.c_str()));
  auto suites = doc.child("testsuites");
  REQUIRE(suites);
  CHECK(attr(suites, "tests") == 5);
  CHECK(attr(suites, "failures") == 2);
  CHECK(attr(suites, "errors") == 1);
  CHECK(attr(suites, "skipped") == 1);
  CHECK(std::string(suites.attribute("time").value()) == "0.250");

  int cases = 0, suites_n = 0, failures = 0, errors = 0, skipped = 0;
  for (auto suite : suites.children("testsuite")) {
    ++suites_n;
    int in_suite = 0;
    for (auto tc : suite.children("testcase")) {
      ++cases;
      ++in_suite;
      CHECK(tc.child("system-out"));
      if (tc.child("failure")) ++failures;
      if (tc.child("error")) ++errors;
      if (tc.child("skipped")) ++skipped;
    }
    CHECK(attr(suite, "tests") == in_suite);
    CHECK(std::string(suite.attribute("hostname").value()) == "node-7");
  }
  CHECK(suites_n == 5); // one per area
  CHECK(cases == 5);
  CHECK(failures == 2);
  CHECK(errors == 1);
  CHECK(skipped == 1);

  auto ttm = suites.find_node([](pugi::xml_node n) {
    return std::string(n.name()) == "testcase" &&
           std::string(n.attribute("name").value()).rfind("ttm-limit-low", 0) == 0;
  });
  REQUIRE(ttm);
  CHECK(std::string(ttm.child("failure").attribute("message").value()) == "TTM limit 62.54 GiB");
  CHECK(std::string(ttm.child("failure").attribute("type").value()) == "error");
  const std::string out = ttm.child("system-out").text().get();
  CHECK(out.find("because <reasons> & more") != std::string::npos); // escaped and read back
  CHECK(out.find("/sys/module/ttm/parameters/pages_limit") != std::string::npos);
  CHECK(out.find("raise the TTM limit") != std::string::npos);
}

TEST_CASE("junit: a waived failure is skipped, not failed", "[report][junit]") {
  auto rs = sample_results();
  rs[0].waiver = Waiver{"kernel upgrade scheduled", "lab-admins", "2099-01-01"};
  pugi::xml_document doc;
  REQUIRE(doc.load_string(junit_report(rs, sample_ctx()).c_str()));
  CHECK(attr(doc.child("testsuites"), "failures") == 1);
  CHECK(attr(doc.child("testsuites"), "skipped") == 2);
  auto skipped = doc.select_node("//testcase[starts-with(@name,'ttm-limit-low')]/skipped");
  REQUIRE(skipped);
  CHECK(std::string(skipped.node().attribute("message").value()).find("lab-admins") !=
        std::string::npos);
}

TEST_CASE("junit: every fixture renders to well-formed XML with counts matching",
          "[report][junit]") {
  const RuleSet rules = load_builtin_rules(nullptr);
  for (const char* name :
       {"strix-halo-default-ttm", "kfd-no-access", "no-amd-gpu", "mi300x-numa-4021"}) {
    const FactSet facts = probe_root(fixture(name));
    const auto results = evaluate(rules, facts, {{"reserve_gib", 4}, {"reserve_bytes", 4LL << 30}});
    pugi::xml_document doc;
    REQUIRE(doc.load_string(junit_report(results, sample_ctx()).c_str()));
    CHECK(attr(doc.child("testsuites"), "tests") == static_cast<int>(results.size()));
    CHECK(doc.select_nodes("//testcase").size() == results.size());
  }
}

TEST_CASE("prometheus: rule gauges, counts and numeric facts", "[report][prometheus]") {
  auto rs = sample_results();
  FactSet facts;
  facts.put_ok("mem.total_bytes", std::int64_t{134299025408}, "/proc/meminfo");
  facts.put_ok("gpu.0.gtt_total_bytes", std::int64_t{128849018880}, "sysfs");
  facts.put_status("ttm.pages_limit_bytes", Status::missing,
                   "/sys/module/ttm/parameters/pages_limit", "no such file");
  facts.put_ok("hsa.gpu.0.coarse_pool_bytes", std::int64_t{68719476736}, "hsa");
  const std::string text = prometheus_report(rs, sample_ctx(), facts);

  CHECK(sample_value(
            text,
            R"(halo_doctor_rule_failed{id="ttm-limit-low",severity="error",area="memory"})") == 1);
  CHECK(sample_value(
            text, R"(halo_doctor_rule_failed{id="kfd-access",severity="error",area="access"})") ==
        0);
  CHECK(sample_value(text, R"(halo_doctor_results{status="fail"})") == 2);
  CHECK(sample_value(text, R"(halo_doctor_results{status="error"})") == 1);
  CHECK(sample_value(text, "halo_doctor_exit_code") == 1);
  CHECK(sample_value(text, "halo_doctor_run_duration_seconds") == Approx(0.25));
  CHECK(sample_value(text, "halo_doctor_memory_total_bytes") == 134299025408.0);
  CHECK(sample_value(text, R"(halo_doctor_gpu_gtt_total_bytes{gpu="0"})") == 128849018880.0);
  CHECK(sample_value(text, R"(halo_doctor_hsa_coarse_pool_bytes{gpu="0"})") == 68719476736.0);
  // gpu.N series carry the GPU's PCI slot and gfx target; hsa.gpu.N counts ROCr's visible GPUs,
  // another numbering, so it does not borrow gpu.N's labels.
  facts.put_ok("gpu.0.pci_slot", std::string("0000:03:00.0"), "sysfs");
  facts.put_ok("gpu.0.gfx_target", std::string("gfx1201"), "kfd");
  const std::string labelled = prometheus_report(rs, sample_ctx(), facts);
  CHECK(sample_value(
            labelled,
            R"(halo_doctor_gpu_gtt_total_bytes{gpu="0",pci_slot="0000:03:00.0",gfx="gfx1201"})") ==
        128849018880.0);
  CHECK(sample_value(labelled, R"(halo_doctor_hsa_coarse_pool_bytes{gpu="0"})") == 68719476736.0);
  // A fact that is not ok is left out, not exported as 0.
  CHECK(text.find("halo_doctor_ttm_pages_limit_bytes") == std::string::npos);
  // Every family has HELP and TYPE gauge before its samples.
  std::istringstream in(text);
  std::string line, family;
  const std::regex sample_re(R"(^([a-z_]+)(\{.*\})? -?[0-9.e+]+$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      CHECK(line == "# TYPE " + family + " gauge");
    } else if (line.rfind("# HELP ", 0) != 0) {
      REQUIRE(std::regex_match(line, m, sample_re));
      CHECK(m[1].str() == family);
    }
  }
}

TEST_CASE("prometheus: label values are escaped", "[report][prometheus]") {
  std::vector<Result> rs{make("x", "a", Outcome::pass, Severity::info, "m")};
  auto ctx = sample_ctx();
  ctx.kernel = "6.1 \"quoted\" \\ back";
  const std::string text = prometheus_report(rs, ctx, FactSet{});
  CHECK(text.find(R"(kernel="6.1 \"quoted\" \\ back")") != std::string::npos);
}

TEST_CASE("npd: exit 0 OK, 1 problem, 2 unknown, one short line", "[report][npd]") {
  auto rs = sample_results();
  auto ctx = sample_ctx();
  CHECK(npd_exit_code(rs, FailOn::error) == 1);
  CHECK(npd_report(rs, ctx) == "halo-doctor failed: ttm-limit-low\n");

  rs[0].waiver = Waiver{"r", "o", "2099-01-01"};
  CHECK(npd_exit_code(rs, FailOn::error) == 2); // only the error result is left at error level
  CHECK(npd_report(rs, ctx) == "halo-doctor could not check: hsa-runtime-init\n");
  CHECK(npd_exit_code(rs, FailOn::warning) == 1); // the warning failure now counts

  rs[3].status = Outcome::pass;
  CHECK(npd_exit_code(rs, FailOn::error) == 0);
  CHECK(npd_report(rs, ctx).rfind("halo-doctor OK", 0) == 0);
  CHECK(npd_exit_code(rs, FailOn::never) == 0);

  std::vector<Result> many;
  for (int i = 0; i < 30; ++i)
    many.push_back(
        make("some-long-rule-id-" + std::to_string(i), "a", Outcome::fail, Severity::error, "m"));
  const std::string line = npd_report(many, ctx);
  CHECK(line.size() <= kNpdMaxMessage + 1);
  CHECK(line.find("more)") != std::string::npos);
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
}

TEST_CASE("report formats: one spelling each, parsed back, unknown names refused", "[report]") {
  using halo::ReportFormat;
  const auto all = halo::report_formats();
  REQUIRE(all ==
          std::vector<std::string>{"text", "json", "junit", "prometheus", "npd", "markdown"});
  for (const auto& name : all) {
    const auto f = halo::parse_report_format(name);
    REQUIRE(f.has_value());
    CHECK(halo::to_string(*f) == name);
  }
  CHECK_FALSE(halo::parse_report_format("JSON").has_value());
  CHECK_FALSE(halo::parse_report_format("xml").has_value());
  CHECK_FALSE(halo::parse_report_format("").has_value());
  CHECK(halo::format_names({ReportFormat::json, ReportFormat::text}) ==
        std::vector<std::string>{"json", "text"});
  CHECK(halo::multi_report_format("text"));
  CHECK(halo::multi_report_format("json"));
  CHECK_FALSE(halo::multi_report_format("junit"));
}
