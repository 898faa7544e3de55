// SPDX-License-Identifier: MIT
#include "halo_bench/gemv_reference.hpp"

#include <stdexcept>

namespace halo_bench {
namespace {

void check(const GemmShape& s, std::size_t a_size, std::size_t count, std::size_t block,
           std::span<const GemmSample> samples) {
  if (s.m < 1 || s.n < 1 || s.k < 32 || s.k % 32 != 0 ||
      a_size != static_cast<std::size_t>(s.m * s.k) ||
      count != static_cast<std::size_t>(s.n * s.k) || block == 0 || block % 32 != 0) {
    throw std::invalid_argument("gemv reference: need K % 32 == 0, |A| = M*K, |W| = N*K and a "
                                "block/group size that is a multiple of 32");
  }
  for (const GemmSample& x : samples) {
    if (x.row < 0 || x.row >= s.m || x.col < 0 || x.col >= s.n)
      throw std::invalid_argument("gemv reference: sample outside C");
  }
}

/// `decode(byte, w0, w1)`: the two weights of one packed byte, in element order.
template <class Decode>
std::vector<double> gemv(const GemmShape& s, std::span<const bf16_bits> a,
                         std::span<const std::uint8_t> packed, std::span<const float> scales,
                         std::size_t block, std::span<const GemmSample> samples, Decode decode) {
  std::vector<double> out;
  out.reserve(samples.size());
  const std::int64_t chunks = s.k / 32;
  for (const GemmSample& x : samples) {
    double acc = 0.0;
    for (std::int64_t ch = 0; ch < chunks; ++ch) {
      const auto first = static_cast<std::size_t>(x.col * s.k + ch * 32);
      const std::uint8_t* bytes = packed.data() + first / 2;
      double sum = 0.0;
      for (int j = 0; j < 16; ++j) {
        double w0 = 0.0;
        double w1 = 0.0;
        decode(bytes[j], w0, w1);
        const auto ai = static_cast<std::size_t>(x.row * s.k + ch * 32 + 2 * j);
        sum += w0 * static_cast<double>(bf16_to_float(a[ai])) +
               w1 * static_cast<double>(bf16_to_float(a[ai + 1]));
      }
      acc += static_cast<double>(scales[first / block]) * sum;
    }
    out.push_back(acc);
  }
  return out;
}

} // namespace

std::vector<double> gemv_nf4_reference(const GemmShape& shape, std::span<const bf16_bits> a,
                                       const Nf4Tensor& w, std::span<const GemmSample> samples) {
  check(shape, a.size(), w.count, w.block_size, samples);
  const auto& table = nf4_code_table();
  return gemv(shape, a, w.packed, w.absmax, w.block_size, samples,
              [&](std::uint8_t byte, double& w0, double& w1) {
                // First element in the high nibble (bitsandbytes), code values rounded to bf16.
                w0 = bf16_to_float(float_to_bf16(table[byte >> 4]));
                w1 = bf16_to_float(float_to_bf16(table[byte & 15]));
              });
}

std::vector<double> gemv_int4_reference(const GemmShape& shape, std::span<const bf16_bits> a,
                                        const Int4Tensor& w, std::span<const GemmSample> samples) {
  check(shape, a.size(), w.count, w.group_size, samples);
  return gemv(shape, a, w.packed, w.scales, w.group_size, samples,
              [](std::uint8_t byte, double& w0, double& w1) {
                // First element in the low nibble, offset binary.
                w0 = static_cast<double>(static_cast<int>(byte & 15) - 8);
                w1 = static_cast<double>(static_cast<int>(byte >> 4) - 8);
              });
}

} // namespace halo_bench
