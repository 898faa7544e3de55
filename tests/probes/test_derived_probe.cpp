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

TEST_CASE("derived: the recommended TTM limit is MemTotal minus --reserve in whole GiB",
          "[probe][derived]") {
  // 131151392 kB = 125.08 GiB -> 125 GiB whole.
  FactSet f4 = probe_root(fixture("strix-halo-default-ttm"), 4);
  CHECK(f4.get_int("ttm.recommended_gib") == 121);
  CHECK(f4.get_int("ttm.recommended_pages") == 121LL * 262144);
  FactSet f5 = probe_root(fixture("strix-halo-default-ttm"), 5);
  CHECK(f5.get_int("ttm.recommended_pages") == 31457280); // 120 GiB, the seed's value
  FactSet all = probe_root(fixture("strix-halo-default-ttm"), 200);
  CHECK(all.find("ttm.recommended_pages")->status == Status::error);
}

TEST_CASE("derived: TTM configuration on the used module vs elsewhere", "[probe][derived]") {
  FactSet wrong = probe_root(fixture("amdttm-on-inbox-5562"));
  CHECK(wrong.get<bool>("ttm.configured_on_used") == false);
  auto elsewhere = wrong.get<std::vector<std::string>>("ttm.configured_elsewhere");
  REQUIRE(elsewhere);
  CHECK(elsewhere->size() == 2);
  CHECK_THAT(elsewhere->at(0), Catch::Contains("amdttm.pages_limit"));
  FactSet fixed = probe_root(fixture("strix-halo-fixed"));
  CHECK(fixed.get<bool>("ttm.configured_on_used") == true);
  CHECK(fixed.get_int("ttm.configured.pages_limit_pages") == 31457280);
  CHECK(fixed.find("ttm.configured.pages_limit_pages")->source == "/proc/cmdline");
}

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
