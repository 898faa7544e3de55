// SPDX-License-Identifier: MIT
// The module-file probe (checks/kernel_args/module_file.cpp) where there is no module to read:
// these cases need no tools; tests/cli/module_signature.sh reads real signed and compressed
// modules.
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

TEST_CASE("module file probe: no release, no modules directory, no index", "[probe][module_file]") {
  FixtureTree none;
  none.dir("/sys");
  FactSet a = probe_one(none.path(), "module_file");
  REQUIRE(a.find("amdgpu.module.signed") != nullptr);
  CHECK(a.find("amdgpu.module.signed")->status == Status::missing);
  CHECK(a.find("amdgpu.module.path")->reason.find("kernel release") != std::string::npos);

  FixtureTree nodir;
  nodir.file("/proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
  FactSet b = probe_one(nodir.path(), "module_file");
  CHECK(b.find("amdgpu.module.path")->status == Status::missing);
  CHECK(b.find("amdgpu.module.path")->reason.find("/lib/modules/6.8.0-45-generic") !=
        std::string::npos);

  FixtureTree noindex;
  noindex.file("/proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
  noindex.file("/lib/modules/6.8.0-45-generic/updates/dkms/amdgpu.ko", "not an ELF");
  FactSet c = probe_one(noindex.path(), "module_file");
  CHECK(c.find("amdgpu.module.signed")->status == Status::missing);
  CHECK(c.find("amdgpu.module.signed")->reason.find("depmod") != std::string::npos);
}

TEST_CASE("module file probe: a release that is not a directory name", "[probe][module_file]") {
  FixtureTree t;
  t.file("/proc/sys/kernel/osrelease", "..\n");
  t.dir("/lib/modules");
  FactSet f = probe_one(t.path(), "module_file");
  CHECK(f.find("amdgpu.module.path")->status == Status::error);
}

TEST_CASE("module file probe: an index that is a link out of the root is refused",
          "[probe][module_file]") {
  FixtureTree outside;
  outside.file("/modules.dep.bin", "x");
  FixtureTree t;
  t.file("/proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
  t.link("/lib/modules/6.8.0-45-generic/modules.dep.bin",
         (outside.path() / "modules.dep.bin").string());
  FactSet f = probe_one(t.path(), "module_file");
  const Fact* s = f.find("amdgpu.module.signed");
  REQUIRE(s != nullptr);
  CHECK(s->status == Status::error);
  CHECK(s->reason.find("symbolic link") != std::string::npos);
}

TEST_CASE("module file probe: in toolbox, the host's /lib/modules under /run/host",
          "[probe][module_file]") {
  FixtureTree t;
  t.file("/proc/sys/kernel/osrelease", "6.18.4-200.fc43.x86_64\n");
  t.file("/run/.toolboxenv", "");
  t.file("/run/host/etc/os-release", "ID=fedora\n");
  // The host's modules, not indexed by depmod: looked for there, and found missing there.
  t.file("/run/host/lib/modules/6.18.4-200.fc43.x86_64/extra/amdgpu.ko.xz", "xz");
  FactSet f = halo::test::probe_root(t.path());
  const Fact* s = f.find("amdgpu.module.signed");
  REQUIRE(s != nullptr);
  CHECK(s->status == Status::missing);
  CHECK(!s->not_probed());
  CHECK(s->reason.find("depmod") != std::string::npos);
  CHECK(s->source.find("host root") != std::string::npos);
}
