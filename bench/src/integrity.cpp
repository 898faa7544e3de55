// SPDX-License-Identifier: MIT
#include "halo_bench/integrity.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>

namespace halo_bench {
namespace {

bool is_nan_bits32(std::uint32_t bits) {
  return (bits & 0x7fffffffu) > 0x7f800000u;
}
bool is_nan_bits16(std::uint32_t bits) {
  return (bits & 0x7fffu) > 0x7f80u;
}

std::uint64_t byte_offset(std::uint64_t index, std::uint32_t expected, std::uint32_t got,
                          std::uint64_t element_bytes) {
  const std::uint32_t diff = expected ^ got;
  return index * element_bytes +
         (diff == 0 ? 0u : static_cast<std::uint64_t>(std::countr_zero(diff)) / 8u);
}

} // namespace

void fill_pattern(std::span<std::uint32_t> words, int kind, std::uint32_t seed,
                  std::uint64_t first_index) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    words[i] = pattern_word(kind, first_index + i, seed);
  }
}

std::optional<Mismatch> first_mismatch(std::span<const std::uint32_t> expected,
                                       std::span<const std::uint32_t> got) {
  std::optional<Mismatch> first;
  const std::size_t common = std::min(expected.size(), got.size());
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < common; ++i) {
    if (expected[i] != got[i]) {
      if (!first) {
        first = Mismatch{byte_offset(i, expected[i], got[i], 4), i, expected[i], got[i], 0};
      }
      ++bad;
    }
  }
  const std::size_t longer = std::max(expected.size(), got.size());
  if (longer > common) {
    if (!first) {
      first = Mismatch{common * 4u, common, common < expected.size() ? expected[common] : 0u,
                       common < got.size() ? got[common] : 0u, 0};
    }
    bad += longer - common;
  }
  if (first) first->bad_words = bad;
  return first;
}

std::optional<Mismatch> check_pattern(std::span<const std::uint32_t> got, int kind,
                                      std::uint32_t seed, std::uint64_t first_index) {
  std::optional<Mismatch> first;
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const std::uint32_t want = pattern_word(kind, first_index + i, seed);
    if (want != got[i]) {
      if (!first) {
        first = Mismatch{byte_offset(i, want, got[i], 4), i, want, got[i], 0};
      }
      ++bad;
    }
  }
  if (first) first->bad_words = bad;
  return first;
}

std::string describe(const Mismatch& m, std::uint64_t total_words) {
  char buffer[200];
  std::snprintf(buffer, sizeof buffer,
                "first differing byte at offset %llu (element %llu: 0x%08x, expected 0x%08x), "
                "%llu of %llu differ",
                static_cast<unsigned long long>(m.offset), static_cast<unsigned long long>(m.index),
                m.got, m.expected, static_cast<unsigned long long>(m.bad_words),
                static_cast<unsigned long long>(total_words));
  return buffer;
}

std::vector<std::uint32_t> conversion_inputs(std::size_t random_count) {
  std::vector<std::uint32_t> v = {
      0x00000000u, 0x80000000u,              // +-0
      0x00000001u, 0x80000001u,              // smallest subnormals: round to +-0
      0x007fffffu, 0x807fffffu,              // largest subnormals: round up to the smallest normal
      0x00008000u, 0x00018000u,              // subnormal ties: to even (down), to even (up)
      0x00800000u, 0x3f800000u, 0xbf800000u, // smallest normal, +-1
      0x3f808000u, 0x3f818000u,              // ties: 1 + 2^-8 rounds down to even, 1 + 3*2^-8 up
      0x3f808001u, 0x3f807fffu,              // just above / below a tie
      0x3fffffffu, 0x7f7fffffu, // rounds into the next binade; max float rounds to +inf
      0x7f7f7fffu, 0x7f7f8000u, // largest bf16 below/at the tie to +inf
      0xff7fffffu, 0x7f800000u, 0xff800000u,  // -max -> -inf, +-inf
      0x7fc00000u, 0xffc00000u, 0x7fc00001u,  // quiet NaNs, payload only in the low half
      0x7f800001u, 0x7fa00000u, 0xffbfffffu,  // signalling NaNs
      0x7fffffffu, 0x3eaaaaabu, 0xc0490fdbu}; // NaN all ones, 1/3, -pi
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  for (std::size_t i = 0; i < random_count; ++i) {
    state += 0x9e3779b97f4a7c15ull; // splitmix64
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    v.push_back(static_cast<std::uint32_t>(z ^ (z >> 31)));
  }
  return v;
}

std::vector<bf16_bits> widening_inputs() {
  std::vector<bf16_bits> v(65536);
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<bf16_bits>(i);
  }
  return v;
}

std::optional<Mismatch> check_to_bf16(std::span<const std::uint32_t> in,
                                      std::span<const bf16_bits> got) {
  std::optional<Mismatch> first;
  std::uint64_t bad = 0;
  const std::size_t n = std::max(in.size(), got.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t want = i < in.size() ? float_to_bf16(std::bit_cast<float>(in[i])) : 0u;
    const std::uint32_t seen = i < got.size() ? got[i] : 0u;
    bool ok = i < in.size() && i < got.size();
    if (ok) ok = is_nan_bits32(in[i]) ? is_nan_bits16(seen) : want == seen;
    if (!ok) {
      if (!first) first = Mismatch{byte_offset(i, want, seen, 2), i, want, seen, 0};
      ++bad;
    }
  }
  if (first) first->bad_words = bad;
  return first;
}

std::optional<Mismatch> check_widening(std::span<const bf16_bits> in,
                                       std::span<const std::uint32_t> got) {
  std::optional<Mismatch> first;
  std::uint64_t bad = 0;
  const std::size_t n = std::max(in.size(), got.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t want = i < in.size() ? static_cast<std::uint32_t>(in[i]) << 16 : 0u;
    const std::uint32_t seen = i < got.size() ? got[i] : 0u;
    bool ok = i < in.size() && i < got.size();
    if (ok) ok = is_nan_bits16(in[i]) ? is_nan_bits32(seen) : want == seen;
    if (!ok) {
      if (!first) first = Mismatch{byte_offset(i, want, seen, 4), i, want, seen, 0};
      ++bad;
    }
  }
  if (first) first->bad_words = bad;
  return first;
}

std::string size_label(std::uint64_t bytes) {
  if (bytes != 0 && bytes % (std::uint64_t{1} << 30) == 0)
    return std::to_string(bytes >> 30) + "gib";
  if (bytes != 0 && bytes % (std::uint64_t{1} << 20) == 0)
    return std::to_string(bytes >> 20) + "mib";
  if (bytes != 0 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + "kib";
  return std::to_string(bytes) + "b";
}

} // namespace halo_bench
