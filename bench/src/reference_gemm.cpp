// SPDX-License-Identifier: MIT
#include "halo_bench/reference_gemm.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace halo_bench {
namespace {

void check_sizes(const GemmShape& shape, std::size_t a_size, std::size_t w_size) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) {
    throw std::invalid_argument("GEMM shape must be positive");
  }
  const auto m = static_cast<std::size_t>(shape.m);
  const auto n = static_cast<std::size_t>(shape.n);
  const auto k = static_cast<std::size_t>(shape.k);
  if (a_size != m * k) {
    throw std::invalid_argument("A has " + std::to_string(a_size) +
                                " elements, expected M*K = " + std::to_string(m * k));
  }
  if (w_size != n * k) {
    throw std::invalid_argument("W has " + std::to_string(w_size) +
                                " elements, expected N*K = " + std::to_string(n * k));
  }
}

/// splitmix64 (Steele, Lea, Flood 2014): a portable 64-bit generator.
std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Uniform double in [0, 1) from the top 53 bits.
double uniform01(std::uint64_t& state) noexcept {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

} // namespace

std::vector<float> gemm_bf16_reference(const GemmShape& shape, std::span<const bf16_bits> a,
                                       std::span<const bf16_bits> w) {
  check_sizes(shape, a.size(), w.size());
  const auto m = static_cast<std::size_t>(shape.m);
  const auto n = static_cast<std::size_t>(shape.n);
  const auto k = static_cast<std::size_t>(shape.k);
  const std::vector<float> af = to_float(a);
  const std::vector<float> wf = to_float(w);
  std::vector<float> c(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    const float* arow = af.data() + i * k;
    for (std::size_t j = 0; j < n; ++j) {
      const float* wrow = wf.data() + j * k;
      float acc = 0.0f;
      for (std::size_t kk = 0; kk < k; ++kk) {
        acc += arow[kk] * wrow[kk];
      }
      c[i * n + j] = acc;
    }
  }
  return c;
}

std::vector<double> gemm_bf16_reference_sampled(const GemmShape& shape,
                                                std::span<const bf16_bits> a,
                                                std::span<const bf16_bits> w,
                                                std::span<const GemmSample> samples) {
  check_sizes(shape, a.size(), w.size());
  const auto k = static_cast<std::size_t>(shape.k);
  std::vector<double> out(samples.size());
  for (std::size_t s = 0; s < samples.size(); ++s) {
    const GemmSample& sample = samples[s];
    if (sample.row < 0 || sample.row >= shape.m || sample.col < 0 || sample.col >= shape.n) {
      throw std::invalid_argument("GEMM sample out of range");
    }
    const std::size_t arow = static_cast<std::size_t>(sample.row) * k;
    const std::size_t wrow = static_cast<std::size_t>(sample.col) * k;
    double acc = 0.0;
    for (std::size_t kk = 0; kk < k; ++kk) {
      acc += static_cast<double>(bf16_to_float(a[arow + kk])) *
             static_cast<double>(bf16_to_float(w[wrow + kk]));
    }
    out[s] = acc;
  }
  return out;
}

std::vector<GemmSample> pick_gemm_samples(const GemmShape& shape, std::size_t count,
                                          std::uint64_t seed) {
  std::vector<GemmSample> samples;
  if (shape.m <= 0 || shape.n <= 0 || count == 0) {
    return samples;
  }
  const auto total = static_cast<std::uint64_t>(shape.m) * static_cast<std::uint64_t>(shape.n);
  const std::size_t wanted = total < count ? static_cast<std::size_t>(total) : count;
  samples.reserve(wanted);
  const GemmSample corners[] = {
      {0, 0}, {0, shape.n - 1}, {shape.m - 1, 0}, {shape.m - 1, shape.n - 1}};
  for (const GemmSample& corner : corners) {
    if (samples.size() < wanted) {
      samples.push_back(corner);
    }
  }
  std::uint64_t state = seed;
  while (samples.size() < wanted) {
    const std::uint64_t index = splitmix64(state) % total;
    samples.push_back({static_cast<std::int64_t>(index / static_cast<std::uint64_t>(shape.n)),
                       static_cast<std::int64_t>(index % static_cast<std::uint64_t>(shape.n))});
  }
  return samples;
}

std::vector<bf16_bits> random_bf16(std::size_t count, std::uint64_t seed, float scale) {
  std::vector<bf16_bits> out(count);
  std::uint64_t state = seed;
  for (auto& value : out) {
    const double u = uniform01(state) * 2.0 - 1.0;
    value = float_to_bf16(static_cast<float>(u * static_cast<double>(scale)));
  }
  return out;
}

std::vector<float> random_normal(std::size_t count, std::uint64_t seed, float stddev) {
  std::vector<float> out(count);
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < count; i += 2) {
    double u1 = uniform01(state);
    const double u2 = uniform01(state);
    if (u1 < 0x1.0p-53) {
      u1 = 0x1.0p-53;
    }
    const double radius = std::sqrt(-2.0 * std::log(u1)) * static_cast<double>(stddev);
    const double angle = 2.0 * std::numbers::pi * u2;
    out[i] = static_cast<float>(radius * std::cos(angle));
    if (i + 1 < count) {
      out[i + 1] = static_cast<float>(radius * std::sin(angle));
    }
  }
  return out;
}

} // namespace halo_bench
