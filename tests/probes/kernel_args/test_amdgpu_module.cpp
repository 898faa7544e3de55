// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

TEST_CASE("amdgpu module probe: live DKMS module with its parameters", "[probe][amdgpu]") {
  FactSet f = probe_one(halo::test::fixture("kfd-no-access"), "amdgpu_module");
  CHECK(f.get<bool>("amdgpu.loaded") == true);
  CHECK(f.get<std::string>("amdgpu.initstate") == std::string("live"));
  CHECK(f.get<std::string>("amdgpu.version") == std::string("6.16.6"));
  CHECK(f.get<bool>("amdgpu.dkms") == true);
  CHECK(f.get<std::int64_t>("amdgpu.param.gttsize") == -1);
  auto names = f.get<std::vector<std::string>>("amdgpu.param_names");
  REQUIRE(names);
  CHECK(std::find(names->begin(), names->end(), "gtt_size") == names->end());
}

TEST_CASE("amdgpu module probe: built-in, absent and in-kernel", "[probe][amdgpu]") {
  FixtureTree builtin;
  builtin.file("/sys/module/amdgpu/parameters/gttsize", "-1\n");
  FactSet b = probe_one(builtin.path(), "amdgpu_module");
  CHECK(b.get<bool>("amdgpu.builtin") == true);
  CHECK(b.find("amdgpu.initstate")->status == Status::missing);
  CHECK(b.get<bool>("amdgpu.dkms") == false);

  FixtureTree none;
  none.dir("/sys/module/ttm");
  FactSet n = probe_one(none.path(), "amdgpu_module");
  CHECK(n.get<bool>("amdgpu.loaded") == false);
  CHECK(n.find("amdgpu.param_names")->status == Status::missing);
}
