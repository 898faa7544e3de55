// SPDX-License-Identifier: MIT
// Where the doctor runs and what the process may do there: the runenv and numa probes and the
// derived host.virtualization, over small roots written as the kernel documents the files
// (proc(5) for /proc/self/status, sysfs-devices-node for node/online, systemd's virt.c DMI
// table for the VM vendors).
#include "fixture_tree.hpp"

#include <halo/fact.hpp>

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_root;

namespace {
std::string status_file(const std::string& seccomp, const std::string& cap_eff) {
  return "Name:\thalo-doctor\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n"
         "Groups:\t1000 \nCapEff:\t" +
         cap_eff + "\nSeccomp:\t" + seccomp + "\n";
}
} // namespace

TEST_CASE("seccomp mode and CAP_SYS_NICE come from /proc/self/status", "[probes][issue19]") {
  FixtureTree t;
  t.file("/proc/self/status", status_file("2", "00000000a80425fb")); // docker's default caps
  FactSet f = probe_root(t.path());
  CHECK(f.get_int("runenv.seccomp_mode") == 2);
  CHECK(f.get<bool>("runenv.cap_sys_nice") == false);

  t.file("/proc/self/status", status_file("0", "000001ffffffffff")); // root on the host
  f = probe_root(t.path());
  CHECK(f.get_int("runenv.seccomp_mode") == 0);
  CHECK(f.get<bool>("runenv.cap_sys_nice") == true);

  // Malformed values are errors with the file named, never a guess.
  t.file("/proc/self/status", status_file("7", "zz"));
  f = probe_root(t.path());
  CHECK(f.find("runenv.seccomp_mode")->status == Status::error);
  CHECK(f.find("runenv.cap_sys_nice")->status == Status::error);
  t.file("/proc/self/status", status_file("2", "fffffffffffffffffffff")); // 84 bits: overflow
  f = probe_root(t.path());
  CHECK(f.find("runenv.cap_sys_nice")->status == Status::error);
}

TEST_CASE("the online NUMA node list is counted as the kernel writes it", "[probes][issue19]") {
  FixtureTree t;
  // The facts are kept alive while they are checked (no pointer into a temporary).
  const auto nodes = [&](const std::string& text) {
    t.file("/sys/devices/system/node/online", text);
    return probe_root(t.path());
  };
  CHECK(nodes("0\n").get_int("numa.nodes_online") == 1);
  CHECK(nodes("0-1\n").get_int("numa.nodes_online") == 2);
  CHECK(nodes("0-3,5,7-8\n").get_int("numa.nodes_online") == 7);
  for (const char* bad : {"", "1-0\n", "0-\n", "-1\n", "a\n", "0,,1\n", "0-4096\n"}) {
    INFO(bad);
    const FactSet f = nodes(bad);
    CHECK(f.find("numa.nodes_online")->status == Status::error);
  }
}

TEST_CASE("a virtual machine is told from DMI as systemd-detect-virt does, else from the CPU flag",
          "[probes][issue19]") {
  FixtureTree t;
  t.file("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor lahf_lm\n");
  FactSet f = probe_root(t.path());
  CHECK(f.get<std::string>(keys::host_virtualization) == "vm-other");

  t.file("/sys/class/dmi/id/sys_vendor", "QEMU\n");
  t.file("/sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n");
  f = probe_root(t.path());
  CHECK(f.get<std::string>(keys::host_virtualization) == "qemu");
  // product_name is read first: "KVM" there wins over sys_vendor's QEMU (systemd's order).
  t.file("/sys/class/dmi/id/product_name", "KVM\n");
  CHECK(probe_root(t.path()).get<std::string>(keys::host_virtualization) == "kvm");

  // Bare metal: a board vendor that is no hypervisor and no CPU flag.
  FixtureTree m;
  m.file("/sys/class/dmi/id/sys_vendor", "Framework\n");
  m.file("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme sse2 lahf_lm\n");
  CHECK(probe_root(m.path()).get<std::string>(keys::host_virtualization) == "none");

  // Nothing readable: not probed, not "none".
  FixtureTree e;
  e.dir("/proc");
  const FactSet none = probe_root(e.path());
  CHECK(none.find(keys::host_virtualization)->status == Status::missing);
}

TEST_CASE("the GPU firmware package and version from dpkg's or pacman's database",
          "[probes][issue21]") {
  FixtureTree d;
  // deb-control(5) stanzas; a removed package ("deinstall ok config-files") does not count.
  d.file(
      "/var/lib/dpkg/status",
      "Package: firmware-amd-graphics\nStatus: deinstall ok config-files\nVersion: 20230210-5\n\n"
      "Package: bash\nStatus: install ok installed\nVersion: 5.2.15-2+b7\n\n"
      "Package: linux-firmware\nStatus: install ok installed\nPriority: optional\n"
      "Version: 20240318.git3b128b60-0ubuntu2.23\nDescription: Firmware for Linux kernel "
      "drivers\n");
  FactSet f = probe_root(d.path());
  CHECK(f.get<std::string>("firmware.package") == "linux-firmware");
  CHECK(f.get<std::string>("firmware.package_version") == "20240318.git3b128b60-0ubuntu2.23");

  FixtureTree a;
  a.file("/var/lib/pacman/local/linux-firmware-whence-20251125-2/desc",
         "%NAME%\nlinux-firmware-whence\n");
  a.file("/var/lib/pacman/local/linux-firmware-amdgpu-20251125-2/desc",
         "%NAME%\nlinux-firmware-amdgpu\n\n%VERSION%\n20251125-2\n\n%BASE%\nlinux-firmware\n");
  f = probe_root(a.path());
  CHECK(f.get<std::string>("firmware.package") == "linux-firmware-amdgpu");
  CHECK(f.get<std::string>("firmware.package_version") == "20251125-2");

  FixtureTree none;
  none.file("/var/lib/dpkg/status", "Package: bash\nStatus: install ok installed\nVersion: 5.2\n");
  f = probe_root(none.path());
  CHECK(f.find("firmware.package_version")->status == Status::missing);
  FixtureTree rpm; // Fedora: no dpkg or pacman database, not probed
  rpm.dir("/var/lib/rpm");
  f = probe_root(rpm.path());
  CHECK(f.find("firmware.package")->reason.find("rpm") != std::string::npos);
}
