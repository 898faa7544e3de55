// SPDX-License-Identifier: MIT
#include "halo_bench/peaks.hpp"

#include <catch2/catch.hpp>

using namespace halo_bench;

TEST_CASE("peak table finds Strix Halo, MI300X and H100 rows", "[peaks]") {
  const auto strix = find_peak("gfx1151", "AMD Radeon 8060S Graphics");
  REQUIRE(strix);
  CHECK(strix->bandwidth_gbps == 256.0); // 256-bit LPDDR5X-8000
  CHECK(strix->row == "strix-halo-8060s-gfx1151");
  const auto strix_generic = find_peak("gfx1151", "AMD Radeon Graphics");
  REQUIRE(strix_generic);
  CHECK(strix_generic->row == "strix-halo-gfx1151");
  const auto mi300x = find_peak("gfx942:sramecc+:xnack-", "AMD Instinct MI300X");
  REQUIRE(mi300x);
  CHECK(mi300x->bandwidth_gbps == 5300.0);
  CHECK(mi300x->bf16_dense_tflops == 1307.4);
  const auto mi300a = find_peak("gfx942", "AMD Instinct MI300A");
  REQUIRE(mi300a);
  CHECK(mi300a->row == "mi300a-gfx942");
  const auto h100pcie = find_peak("sm_90", "NVIDIA H100 PCIe");
  REQUIRE(h100pcie);
  CHECK(h100pcie->bandwidth_gbps == 2000.0);
  CHECK_FALSE(find_peak("gfx803", "Radeon RX 580"));
  for (const auto& entry : peak_table()) {
    REQUIRE(entry.bandwidth_gbps > 0.0);
    REQUIRE(entry.bf16_dense_tflops > 0.0);
    REQUIRE_FALSE(entry.source.empty());
  }
}

TEST_CASE("peak bandwidth from device properties", "[peaks]") {
  // 1000 MHz double data rate on a 256-bit bus: 2 * 1e9 * 32 bytes = 64 GB/s.
  CHECK(*bandwidth_from_properties(1.0e6, 256.0) == Approx(64.0));
  CHECK_FALSE(bandwidth_from_properties(0.0, 256.0));
  CHECK_FALSE(bandwidth_from_properties(1.0e6, -1.0));
  CHECK(base_arch("gfx90a:sramecc+:xnack-") == "gfx90a");
  CHECK(base_arch("sm_90") == "sm_90");
}
