// SPDX-License-Identifier: MIT
// WSL2 (issue 37): the wsl probe over small roots laid out as WSL and AMD document them:
// Microsoft's kernel release and WSL's environment (microsoft/WSL issues 423, 4555), dxgkrnl's
// /dev/dxg (mode 0666, drivers/hv/dxgkrnl/dxgmodule.c), ROCr's DXG switch (rocm-systems
// core/util/flag.h; on by default from 7.13, PR 3863) and its dlopen("librocdxg.so")
// (thunk_loader.cpp) along dlopen(3)'s search path.
#include "fixture_tree.hpp"

#include <halo/fact.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;
using halo::test::probe_root;

namespace {

std::string environ_of(std::initializer_list<std::pair<const char*, const char*>> vars) {
  std::string out = "PATH=/usr/bin:/bin";
  out.push_back('\0');
  for (const auto& [k, v] : vars) {
    out += std::string(k) + "=" + v;
    out.push_back('\0');
  }
  return out;
}

/// A WSL2 distro with /dev/dxg and ROCm `version` in /opt/rocm-<version> (AMD's layout).
void wsl2_rocm(FixtureTree& t, const std::string& version, const std::string& dxg_mode = "0666") {
  t.file("/proc/sys/kernel/osrelease", "6.6.87.2-microsoft-standard-WSL2\n");
  t.file("/.halo/nodes.json", "{\"/dev/dxg\": {\"type\": \"char\", \"mode\": \"" + dxg_mode +
                                  "\", \"uid\": 0, \"gid\": 0}}\n");
  t.file("/opt/rocm-" + version + "/.info/version", version + "\n");
  t.file("/opt/rocm-" + version + "/lib/libhsa-runtime64.so.1", "not ELF\n");
  t.link("/opt/rocm", "/opt/rocm-" + version);
}

} // namespace

TEST_CASE("WSL2 is recognised from its kernel release, WSL's environment or /dev/dxg",
          "[probes][issue37]") {
  SECTION("an Ubuntu kernel on bare metal is not WSL2") {
    FixtureTree t;
    t.file("/proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>(keys::wsl_wsl2) == false);
    CHECK(f.get<std::string>(keys::wsl_no_gpu_message) == std::string());
  }
  SECTION("Microsoft's WSL2 kernel") {
    FixtureTree t;
    t.file("/proc/sys/kernel/osrelease", "5.15.167.4-microsoft-standard-WSL2\n");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>(keys::wsl_wsl2) == true);
    // PCI/DRM/KFD list no GPU there: per-GPU rules say so instead of "no AMD GPU found".
    CHECK(f.get<std::string>(keys::wsl_no_gpu_message)->starts_with("WSL2: "));
  }
  SECTION("the first WSL2 kernels, 4.19.x-microsoft-standard") {
    FixtureTree t;
    t.file("/proc/sys/kernel/osrelease", "4.19.128-microsoft-standard\n");
    CHECK(probe_one(t.path(), "wsl").get<bool>(keys::wsl_wsl2) == true);
  }
  SECTION("a user's own build of Microsoft's kernel keeps Microsoft and WSL2 in its release") {
    FixtureTree t;
    t.file("/proc/sys/kernel/osrelease", "6.6.36.3-Microsoft-custom-wsl2+\n");
    CHECK(probe_one(t.path(), "wsl").get<bool>(keys::wsl_wsl2) == true);
    // WSL2 before Microsoft: not the kernel's order, and no other marker here.
    t.file("/proc/sys/kernel/osrelease", "6.6.36-wsl2-microsoftish\n");
    CHECK(probe_one(t.path(), "wsl").get<bool>(keys::wsl_wsl2) == false);
  }
  SECTION("WSL1 (a -Microsoft release, no /dev/dxg) is not WSL2 even with WSL_DISTRO_NAME") {
    FixtureTree t;
    t.file("/proc/sys/kernel/osrelease", "4.4.0-19041-Microsoft\n");
    t.file("/proc/self/environ", environ_of({{"WSL_DISTRO_NAME", "Ubuntu"}}));
    CHECK(probe_one(t.path(), "wsl").get<bool>(keys::wsl_wsl2) == false);
  }
  SECTION("a user's own kernel under WSL2: WSL_INTEROP still tells") {
    FixtureTree t;
    t.file("/proc/sys/kernel/osrelease", "6.12.0-mykernel\n");
    t.file("/proc/self/environ", environ_of({{"WSL_INTEROP", "/run/WSL/8_interop"}}));
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>(keys::wsl_wsl2) == true);
    CHECK(f.find(keys::wsl_wsl2)->source.find("WSL_INTEROP") != std::string::npos);
  }
}

TEST_CASE("where the doctor runs: WSL2 is its own place, a container on WSL2 stays a container",
          "[probes][issue37]") {
  FixtureTree t;
  wsl2_rocm(t, "7.2.1");
  FactSet f = probe_root(t.path());
  CHECK(f.get<std::string>(keys::host_runs_in) == std::string("wsl2"));
  CHECK(f.get<bool>("host.container") == false);
  t.file("/.dockerenv", "");
  f = probe_root(t.path());
  CHECK(f.get<std::string>(keys::host_runs_in) == std::string("docker"));
  CHECK(f.get<bool>(keys::wsl_wsl2) == true);
}

TEST_CASE("/dev/dxg: ROCr opens it O_RDWR; dxgkrnl creates it 0666", "[probes][issue37]") {
  FixtureTree t;
  wsl2_rocm(t, "7.2.1");
  FactSet f = probe_one(t.path(), "wsl");
  CHECK(f.get<bool>(keys::wsl_dxg_exists) == true);
  CHECK(f.get<bool>("wsl.dxg.rw") == true);
  // A narrower mode read from a root: who may open it cannot be told, and is not guessed.
  t.file("/.halo/nodes.json",
         "{\"/dev/dxg\": {\"type\": \"char\", \"mode\": \"0600\", \"uid\": 0, \"gid\": 0}}\n");
  f = probe_one(t.path(), "wsl");
  CHECK(f.find("wsl.dxg.rw")->status == Status::missing);
  // No node at all.
  t.file("/.halo/nodes.json", "{}\n");
  f = probe_one(t.path(), "wsl");
  CHECK(f.get<bool>(keys::wsl_dxg_exists) == false);
}

TEST_CASE("HSA_ENABLE_DXG_DETECTION as ROCr's flag.h reads it, per ROCm release",
          "[probes][issue37]") {
  const auto enabled = [](const std::string& version, const char* value) {
    FixtureTree t;
    wsl2_rocm(t, version);
    if (value != nullptr)
      t.file("/proc/self/environ", environ_of({{"HSA_ENABLE_DXG_DETECTION", value}}));
    const FactSet f = probe_one(t.path(), "wsl");
    return f.get<bool>("wsl.dxg_detection_enabled");
  };
  // Before 7.13: `var == "1"` only.
  CHECK(enabled("7.2.1", nullptr) == false);
  CHECK(enabled("7.2.1", "1") == true);
  CHECK(enabled("7.2.1", "true") == false);
  CHECK(enabled("7.2.1", "0") == false);
  // 7.13 and later: on unless "0" (rocm-systems PR 3863).
  CHECK(enabled("7.13.0", nullptr) == true);
  CHECK(enabled("7.13.0", "yes") == true);
  CHECK(enabled("7.13.0", "0") == false);

  // No .info/version: what an unset variable means could not be told.
  FixtureTree t;
  wsl2_rocm(t, "7.2.1");
  std::filesystem::remove(t.path() / "opt/rocm-7.2.1/.info/version");
  const FactSet f = probe_one(t.path(), "wsl");
  CHECK(f.find("wsl.dxg_detection_enabled")->status == Status::missing);
}

TEST_CASE("librocdxg: dlopen(\"librocdxg.so\") from ROCr, along dlopen(3)'s search path",
          "[probes][issue37]") {
  SECTION("installed to /opt/rocm/lib and listed in ld.so.conf.d") {
    FixtureTree t;
    wsl2_rocm(t, "7.2.0");
    t.file("/opt/rocm-7.2.0/lib/librocdxg.so.1", "x");
    t.link("/opt/rocm-7.2.0/lib/librocdxg.so", "librocdxg.so.1");
    t.file("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
    t.file("/etc/ld.so.conf.d/rocm.conf", "# ROCm\n/opt/rocm/lib\n");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>("wsl.librocdxg.found") == true);
    CHECK(f.get<bool>("wsl.librocdxg.on_loader_path") == true);
    CHECK(f.get<std::string>("wsl.librocdxg.loader_path") ==
          std::string("/opt/rocm/lib/librocdxg.so (ld.so.conf)"));
    // /opt/rocm and /opt/rocm-7.2.0 are one directory: each file is listed once.
    CHECK(f.get<std::vector<std::string>>("wsl.librocdxg.paths")->size() == 2);
  }
  SECTION("only the versioned file: the unversioned name ROCr asks for is missing") {
    FixtureTree t;
    wsl2_rocm(t, "7.2.0");
    t.file("/opt/rocm-7.2.0/lib/librocdxg.so.1", "x");
    t.file("/etc/ld.so.conf", "/opt/rocm/lib\n");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>("wsl.librocdxg.found") == true);
    CHECK(f.get<bool>("wsl.librocdxg.on_loader_path") == false);
  }
  SECTION("LD_LIBRARY_PATH comes first") {
    FixtureTree t;
    wsl2_rocm(t, "7.2.0");
    t.file("/home/dev/rocdxg/librocdxg.so", "x");
    t.file("/proc/self/environ", environ_of({{"LD_LIBRARY_PATH", "relative:/home/dev/rocdxg"}}));
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<std::string>("wsl.librocdxg.loader_path") ==
          std::string("/home/dev/rocdxg/librocdxg.so (LD_LIBRARY_PATH)"));
  }
  SECTION("in /opt/rocm/lib, no ld.so.conf entry, ROCr's own search path unreadable") {
    FixtureTree t;
    wsl2_rocm(t, "7.2.0");
    t.file("/opt/rocm-7.2.0/lib/librocdxg.so", "x");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>("wsl.librocdxg.found") == true);
    // Whether ROCr's DT_RUNPATH names its own directory decides it: could not tell.
    CHECK(f.find("wsl.librocdxg.on_loader_path")->status == Status::error);
  }
  SECTION("ROCm without librocdxg") {
    FixtureTree t;
    wsl2_rocm(t, "7.2.3");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>("wsl.rocm.present") == true);
    CHECK(f.get<std::string>("wsl.rocm.version") == std::string("7.2.3"));
    CHECK(f.get<bool>("wsl.librocdxg.found") == false);
    CHECK(f.get<bool>("wsl.librocdxg.on_loader_path") == false);
  }
}

TEST_CASE("the ROCm release WSL2's rules judge is the rocm_install probe's, of the ROCm in use",
          "[probes][issue37]") {
  SECTION("a TheRock root says its release in its manifest, with no .info/version") {
    FixtureTree t;
    wsl2_rocm(t, "7.13.0");
    std::filesystem::remove(t.path() / "opt/rocm-7.13.0/.info/version");
    t.file("/opt/rocm-7.13.0/share/therock/therock_manifest.json",
           R"({"rocm_version": "7.13.0", "the_rock_commit": "0"})");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<std::string>("wsl.rocm.version") == std::string("7.13.0"));
    CHECK(f.find("wsl.rocm.version")->source ==
          "/opt/rocm-7.13.0/share/therock/therock_manifest.json rocm_version");
    CHECK(f.get<bool>("wsl.dxg_detection_enabled") == true);
  }
  SECTION("$ROCM_PATH's runtime is the one in use; /opt/rocm's release is not its release") {
    FixtureTree t;
    wsl2_rocm(t, "7.2.1");
    t.file("/proc/self/environ", environ_of({{"ROCM_PATH", "/home/u/rocm"}}));
    t.file("/home/u/rocm/lib/libhsa-runtime64.so.1", "not ELF\n");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<std::string>("wsl.rocm.lib_dir") == std::string("/home/u/rocm/lib"));
    REQUIRE(f.find("wsl.rocm.version") != nullptr);
    CHECK(f.find("wsl.rocm.version")->status == Status::missing);
    CHECK(f.find("wsl.rocm.version")->reason.find("/home/u/rocm does not say its release") !=
          std::string::npos);
    CHECK(f.find("wsl.dxg_detection_enabled")->status == Status::missing);
  }
}

namespace {

/// A venv at /home/dev/.venv, active (VIRTUAL_ENV), with a torch and TheRock's rocm-sdk-core
/// `version` (SITE/_rocm_sdk_core: .info/version, lib/libhsa-runtime64.so.1 as a stand-in).
std::string therock_venv(FixtureTree& t, const std::string& version,
                         std::initializer_list<std::pair<const char*, const char*>> more = {}) {
  const std::string venv = "/home/dev/.venv";
  const std::string site = venv + "/lib/python3.12/site-packages";
  t.file(venv + "/pyvenv.cfg", "home = /usr/bin\nversion = 3.12.3\n");
  t.file(site + "/torch/version.py",
         "__version__ = '2.11.0+rocm" + version + "'\ncuda = None\nhip = '" + version + "'\n");
  t.file(site + "/_rocm_sdk_core/.info/version", version + "\n");
  t.file(site + "/_rocm_sdk_core/lib/libhsa-runtime64.so.1", "not ELF\n");
  std::string env = "PATH=/usr/bin:/bin";
  env.push_back('\0');
  env += "VIRTUAL_ENV=" + venv;
  env.push_back('\0');
  for (const auto& [k, v] : more) {
    env += std::string(k) + "=" + v;
    env.push_back('\0');
  }
  t.file("/proc/self/environ", env);
  return site;
}

} // namespace

TEST_CASE("WSL2 with TheRock's wheels: the venv's ROCr and librocdxg on its loader path",
          "[probes][issue45]") {
  SECTION(
      "librocdxg only in /opt/rocm/lib: the wheel's ROCr cannot reach it (librocdxg issue 46)") {
    FixtureTree t;
    wsl2_rocm(t, "7.13.0");
    t.file("/opt/rocm-7.13.0/lib/librocdxg.so", "x");
    const std::string site = therock_venv(t, "7.13.0");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>("wsl.sdk.present") == true);
    CHECK(f.get<std::string>("wsl.sdk.lib_dir") == site + "/_rocm_sdk_core/lib");
    CHECK(f.get<std::string>("wsl.sdk.version") == std::string("7.13.0"));
    // A wheel's RUNPATH is relative to its own directory: /opt/rocm/lib is out of its reach even
    // though the stand-in's RUNPATH cannot be read.
    CHECK(f.get<bool>("wsl.sdk.librocdxg.on_loader_path") == false);
    // /opt/rocm's own ROCr may still reach it through its unread RUNPATH.
    CHECK(f.find("wsl.librocdxg.on_loader_path")->status == Status::error);
    CHECK(f.get<bool>("wsl.sdk.dxg_detection_enabled") == true);
  }
  SECTION("LD_LIBRARY_PATH names it: found, as the issue's workaround") {
    FixtureTree t;
    wsl2_rocm(t, "7.13.0");
    t.file("/opt/rocm-7.13.0/lib/librocdxg.so", "x");
    therock_venv(t, "7.13.0", {{"LD_LIBRARY_PATH", "/opt/rocm/lib"}});
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<std::string>("wsl.sdk.librocdxg.loader_path") ==
          std::string("/opt/rocm/lib/librocdxg.so (LD_LIBRARY_PATH)"));
  }
  SECTION("installed into rocm-sdk path --root (the README): searched, reached only if the "
          "unread RUNPATH names it") {
    FixtureTree t;
    t.file("/proc/sys/kernel/osrelease", "6.6.87.2-microsoft-standard-WSL2\n");
    const std::string site = therock_venv(t, "7.13.0");
    t.file(site + "/_rocm_sdk_devel/lib/librocdxg.so", "x");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>("wsl.rocm.present") == false);
    CHECK(f.get<bool>("wsl.librocdxg.found") == true);
    CHECK(f.get<std::vector<std::string>>("wsl.librocdxg.paths") ==
          std::vector<std::string>{site + "/_rocm_sdk_devel/lib/librocdxg.so"});
    CHECK(f.find("wsl.sdk.librocdxg.on_loader_path")->status == Status::error);
  }
  SECTION("only the versioned file in the wheel's own directory: 7.13 does not look there, a "
          "later release may") {
    FixtureTree t;
    t.file("/proc/sys/kernel/osrelease", "6.6.87.2-microsoft-standard-WSL2\n");
    std::string site = therock_venv(t, "7.13.0");
    t.file(site + "/_rocm_sdk_core/lib/librocdxg.so.1", "x");
    CHECK(probe_one(t.path(), "wsl").get<bool>("wsl.sdk.librocdxg.on_loader_path") == false);
    FixtureTree u;
    u.file("/proc/sys/kernel/osrelease", "6.6.87.2-microsoft-standard-WSL2\n");
    site = therock_venv(u, "10.0.0");
    u.file(site + "/_rocm_sdk_core/lib/librocdxg.so.1", "x");
    const FactSet f = probe_one(u.path(), "wsl");
    CHECK(f.find("wsl.sdk.librocdxg.on_loader_path")->status == Status::missing);
    CHECK(f.find("wsl.sdk.librocdxg.on_loader_path")->reason.find("PR 8912") != std::string::npos);
  }
  SECTION("the wheel's release decides DXG detection, not /opt/rocm's") {
    FixtureTree t;
    wsl2_rocm(t, "7.13.0");
    therock_venv(t, "7.12.0");
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>("wsl.dxg_detection_enabled") == true);
    CHECK(f.get<bool>("wsl.sdk.dxg_detection_enabled") == false);
  }
  SECTION("a venv without rocm-sdk-core") {
    FixtureTree t;
    wsl2_rocm(t, "7.2.0");
    const std::string site = therock_venv(t, "7.13.0");
    std::filesystem::remove(t.path() /
                            (site.substr(1) + "/_rocm_sdk_core/lib/libhsa-runtime64.so.1"));
    const FactSet f = probe_one(t.path(), "wsl");
    CHECK(f.get<bool>("wsl.sdk.present") == false);
    CHECK(f.find("wsl.sdk.librocdxg.on_loader_path")->status == Status::missing);
  }
}

TEST_CASE("WSL2: the GPU-PV adapters behind /dev/dxg are dxgkrnl's per-GPU VMBus channels",
          "[probes][issue45]") {
  FixtureTree t;
  wsl2_rocm(t, "7.2.0");
  SECTION("no VMBus devices listed: unknown") {
    CHECK(probe_one(t.path(), "wsl").find("wsl.gpupv.vgpu_channels")->status == Status::missing);
  }
  SECTION("the global channel only: no adapter") {
    t.file("/sys/bus/vmbus/devices/aaaa/class_id", "{dde9cbc0-5060-4436-9448-ea1254a5d177}\n");
    t.file("/sys/bus/vmbus/devices/bbbb/class_id", "{f8615163-df3e-46c5-913f-f2d2f965ed0e}\n");
    CHECK(probe_one(t.path(), "wsl").get<std::int64_t>("wsl.gpupv.vgpu_channels") == 0);
  }
  SECTION("two per-GPU channels, either case") {
    t.file("/sys/bus/vmbus/devices/aaaa/class_id", "{dde9cbc0-5060-4436-9448-ea1254a5d177}\n");
    t.file("/sys/bus/vmbus/devices/cccc/class_id", "{6e382d18-3336-4f4b-acc4-2b7703d4df4a}\n");
    t.file("/sys/bus/vmbus/devices/dddd/class_id", "{6E382D18-3336-4F4B-ACC4-2B7703D4DF4A}\n");
    CHECK(probe_one(t.path(), "wsl").get<std::int64_t>("wsl.gpupv.vgpu_channels") == 2);
  }
}
