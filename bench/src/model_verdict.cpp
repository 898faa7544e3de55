// SPDX-License-Identifier: MIT
#include "halo_bench/model_verdict.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace halo_bench {

std::string speed_words(double speedup) {
  char buffer[64];
  if (speedup >= 1.05) {
    std::snprintf(buffer, sizeof buffer, "%.1fx faster than", speedup);
  } else if (speedup <= 1.0 / 1.05) {
    std::snprintf(buffer, sizeof buffer, "%.1fx slower than", 1.0 / speedup);
  } else {
    std::snprintf(buffer, sizeof buffer, "as fast as");
  }
  return buffer;
}

RegimeVerdict weigh_regime(std::span<const LinearTiming> linears, std::string_view regime,
                           std::string_view format) {
  if (linears.empty()) throw std::invalid_argument("weigh_regime: no projections");
  RegimeVerdict v;
  for (const LinearTiming& l : linears) {
    if (l.count < 1 || l.n < 1 || l.k < 1)
      throw std::invalid_argument("weigh_regime: " + l.name + ": shape and count must be >= 1");
    if (!(std::isfinite(l.bf16_ms) && l.bf16_ms > 0.0 && std::isfinite(l.quant_ms) &&
          l.quant_ms > 0.0))
      throw std::invalid_argument("weigh_regime: " + l.name + ": times must be positive");
    const double c = static_cast<double>(l.count);
    v.bf16_ms += c * l.bf16_ms;
    v.quant_ms += c * l.quant_ms;
    v.flops_per_token += 2.0 * static_cast<double>(l.n) * static_cast<double>(l.k) * c;
  }
  v.speedup = v.bf16_ms / v.quant_ms;
  v.line =
      std::string(regime) + ": " + std::string(format) + " is " + speed_words(v.speedup) + " BF16";
  return v;
}

} // namespace halo_bench
