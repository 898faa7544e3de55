// SPDX-License-Identifier: MIT
#include "halo_bench/facts.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

using namespace halo_bench;
using nlohmann::json;

TEST_CASE("fact keys are dotted lower-case under bench.", "[facts]") {
  CHECK(valid_fact_key("bench.backend"));
  CHECK(valid_fact_key("bench.stream.device.triad_gbps"));
  CHECK(valid_fact_key("bench.gemm.bf16.m4096_n11008_k4096.tflops"));
  CHECK_FALSE(valid_fact_key("bench"));
  CHECK_FALSE(valid_fact_key("bench."));
  CHECK_FALSE(valid_fact_key("bench..x"));
  CHECK_FALSE(valid_fact_key("bench.Stream"));
  CHECK_FALSE(valid_fact_key("bench.triad-gbps"));
  CHECK_FALSE(valid_fact_key("gpu.bench.x"));
}

TEST_CASE("facts serialise to the halo-doctor contract", "[facts]") {
  FactSet facts;
  facts.set_ok("bench.backend", "hip", "halo-bench");
  facts.set_ok("bench.stream.device.triad_gbps", 231.5,
               "halo-bench stream triad, hipEvent timing, median of 20");
  facts.set_error("bench.int4.fused.tflops", "result check failed: max rel err 0.31 > 0.02");
  facts.set_missing("bench.ceiling_bytes", "not requested");
  facts.set_ok("bench.ceiling_chunks", 3, "halo-bench");

  const json expected = json::parse(R"({"schema_version": 1,
   "tool": {"name": "halo-bench", "version": "0.1.0"},
   "facts": {
     "bench.backend": {"status": "ok", "value": "hip", "source": "halo-bench"},
     "bench.stream.device.triad_gbps": {"status": "ok", "value": 231.5,
        "source": "halo-bench stream triad, hipEvent timing, median of 20"},
     "bench.int4.fused.tflops": {"status": "error", "value": null, "source": "halo-bench",
        "reason": "result check failed: max rel err 0.31 > 0.02"},
     "bench.ceiling_bytes": {"status": "missing", "value": null, "source": "halo-bench",
        "reason": "not requested"},
     "bench.ceiling_chunks": {"status": "ok", "value": 3, "source": "halo-bench"}
   }})");
  const json doc = facts.to_json(tool_version);
  CHECK(doc == expected);
  CHECK(doc["facts"]["bench.ceiling_chunks"]["value"].is_number_integer());
  CHECK_FALSE(doc["facts"]["bench.backend"].contains("reason"));
  CHECK(facts.size() == 5);
  CHECK(facts.contains("bench.backend"));
  CHECK(facts.at("bench.int4.fused.tflops").status == FactStatus::error);
  CHECK_THROWS_AS(facts.at("bench.nope"), std::out_of_range);
}

TEST_CASE("facts reject invalid keys and values", "[facts]") {
  FactSet facts;
  CHECK_THROWS_AS(facts.set_ok("Bench.X", 1, "x"), std::invalid_argument);
  CHECK_THROWS_AS(facts.set_ok("bench.x", json::array({1, 2}), "x"), std::invalid_argument);
  CHECK_THROWS_AS(facts.set_ok("bench.x", std::numeric_limits<double>::quiet_NaN(), "x"),
                  std::invalid_argument);
  CHECK_THROWS_AS(facts.set_status("bench.x", FactStatus::ok, "r"), std::invalid_argument);
  facts.set_status("bench.x", FactStatus::denied, "");
  CHECK(facts.at("bench.x").reason == "denied");
  // A later value replaces an earlier one.
  facts.set_ok("bench.x", true, "y");
  CHECK(facts.at("bench.x").status == FactStatus::ok);
  CHECK(facts.at("bench.x").value == true);
}

TEST_CASE("facts file round trip", "[facts]") {
  FactSet facts;
  facts.set_ok("bench.device.name", "AMD Radeon 8060S Graphics", "hipGetDeviceProperties");
  facts.set_ok("bench.ceiling_bytes", std::uint64_t{120} << 30, "halo-bench ceiling");
  const auto path = std::filesystem::temp_directory_path() / "halo_bench_facts_test.json";
  facts.write(path, tool_version);
  std::ifstream in(path);
  const json read = json::parse(in);
  std::filesystem::remove(path);
  CHECK(read["schema_version"] == 1);
  CHECK(read["tool"]["name"] == "halo-bench");
  CHECK(read["facts"]["bench.ceiling_bytes"]["value"] == 128849018880ULL);
  CHECK(read["facts"]["bench.device.name"]["value"] == "AMD Radeon 8060S Graphics");
  CHECK_THROWS_AS(facts.write("/nonexistent-dir/x.json", tool_version), std::runtime_error);
}
