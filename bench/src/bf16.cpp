// SPDX-License-Identifier: MIT
#include "halo_bench/bf16.hpp"

#include <bit>

namespace halo_bench {

bf16_bits float_to_bf16(float value) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffU) > 0x7f800000U) {
    return static_cast<bf16_bits>((bits >> 16) | 0x0040U);
  }
  const std::uint32_t rounding_bias = 0x7fffU + ((bits >> 16) & 1U);
  return static_cast<bf16_bits>((bits + rounding_bias) >> 16);
}

float bf16_to_float(bf16_bits value) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value) << 16);
}

std::vector<bf16_bits> to_bf16(std::span<const float> values) {
  std::vector<bf16_bits> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    out[i] = float_to_bf16(values[i]);
  }
  return out;
}

std::vector<float> to_float(std::span<const bf16_bits> values) {
  std::vector<float> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    out[i] = bf16_to_float(values[i]);
  }
  return out;
}

} // namespace halo_bench
