// SPDX-License-Identifier: MIT
#include "halo_bench/reference_gemm.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

using namespace halo_bench;

namespace {

/// Naive double-precision C = A * W^T, written independently of the library code.
std::vector<double> naive_double(const GemmShape& s, const std::vector<bf16_bits>& a,
                                 const std::vector<bf16_bits>& w) {
  std::vector<double> c(static_cast<std::size_t>(s.m * s.n), 0.0);
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      double acc = 0.0;
      for (std::int64_t k = 0; k < s.k; ++k) {
        acc += static_cast<double>(bf16_to_float(a[static_cast<std::size_t>(i * s.k + k)])) *
               static_cast<double>(bf16_to_float(w[static_cast<std::size_t>(j * s.k + k)]));
      }
      c[static_cast<std::size_t>(i * s.n + j)] = acc;
    }
  }
  return c;
}

} // namespace

TEST_CASE("reference GEMM: hand-computed 2x2x3 product, W in nn.Linear layout", "[gemm]") {
  const GemmShape shape{2, 2, 3};
  // A = [[1, 2, 3], [4, 5, 6]], W = [[1, 0, -1], [0.5, 0.5, 0.5]]
  const auto a = to_bf16(std::vector<float>{1, 2, 3, 4, 5, 6});
  const auto w = to_bf16(std::vector<float>{1, 0, -1, 0.5f, 0.5f, 0.5f});
  const auto c = gemm_bf16_reference(shape, a, w);
  REQUIRE(c.size() == 4);
  CHECK(c[0] == -2.0f); // 1 - 3
  CHECK(c[1] == 3.0f);  // (1 + 2 + 3) / 2
  CHECK(c[2] == -2.0f); // 4 - 6
  CHECK(c[3] == 7.5f);  // 15 / 2
  CHECK(shape.flops() == 24.0);
}

TEST_CASE("reference GEMM agrees with a naive double-precision product", "[gemm]") {
  const GemmShape shape{17, 13, 257};
  const auto a = random_bf16(static_cast<std::size_t>(shape.m * shape.k), 1);
  const auto w = random_bf16(static_cast<std::size_t>(shape.n * shape.k), 2);
  const auto c = gemm_bf16_reference(shape, a, w);
  const auto expected = naive_double(shape, a, w);
  double sum_abs = 0.0;
  for (const double v : expected) {
    sum_abs += std::fabs(v);
  }
  const double scale = sum_abs / static_cast<double>(expected.size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    // fp32 accumulation over K=257 terms: error well below 1e-5 of the typical magnitude.
    REQUIRE(std::fabs(static_cast<double>(c[i]) - expected[i]) <= 1e-5 * scale);
  }

  std::vector<GemmSample> samples;
  for (std::int64_t i = 0; i < shape.m; ++i) {
    for (std::int64_t j = 0; j < shape.n; ++j) {
      samples.push_back({i, j});
    }
  }
  const auto sampled = gemm_bf16_reference_sampled(shape, a, w, samples);
  REQUIRE(sampled.size() == expected.size());
  for (std::size_t i = 0; i < sampled.size(); ++i) {
    REQUIRE(sampled[i] == expected[i]); // same products, same order, both in double
  }
}

TEST_CASE("reference GEMM rejects wrong sizes and out-of-range samples", "[gemm]") {
  const GemmShape shape{4, 4, 8};
  const auto a = random_bf16(32, 1);
  const auto w = random_bf16(31, 2);
  CHECK_THROWS_AS(gemm_bf16_reference(shape, a, w), std::invalid_argument);
  const auto w_ok = random_bf16(32, 2);
  const std::vector<GemmSample> bad = {{4, 0}};
  CHECK_THROWS_AS(gemm_bf16_reference_sampled(shape, a, w_ok, bad), std::invalid_argument);
  CHECK_THROWS_AS(gemm_bf16_reference(GemmShape{0, 4, 8}, a, w_ok), std::invalid_argument);
}

TEST_CASE("sample picker covers the corners, stays in range and is deterministic", "[gemm]") {
  const GemmShape shape{4096, 11008, 4096};
  const auto samples = pick_gemm_samples(shape, 1000);
  REQUIRE(samples.size() == 1000);
  CHECK(samples[0].row == 0);
  CHECK(samples[0].col == 0);
  CHECK(samples[3].row == 4095);
  CHECK(samples[3].col == 11007);
  for (const auto& s : samples) {
    REQUIRE(s.row >= 0);
    REQUIRE(s.row < shape.m);
    REQUIRE(s.col >= 0);
    REQUIRE(s.col < shape.n);
  }
  const auto again = pick_gemm_samples(shape, 1000);
  CHECK(again[500].row == samples[500].row);
  CHECK(again[500].col == samples[500].col);
  CHECK(pick_gemm_samples(GemmShape{2, 2, 1}, 100).size() == 4);
}

TEST_CASE("random generators are deterministic and in range", "[gemm]") {
  const auto x = random_bf16(10000, 42, 0.5f);
  const auto y = random_bf16(10000, 42, 0.5f);
  CHECK(x == y);
  for (const auto v : x) {
    REQUIRE(std::fabs(bf16_to_float(v)) <= 0.5f);
  }
  const auto n = random_normal(100000, 7, 2.0f);
  double mean = 0.0;
  for (const float v : n) {
    mean += v;
  }
  mean /= static_cast<double>(n.size());
  double var = 0.0;
  for (const float v : n) {
    var += (v - mean) * (v - mean);
  }
  var /= static_cast<double>(n.size() - 1);
  CHECK(std::fabs(mean) < 0.05);
  CHECK(std::sqrt(var) == Approx(2.0).epsilon(0.02));
}
