// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

TEST_CASE("memory probe: MemTotal and MemAvailable in bytes", "[probe][memory]") {
  FactSet f = probe_one(halo::test::fixture("strix-halo-default-ttm"), "memory");
  CHECK(f.get_int("mem.total_bytes") == 131151392LL * 1024);
  CHECK(f.get_int("mem.available_bytes") > 0);
}

TEST_CASE("memory probe: malformed and missing lines are errors with the text", "[probe][memory]") {
  FixtureTree t;
  t.file("/proc/meminfo", "MemTotal:       lots kB\nSwapTotal: 0 kB\n");
  FactSet f = probe_one(t.path(), "memory");
  CHECK(f.find("mem.total_bytes")->status == Status::error);
  CHECK_THAT(f.find("mem.total_bytes")->reason, Catch::Contains("MemTotal:       lots kB"));
  CHECK(f.find("mem.available_bytes")->status == Status::missing);
}
