// SPDX-License-Identifier: MIT
// Firmware that failed to load at boot, looked up again on disk where the kernel looks
// (checks/kernel_log/kernel_log.cpp find_firmware, drivers/base/firmware_loader/main.c fw_path[]),
// and the -2 cause the derivation gives for each case (checks/kernel_log/kernel_log_derive.cpp
// derive_firmware_now).
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_root;

namespace {

const char* kLog = "[    3.944120] amdgpu 0000:c5:00.0: amdgpu: Direct firmware load for "
                   "amdgpu/gc_11_5_1_mes_2.bin failed with error -2\n"
                   "[    3.944200] amdgpu 0000:c5:00.0: amdgpu: Direct firmware load for "
                   "amdgpu/psp_14_0_1_toc.bin failed with error -2\n"
                   "[    3.950000] amdgpu 0000:c5:00.0: probe with driver amdgpu failed with "
                   "error -2\n";

std::vector<std::string> list(const FactSet& f, const char* key) {
  return f.get<std::vector<std::string>>(key).value_or(std::vector<std::string>{"<not ok>"});
}

} // namespace

TEST_CASE("firmware failures: one installed since boot (.zst in updates/), one still missing",
          "[probe][kernel_log][firmware]") {
  FixtureTree t;
  t.file("/proc/sys/kernel/osrelease", "6.18.4-200.fc43.x86_64\n");
  t.file("/.halo/dmesg.txt", kLog);
  t.file("/lib/firmware/updates/amdgpu/gc_11_5_1_mes_2.bin.zst", "zstd data");
  t.file("/lib/firmware/amdgpu/vcn_4_0_6.bin", "unrelated");
  FactSet f = probe_root(t.path());
  CHECK(list(f, "kernel_log.firmware_on_disk") ==
        std::vector<std::string>{
            "amdgpu/gc_11_5_1_mes_2.bin: /lib/firmware/updates/amdgpu/gc_11_5_1_mes_2.bin.zst"});
  CHECK(list(f, "kernel_log.firmware_present_now") ==
        std::vector<std::string>{"amdgpu/gc_11_5_1_mes_2.bin"});
  CHECK(list(f, "kernel_log.firmware_missing_now") ==
        std::vector<std::string>{"amdgpu/psp_14_0_1_toc.bin"});
  const auto causes = list(f, "kernel_log.amdgpu_probe_causes");
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].find("still missing: amdgpu/psp_14_0_1_toc.bin") != std::string::npos);
}

TEST_CASE("firmware failures: all installed since boot means rebuild the initramfs",
          "[probe][kernel_log][firmware]") {
  FixtureTree t;
  t.file("/proc/sys/kernel/osrelease", "6.18.4-200.fc43.x86_64\n");
  t.file("/.halo/dmesg.txt", kLog);
  // The release directory and the plain directory, .xz and plain names: all on the path.
  t.file("/lib/firmware/6.18.4-200.fc43.x86_64/amdgpu/gc_11_5_1_mes_2.bin.xz", "xz");
  t.file("/lib/firmware/amdgpu/psp_14_0_1_toc.bin", "bin");
  FactSet f = probe_root(t.path());
  CHECK(list(f, "kernel_log.firmware_missing_now").empty());
  CHECK(list(f, "kernel_log.firmware_present_now").size() == 2);
  const auto causes = list(f, "kernel_log.amdgpu_probe_causes");
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].find("installed since boot") != std::string::npos);
  CHECK(causes[0].find("rebuild the initramfs") != std::string::npos);
}

TEST_CASE("firmware failures: a directory of that name, /usr/lib only, a root without firmware",
          "[probe][kernel_log][firmware]") {
  FixtureTree t;
  t.file("/proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
  t.file("/.halo/dmesg.txt", kLog);
  t.dir("/lib/firmware/amdgpu/gc_11_5_1_mes_2.bin");          // a directory is not the file
  t.file("/usr/lib/firmware/amdgpu/psp_14_0_1_toc.bin", "x"); // not on the kernel's path
  FactSet f = probe_root(t.path());
  CHECK(list(f, "kernel_log.firmware_present_now").empty());
  CHECK(list(f, "kernel_log.firmware_missing_now").size() == 2);

  FixtureTree bare;
  bare.file("/proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
  bare.file("/.halo/dmesg.txt", kLog);
  FactSet b = probe_root(bare.path());
  const Fact* m = b.find("kernel_log.firmware_missing_now");
  REQUIRE(m != nullptr);
  CHECK(m->not_probed());
  const auto causes = list(b, "kernel_log.amdgpu_probe_causes");
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].find("a firmware file is missing") != std::string::npos);

  // A clean log needs no firmware directory: nothing failed, nothing is missing now.
  FixtureTree clean;
  clean.file("/proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
  clean.file("/.halo/dmesg.txt", "[    3.900000] [drm] amdgpu kernel modesetting enabled.\n");
  FactSet c = probe_root(clean.path());
  CHECK(list(c, "kernel_log.firmware_on_disk").empty());
  CHECK(list(c, "kernel_log.firmware_missing_now").empty());
  CHECK(list(c, "kernel_log.firmware_present_now").empty());
}

TEST_CASE("a module refused by the lockdown alone is a rejected module too",
          "[probe][kernel_log]") {
  // security/lockdown/lockdown.c: module_sig_check() asks the lockdown when signatures are not
  // enforced, and it says "Lockdown: <comm>: unsigned module loading is restricted".
  FixtureTree t;
  t.file("/proc/sys/kernel/osrelease", "6.18.4-200.fc43.x86_64\n");
  t.file("/.halo/dmesg.txt", "[    4.812345] Lockdown: modprobe: unsigned module loading is "
                             "restricted; see man kernel_lockdown.7\n");
  FactSet f = probe_root(t.path());
  const auto rejected = list(f, "kernel_log.module_signature_rejected");
  REQUIRE(rejected.size() == 1);
  CHECK(rejected[0].find("unsigned module loading is restricted") != std::string::npos);
  const auto kept = list(f, "kernel_log.lines");
  CHECK(kept.size() == 1); // kept for capture bundles
}
