// SPDX-License-Identifier: MIT
// bfloat16 <-> float conversion as the GPU hardware and the halo-bench kernels do it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace halo_bench {

/// A bfloat16 value stored as its raw 16 bits (1 sign, 8 exponent, 7 mantissa bits): the upper
/// half of an IEEE-754 binary32. Same layout as `__nv_bfloat16`, `__hip_bfloat16`,
/// `torch.bfloat16`.
using bf16_bits = std::uint16_t;

/// Converts a binary32 value to bfloat16 with round-to-nearest, ties-to-even (the rounding of
/// `__float2bfloat16` on NVIDIA and of the AMD `v_cvt_pk_bf16_f32` instruction). Infinities stay
/// infinite, finite values above the largest bf16 (0x7f7f, about 3.39e38) round to infinity, NaN
/// stays NaN: the sign and the upper 7 payload bits are kept and the quiet bit (0x0040) is set.
/// The GPU kernels (bench/kernels/gpu_compat.h, `gpu_float_to_bf16_rne`) use the same bit recipe,
/// so a dequantized weight is bit-identical on the host and the device.
bf16_bits float_to_bf16(float value) noexcept;

/// Widens a bfloat16 to binary32 exactly (the 16 bits become the upper half, the lower half is 0).
float bf16_to_float(bf16_bits value) noexcept;

/// Converts `values` element-wise with float_to_bf16; the result has the same length.
std::vector<bf16_bits> to_bf16(std::span<const float> values);

/// Widens `values` element-wise with bf16_to_float; the result has the same length.
std::vector<float> to_float(std::span<const bf16_bits> values);

} // namespace halo_bench
