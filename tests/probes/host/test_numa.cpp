// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::probe_one;

TEST_CASE("numa probe: numa_balancing value", "[probe][numa]") {
  CHECK(probe_one(halo::test::fixture("mi300x-numa-4021"), "numa").get_int("numa.balancing") == 1);
  CHECK(
      probe_one(halo::test::fixture("strix-halo-default-ttm"), "numa").get_int("numa.balancing") ==
      0);
}
