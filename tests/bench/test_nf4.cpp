// SPDX-License-Identifier: MIT
#include "halo_bench/quant.hpp"
#include "halo_bench/reference_gemm.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

using namespace halo_bench;

TEST_CASE("NF4 code table is the bitsandbytes table", "[nf4]") {
  const auto& t = nf4_code_table();
  CHECK(t[0] == -1.0f);
  CHECK(t[1] == -0.6961928009986877f);
  CHECK(t[6] == -0.09105003625154495f);
  CHECK(t[7] == 0.0f);
  CHECK(t[8] == 0.07958029955625534f);
  CHECK(t[12] == 0.44070982933044434f);
  CHECK(t[14] == 0.7229568362236023f);
  CHECK(t[15] == 1.0f);
  CHECK(std::is_sorted(t.begin(), t.end()));
  CHECK(nf4_block_size == 64);
}

TEST_CASE("NF4 encoder maps each table value to its code and splits at midpoints", "[nf4]") {
  const auto& t = nf4_code_table();
  for (std::size_t i = 0; i < 16; ++i) {
    REQUIRE(nf4_encode(t[i]) == i);
  }
  // Exactly on the 7/8 midpoint: bitsandbytes uses x > threshold, so it stays at code 7.
  CHECK(nf4_encode(0.03979014977812767f) == 7);
  CHECK(nf4_encode(std::nextafter(0.03979014977812767f, 1.0f)) == 8);
  CHECK(nf4_encode(0.5f) == 12); // below the 12/13 midpoint 0.50166
  CHECK(nf4_encode(0.51f) == 13);
  CHECK(nf4_encode(2.0f) == 15);
  CHECK(nf4_encode(-2.0f) == 0);
  CHECK(nf4_encode(std::numeric_limits<float>::quiet_NaN()) == 0);
  // Every value encodes to the nearest table entry.
  for (float x = -1.0f; x <= 1.0f; x += 0.001f) {
    const auto code = nf4_encode(x);
    for (std::size_t j = 0; j < 16; ++j) {
      REQUIRE(std::fabs(x - t[code]) <= std::fabs(x - t[j]) + 1e-7f);
    }
  }
}

TEST_CASE("NF4 quantizes a hand-computed block", "[nf4]") {
  std::vector<float> block(64, 0.0f);
  block[0] = 2.0f;  // absmax, normalized 1.0 -> code 15
  block[1] = -2.0f; // -1.0 -> code 0
  block[2] = 0.0f;  // code 7
  block[3] = 1.0f;  // 0.5 -> code 12 (0.4407...)
  block[4] = 0.2f;  // 0.1 -> code 8 (0.0796...), the 8/9 midpoint is 0.1203
  block[5] = -1.4f; // -0.7 -> code 1 (-0.6962)
  const Nf4Tensor q = quantize_nf4(block);
  REQUIRE(q.count == 64);
  REQUIRE(q.absmax.size() == 1);
  CHECK(q.absmax[0] == 2.0f);
  REQUIRE(q.packed.size() == 32);
  CHECK(q.packed[0] == 0xF0); // first element in the high nibble
  CHECK(q.packed[1] == 0x7C);
  CHECK(q.packed[2] == 0x81);
  CHECK(q.packed[3] == 0x77); // zeros encode as code 7

  const auto f = dequantize_nf4_float(q);
  CHECK(f[0] == 2.0f);
  CHECK(f[1] == -2.0f);
  CHECK(f[2] == 0.0f);
  CHECK(f[3] == 0.44070982933044434f * 2.0f);
  CHECK(f[5] == -0.6961928009986877f * 2.0f);
  const auto b = dequantize_nf4_bf16(q);
  CHECK(b[0] == 0x4000);
  CHECK(b[1] == 0xc000);
  // 0.8814196586608887 = 0x3f61a463 as float -> bf16 0x3f62 (0xa463 > 0x8000 rounds up)
  CHECK(b[3] == 0x3f62);
  CHECK(b[3] == float_to_bf16(0.44070982933044434f * 2.0f));
}

TEST_CASE("NF4 handles an all-zero block and uses one absmax per 64 elements", "[nf4]") {
  std::vector<float> values(130, 0.0f);
  values[64] = -3.0f;
  values[129] = 0.5f;
  const Nf4Tensor q = quantize_nf4(values);
  REQUIRE(q.absmax.size() == 3);
  CHECK(q.absmax[0] == 0.0f);
  CHECK(q.absmax[1] == 3.0f);
  CHECK(q.absmax[2] == 0.5f);
  const auto f = dequantize_nf4_float(q);
  for (std::size_t i = 0; i < 64; ++i) {
    REQUIRE(f[i] == 0.0f);
  }
  CHECK(f[64] == -3.0f);
  CHECK(f[129] == 0.5f);
}

TEST_CASE("NF4 round trip error is bounded by half the widest code gap", "[nf4]") {
  const auto values = random_normal(64 * 512, 3, 0.02f);
  const Nf4Tensor q = quantize_nf4(values);
  const auto f = dequantize_nf4_float(q);
  // Widest gap of the table: between -1 and -0.6962, half of it is 0.1519.
  double err_sum = 0.0;
  double abs_sum = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float absmax = q.absmax[i / 64];
    REQUIRE(std::fabs(values[i] - f[i]) <= 0.152f * absmax);
    err_sum += std::fabs(values[i] - f[i]);
    abs_sum += std::fabs(values[i]);
  }
  // On normally distributed weights the mean error is about 10% of the mean magnitude.
  CHECK(err_sum / abs_sum < 0.15);
}

TEST_CASE("NF4 rejects odd lengths, bad blocks and inconsistent tensors", "[nf4]") {
  const std::vector<float> odd(63, 1.0f);
  CHECK_THROWS_AS(quantize_nf4(odd), std::invalid_argument);
  const std::vector<float> even(64, 1.0f);
  CHECK_THROWS_AS(quantize_nf4(even, 0), std::invalid_argument);
  CHECK_THROWS_AS(quantize_nf4(even, 33), std::invalid_argument);
  Nf4Tensor broken = quantize_nf4(even);
  broken.absmax.clear();
  CHECK_THROWS_AS(dequantize_nf4_bf16(broken), std::invalid_argument);
}
