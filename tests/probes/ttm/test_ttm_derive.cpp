// SPDX-License-Identifier: MIT
// The TTM derivations (checks/ttm/ttm_derive.cpp): the recommended limit, where the limit is
// configured.
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::fixture;
using halo::test::probe_root;

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
