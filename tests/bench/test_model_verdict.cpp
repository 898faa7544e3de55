// SPDX-License-Identifier: MIT
#include "halo_bench/model_verdict.hpp"

#include <catch2/catch.hpp>

#include <limits>
#include <vector>

using namespace halo_bench;

TEST_CASE("regime verdict sums the projections as a token passes through them", "[model]") {
  // Two projections: the one that occurs 32 times dominates, whatever the single lm_head does.
  const std::vector<LinearTiming> gen = {
      {"q_proj", 4096, 4096, 32, 0.020, 0.008},   // 4-bit 2.5x faster
      {"lm_head", 128256, 4096, 1, 0.300, 0.600}, // 4-bit 2x slower
  };
  const RegimeVerdict v = weigh_regime(gen, "generation (M = 1)", "NF4");
  CHECK(v.bf16_ms == Approx(32 * 0.020 + 0.300));
  CHECK(v.quant_ms == Approx(32 * 0.008 + 0.600));
  CHECK(v.speedup == Approx(0.94 / 0.856));
  CHECK(v.flops_per_token == Approx(2.0 * (4096.0 * 4096 * 32 + 128256.0 * 4096)));
  CHECK(v.line == "generation (M = 1): NF4 is 1.1x faster than BF16");

  // The example: 1.9x slower in training.
  const std::vector<LinearTiming> train = {{"gate_proj", 11008, 4096, 32, 1.0, 1.9}};
  CHECK(weigh_regime(train, "training step GEMMs (M = 4096)", "NF4").line ==
        "training step GEMMs (M = 4096): NF4 is 1.9x slower than BF16");
}

TEST_CASE("speed words around 1", "[model]") {
  CHECK(speed_words(2.7) == "2.7x faster than");
  CHECK(speed_words(1.05) == "1.1x faster than"); // 1.05 is the threshold
  CHECK(speed_words(1.04) == "as fast as");
  CHECK(speed_words(1.0) == "as fast as");
  CHECK(speed_words(1.0 / 1.04) == "as fast as");
  CHECK(speed_words(1.0 / 1.06) == "1.1x slower than");
  CHECK(speed_words(0.25) == "4.0x slower than");
}

TEST_CASE("regime verdict refuses inputs it cannot weigh", "[model]") {
  CHECK_THROWS_AS(weigh_regime({}, "r", "NF4"), std::invalid_argument);
  const std::vector<LinearTiming> zero = {{"q", 16, 32, 1, 0.0, 1.0}};
  CHECK_THROWS_AS(weigh_regime(zero, "r", "NF4"), std::invalid_argument);
  const std::vector<LinearTiming> nan = {
      {"q", 16, 32, 1, 1.0, std::numeric_limits<double>::quiet_NaN()}};
  CHECK_THROWS_AS(weigh_regime(nan, "r", "NF4"), std::invalid_argument);
  const std::vector<LinearTiming> count = {{"q", 16, 32, 0, 1.0, 1.0}};
  CHECK_THROWS_AS(weigh_regime(count, "r", "NF4"), std::invalid_argument);
}
