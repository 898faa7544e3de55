// SPDX-License-Identifier: MIT
// The GPU list derivation (checks/gpus/gpu_list.cpp): GPUs joined from KFD and DRM, the APU
// decision.
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::fixture;
using halo::test::probe_root;

TEST_CASE("derived: GPUs joined from KFD and DRM, with the APU decision", "[probe][derived]") {
  FactSet f = probe_root(fixture("strix-halo-default-ttm"));
  CHECK(f.get<bool>("amd.gpu_present") == true);
  CHECK(f.get_int("gpu.count") == 1);
  CHECK(f.get<std::string>("gpu.0.gfx_target") == std::string("gfx1151"));
  CHECK(f.get<std::string>("gpu.0.card") == std::string("card1"));
  CHECK(f.get<bool>("gpu.0.apu") == true);
  CHECK_THAT(f.find("gpu.0.apu")->source, Catch::Contains("0x1586"));
  CHECK(f.get_int("gpu.0.vram_total_bytes") == 536870912);
  CHECK(f.get<bool>("amdgpu.live") == true);
  FactSet mi = probe_root(fixture("mi300x-numa-4021"));
  CHECK(mi.get_int("gpu.count") == 8);
  CHECK(mi.get<bool>("gpu.7.mi300_series") == true);
  CHECK(mi.get<bool>("gpu.0.apu") == false);
}
