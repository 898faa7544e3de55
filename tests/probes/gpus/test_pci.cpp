// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::probe_one;

TEST_CASE("pci probe: AMD display and accelerator devices only", "[probe][pci]") {
  FactSet mi = probe_one(halo::test::fixture("mi300x-numa-4021"), "pci");
  CHECK(mi.get_int("pci.amd_gpu_count") == 8);
  CHECK(mi.get_int("pci.gpu.0.device_id") == 0x74a1);
  CHECK(mi.get<std::string>("pci.gpu.0.class") == std::string("0x120000"));
  CHECK(mi.get<std::string>("pci.gpu.0.driver") == std::string("amdgpu"));
  FactSet nv = probe_one(halo::test::fixture("no-amd-gpu"), "pci");
  CHECK(nv.get_int("pci.amd_gpu_count") == 0);
}
