// SPDX-License-Identifier: MIT
// halo-bench facts merged into a machine's facts (what `check --add-facts bench.json` does).
#include "fixture_tree.hpp"

#include <halo/checks.hpp>
#include <halo/rules.hpp>

#include <catch2/catch.hpp>

using namespace halo;

namespace {
const Result& get(const std::vector<Result>& rs, std::string_view id) {
  for (const auto& r : rs)
    if (r.id == id) return r;
  throw std::runtime_error("no result for " + std::string(id));
}

std::vector<Result> run_with(const std::string& bench_json) {
  static const ProbeRegistry reg = builtin_probes();
  static const RuleSet rules = load_builtin_rules(&reg);
  FactSet f = halo::test::probe_root(halo::test::fixture("strix-halo-fixed"));
  if (!bench_json.empty()) f.merge(facts_from_json_text(bench_json, "bench.json"));
  return evaluate(rules, f, Params{{"reserve_gib", 4}});
}
} // namespace

TEST_CASE("without benchmark facts the bench rules skip and say how to get them",
          "[scenario][bench]") {
  auto rs = run_with("");
  for (const char* id : {"bench-int4-slower", "bench-ceiling-below-limit", "bench-bandwidth-low"}) {
    INFO(id);
    CHECK(get(rs, id).status == Outcome::skip);
    CHECK_THAT(get(rs, id).message, Catch::Contains("halo-doctor bench"));
  }
}

TEST_CASE("benchmark facts: int4 slower, low bandwidth, ceiling below the TTM limit",
          "[scenario][bench]") {
  const std::string facts =
      R"({"schema_version": 1, "tool": {"name": "halo-bench", "version": "0.1.0"}, "facts": {
    "bench.int4.best_ratio_to_bf16": {"status": "ok", "value": 0.48, "source": "halo-bench"},
    "bench.int4.best_tflops": {"status": "ok", "value": 14.1, "source": "halo-bench"},
    "bench.gemm.bf16.tflops": {"status": "ok", "value": 29.4, "source": "halo-bench"},
    "bench.stream.device.triad_gbps": {"status": "ok", "value": 120.0, "source": "halo-bench"},
    "bench.peak_bandwidth_gbps": {"status": "ok", "value": 256.0, "source": "halo-bench"},
    "bench.peak_bandwidth_source": {"status": "ok", "value": "table: Strix Halo", "source": "halo-bench"},
    "bench.ceiling_bytes": {"status": "ok", "value": 67108864000, "source": "halo-bench"},
    "bench.ceiling_reached_cap": {"status": "ok", "value": false, "source": "halo-bench"},
    "bench.ceiling_stop_reason": {"status": "ok", "value": "hipMalloc: out of memory", "source": "halo-bench"}}})";
  auto rs = run_with(facts);
  CHECK(get(rs, "bench-int4-slower").status == Outcome::fail);
  CHECK(get(rs, "bench-int4-slower").severity == Severity::info);
  CHECK_THAT(get(rs, "bench-int4-slower").message, Catch::Contains("0.48"));
  CHECK(get(rs, "bench-bandwidth-low").status == Outcome::fail);
  CHECK(get(rs, "bench-ceiling-below-limit").status == Outcome::fail);
  CHECK_THAT(get(rs, "bench-ceiling-below-limit").message,
             Catch::Contains("hipMalloc: out of memory"));
}

TEST_CASE("benchmark facts: healthy numbers pass; a capped ceiling is not judged",
          "[scenario][bench]") {
  const std::string facts = R"({"schema_version": 1, "facts": {
    "bench.int4.best_ratio_to_bf16": {"status": "ok", "value": 1.2, "source": "halo-bench"},
    "bench.stream.device.triad_gbps": {"status": "ok", "value": 221.0, "source": "halo-bench"},
    "bench.peak_bandwidth_gbps": {"status": "ok", "value": 256.0, "source": "halo-bench"},
    "bench.ceiling_bytes": {"status": "ok", "value": 60000000000, "source": "halo-bench"},
    "bench.ceiling_reached_cap": {"status": "ok", "value": true, "source": "halo-bench"},
    "bench.ceiling_cap_bytes": {"status": "ok", "value": 60000000000, "source": "halo-bench"}}})";
  auto rs = run_with(facts);
  CHECK(get(rs, "bench-int4-slower").status == Outcome::pass);
  CHECK(get(rs, "bench-bandwidth-low").status == Outcome::pass);
  CHECK(get(rs, "bench-ceiling-below-limit").status == Outcome::skip);
  CHECK_THAT(get(rs, "bench-ceiling-below-limit").message, Catch::Contains("safety cap"));
}
