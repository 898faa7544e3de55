// SPDX-License-Identifier: MIT
#include "halo_bench/bf16.hpp"
#include "halo_bench/integrity.hpp"

#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <set>

using namespace halo_bench;

TEST_CASE("patterns are the documented words", "[integrity]") {
  CHECK(pattern_word(pattern_zeros, 5, 1) == 0u);
  CHECK(pattern_word(pattern_ones, 5, 1) == 0xFFFFFFFFu);
  CHECK(pattern_word(pattern_checkerboard, 0, 1) == 0xAAAAAAAAu);
  CHECK(pattern_word(pattern_checkerboard, 1, 1) == 0x55555555u);
  CHECK(pattern_word(pattern_walking_ones, 33, 1) == 2u);
  // bf16 specials: word 0 is (+0, -0), word 4 is (+inf, -inf), word 5 (qNaN, -qNaN payload 1).
  CHECK(pattern_word(pattern_bf16_specials, 0, 0) == 0x80000000u);
  CHECK(pattern_word(pattern_bf16_specials, 1, 0) == 0x80010001u);
  CHECK(pattern_word(pattern_bf16_specials, 4, 0) == 0xFF807F80u);
  CHECK(pattern_word(pattern_bf16_specials, 5, 0) == 0xFFC17FC0u);
  CHECK(pattern_word(pattern_bf16_specials, 8, 0) == pattern_word(pattern_bf16_specials, 0, 0));
  // The address hash differs by word (misplaced pages show) and by seed.
  std::set<std::uint32_t> seen;
  for (std::uint64_t i = 0; i < 4096; ++i)
    seen.insert(pattern_word(pattern_address_hash, i, 7));
  CHECK(seen.size() == 4096);
  CHECK(pattern_word(pattern_address_hash, 3, 7) != pattern_word(pattern_address_hash, 3, 8));
  CHECK(pattern_word(pattern_address_hash, 3, 7) !=
        pattern_word(pattern_address_hash, 3 + (1ull << 32), 7));
}

TEST_CASE("first differing byte offset of a corrupted copy", "[integrity]") {
  std::vector<std::uint32_t> sent(1024);
  fill_pattern(sent, pattern_address_hash, 42);
  CHECK_FALSE(check_pattern(sent, pattern_address_hash, 42).has_value());
  CHECK_FALSE(first_mismatch(sent, sent).has_value());

  // The reported failure: a page of the tensor arrives as zeros.
  std::vector<std::uint32_t> got = sent;
  std::memset(got.data() + 1024 / 4 * 1, 0, 1024); // words 256..511 zeroed (bytes 1024..2047)
  const auto m = check_pattern(got, pattern_address_hash, 42);
  REQUIRE(m.has_value());
  // The first byte that differs: word 256 unless its low byte happened to be zero.
  const std::uint32_t w256 = sent[256];
  std::uint64_t expect_offset = 1024;
  for (int b = 0; b < 4 && ((w256 >> (8 * b)) & 0xffu) == 0; ++b)
    ++expect_offset;
  CHECK(m->offset == expect_offset);
  CHECK(m->index == 256);
  CHECK(m->got == 0u);
  CHECK(m->expected == w256);
  CHECK(m->bad_words == 256);
  const auto same = first_mismatch(sent, got);
  REQUIRE(same.has_value());
  CHECK(same->offset == m->offset);
  CHECK(describe(*m, 1024).find("offset " + std::to_string(expect_offset)) != std::string::npos);

  // One flipped bit in the third byte of word 1000.
  got = sent;
  got[1000] ^= 0x00040000u;
  const auto flip = first_mismatch(sent, got);
  REQUIRE(flip.has_value());
  CHECK(flip->offset == 1000 * 4 + 2);
  CHECK(flip->bad_words == 1);

  // A short copy: the first missing word.
  got.assign(sent.begin(), sent.begin() + 10);
  const auto shortcopy = first_mismatch(sent, got);
  REQUIRE(shortcopy.has_value());
  CHECK(shortcopy->offset == 40);
  CHECK(shortcopy->bad_words == 1014);
}

TEST_CASE("device bf16 conversion is judged against round-to-nearest-even", "[integrity]") {
  const auto in = conversion_inputs(256);
  std::vector<bf16_bits> good;
  for (const auto bits : in)
    good.push_back(float_to_bf16(std::bit_cast<float>(bits)));
  CHECK_FALSE(check_to_bf16(in, good).has_value());

  // CUDA returns the canonical NaN 0x7FFF for every NaN input: accepted.
  std::vector<bf16_bits> canonical = good;
  for (std::size_t i = 0; i < in.size(); ++i)
    if ((in[i] & 0x7fffffffu) > 0x7f800000u) canonical[i] = 0x7fff;
  CHECK_FALSE(check_to_bf16(in, canonical).has_value());

  // Truncation instead of rounding: 1 + 3*2^-8 (0x3f818000) must round up to 0x3f82.
  std::vector<bf16_bits> truncated = good;
  std::size_t tie = 0;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i] == 0x3f818000u) tie = i;
  REQUIRE(good[tie] == 0x3f82);
  truncated[tie] = 0x3f81;
  const auto m = check_to_bf16(in, truncated);
  REQUIRE(m.has_value());
  CHECK(m->index == tie);
  CHECK(m->offset == tie * 2);

  // The seed report: conversions producing zeros.
  std::vector<bf16_bits> zeros(in.size(), 0);
  const auto z = check_to_bf16(in, zeros);
  REQUIRE(z.has_value());
  CHECK(z->index == 1); // -0 must keep its sign: 0x8000
  CHECK(z->expected == 0x8000u);

  // Flushing subnormals: the largest subnormal must round up to the smallest normal.
  std::vector<bf16_bits> ftz = good;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i] == 0x007fffffu) ftz[i] = 0x0000;
  CHECK(check_to_bf16(in, ftz).has_value());

  // A NaN must stay a NaN.
  std::vector<bf16_bits> nan_lost = good;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i] == 0x7f800001u) nan_lost[i] = 0x7f80;
  CHECK(check_to_bf16(in, nan_lost).has_value());
}

TEST_CASE("bf16 widening is exact for all 65536 patterns", "[integrity]") {
  const auto in = widening_inputs();
  REQUIRE(in.size() == 65536);
  std::vector<std::uint32_t> good;
  for (const auto b : in)
    good.push_back(static_cast<std::uint32_t>(b) << 16);
  CHECK_FALSE(check_widening(in, good).has_value());
  std::vector<std::uint32_t> ftz = good;
  ftz[1] = 0; // subnormal 0x0001 flushed
  const auto m = check_widening(in, ftz);
  REQUIRE(m.has_value());
  CHECK(m->index == 1);
  CHECK(m->offset == 4 + 2); // the differing byte is the third of element 1
}

TEST_CASE("size labels for fact keys", "[integrity]") {
  CHECK(size_label(4096) == "4kib");
  CHECK(size_label(1536 * 1024) == "1536kib");
  CHECK(size_label(64ull << 20) == "64mib");
  CHECK(size_label(1ull << 30) == "1gib");
  CHECK(size_label(100) == "100b");
}
