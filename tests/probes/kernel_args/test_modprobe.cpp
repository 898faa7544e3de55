// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

TEST_CASE("modprobe probe: options, continuation lines, names with dashes, precedence",
          "[probe][modprobe]") {
  FixtureTree t;
  t.file("/usr/lib/modprobe.d/amd.conf", "options amdgpu gttsize=1\n");
  t.file("/lib/modprobe.d/zz.conf", "options ttm pages_limit=5\n");
  t.file("/etc/modprobe.d/amd.conf",
         "# mine\noptions amdgpu gttsize=122880 \\\n   vm_size=131072\n");
  t.file("/etc/modprobe.d/amd-ttm.conf",
         "options amd-ttm pages-limit=31457280 page_pool_size=31457280\nblacklist amdgpu\n");
  t.file("/etc/modprobe.d/notes.txt", "options ttm pages_limit=1\n");
  FactSet f = probe_one(t.path(), "modprobe");
  // /etc hides /usr/lib's file of the same name.
  CHECK(f.get<std::string>("modprobe.options.amdgpu.gttsize") == std::string("122880"));
  CHECK(f.get<std::string>("modprobe.options.amdgpu.vm_size") == std::string("131072"));
  CHECK(f.find("modprobe.options.amdgpu.vm_size")->source == "/etc/modprobe.d/amd.conf:2");
  CHECK(f.get<std::string>("modprobe.options.amd_ttm.pages_limit") == std::string("31457280"));
  CHECK(f.get<std::string>("modprobe.options.ttm.pages_limit") == std::string("5"));
  CHECK(f.get<std::vector<std::string>>("modprobe.blacklist") ==
        std::vector<std::string>{"amdgpu"});
  auto files = f.get<std::vector<std::string>>("modprobe.files");
  REQUIRE(files);
  CHECK(files->size() == 3);
}

// ../shared/reference/parsing-facts.md, checked against real kmod by cli.kmod_diff.
TEST_CASE("modprobe probe: '#' is a comment only at the start of a line", "[probe][modprobe]") {
  FixtureTree t;
  t.file("/etc/modprobe.d/ttm.conf",
         "options ttm pages_limit=4096 # was 31457280\n  # options ttm page_pool_size=1\n");
  FactSet f = probe_one(t.path(), "modprobe");
  CHECK(f.get<std::string>("modprobe.options.ttm.pages_limit") == std::string("4096"));
  CHECK(f.find("modprobe.options.ttm.page_pool_size") == nullptr);
  CHECK(f.get<std::vector<std::string>>("modprobe.options_text.ttm") ==
        std::vector<std::string>{"pages_limit=4096 # was 31457280"});
  CHECK(f.get<std::vector<std::string>>("modprobe.note_words.ttm") ==
        std::vector<std::string>{"#", "was", "31457280"});
}

TEST_CASE("modprobe probe: a setting after '#' on the same line is still applied",
          "[probe][modprobe]") {
  FixtureTree t;
  t.file("/etc/modprobe.d/ttm.conf", "options ttm pages_limit=1 # pages_limit=2\n");
  FactSet f = probe_one(t.path(), "modprobe");
  CHECK(f.get<std::string>("modprobe.options.ttm.pages_limit") == std::string("2"));
}

TEST_CASE("modprobe probe: CRLF, dot files, directories, .alias, install commands",
          "[probe][modprobe]") {
  FixtureTree t;
  t.file("/etc/modprobe.d/crlf.conf", "blacklist amdgpu\r\noptions ttm pages_limit=9\r\n");
  t.file("/etc/modprobe.d/.hidden.conf", "blacklist ttm\n");
  t.dir("/etc/modprobe.d/d.conf");
  t.file("/lib/modprobe.d/d.conf", "options amdgpu gttsize=5\n");
  t.file("/lib/modprobe.d/x.alias", "options amdgpu modeset=1\n");
  t.file("/lib/modprobe.d/i.conf", "install amdgpu /sbin/modprobe --ignore-install amdgpu "
                                   "$CMDLINE_OPTS && echo\ninstall ttm false\n");
  FactSet f = probe_one(t.path(), "modprobe");
  // `amdgpu\r` names no module; the kernel's parser takes '\r' as a space in an options line.
  CHECK(f.get<std::vector<std::string>>("modprobe.blacklist") == std::vector<std::string>{});
  CHECK(f.get<std::string>("modprobe.options.ttm.pages_limit") == std::string("9"));
  CHECK(f.get<std::string>("modprobe.options.amdgpu.gttsize") == std::string("5"));
  CHECK(f.get<std::string>("modprobe.options.amdgpu.modeset") == std::string("1"));
  CHECK(f.get<std::vector<std::string>>("modprobe.install_blocked") ==
        std::vector<std::string>{"ttm"});
}

// libkmod-module.c: kmod runs the first install line whose pattern fnmatch()es the module, and
// none for a module with soft dependencies (checked against `modprobe -n -v` by cli.kmod_diff).
TEST_CASE("modprobe probe: install lines by pattern, first match, softdep", "[probe][modprobe]") {
  FixtureTree t;
  t.file("/etc/modprobe.d/a.conf", "install amd* /bin/true\ninstall amdgpu /bin/false\n"
                                   "install ttm /sbin/modprobe -i ttm $CMDLINE_OPTS\n"
                                   "install amdkfd\n"); // no command: kmod's syntax error
  t.file("/etc/modprobe.d/b.conf", "install ttm /bin/false\nsoftdep amd_ttm pre: ttm\n");
  FactSet f = probe_one(t.path(), "modprobe");
  CHECK(f.get<std::string>("modprobe.install.amdgpu") == std::string("/bin/true"));
  CHECK(f.get<std::string>("modprobe.install_pattern.amdgpu") == std::string("amd*"));
  CHECK(f.find("modprobe.install.amdgpu")->source == "/etc/modprobe.d/a.conf:1");
  CHECK(f.get<std::string>("modprobe.install_effect.amdgpu") == std::string("blocks"));
  CHECK(f.get<std::string>("modprobe.install.amdkfd") == std::string("/bin/true"));
  CHECK(f.get<std::string>("modprobe.install.ttm") ==
        std::string("/sbin/modprobe -i ttm $CMDLINE_OPTS"));
  CHECK(f.get<std::string>("modprobe.install_effect.ttm") == std::string("loads"));
  CHECK(f.get<std::string>("modprobe.install_effect.amd_ttm") == std::string("ignored"));
  CHECK(f.get<std::vector<std::string>>("modprobe.install_blocked") ==
        std::vector<std::string>{"amdgpu", "amdttm", "amdkfd"});
}
