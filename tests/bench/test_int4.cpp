// SPDX-License-Identifier: MIT
#include "halo_bench/quant.hpp"
#include "halo_bench/reference_gemm.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

using namespace halo_bench;

TEST_CASE("int4 quantizes a hand-computed group", "[int4]") {
  // absmax 7 -> scale 1; 3.5 is a tie and rounds to the even 4; 0.49 rounds to 0.
  const std::vector<float> values = {7.0f, -7.0f, 3.5f, 0.49f};
  const Int4Tensor q = quantize_int4(values, 4);
  REQUIRE(q.scales.size() == 1);
  CHECK(q.scales[0] == 1.0f);
  REQUIRE(q.packed.size() == 2);
  CHECK(q.packed[0] == 0x1F); // element 0 (q=7, nibble 15) low, element 1 (q=-7, nibble 1) high
  CHECK(q.packed[1] == 0x8C); // element 2 (q=4, nibble 12) low, element 3 (q=0, nibble 8) high
  const auto f = dequantize_int4_float(q);
  CHECK(f == std::vector<float>{7.0f, -7.0f, 4.0f, 0.0f});
  const auto b = dequantize_int4_bf16(q);
  CHECK(b[0] == 0x40e0);
  CHECK(b[1] == 0xc0e0);
  CHECK(b[2] == 0x4080);
  CHECK(b[3] == 0x0000);
}

TEST_CASE("int4 uses one scale per group, with a partial last group", "[int4]") {
  const std::vector<float> values = {1, 2, 3, 14, 0, 0, 0, 0, -0.7f, 0.1f};
  const Int4Tensor q = quantize_int4(values, 4);
  REQUIRE(q.scales.size() == 3);
  CHECK(q.scales[0] == 2.0f);
  CHECK(q.scales[1] == 0.0f);
  CHECK(q.scales[2] == Approx(0.1f));
  const auto f = dequantize_int4_float(q);
  CHECK(f[3] == 14.0f);
  CHECK(f[1] == 2.0f);
  CHECK(f[4] == 0.0f);
  CHECK(f[8] == Approx(-0.7f));
  CHECK(quantize_int4(std::vector<float>(256, 1.0f)).scales.size() == 2); // default group 128
  CHECK(int4_default_group_size == 128);
}

TEST_CASE("int4 round trip error is at most half a scale step", "[int4]") {
  const auto values = random_normal(128 * 256, 11, 0.02f);
  for (const std::size_t group : {std::size_t{32}, std::size_t{64}, std::size_t{128}}) {
    const Int4Tensor q = quantize_int4(values, group);
    const auto f = dequantize_int4_float(q);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float scale = q.scales[i / group];
      REQUIRE(std::fabs(values[i] - f[i]) <= 0.5f * scale * (1.0f + 1e-6f));
    }
    const auto b = dequantize_int4_bf16(q);
    for (std::size_t i = 0; i < values.size(); ++i) {
      REQUIRE(b[i] == float_to_bf16(f[i]));
    }
  }
}

TEST_CASE("int4 rejects odd lengths and bad group sizes", "[int4]") {
  CHECK_THROWS_AS(quantize_int4(std::vector<float>(3, 1.0f), 2), std::invalid_argument);
  CHECK_THROWS_AS(quantize_int4(std::vector<float>(4, 1.0f), 0), std::invalid_argument);
  CHECK_THROWS_AS(quantize_int4(std::vector<float>(4, 1.0f), 3), std::invalid_argument);
}
