// SPDX-License-Identifier: MIT
// The boot-stack probe (checks/boot/boot_stack.cpp): detection order and the conflict refusal.
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_root;

namespace {
void tool(FixtureTree& t, std::string_view path) {
  t.file(path, "#!/bin/sh\nexit 0\n");
  t.chmod(path, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                    std::filesystem::perms::group_exec);
}
} // namespace

TEST_CASE("boot stack probe: each fixture root names its stack", "[probe][boot]") {
  for (const auto& [fixture, stack] :
       std::vector<std::pair<std::string, std::string>>{{"stack-grubby", "grubby"},
                                                        {"stack-grub-debian", "grub-debian"},
                                                        {"stack-grub-arch", "grub-arch"},
                                                        {"stack-rpm-ostree", "rpm-ostree"},
                                                        {"stack-kernelstub", "kernelstub"},
                                                        {"stack-systemd-boot", "systemd-boot"},
                                                        {"stack-nixos", "nixos"}}) {
    INFO(fixture);
    FactSet f = probe_root(halo::test::fixture(fixture));
    CHECK(f.get<std::string>("boot.stack") == stack);
    auto ev = f.get<std::vector<std::string>>("boot.evidence");
    REQUIRE(ev);
    CHECK_FALSE(ev->empty());
  }
  FactSet g = probe_root(halo::test::fixture("stack-grubby"));
  CHECK(g.get<std::string>("boot.initramfs_tool") == std::string("dracut"));
  CHECK(g.get<bool>("boot.grub_bls") == true);
  FactSet d = probe_root(halo::test::fixture("stack-grub-debian"));
  CHECK(d.get<std::string>("boot.initramfs_tool") == std::string("update-initramfs"));
  CHECK(d.get<std::vector<std::string>>("boot.grub_d_files") ==
        std::vector<std::string>{"init-select.cfg"});
}

TEST_CASE("boot stack probe: conflicting evidence is an error naming both", "[probe][boot]") {
  FactSet f = probe_root(halo::test::fixture("stack-conflict"));
  const Fact* s = f.find("boot.stack");
  REQUIRE(s != nullptr);
  CHECK(s->status == Status::error);
  CHECK(s->reason.find("grubby") != std::string::npos);
  CHECK(s->reason.find("grub-debian") != std::string::npos);

  FixtureTree t;
  t.file("/etc/os-release", "ID=nixos\n");
  t.file("/run/ostree-booted", "");
  FactSet n = probe_root(t.path());
  CHECK(n.find("boot.stack")->status == Status::error);
}

TEST_CASE("boot stack probe: a non-executable file is not a tool; nothing found is missing",
          "[probe][boot]") {
  FixtureTree t;
  t.file("/etc/os-release", "ID=debian\n");
  t.file("/usr/sbin/update-grub", "not executable\n");
  t.chmod("/usr/sbin/update-grub", std::filesystem::perms::owner_read);
  FactSet f = probe_root(t.path());
  CHECK(f.get<std::vector<std::string>>("boot.tools") == std::vector<std::string>{});
  CHECK(f.find("boot.stack")->status == Status::missing);

  tool(t, "/usr/sbin/update-grub");
  FactSet g = probe_root(t.path());
  CHECK(g.get<std::string>("boot.stack") == std::string("grub-debian"));
}
