// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

TEST_CASE("ttm probe: the in-kernel ttm module at the default half of RAM", "[probe][ttm]") {
  FactSet f = probe_one(halo::test::fixture("strix-halo-default-ttm"), "ttm");
  CHECK(f.get<std::string>("ttm.module") == std::string("ttm"));
  CHECK(f.find("ttm.module")->source == "/sys/module/ttm/holders/amdgpu");
  CHECK(f.get_int("ttm.pages_limit_pages") == 16393924);
  CHECK(f.get_int("ttm.pages_limit_bytes") == 16393924LL * 4096);
  CHECK(f.get<bool>("ttm.module.amdttm.loaded") == false);
}

TEST_CASE("ttm probe: with ttm and amdttm loaded, the holder link decides", "[probe][ttm]") {
  FactSet f = probe_one(halo::test::fixture("kfd-no-access"), "ttm");
  CHECK(f.get<std::string>("ttm.module") == std::string("amdttm"));
  CHECK(f.get_int("ttm.pages_limit_pages") == 31457280);
  CHECK(f.get_int("ttm.module.ttm.pages_limit_pages") == 16376224);
  CHECK(f.get<std::vector<std::string>>("ttm.modules_loaded") ==
        std::vector<std::string>{"ttm", "amdttm"});
}

TEST_CASE("ttm probe: without holder links a DKMS amdgpu means amdttm", "[probe][ttm]") {
  FixtureTree t;
  t.file("/sys/module/amdgpu/initstate", "live\n").file("/sys/module/amdgpu/version", "6.8.5\n");
  t.file("/sys/module/ttm/parameters/pages_limit", "100\n")
      .file("/sys/module/amdttm/parameters/pages_limit", "200\n");
  FactSet f = probe_one(t.path(), "ttm");
  CHECK(f.get<std::string>("ttm.module") == std::string("amdttm"));
  CHECK_THAT(f.find("ttm.module")->source, Catch::Contains("DKMS"));
  CHECK(f.get_int("ttm.pages_limit_pages") == 200);
  // page_pool_size was not in this tree: missing, not zero.
  CHECK(f.find("ttm.page_pool_size_pages")->status == Status::missing);
}

TEST_CASE("ttm probe: garbage in pages_limit is an error that quotes it", "[probe][ttm]") {
  FixtureTree t;
  t.file("/sys/module/amdgpu/initstate", "live\n");
  t.file("/sys/module/ttm/parameters/pages_limit", "lots\n");
  t.link("/sys/module/ttm/holders/amdgpu", "../../amdgpu");
  FactSet f = probe_one(t.path(), "ttm");
  CHECK(f.find("ttm.pages_limit_pages")->status == Status::error);
  CHECK_THAT(f.find("ttm.pages_limit_pages")->reason, Catch::Contains("'lots'"));
  CHECK(f.find("ttm.pages_limit_bytes")->status == Status::error);
}

TEST_CASE("ttm probe: amdgpu not loaded means no TTM module in use", "[probe][ttm]") {
  FixtureTree t;
  t.file("/sys/module/ttm/parameters/pages_limit", "100\n");
  FactSet f = probe_one(t.path(), "ttm");
  CHECK(f.find("ttm.module")->status == Status::missing);
  CHECK(f.find("ttm.pages_limit_pages")->status == Status::missing);
}
