// SPDX-License-Identifier: MIT
#include "halo_bench/checks.hpp"
#include "halo_bench/gemv_reference.hpp"
#include "halo_bench/quant.hpp"
#include "halo_bench/reference_gemm.hpp"

#include <catch2/catch.hpp>

using namespace halo_bench;

namespace {

std::vector<GemmSample> every_output(const GemmShape& s) {
  std::vector<GemmSample> all;
  for (std::int64_t r = 0; r < s.m; ++r)
    for (std::int64_t c = 0; c < s.n; ++c)
      all.push_back({r, c});
  return all;
}

/// Element by element, without the chunk decoding: weight i of the flattened W times a.
template <class Weight>
std::vector<double> direct(const GemmShape& s, const std::vector<bf16_bits>& a, Weight weight) {
  std::vector<double> out;
  for (std::int64_t r = 0; r < s.m; ++r)
    for (std::int64_t c = 0; c < s.n; ++c) {
      double acc = 0.0;
      for (std::int64_t k = 0; k < s.k; ++k)
        acc += weight(static_cast<std::size_t>(c * s.k + k)) *
               static_cast<double>(bf16_to_float(a[static_cast<std::size_t>(r * s.k + k)]));
      out.push_back(acc);
    }
  return out;
}

} // namespace

TEST_CASE("fused GEMV reference decodes the packed chunks as the formats define", "[gemv]") {
  for (const std::int64_t m : {1, 3, 8}) {
    const GemmShape s{m, 48, 256};
    const auto a = random_bf16(static_cast<std::size_t>(s.m * s.k), 11);
    const auto w = random_normal(static_cast<std::size_t>(s.n * s.k), 12, 0.02f);
    const auto nf4 = quantize_nf4(w);
    const auto int4 = quantize_int4(w, 128);
    const auto all = every_output(s);

    // int4: the chunked decoding equals the CPU dequantizer's fp32 values, up to the one fp32
    // rounding of (q - 8) * scale per weight there (measured 1.1e-5 of the 1e-3 floor; a decoding
    // error is of the order of 1).
    const auto deq_int4 = dequantize_int4_float(int4);
    const auto want_int4 =
        direct(s, a, [&](std::size_t i) { return static_cast<double>(deq_int4[i]); });
    const auto got_int4 = gemv_int4_reference(s, a, int4, all);
    const auto c_int4 =
        check_relative(want_int4, std::vector<float>(got_int4.begin(), got_int4.end()), 1e-4,
                       relative_floor(want_int4));
    CHECK(c_int4.ok);

    // NF4: code (high nibble first) through the bf16-rounded table, times the block's absmax.
    const auto& table = nf4_code_table();
    const auto want_nf4 = direct(s, a, [&](std::size_t i) {
      const std::uint8_t byte = nf4.packed[i / 2];
      const int code = i % 2 == 0 ? byte >> 4 : byte & 15;
      return static_cast<double>(bf16_to_float(float_to_bf16(table[code]))) *
             static_cast<double>(nf4.absmax[i / nf4.block_size]);
    });
    const auto got_nf4 = gemv_nf4_reference(s, a, nf4, all);
    const auto c_nf4 = check_relative(want_nf4, std::vector<float>(got_nf4.begin(), got_nf4.end()),
                                      1e-4, relative_floor(want_nf4));
    CHECK(c_nf4.ok);

    // The other format's nibble order (a decoding bug) is caught by the GPU check's tolerance.
    Int4Tensor swapped = int4;
    for (auto& byte : swapped.packed)
      byte = static_cast<std::uint8_t>((byte >> 4) | (byte << 4));
    const auto bad = gemv_int4_reference(s, a, swapped, all);
    CHECK_FALSE(check_relative(want_int4, std::vector<float>(bad.begin(), bad.end()), 0.02,
                               relative_floor(want_int4))
                    .ok);
  }
}

TEST_CASE("fused GEMV reference refuses layouts the kernel does not support", "[gemv]") {
  const auto a = random_bf16(16 * 64, 1);
  const auto w = random_normal(16 * 64, 2);
  const GemmShape s{16, 16, 64};
  const std::vector<GemmSample> one = {{0, 0}};
  CHECK_THROWS_AS(gemv_int4_reference(s, a, quantize_int4(w, 48), one), std::invalid_argument);
  CHECK_NOTHROW(gemv_int4_reference(s, a, quantize_int4(w, 64), one));
  const std::vector<GemmSample> outside = {{16, 0}};
  CHECK_THROWS_AS(gemv_int4_reference(s, a, quantize_int4(w, 64), outside), std::invalid_argument);
  CHECK_THROWS_AS(gemv_nf4_reference(GemmShape{16, 16, 48}, a, quantize_nf4(w), one),
                  std::invalid_argument);
}
