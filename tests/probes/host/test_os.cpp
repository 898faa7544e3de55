// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

TEST_CASE("os probe: os-release fields with shell quoting and the family list", "[probe][os]") {
  FixtureTree t;
  t.file("/etc/os-release",
         "# comment\nNAME=\"Bazzite\"\nID=bazzite\nID_LIKE=\"fedora\"\nVARIANT_ID=bazzite-deck\n"
         "PRETTY_NAME='Bazzite 42 (FROM Fedora Kinoite)'\nVERSION_ID=42\n");
  FactSet f = probe_one(t.path(), "os");
  CHECK(f.get<std::string>("os.id") == std::string("bazzite"));
  CHECK(f.get<std::string>("os.variant_id") == std::string("bazzite-deck"));
  CHECK(f.get<std::string>("os.pretty_name") == std::string("Bazzite 42 (FROM Fedora Kinoite)"));
  CHECK(f.get<std::vector<std::string>>("os.family") ==
        std::vector<std::string>{"bazzite", "fedora"});
}

TEST_CASE("os probe: falls back to /usr/lib/os-release and reports absence", "[probe][os]") {
  FixtureTree t;
  t.file("/usr/lib/os-release", "ID=debian\nVERSION_ID=\"12\"\n");
  FactSet f = probe_one(t.path(), "os");
  CHECK(f.get<std::string>("os.id") == std::string("debian"));
  CHECK(f.find("os.id")->source == "/usr/lib/os-release");
  CHECK(f.find("os.variant_id")->status == Status::missing);
  FixtureTree none;
  none.dir("/etc");
  CHECK(probe_one(none.path(), "os").find("os.id")->status == Status::missing);
}
