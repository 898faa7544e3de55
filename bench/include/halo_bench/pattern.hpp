// SPDX-License-Identifier: MIT
// Known bit patterns of the integrity part, generated identically on the host (halo_bench_ref,
// C++20) and on the device (kernels/integrity.cpp, HIP/CUDA C++17): keep this header C++17-clean.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
#define HALO_HD __host__ __device__
#else
#define HALO_HD
#endif

namespace halo_bench {

/// The patterns copied through host<->device transfers. Each fills 32-bit words; word i of a
/// buffer depends only on (kind, i, seed), so any slice can be regenerated and checked.
enum PatternKind : int {
  pattern_zeros = 0,         ///< 0x00000000 (the "tensor turned into zeros" reports need a non-zero
                             ///< pattern to show, this one catches stuck-at-one bits)
  pattern_ones = 1,          ///< 0xFFFFFFFF (catches zero-filled pages)
  pattern_checkerboard = 2,  ///< 0xAAAAAAAA and 0x55555555 alternating by word
  pattern_walking_ones = 3,  ///< 1 << (i % 32)
  pattern_address_hash = 4,  ///< a 32-bit mix of (i, seed): catches misplaced/duplicated pages
  pattern_bf16_specials = 5, ///< pairs of BF16 special values (see bf16_special)
  pattern_kind_count = 6
};

/// Lower-case name of a pattern kind, for facts and messages.
inline const char* pattern_name(int kind) {
  switch (kind) {
  case pattern_zeros:
    return "zeros";
  case pattern_ones:
    return "ones";
  case pattern_checkerboard:
    return "checkerboard";
  case pattern_walking_ones:
    return "walking_ones";
  case pattern_address_hash:
    return "address_hash";
  case pattern_bf16_specials:
    return "bf16_specials";
  default:
    return "unknown";
  }
}

/// The 16 BF16 values of pattern_bf16_specials, index j in 0..15: +0, -0, the smallest
/// subnormal (both signs), the largest subnormal, the smallest normal, +-max finite, +-inf, a
/// quiet NaN, a negative quiet NaN with payload 1, a signalling NaN with payload 1, the all-ones
/// NaN, +1 and -1 (IEEE 754 binary32 upper halves; bfloat16 has no other encoding rules).
HALO_HD inline std::uint16_t bf16_special(int j) {
  switch (j & 15) {
  case 0:
    return 0x0000;
  case 1:
    return 0x8000;
  case 2:
    return 0x0001;
  case 3:
    return 0x8001;
  case 4:
    return 0x007F;
  case 5:
    return 0x0080;
  case 6:
    return 0x7F7F;
  case 7:
    return 0xFF7F;
  case 8:
    return 0x7F80;
  case 9:
    return 0xFF80;
  case 10:
    return 0x7FC0;
  case 11:
    return 0xFFC1;
  case 12:
    return 0x7F81;
  case 13:
    return 0x7FFF;
  case 14:
    return 0x3F80;
  default:
    return 0xBF80;
  }
}

/// Word `index` of pattern `kind` with `seed` (seed only changes pattern_address_hash).
HALO_HD inline std::uint32_t pattern_word(int kind, std::uint64_t index, std::uint32_t seed) {
  switch (kind) {
  case pattern_zeros:
    return 0u;
  case pattern_ones:
    return 0xFFFFFFFFu;
  case pattern_checkerboard:
    return (index & 1u) != 0 ? 0x55555555u : 0xAAAAAAAAu;
  case pattern_walking_ones:
    return 1u << (index % 32u);
  case pattern_bf16_specials: {
    const int j = static_cast<int>((2 * index) % 16u);
    return static_cast<std::uint32_t>(bf16_special(j)) |
           (static_cast<std::uint32_t>(bf16_special(j + 1)) << 16);
  }
  default: {
    // murmur3's fmix32 over the word index (low and high halves) and the seed.
    std::uint32_t x = static_cast<std::uint32_t>(index) ^
                      (static_cast<std::uint32_t>(index >> 32) * 0x9E3779B1u) ^ seed;
    x ^= x >> 16;
    x *= 0x85EBCA6Bu;
    x ^= x >> 13;
    x *= 0xC2B2AE35u;
    x ^= x >> 16;
    return x;
  }
  }
}

} // namespace halo_bench
