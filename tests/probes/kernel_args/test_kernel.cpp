// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

TEST_CASE("kernel probe: release, Ubuntu ABI and command-line parameters", "[probe][kernel]") {
  FixtureTree t;
  t.file("/proc/sys/kernel/osrelease", "6.14.0-1014-oem\n");
  t.file("/proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz ro quiet amdgpu.gtt_size=122880 "
                          "ttm.pages_limit=1 ttm.pages_limit=2 nomodeset\n");
  FactSet f = probe_one(t.path(), "kernel");
  CHECK(f.get<std::string>("kernel.release") == std::string("6.14.0-1014-oem"));
  CHECK(f.get<std::string>("kernel.version") == std::string("6.14.0"));
  CHECK(f.get_int("kernel.ubuntu_abi") == 1014);
  CHECK(f.get<std::string>("kernel.ubuntu_flavor") == std::string("oem"));
  CHECK(f.get<std::string>("kernel.cmdline.param.amdgpu.gtt_size") == std::string("122880"));
  // The last assignment wins, as parse_args() applies them in order; the duplicate is recorded.
  CHECK(f.get<std::string>("kernel.cmdline.param.ttm.pages_limit") == std::string("2"));
  CHECK(f.get<std::vector<std::string>>("kernel.cmdline.duplicates") ==
        std::vector<std::string>{"ttm.pages_limit"});
  CHECK(f.get<std::string>("kernel.cmdline.param.nomodeset") == std::string(""));
  CHECK(f.find("kernel.cmdline.param.ro")->source == "/proc/cmdline");
}

TEST_CASE("kernel probe: missing and garbage files are facts, not crashes", "[probe][kernel]") {
  FixtureTree t;
  t.file("/proc/sys/kernel/osrelease", "\x01\x02garbage\n");
  FactSet f = probe_one(t.path(), "kernel");
  CHECK(f.find("kernel.release")->ok());
  CHECK(f.find("kernel.version")->status == Status::error);
  CHECK(f.find("kernel.cmdline")->status == Status::missing);
  CHECK(f.find("kernel.cmdline.names")->status == Status::missing);
  FixtureTree empty;
  empty.file("/proc/cmdline", "");
  FactSet g = probe_one(empty.path(), "kernel");
  CHECK(g.find("kernel.release")->status == Status::missing);
  CHECK(g.get<std::vector<std::string>>("kernel.cmdline.names")->empty());
}
