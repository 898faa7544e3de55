// SPDX-License-Identifier: MIT
// CPU side of the integrity part: fills and checks the known patterns of pattern.hpp, and judges
// the device's fp32 <-> bf16 conversions against the CPU's. No GPU needed (unit tested).
#pragma once

#include "halo_bench/bf16.hpp"
#include "halo_bench/pattern.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace halo_bench {

/// The first difference between two word arrays.
struct Mismatch {
  std::uint64_t offset = 0;    ///< byte offset of the first differing byte (little-endian words)
  std::uint64_t index = 0;     ///< index of the word (or element) holding it
  std::uint32_t expected = 0;  ///< that word (element), expected
  std::uint32_t got = 0;       ///< and seen
  std::uint64_t bad_words = 0; ///< number of differing words (elements) in the whole array
};

/// Fills `words` with pattern `kind`; word i of the span is pattern word `first_index + i`.
void fill_pattern(std::span<std::uint32_t> words, int kind, std::uint32_t seed,
                  std::uint64_t first_index = 0);

/// Compares `got` with `expected` word by word; nullopt when identical. A length difference is
/// a mismatch at the first word past the shorter array (expected/got 0 for the missing word).
std::optional<Mismatch> first_mismatch(std::span<const std::uint32_t> expected,
                                       std::span<const std::uint32_t> got);

/// Compares `got` with pattern `kind` without materialising the expected array.
std::optional<Mismatch> check_pattern(std::span<const std::uint32_t> got, int kind,
                                      std::uint32_t seed, std::uint64_t first_index = 0);

/// One line for an error fact: "first differing byte at offset 4100 (word 1025: 0x00000000,
/// expected 0x9e3779b1), 12 of 1024 words differ".
std::string describe(const Mismatch& m, std::uint64_t total_words);

/// Inputs of the on-device fp32 -> bf16 check (binary32 bit patterns): signed zeros, the
/// smallest and largest subnormals, normals on and around every rounding tie (ties to even both
/// ways), values that round up into the next binade and to infinity, infinities, quiet and
/// signalling NaNs with payloads, then `random_count` fixed-seed random bit patterns.
std::vector<std::uint32_t> conversion_inputs(std::size_t random_count = 4096);

/// Inputs of the bf16 -> fp32 widening check: all 65,536 bf16 bit patterns.
std::vector<bf16_bits> widening_inputs();

/// Judges the device's fp32 -> bf16 results against float_to_bf16 (round to nearest even):
/// bits must match exactly, except that a NaN input may give any NaN (CUDA's cvt.rn.bf16.f32
/// returns the canonical 0x7FFF; the CPU keeps the payload). nullopt when all agree; else the
/// first differing element (offset = element index * 2).
std::optional<Mismatch> check_to_bf16(std::span<const std::uint32_t> fp32_inputs,
                                      std::span<const bf16_bits> got);

/// Judges the device's bf16 -> fp32 widening: exact (bits << 16), a NaN may widen to any NaN.
/// nullopt when all agree (offset = element index * 4).
std::optional<Mismatch> check_widening(std::span<const bf16_bits> inputs,
                                       std::span<const std::uint32_t> got);

/// Size label for fact keys: "4kib", "64mib", "1gib", "1536kib", "100b" (exact binary units).
std::string size_label(std::uint64_t bytes);

} // namespace halo_bench
