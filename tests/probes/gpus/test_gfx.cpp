// SPDX-License-Identifier: MIT
#include "gpus/gfx.hpp"

#include <catch2/catch.hpp>

using namespace halo::probes;

TEST_CASE("gfx_target_version decodes to LLVM target names", "[gfx]") {
  CHECK(decode_gfx_target_version(110501) == std::string("gfx1151"));
  CHECK(decode_gfx_target_version(90402) == std::string("gfx942"));
  CHECK(decode_gfx_target_version(90010) == std::string("gfx90a"));
  CHECK(decode_gfx_target_version(100300) == std::string("gfx1030"));
  CHECK(decode_gfx_target_version(90012) == std::string("gfx90c"));
  CHECK_FALSE(decode_gfx_target_version(0));
  CHECK_FALSE(decode_gfx_target_version(-5));
  CHECK_FALSE(decode_gfx_target_version(91600));
}

TEST_CASE("HSA_OVERRIDE_GFX_VERSION values map to gfx names", "[gfx]") {
  CHECK(gfx_from_override("11.5.1") == std::string("gfx1151"));
  CHECK(gfx_from_override("11.0.0") == std::string("gfx1100"));
  CHECK(gfx_from_override("9.4.2") == std::string("gfx942"));
  CHECK(gfx_from_override("10.3.0") == std::string("gfx1030"));
  CHECK_FALSE(gfx_from_override("11.5"));
  CHECK_FALSE(gfx_from_override("gfx1151"));
  CHECK_FALSE(gfx_from_override(""));
}

TEST_CASE("the APU decision uses the device id first, then the gfx target", "[gfx]") {
  CHECK(apu_basis(std::string("gfx1151"), 0x1586).has_value());
  CHECK(apu_basis(std::nullopt, 0x1586).has_value());
  CHECK(apu_basis(std::string("gfx1151"), std::nullopt).has_value());
  // gfx942 is an APU only as MI300A (0x74a0); MI300X (0x74a1) is a discrete accelerator.
  CHECK(apu_basis(std::string("gfx942"), 0x74a0).has_value());
  CHECK_FALSE(apu_basis(std::string("gfx942"), 0x74a1).has_value());
  CHECK_FALSE(apu_basis(std::string("gfx942"), std::nullopt).has_value());
  CHECK_FALSE(apu_basis(std::string("gfx1100"), 0x744c).has_value());
  // 0x1900 is Hawk Point (gfx1103), not Strix Halo.
  CHECK_THAT(*apu_basis(std::nullopt, 0x1900), Catch::Contains("Hawk Point"));
}

TEST_CASE("Instinct and MI300-series identification", "[gfx]") {
  CHECK(is_instinct(std::string("gfx942"), 0x74a1));
  CHECK(is_mi300_series(std::string("gfx942"), 0x74a1));
  CHECK(is_mi300_series(std::nullopt, 0x74a5));
  CHECK(is_instinct(std::string("gfx90a"), std::nullopt));
  CHECK_FALSE(is_mi300_series(std::string("gfx90a"), std::nullopt));
  CHECK_FALSE(is_instinct(std::string("gfx1151"), 0x1586));
}

TEST_CASE("Instinct series: MI350 (gfx950) is a series of its own, not MI300", "[gfx]") {
  CHECK(instinct_series(std::string("gfx950"), 0x75a3) == "MI350");
  CHECK(instinct_series(std::nullopt, 0x75a0) == "MI350");          // MI350X never reached KFD
  CHECK(instinct_series(std::nullopt, 0x75a3) == "MI350");          // MI355X
  CHECK(instinct_series(std::string("gfx942"), 0x74a0) == "MI300"); // MI300A
  CHECK(instinct_series(std::nullopt, 0x74a5) == "MI300");          // MI325X
  CHECK(instinct_series(std::nullopt, 0x74b5) == "MI300");          // MI300X VF
  CHECK(instinct_series(std::string("gfx90a"), 0x740c) == "MI200");
  CHECK(instinct_series(std::string("gfx908"), std::nullopt) == "MI100");
  // The gfx target decides over the id: an R9700 (gfx1201) is no Instinct whatever its id reads.
  CHECK(instinct_series(std::string("gfx1201"), 0x75a3) == "none");
  CHECK(instinct_series(std::nullopt, 0x7551) == "none");
  CHECK(instinct_series(std::nullopt, std::nullopt) == "none");
}
