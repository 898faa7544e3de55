// SPDX-License-Identifier: MIT
// NF4 (bitsandbytes) and symmetric int4 quantizers and dequantizers: the CPU references that the
// GPU dequantization kernels must match bit for bit.
#pragma once

#include "halo_bench/bf16.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace halo_bench {

/// The 16 NormalFloat4 code values, index = 4-bit code. Copied digit for digit from bitsandbytes
/// (`csrc/kernels.cu` `dDequantizeNF4` / `functional.py` `get_4bit_type("nf4")`, from Dettmers et
/// al., "QLoRA", 2023, appendix E): quantiles of N(0,1) normalised to [-1, 1], with an exact 0 at
/// code 7 and the extremes -1 (code 0) and 1 (code 15).
const std::array<float, 16>& nf4_code_table() noexcept;

/// bitsandbytes' NF4 block size for QLoRA weights (`blocksize=64` in `quantize_4bit`).
inline constexpr std::size_t nf4_block_size = 64;

/// Maps a value already divided by its block absmax (nominally in [-1, 1]) to the nearest NF4 code
/// with bitsandbytes' decision tree (`dQuantizeNF4`): the thresholds are the midpoints between
/// neighbouring table values and a value exactly on a midpoint goes to the lower code. NaN maps
/// to code 0, as in bitsandbytes.
std::uint8_t nf4_encode(float normalized) noexcept;

/// NF4-quantized tensor as bitsandbytes stores it: the tensor is flattened, cut into blocks of
/// `block_size` consecutive elements, each block scaled by its absmax (fp32, no double
/// quantization), and two codes are packed per byte, the first element in the HIGH nibble.
struct Nf4Tensor {
  std::size_t count = 0;            ///< number of elements (must be even)
  std::size_t block_size = 64;      ///< elements per absmax block (even, > 0)
  std::vector<std::uint8_t> packed; ///< count/2 bytes: element 2i in bits 7..4, 2i+1 in 3..0
  std::vector<float> absmax;        ///< ceil(count/block_size) fp32 scales, max |x| of the block
};

/// Quantizes `values` (even length) like bitsandbytes `quantize_4bit(quant_type="nf4")` without
/// double quantization: absmax per block, then code = nf4_encode(x * (1/absmax)). An all-zero
/// block has absmax 0 and is stored as code 7 (exact 0) everywhere. Throws std::invalid_argument
/// on an odd length or an odd/zero block size.
Nf4Tensor quantize_nf4(std::span<const float> values, std::size_t block_size = nf4_block_size);

/// Dequantizes to bf16: out[i] = float_to_bf16(table[code_i] * absmax[i / block_size]), the
/// product in fp32 (one rounding), as bitsandbytes `dequantize_4bit` to a bf16 output does it.
std::vector<bf16_bits> dequantize_nf4_bf16(const Nf4Tensor& tensor);

/// Dequantizes to fp32 (the product table[code] * absmax before the bf16 rounding).
std::vector<float> dequantize_nf4_float(const Nf4Tensor& tensor);

/// Default group size of the plain int4 format (the common GPTQ/AWQ choice).
inline constexpr std::size_t int4_default_group_size = 128;

/// Symmetric int4 with one fp32 scale per group of `group_size` consecutive elements of the
/// flattened tensor: q = clamp(round_half_even(x / scale), -8, 7), scale = absmax(group) / 7, the
/// stored nibble is q + 8 (offset binary, 0..15) and element 2i goes to the LOW nibble of byte i
/// (the GPTQ/AWQ packing order, opposite to NF4). Dequantized value: (nibble - 8) * scale.
struct Int4Tensor {
  std::size_t count = 0;            ///< number of elements (must be even)
  std::size_t group_size = 128;     ///< elements per scale group (even, > 0)
  std::vector<std::uint8_t> packed; ///< count/2 bytes: element 2i in bits 3..0, 2i+1 in 7..4
  std::vector<float> scales;        ///< ceil(count/group_size) fp32 scales (absmax / 7)
};

/// Quantizes `values` (even length) into symmetric int4 groups (see Int4Tensor). An all-zero group
/// has scale 0 and every element is stored as q = 0. Throws std::invalid_argument on an odd length
/// or an odd/zero group size.
Int4Tensor quantize_int4(std::span<const float> values,
                         std::size_t group_size = int4_default_group_size);

/// Dequantizes to bf16: out[i] = float_to_bf16(float(nibble_i - 8) * scales[i / group_size]).
std::vector<bf16_bits> dequantize_int4_bf16(const Int4Tensor& tensor);

/// Dequantizes to fp32 (the product before the bf16 rounding).
std::vector<float> dequantize_int4_float(const Int4Tensor& tensor);

} // namespace halo_bench
