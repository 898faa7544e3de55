// SPDX-License-Identifier: MIT
// CPU reference GEMM used to check every GPU GEMM result.
#pragma once

#include "halo_bench/bf16.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace halo_bench {

/// Shape of C[M x N] = A[M x K] * W[N x K]^T, the layout of a PyTorch `nn.Linear` forward pass
/// (A = activations, M = tokens; W = weight with out_features N and in_features K).
/// All matrices are row-major and dense: A has leading dimension K, W has K, C has N.
struct GemmShape {
  std::int64_t m = 0; ///< rows of A and C (tokens)
  std::int64_t n = 0; ///< rows of W, columns of C (out_features)
  std::int64_t k = 0; ///< columns of A and W (in_features, the reduction length)

  /// Floating-point operations of one GEMM: 2*M*N*K (one multiply and one add per term).
  [[nodiscard]] double flops() const noexcept {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

/// One output element C[row][col] chosen for a sampled check.
struct GemmSample {
  std::int64_t row = 0; ///< index in [0, M)
  std::int64_t col = 0; ///< index in [0, N)
};

/// Full reference GEMM, bf16 inputs, fp32 accumulation in K order (what a matrix core does per
/// output, up to summation order): C[i][j] = sum_k A[i][k] * W[j][k]. `a` holds M*K values, `w`
/// holds N*K, the result holds M*N floats, row-major. Throws std::invalid_argument on a size
/// mismatch. O(M*N*K): meant for small shapes; use gemm_bf16_reference_sampled for large ones.
std::vector<float> gemm_bf16_reference(const GemmShape& shape, std::span<const bf16_bits> a,
                                       std::span<const bf16_bits> w);

/// Same sum as gemm_bf16_reference, accumulated in double precision, for only the listed output
/// elements (result i belongs to samples[i]). Cost O(samples * K), so checking a 4096 x 11008
/// output on a few thousand samples takes milliseconds. Throws std::invalid_argument when a sample
/// is out of range or a span has the wrong size.
std::vector<double> gemm_bf16_reference_sampled(const GemmShape& shape,
                                                std::span<const bf16_bits> a,
                                                std::span<const bf16_bits> w,
                                                std::span<const GemmSample> samples);

/// Picks `count` output positions spread over C: the four corners, then positions from a
/// fixed-seed (`seed`) uniform generator, so the same run always checks the same elements.
/// Returns min(count, M*N) distinct-enough samples (duplicates are possible and harmless).
std::vector<GemmSample> pick_gemm_samples(const GemmShape& shape, std::size_t count,
                                          std::uint64_t seed = 0x5eed);

/// Fills `count` bf16 values uniformly distributed in [-scale, scale) from a fixed seed; the same
/// (count, seed, scale) always gives the same values on every platform (splitmix64 generator).
std::vector<bf16_bits> random_bf16(std::size_t count, std::uint64_t seed, float scale = 1.0f);

/// Fills `count` floats from a normal distribution N(0, stddev^2) with a fixed seed, using
/// splitmix64 and the Box-Muller transform (portable, unlike std::normal_distribution). Used for
/// weights, which QLoRA's NF4 assumes to be normally distributed.
std::vector<float> random_normal(std::size_t count, std::uint64_t seed, float stddev = 1.0f);

} // namespace halo_bench
