// SPDX-License-Identifier: MIT
// The kernel-argument derivations (checks/kernel_args/driver_derive.cpp, suspects_derive.cpp):
// gttsize, suspicious arguments, what blocks amdgpu.
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::fixture;
using halo::test::probe_root;

TEST_CASE("derived: gttsize and suspicious kernel arguments", "[probe][derived]") {
  FactSet f = probe_root(fixture("gttsize-typo-5595"));
  CHECK(f.get<bool>("amdgpu.gttsize_set") == true);
  CHECK(f.get_int("amdgpu.gttsize_bytes") == 122880LL * 1024 * 1024);
  CHECK(f.get<std::vector<std::string>>("kernel.cmdline.suspect_names") ==
        std::vector<std::string>{"amdgpu.gtt_size"});
  CHECK_THAT(f.get<std::vector<std::string>>("kernel.cmdline.suspect_hints")->at(0),
             Catch::Contains("amdgpu.gttsize"));
  FactSet ok = probe_root(fixture("strix-halo-default-ttm"));
  CHECK(ok.get<bool>("amdgpu.gttsize_set") == false);
  CHECK(ok.get<std::vector<std::string>>("kernel.cmdline.suspect_names")->empty());
}

TEST_CASE("derived: blockers of amdgpu", "[probe][derived]") {
  halo::test::FixtureTree t;
  t.file("/proc/cmdline", "ro nomodeset modprobe.blacklist=amdgpu,nouveau\n");
  t.file("/etc/modprobe.d/block.conf", "install amdgpu /bin/false\n");
  t.file("/sys/bus/pci/devices/0000:c5:00.0/vendor", "0x1002\n")
      .file("/sys/bus/pci/devices/0000:c5:00.0/class", "0x038000\n");
  t.file("/sys/bus/pci/devices/0000:c5:00.0/device", "0x1586\n");
  FactSet f = probe_root(t.path());
  CHECK(f.get<bool>("amd.gpu_present") == true);
  CHECK(f.get<bool>("amdgpu.live") == false);
  CHECK(f.get<bool>("gpu.0.apu") == true);
  auto blocked = f.get<std::vector<std::string>>("amdgpu.blocked_by");
  REQUIRE(blocked);
  CHECK(blocked->size() == 3);
}
