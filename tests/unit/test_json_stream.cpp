// SPDX-License-Identifier: MIT
// The JSON report written without its tree (issue 33): json_report_text must be, byte for byte,
// dump_json of json_report's tree, for every member the report can have, in both layouts (one
// report, an array of reports), with hostile strings and keys.
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace halo;

namespace {
Result full_result() {
  Result r;
  r.id = "ttm-limit-low";
  r.title = "TTM limit";
  r.area = "memory";
  r.status = Outcome::fail;
  r.severity = Severity::error;
  r.message = "pages_limit is 4 GiB \x1b[31m\xc2\x9b\x7f and \xff\xfe bytes";
  // Keys out of order, one given twice (the last wins), one with a reason.
  r.evidence.push_back({"memory.total_bytes", 1234, "ok", "/proc/meminfo", "", ""});
  r.evidence.push_back({"gpu.0.gfx_target", "gfx1151", "ok", "/sys/x", "", ""});
  r.evidence.push_back({"memory.total_bytes", 99.5, "error", "/proc/meminfo", "unreadable", ""});
  r.evidence.push_back(
      {"ttm.pages_limit", nullptr, "missing", "/sys/module/ttm", "no such file", ""});
  r.evidence.push_back(
      {"env.list", nlohmann::json::array({"a", 1, nlohmann::json::object()}), "ok", "x", "", ""});
  r.evidence.push_back({"env.map", {{"z", 1}, {"a", {{"\xc3\xa9", true}}}}, "ok", "x", "", ""});
  r.fix = {{"kernel_args", {"ttm.pages_limit=1"}}, {"note", "reboot"}};
  r.pending_reboot = true;
  r.sources = {"https://example.org/a", "doc \x1b"};
  r.gpu = GpuRef{2, "0000:c3:00.0", "gfx1151", "Radeon 8060S", std::nullopt};
  r.waiver = Waiver{"window", "lab", "2999-12-31"};
  return r;
}

ReportContext full_context() {
  ReportContext ctx;
  ctx.tool_version = "0.1.0";
  ctx.hostname = "node\x9b";
  ctx.kernel = "6.18.0";
  ctx.os = "Ubuntu";
  ctx.ruleset_version = "1";
  ctx.ruleset_digest = "abc";
  ctx.root = "/fixture";
  ctx.runs_in = "docker";
  ctx.virtualization = "kvm";
  ctx.python.judged = true;
  ctx.python.site = "/venv/lib/python3.12/site-packages";
  ctx.python.basis = "VIRTUAL_ENV";
  ctx.python.torch = "2.10.0+rocm7.1";
  ctx.python.build = "rocm";
  ctx.python.hip = "7.1.1";
  ctx.python.rocm = "7.1";
  ctx.python.gfx_targets = {"gfx1151", "gfx942"};
  ctx.exit_code = 1;
  return ctx;
}

std::string tree_text(const std::vector<ReportPart>& parts, bool as_array) {
  if (!as_array) return dump_json(json_report(parts[0].results, parts[0].ctx), 2) + "\n";
  nlohmann::json all = nlohmann::json::array();
  for (const auto& part : parts)
    all.push_back(json_report(part.results, part.ctx));
  return dump_json(all, 2) + "\n";
}
} // namespace

TEST_CASE("json_report_text is dump_json of json_report's tree, byte for byte", "[report][json]") {
  const FactSet facts;
  Result bare; // no evidence, no GPU, no waiver, null fix, no sources
  bare.id = "bare";
  bare.status = Outcome::skip;
  Result gpu_visible = full_result();
  gpu_visible.gpu->hip_device = 0;
  gpu_visible.waiver.reset();
  gpu_visible.status = Outcome::pass;
  const std::vector<Result> results = {full_result(), bare, gpu_visible};
  const ReportContext ctx = full_context();
  ReportContext bare_ctx; // no python, no runs_in, no virtualization
  bare_ctx.root = "/";
  const ReportContext& plain = bare_ctx;

  SECTION("one report") {
    for (const ReportContext* c : {&ctx, &plain}) {
      const std::vector<ReportPart> parts = {ReportPart{results, *c, facts}};
      CHECK(json_report_text(parts, false) == tree_text(parts, false));
    }
  }
  SECTION("no results") {
    const std::vector<Result> none;
    const std::vector<ReportPart> parts = {ReportPart{none, plain, facts}};
    CHECK(json_report_text(parts, false) == tree_text(parts, false));
  }
  SECTION("an array of reports") {
    const std::vector<ReportPart> parts = {ReportPart{results, ctx, facts},
                                           ReportPart{results, plain, facts}};
    CHECK(json_report_text(parts, true) == tree_text(parts, true));
  }
  SECTION("an evidence key that is not UTF-8 (dump_json renames it, which moves it)") {
    std::vector<Result> odd = results;
    odd[0].evidence.push_back({"env.\xff\x41", "v", "ok", "x", "", ""});
    odd[0].evidence.push_back({"env.A", "w", "ok", "y", "", ""});
    const std::vector<ReportPart> parts = {ReportPart{odd, ctx, facts}};
    CHECK(json_report_text(parts, false) == tree_text(parts, false));
    const std::vector<ReportPart> two = {ReportPart{odd, ctx, facts},
                                         ReportPart{results, ctx, facts}};
    CHECK(json_report_text(two, true) == tree_text(two, true));
  }
}

TEST_CASE("JsonStream writes what dump_json writes for the same tree", "[sanitize][json]") {
  const nlohmann::json tree = {{"a", nlohmann::json::array()},
                               {"b", nlohmann::json::object()},
                               {"c", {{"d", {1, "x\x7f", nullptr}}, {"e", false}}},
                               {"f", -7}};
  for (const int indent : {-1, 0, 2, 4}) {
    std::string out;
    JsonStream w(out, indent);
    w.begin_object();
    w.key("a");
    w.begin_array();
    w.end_array();
    w.key("b");
    w.begin_object();
    w.end_object();
    w.key("c");
    w.begin_object();
    w.key("d");
    w.begin_array();
    w.integer(1);
    w.string("x\x7f");
    w.null();
    w.end_array();
    w.key("e");
    w.boolean(false);
    w.end_object();
    w.key("f");
    w.value(-7);
    w.end_object();
    CHECK(out == dump_json(tree, indent));
  }
}
