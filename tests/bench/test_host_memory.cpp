// SPDX-License-Identifier: MIT
#include "halo_bench/host_memory.hpp"

#include <catch2/catch.hpp>

using namespace halo_bench;

TEST_CASE("MemAvailable is parsed from /proc/meminfo text", "[host_memory]") {
  const char* text = "MemTotal:       131072000 kB\n"
                     "MemFree:         1000000 kB\n"
                     "MemAvailable:   125829120 kB\n"
                     "Buffers:           12345 kB\n";
  const auto available = parse_meminfo_available(text);
  REQUIRE(available);
  CHECK(*available == 125829120ULL * 1024ULL);
  CHECK_FALSE(parse_meminfo_available("MemTotal: 1 kB\n"));
  CHECK_FALSE(parse_meminfo_available("MemAvailable: lots\n"));
  CHECK(read_mem_available().has_value()); // every Linux since 3.14 has the line
}

TEST_CASE("ceiling cap is MemAvailable minus reserve, never above the pool", "[host_memory]") {
  constexpr std::uint64_t gib = 1ULL << 30;
  CHECK(ceiling_cap_bytes(120 * gib, 8 * gib, 96 * gib) == 96 * gib);
  CHECK(ceiling_cap_bytes(100 * gib, 8 * gib, 128 * gib) == 92 * gib);
  CHECK(ceiling_cap_bytes(4 * gib, 8 * gib, 128 * gib) == 0);
  CHECK(ceiling_cap_bytes(std::nullopt, 8 * gib, 64 * gib) == 64 * gib);
  CHECK(ceiling_cap_bytes(32 * gib, 8 * gib, std::nullopt) == 24 * gib);
  CHECK(ceiling_cap_bytes(std::nullopt, 0, std::nullopt) == 0);
}
