// SPDX-License-Identifier: MIT
#include "halo_bench/quant.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace halo_bench {
namespace {

constexpr std::array<float, 16> nf4_table = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

void check_layout(std::size_t count, std::size_t block, const char* what) {
  if (count % 2 != 0) {
    throw std::invalid_argument(std::string(what) + ": element count must be even");
  }
  if (block == 0 || block % 2 != 0) {
    throw std::invalid_argument(std::string(what) + ": block/group size must be even and > 0");
  }
}

std::size_t blocks_for(std::size_t count, std::size_t block) {
  return (count + block - 1) / block;
}

float block_absmax(std::span<const float> values, std::size_t begin, std::size_t end) {
  float absmax = 0.0f;
  for (std::size_t i = begin; i < end; ++i) {
    absmax = std::max(absmax, std::fabs(values[i]));
  }
  return absmax;
}

std::uint8_t nf4_code_at(const Nf4Tensor& t, std::size_t i) {
  const std::uint8_t byte = t.packed[i / 2];
  return (i % 2 == 0) ? static_cast<std::uint8_t>(byte >> 4)
                      : static_cast<std::uint8_t>(byte & 0xf);
}

std::uint8_t int4_nibble_at(const Int4Tensor& t, std::size_t i) {
  const std::uint8_t byte = t.packed[i / 2];
  return (i % 2 == 0) ? static_cast<std::uint8_t>(byte & 0xf)
                      : static_cast<std::uint8_t>(byte >> 4);
}

void check_tensor(std::size_t count, std::size_t block, std::size_t packed, std::size_t scales,
                  const char* what) {
  check_layout(count, block, what);
  if (packed != count / 2 || scales != blocks_for(count, block)) {
    throw std::invalid_argument(std::string(what) + ": packed/scale arrays do not match count");
  }
}

} // namespace

const std::array<float, 16>& nf4_code_table() noexcept {
  return nf4_table;
}

std::uint8_t nf4_encode(float x) noexcept {
  // bitsandbytes dQuantizeNF4: a binary decision tree on the midpoints of the code table.
  if (x > 0.03979014977812767f) {
    if (x > 0.3893125355243683f) {
      if (x > 0.6427869200706482f) {
        return x > 0.8614784181118011f ? 0b1111 : 0b1110;
      }
      return x > 0.5016634166240692f ? 0b1101 : 0b1100;
    }
    if (x > 0.2035212516784668f) {
      return x > 0.2920137718319893f ? 0b1011 : 0b1010;
    }
    return x > 0.1202552504837513f ? 0b1001 : 0b1000;
  }
  if (x > -0.33967943489551544f) {
    if (x > -0.13791173323988914f) {
      return x > -0.045525018125772476f ? 0b0111 : 0b0110;
    }
    return x > -0.23460740596055984f ? 0b0101 : 0b0100;
  }
  if (x > -0.6106329262256622f) {
    return x > -0.4599952697753906f ? 0b0011 : 0b0010;
  }
  return x > -0.8480964004993439f ? 0b0001 : 0b0000;
}

Nf4Tensor quantize_nf4(std::span<const float> values, std::size_t block_size) {
  check_layout(values.size(), block_size, "quantize_nf4");
  Nf4Tensor t;
  t.count = values.size();
  t.block_size = block_size;
  t.packed.assign(t.count / 2, 0);
  t.absmax.resize(blocks_for(t.count, block_size));
  for (std::size_t b = 0; b < t.absmax.size(); ++b) {
    const std::size_t begin = b * block_size;
    const std::size_t end = std::min(begin + block_size, t.count);
    const float absmax = block_absmax(values, begin, end);
    t.absmax[b] = absmax;
    const float inverse = absmax > 0.0f ? 1.0f / absmax : 0.0f;
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint8_t code = nf4_encode(values[i] * inverse);
      if (i % 2 == 0) {
        t.packed[i / 2] = static_cast<std::uint8_t>(code << 4);
      } else {
        t.packed[i / 2] = static_cast<std::uint8_t>(t.packed[i / 2] | code);
      }
    }
  }
  return t;
}

std::vector<float> dequantize_nf4_float(const Nf4Tensor& t) {
  check_tensor(t.count, t.block_size, t.packed.size(), t.absmax.size(), "dequantize_nf4");
  std::vector<float> out(t.count);
  for (std::size_t i = 0; i < t.count; ++i) {
    out[i] = nf4_table[nf4_code_at(t, i)] * t.absmax[i / t.block_size];
  }
  return out;
}

std::vector<bf16_bits> dequantize_nf4_bf16(const Nf4Tensor& t) {
  const std::vector<float> values = dequantize_nf4_float(t);
  return to_bf16(values);
}

Int4Tensor quantize_int4(std::span<const float> values, std::size_t group_size) {
  check_layout(values.size(), group_size, "quantize_int4");
  Int4Tensor t;
  t.count = values.size();
  t.group_size = group_size;
  t.packed.assign(t.count / 2, 0);
  t.scales.resize(blocks_for(t.count, group_size));
  for (std::size_t g = 0; g < t.scales.size(); ++g) {
    const std::size_t begin = g * group_size;
    const std::size_t end = std::min(begin + group_size, t.count);
    const float scale = block_absmax(values, begin, end) / 7.0f;
    t.scales[g] = scale;
    for (std::size_t i = begin; i < end; ++i) {
      float q = scale > 0.0f ? std::nearbyint(values[i] / scale) : 0.0f;
      q = std::clamp(q, -8.0f, 7.0f);
      const auto nibble = static_cast<std::uint8_t>(static_cast<int>(q) + 8);
      if (i % 2 == 0) {
        t.packed[i / 2] = nibble;
      } else {
        t.packed[i / 2] = static_cast<std::uint8_t>(t.packed[i / 2] | (nibble << 4));
      }
    }
  }
  return t;
}

std::vector<float> dequantize_int4_float(const Int4Tensor& t) {
  check_tensor(t.count, t.group_size, t.packed.size(), t.scales.size(), "dequantize_int4");
  std::vector<float> out(t.count);
  for (std::size_t i = 0; i < t.count; ++i) {
    const int q = static_cast<int>(int4_nibble_at(t, i)) - 8;
    out[i] = static_cast<float>(q) * t.scales[i / t.group_size];
  }
  return out;
}

std::vector<bf16_bits> dequantize_int4_bf16(const Int4Tensor& t) {
  const std::vector<float> values = dequantize_int4_float(t);
  return to_bf16(values);
}

} // namespace halo_bench
