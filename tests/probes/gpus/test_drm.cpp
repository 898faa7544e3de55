// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::probe_one;

TEST_CASE("drm probe: memory sizes, render node and slot of the AMD card", "[probe][drm]") {
  FactSet f = probe_one(halo::test::fixture("carveout-96g-5902"), "drm");
  CHECK(f.get<std::vector<std::string>>("drm.amd_cards") == std::vector<std::string>{"card1"});
  CHECK(f.get_int("drm.card1.vram_total_bytes") == 103079215104);
  CHECK(f.get_int("drm.card1.gtt_total_bytes") == 4080530LL * 4096);
  CHECK(f.get_int("drm.card1.render_minor") == 128);
  CHECK(f.get<std::string>("drm.card1.pci_slot") == std::string("0000:c5:00.0"));
  CHECK(f.get<std::string>("drm.card1.driver") == std::string("amdgpu"));
  FactSet mi = probe_one(halo::test::fixture("mi300x-numa-4021"), "drm");
  CHECK(mi.get<std::vector<std::string>>("drm.amd_cards")->size() == 8);
  CHECK(mi.get<std::string>("drm.card1.current_compute_partition") == std::string("SPX"));
}
