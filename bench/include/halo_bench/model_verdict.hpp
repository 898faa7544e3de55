// SPDX-License-Identifier: MIT
// Per-model verdicts of `halo-doctor bench --model`: the model's projections timed in one regime
// (training: M = tokens per step; generation: M = 1, 8, 64), summed per token as the model runs
// them, BF16 against 4-bit. Plain arithmetic, unit tested without a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace halo_bench {

/// One projection of the model in one regime: W[n x k] applied `count` times per forward pass
/// (once per layer; 1 for lm_head), with the median time of one GEMM at the regime's M.
struct LinearTiming {
  std::string name;       ///< "q_proj", "gate_up_proj", "lm_head", ...
  std::int64_t n = 0;     ///< out_features
  std::int64_t k = 0;     ///< in_features
  std::int64_t count = 0; ///< occurrences per forward pass
  double bf16_ms = 0.0;   ///< BF16 through the vendor BLAS, ms per GEMM
  double quant_ms = 0.0;  ///< the 4-bit path of the regime, ms per GEMM
};

/// The regime's totals and its verdict line.
struct RegimeVerdict {
  double bf16_ms = 0.0;         ///< sum of count * bf16_ms (one forward pass of the projections)
  double quant_ms = 0.0;        ///< sum of count * quant_ms
  double speedup = 0.0;         ///< bf16_ms / quant_ms: > 1 the 4-bit path is faster
  double flops_per_token = 0.0; ///< sum of 2 * n * k * count
  std::string line;             ///< "generation (M = 1): NF4 is 2.7x faster than BF16"
};

/// Sums the projections of one regime. The total time is each projection's time weighted by how
/// often a token passes through it, so speedup = sum(t_bf16) / sum(t_4bit) is the harmonic mean
/// of the per-projection speedups weighted by each projection's share of the BF16 time, i.e. by
/// its FLOPs per token at the BF16 rate (FLOPs / rate = time). `regime` names the regime in the
/// line ("training step GEMMs (M = 4096)"), `format` the 4-bit format ("NF4", "int4 g128").
/// Throws std::invalid_argument for an empty list, a count < 1 or a time that is not positive
/// and finite.
RegimeVerdict weigh_regime(std::span<const LinearTiming> linears, std::string_view regime,
                           std::string_view format);

/// "2.7x faster than", "1.9x slower than", or "as fast as" (within 5%), for a speedup.
std::string speed_words(double speedup);

} // namespace halo_bench
