// SPDX-License-Identifier: MIT
// The text report a person reads (issue 46 §3): the facts that decided a verdict, one finding per
// cause, "could not be checked" as its own class, the next step, -q as one line per finding, and
// lines wrapped to the terminal's width.
#include <halo/checks.hpp>
#include <halo/probe.hpp>
#include <halo/report.hpp>
#include <halo/rules.hpp>
#include <halo/text.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

using namespace halo;

namespace {
Result failing(std::string id, std::string area, Severity s, std::string msg) {
  Result r;
  r.id = std::move(id);
  r.area = std::move(area);
  r.status = Outcome::fail;
  r.severity = s;
  r.message = std::move(msg);
  return r;
}

Result passing(std::string id) {
  Result r;
  r.id = std::move(id);
  r.area = "memory";
  r.status = Outcome::pass;
  r.message = "fine";
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  for (const auto l : split_records(text, '\n'))
    out.emplace_back(l);
  return out;
}

bool has(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

/// The seed's story in three results: the TTM limit (a fix `halo-doctor fix` writes, a reboot),
/// and a 6.17 kernel failing two rules whose fixes disagree (6.18.4 and 6.18).
std::vector<Result> seed() {
  std::vector<Result> rs;
  rs.push_back(failing("ttm-limit-low", "memory", Severity::error,
                       "the GPU may use only 62.54 GiB of 125.08 GiB RAM: the kernel default"));
  rs.back().fix = {{"summary", "raise the TTM limit"},
                   {"kernel_args", {{"set", {{"ttm.pages_limit", "31719424"}}}}},
                   {"initramfs", true},
                   {"reboot", true}};
  rs.back().proof.push_back(
      Evidence{"mem.total_bytes", std::int64_t{134299025408}, "ok", "/proc/meminfo", "", ""});
  rs.back().evidence = rs.back().proof;
  rs.back().evidence.push_back(Evidence{"kernel.ubuntu_abi", nullptr, "missing",
                                        "/proc/sys/kernel/osrelease", "not Ubuntu", ""});
  rs.push_back(failing("gfx1151-kernel-min", "kernel", Severity::warning,
                       "kernel 6.17.4 predates AMD's fixed kernels (6.18.4): it lacks fixes"));
  rs.back().fix = {{"summary", "upgrade the kernel"},
                   {"manual", {"install kernel 6.18.4 or later"}}};
  rs.back().subsumes = {"gfx1151-cwsr-hang"};
  rs.push_back(failing("gfx1151-cwsr-hang", "driver", Severity::warning,
                       "kernel 6.17.4 with CWSR on: long runs hang; boot with cwsr_enable=0 until "
                       "the kernel is 6.18 or later"));
  rs.back().fix = {{"summary", "boot with amdgpu.cwsr_enable=0 (or move to a 6.18 kernel)"}};
  rs.push_back(passing("kfd-access"));
  return rs;
}

ReportContext context(int exit_code) {
  ReportContext ctx;
  ctx.tool_version = "0.0.0";
  ctx.hostname = "box";
  ctx.exit_code = exit_code;
  return ctx;
}
} // namespace

TEST_CASE("text report: the evidence shown is the facts that decided the verdict", "[report]") {
  // A `none` over an Ubuntu field that is missing on Fedora: the leaf is unknown, the verdict
  // rests on kernel.version alone. An `exists: false` leaf decides on a missing fact.
  const ProbeRegistry reg = builtin_probes();
  RuleSet rs;
  rs.rules = parse_rules_file(R"({"area": "kernel", "rules": [
  {"id": "old-kernel", "title": "t", "pass_message": "ok", "why": "w",
   "fail": [{"severity": "warning", "message": "old",
             "when": {"all": [{"any": [{"fact": "kernel.version", "version_lt": "6.18"},
                                       {"fact": "kernel.ubuntu_abi", "lt": 19}]},
                              {"fact": "ttm.cmdline.pages_limit_pages", "exists": false}]}}],
   "evidence": ["kernel.version", "kernel.ubuntu_abi", "mem.total_bytes"],
   "sources": ["https://example.org"]}]})",
                              "r.json", &reg);
  FactSet f;
  f.put_ok("kernel.version", std::string("6.17.4"), "/proc/sys/kernel/osrelease");
  f.put_ok("mem.total_bytes", std::int64_t{1} << 30, "/proc/meminfo");
  f.put_status("kernel.ubuntu_abi", Status::missing, "/proc/sys/kernel/osrelease", "not Ubuntu");
  f.put_status("ttm.cmdline.pages_limit_pages", Status::missing, "/proc/cmdline", "not set");
  const auto results = evaluate(rs, f, default_params());
  REQUIRE(results.size() == 1);
  REQUIRE(results[0].status == Outcome::fail);
  std::vector<std::string> keys;
  for (const auto& e : results[0].proof)
    keys.push_back(e.key);
  CHECK(keys == std::vector<std::string>{"kernel.version", "ttm.cmdline.pages_limit_pages"});
  // The JSON report's evidence is the rule's list, unchanged.
  CHECK(results[0].evidence.size() == 3);

  const std::string text = text_report(results, context(0), {});
  CHECK(has(text, "kernel.version = 6.17.4"));
  CHECK(has(text, "ttm.cmdline.pages_limit_pages = <missing: not set>"));
  CHECK_FALSE(has(text, "kernel.ubuntu_abi"));
  CHECK_FALSE(has(text, "mem.total_bytes"));
  TextOptions verbose;
  verbose.verbose = true;
  CHECK(has(text_report(results, context(0), verbose), "kernel.ubuntu_abi = <missing"));
}

TEST_CASE("text report: failures of one cause are one finding with the stricter fix", "[report]") {
  const auto rs = seed();
  const std::string text = text_report(rs, context(1), {});
  // One WARN line for the kernel, the subsumed rule as an `also` line under it.
  CHECK(std::count_if(rs.begin(), rs.end(),
                      [](const Result& r) { return r.severity == Severity::warning; }) == 2);
  const auto ls = lines_of(text);
  CHECK(std::count_if(ls.begin(), ls.end(),
                      [](const std::string& l) { return l.starts_with("  WARN"); }) == 1);
  CHECK(has(text, "  WARN  gfx1151-kernel-min  kernel 6.17.4 predates"));
  CHECK(has(text, "        also gfx1151-cwsr-hang  kernel 6.17.4 with CWSR on: long runs hang\n"));
  // One piece of advice: the head's 6.18.4, not the subsumed rule's 6.18 nor its own message's.
  CHECK(has(text, "install kernel 6.18.4 or later"));
  CHECK_FALSE(has(text, "cwsr_enable=0"));
  CHECK_FALSE(has(text, "\ndriver\n")); // its area holds nothing else
  // The JSON report keeps each rule's result.
  const auto j = json_report(rs, context(1));
  CHECK(j["results"].size() == rs.size());
  CHECK(
      json_report_text({ReportPart{rs, context(1), FactSet{}}}, false).find("gfx1151-cwsr-hang") !=
      std::string::npos);
  // Without the head failing, the other is a finding of its own with its own fix.
  std::vector<Result> alone{rs[0], rs[2]};
  const std::string t2 = text_report(alone, context(1), {});
  CHECK(has(t2, "  WARN  gfx1151-cwsr-hang"));
  CHECK(has(t2, "cwsr_enable=0"));
}

TEST_CASE("text report: -q prints one line per finding, then the summary and the next step",
          "[report]") {
  TextOptions q;
  q.quiet = true;
  const std::string text = text_report(seed(), context(1), q);
  const auto ls = lines_of(text);
  REQUIRE(ls.size() >= 4);
  CHECK(ls[0] == "FAIL    ttm-limit-low  the GPU may use only 62.54 GiB of 125.08 GiB RAM");
  CHECK(ls[1].starts_with("WARN    gfx1151-kernel-min, gfx1151-cwsr-hang  kernel 6.17.4 predates"));
  CHECK(ls[2].starts_with("summary: 1 error, 2 warnings"));
  CHECK(ls.back() ==
        "next: sudo halo-doctor fix, then reboot; the other fix steps above are yours");
  // No header, evidence or fix lines: the findings, the summary (wrapped), the next step.
  CHECK_FALSE(has(text, "halo-doctor 0.0.0"));
  CHECK_FALSE(has(text, "found:"));
  CHECK_FALSE(has(text, "fix:"));
  CHECK(ls.size() <= 5);
  for (const auto& l : ls)
    CHECK(visible_width(l) <= 100);
}

TEST_CASE("text report: could not be checked is UNKNOWN, counted, with what would let it be",
          "[report]") {
  Result r;
  r.id = "gpu-hang-log";
  r.area = "hangs";
  r.status = Outcome::error;
  r.severity = Severity::error;
  r.message = "could not be checked: kernel.log (denied: needs privileges)";
  r.proof.push_back(Evidence{"kernel.log", nullptr, "denied", "/dev/kmsg", "needs privileges", ""});
  TextOptions wide;
  wide.width = 1000; // the summary on one line
  const std::string text = text_report({r, passing("kfd-access")}, context(0), wide);
  CHECK(has(text, "  UNKNOWN  gpu-hang-log  could not be checked"));
  CHECK_FALSE(has(text, "ERROR"));
  CHECK(has(text, "1 could not be checked (run as root to read what this user may not)"));
  // Nothing failed: no next step.
  CHECK_FALSE(has(text, "next:"));
  r.proof.front().status = "error";
  CHECK(has(text_report({r}, context(0), wide), "1 could not be checked (the UNKNOWN lines name"));
}

TEST_CASE("text report: the next step", "[report]") {
  auto rs = seed();
  // Only the TTM limit, configured and waiting for a reboot.
  std::vector<Result> pending{rs[0]};
  pending[0].pending_reboot = true;
  CHECK(has(text_report(pending, context(4), {}),
            "next: reboot to make the configured fix take effect"));
  // A manual fix only.
  std::vector<Result> manual{rs[1]};
  CHECK(has(text_report(manual, context(0), {}), "next: take the fix steps above, then run"));
  // All passed: the summary is the last line.
  TextOptions wide;
  wide.width = 1000; // the summary on one line
  const std::string clean = text_report({passing("kfd-access")}, context(0), wide);
  CHECK_FALSE(has(clean, "next:"));
  CHECK(lines_of(clean).back().starts_with("summary:"));
}

TEST_CASE("text report: lines are wrapped to the width given", "[report]") {
  auto rs = seed();
  rs[0].message = std::string(300, 'x') + " and the rest of a long message";
  for (const std::size_t width : {40U, 60U, 100U}) {
    TextOptions o;
    o.width = width;
    o.color = true; // colour escapes take no columns
    for (const auto& l : lines_of(text_report(rs, context(1), o)))
      CHECK(visible_width(l) <= width);
  }
  CHECK(wrap_line("aaaa bbbb cccc dddd eeee", 20, 2) == "aaaa bbbb cccc dddd\n  eeee\n");
  CHECK(wrap_line("aaaa bbbb cccc dddd  (eeee)", 20, 2) == "aaaa bbbb cccc dddd\n  (eeee)\n");
  CHECK(wrap_line("short", 80, 4) == "short\n");
  CHECK(visible_width("\x1b[31;1mFAIL\x1b[0m") == 4);
  CHECK(visible_width("GiB \xc3\xa9") == 5);
}

TEST_CASE("rules: subsumes names a rule of the set", "[rules]") {
  const auto dir = std::filesystem::temp_directory_path() / "halo-subsumes-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string rule = R"({"area": "a", "rules": [
  {"id": "head", "title": "t", "pass_message": "ok", "why": "w", "subsumes": ["SUB"],
   "fail": [{"severity": "warning", "when": {"fact": "mem.total_bytes", "lt": 1}, "message": "m"}],
   "sources": ["https://example.org"]}]})";
  auto write = [&](const std::string& sub) {
    std::string text = rule;
    text.replace(text.find("SUB"), 3, sub);
    std::ofstream(dir / "a.json") << text;
  };
  const ProbeRegistry reg = builtin_probes();
  write("no-such-rule");
  CHECK_THROWS_WITH(load_rules_dir(dir.string(), &reg, false),
                    Catch::Contains("subsumes: no rule 'no-such-rule'"));
  write("head");
  CHECK_THROWS_WITH(load_rules_dir(dir.string(), &reg, false),
                    Catch::Contains("names the rule itself"));
  std::filesystem::remove_all(dir);
  // The built-in set: the kernel that fixes gfx1151 also ends the CWSR hang.
  const RuleSet builtin = load_builtin_rules(&reg, false);
  const Rule* head = builtin.find("gfx1151-kernel-min");
  REQUIRE(head != nullptr);
  CHECK(head->subsumes == std::vector<std::string>{"gfx1151-cwsr-hang"});
}

TEST_CASE("text report: one rule's same verdict on several GPUs is one finding naming them",
          "[report]") {
  // An eight-GPU MI355X node on ROCm 6.4 fails instinct-rocm-min on every GPU with one message:
  // one line "GPUs 0-3, 5 (gfx950)", not one a GPU; a different message stays its own finding.
  std::vector<Result> rs;
  for (const std::int64_t i : {0, 1, 2, 3, 5}) {
    rs.push_back(failing("instinct-rocm-min", "instinct", Severity::error,
                         "ROCm 6.4.3 predates the MI350 series"));
    rs.back().gpu = GpuRef{i, fmt::format("0000:{:02x}:00.0", i), "gfx950", "", std::nullopt};
  }
  rs.push_back(failing("instinct-rocm-min", "instinct", Severity::error,
                       "ROCm 6.3.1 predates 6.3.2, the first release for the MI325X"));
  rs.back().gpu = GpuRef{4, "0000:04:00.0", "gfx942", "", std::nullopt};
  TextOptions q;
  q.quiet = true;
  const auto ls = lines_of(text_report(rs, context(1), q));
  REQUIRE(ls.size() >= 2);
  CHECK(ls[0] == "FAIL    instinct-rocm-min  GPUs 0-3, 5 (gfx950): ROCm 6.4.3 predates the MI350 "
                 "series");
  CHECK(ls[1].starts_with("FAIL    instinct-rocm-min  GPU 4 (0000:04:00.0, gfx942): ROCm 6.3.1"));
  // Mixed gfx targets: the indices alone.
  rs.back().message = rs.front().message;
  const auto mixed = lines_of(text_report(rs, context(1), q));
  CHECK(mixed[0] == "FAIL    instinct-rocm-min  GPUs 0-5: ROCm 6.4.3 predates the MI350 series");
  CHECK(mixed[1].starts_with("summary: 6 errors"));
}
