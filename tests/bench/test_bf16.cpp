// SPDX-License-Identifier: MIT
#include "halo_bench/bf16.hpp"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

using halo_bench::bf16_to_float;
using halo_bench::float_to_bf16;

namespace {
float from_bits(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}
} // namespace

TEST_CASE("bf16: exact values keep their upper 16 bits", "[bf16]") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(-2.0f) == 0xc000);
  CHECK(float_to_bf16(0.0f) == 0x0000);
  CHECK(float_to_bf16(-0.0f) == 0x8000);
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(bf16_to_float(0x4049) == from_bits(0x40490000U));
}

TEST_CASE("bf16: round to nearest, ties to even", "[bf16]") {
  // 1 + 2^-8 is exactly half a bf16 ulp above 1.0: the tie goes to the even mantissa 0x3f80.
  CHECK(float_to_bf16(from_bits(0x3f808000U)) == 0x3f80);
  // 0x3f818000 is halfway between 0x3f81 (odd) and 0x3f82 (even): goes up to 0x3f82.
  CHECK(float_to_bf16(from_bits(0x3f818000U)) == 0x3f82);
  // Just above the tie rounds up, just below rounds down.
  CHECK(float_to_bf16(from_bits(0x3f808001U)) == 0x3f81);
  CHECK(float_to_bf16(from_bits(0x3f807fffU)) == 0x3f80);
  // Negative numbers round on the magnitude.
  CHECK(float_to_bf16(from_bits(0xbf818000U)) == 0xbf82);
  // Subnormals: a tie at the smallest subnormal goes to 0, 3/2 of it goes to 2.
  CHECK(float_to_bf16(from_bits(0x00008000U)) == 0x0000);
  CHECK(float_to_bf16(from_bits(0x00018000U)) == 0x0002);
  // A carry from the mantissa into the exponent: 0x3fffffff rounds to 2.0.
  CHECK(float_to_bf16(from_bits(0x3fffffffU)) == 0x4000);
}

TEST_CASE("bf16: infinities, overflow and NaN", "[bf16]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(float_to_bf16(inf) == 0x7f80);
  CHECK(float_to_bf16(-inf) == 0xff80);
  // FLT_MAX is above the largest bf16 (0x7f7f) by more than half an ulp: overflows to +inf.
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
  // The largest float that still rounds to the largest finite bf16.
  CHECK(float_to_bf16(from_bits(0x7f7f7fffU)) == 0x7f7f);
  // Quiet NaN keeps its pattern; a signalling NaN whose payload sits in the low half must stay a
  // NaN (plain rounding would turn 0x7f800001 into infinity).
  CHECK(float_to_bf16(std::numeric_limits<float>::quiet_NaN()) == 0x7fc0);
  CHECK(float_to_bf16(from_bits(0x7f800001U)) == 0x7fc0);
  CHECK(float_to_bf16(from_bits(0xffc12345U)) == 0xffc1);
  CHECK(std::isnan(bf16_to_float(float_to_bf16(from_bits(0x7f800001U)))));
}

TEST_CASE("bf16: every bf16 pattern survives a round trip", "[bf16]") {
  for (std::uint32_t bits = 0; bits <= 0xffffU; ++bits) {
    const auto value = static_cast<halo_bench::bf16_bits>(bits);
    const float widened = bf16_to_float(value);
    if (std::isnan(widened)) {
      REQUIRE((float_to_bf16(widened) & 0x0040U) != 0);
      REQUIRE(std::isnan(bf16_to_float(float_to_bf16(widened))));
    } else {
      REQUIRE(float_to_bf16(widened) == value);
    }
  }
}

TEST_CASE("bf16: span conversions keep length and values", "[bf16]") {
  const std::vector<float> values = {1.0f, -0.5f, 3.0f};
  const auto bits = halo_bench::to_bf16(values);
  REQUIRE(bits.size() == 3);
  CHECK(bits[1] == 0xbf00);
  CHECK(halo_bench::to_float(bits) == values);
}
