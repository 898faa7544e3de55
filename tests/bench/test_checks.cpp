// SPDX-License-Identifier: MIT
#include "halo_bench/checks.hpp"
#include "halo_bench/quant.hpp"
#include "halo_bench/reference_gemm.hpp"

#include <catch2/catch.hpp>

#include <limits>

using namespace halo_bench;

TEST_CASE("relative check accepts the fp32 reference and rejects a corrupted result", "[checks]") {
  const GemmShape shape{32, 24, 128};
  const auto a = random_bf16(static_cast<std::size_t>(shape.m * shape.k), 5);
  const auto w = random_bf16(static_cast<std::size_t>(shape.n * shape.k), 6);
  const auto c = gemm_bf16_reference(shape, a, w);
  const auto samples = pick_gemm_samples(shape, 200);
  const auto expected = gemm_bf16_reference_sampled(shape, a, w, samples);
  std::vector<float> got;
  for (const auto& s : samples) {
    got.push_back(c[static_cast<std::size_t>(s.row * shape.n + s.col)]);
  }
  const double floor = relative_floor(expected);
  const CheckResult good = check_relative(expected, got, 1e-3, floor);
  CHECK(good.ok);
  CHECK(good.reason.empty());
  CHECK(good.compared == 200);
  CHECK(good.max_rel_error < 1e-4); // fp32 accumulation noise only

  got[17] *= 1.1f; // one corrupted output element, 10% off
  const CheckResult bad = check_relative(expected, got, 0.02, floor);
  CHECK_FALSE(bad.ok);
  CHECK(bad.mismatches == 1);
  CHECK(bad.worst_index == 17);
  CHECK(bad.max_rel_error > 0.02);
  CHECK(bad.reason.rfind("result check failed: max rel err", 0) == 0);
}

TEST_CASE("relative check: NaN fails, the floor tames near-zero outputs, sizes must match",
          "[checks]") {
  const std::vector<double> expected = {1.0, 0.0, -2.0};
  std::vector<float> got = {1.0f, 1e-9f, -2.0f};
  CHECK(check_relative(expected, got, 1e-3, 1e-3).ok);
  CHECK_FALSE(check_relative(expected, got, 1e-3, 0.0).ok);
  got[2] = std::numeric_limits<float>::quiet_NaN();
  const auto nan_result = check_relative(expected, got, 1e-3, 1e-3);
  CHECK_FALSE(nan_result.ok);
  CHECK(nan_result.worst_index == 2);
  CHECK_FALSE(check_relative(expected, std::vector<float>{1.0f}, 1e-3, 1e-3).ok);
  CHECK_FALSE(check_relative(std::vector<double>{}, std::vector<float>{}, 1e-3, 1e-3).ok);
  CHECK(relative_floor(std::vector<double>{-4.0, 2.0}, 0.25) == 1.0);
}

TEST_CASE("bit-exact check passes identical dequantizations and names the first difference",
          "[checks]") {
  const auto values = random_normal(256, 9, 1.0f);
  const auto expected = dequantize_nf4_bf16(quantize_nf4(values));
  auto got = expected;
  const auto same = check_bit_exact(expected, got);
  CHECK(same.ok);
  CHECK(same.compared == 256);
  got[100] = static_cast<bf16_bits>(got[100] ^ 0x0001); // one flipped mantissa bit
  got[200] = static_cast<bf16_bits>(got[200] ^ 0x8000);
  const auto differ = check_bit_exact(expected, got);
  CHECK_FALSE(differ.ok);
  CHECK(differ.mismatches == 2);
  CHECK(differ.worst_index == 100);
  CHECK(differ.reason.find("element 100") != std::string::npos);
  got.pop_back();
  CHECK_FALSE(check_bit_exact(expected, got).ok);
}
