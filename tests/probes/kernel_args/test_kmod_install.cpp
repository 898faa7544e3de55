// SPDX-License-Identifier: MIT
// modprobe.d install commands judged as kmod (libkmod-module.c: system(cmd) instead of
// inserting the module) and /bin/sh run them. cli.kmod_diff runs the same kind of commands in
// real /bin/sh with recording modprobe/insmod stand-ins and compares.
#include "kernel_args/kmod_install.hpp"

#include <catch2/catch.hpp>

using namespace halo::probes;

namespace {
InstallEffect own(std::string_view cmd, std::string_view m = "amdgpu") {
  return judge_install_command(cmd, m).effect;
}
InstallEffect dep(std::string_view cmd, std::string_view m = "ttm") {
  return judge_install_command(cmd, m).effect_as_dependency;
}
} // namespace

TEST_CASE("install commands that never load the module", "[kmod_install]") {
  CHECK(own("/bin/false") == InstallEffect::blocks);
  CHECK(own("false") == InstallEffect::blocks);
  CHECK(own("/bin/true") == InstallEffect::blocks);
  CHECK(own(":") == InstallEffect::blocks);
  CHECK(own("/bin/sh -c 'exit 1'") == InstallEffect::blocks);
  CHECK(own("/bin/sh -c \"exit 0\"") == InstallEffect::blocks);
  CHECK(own("echo amdgpu is disabled >&2; exit 1") == InstallEffect::blocks);
  CHECK(own("/usr/bin/logger -t gpu blocked") == InstallEffect::blocks);
  // A module parameter word that names the module is not a module to load.
  CHECK(own("/sbin/modprobe --ignore-install ttm amdgpu") == InstallEffect::blocks);
  // Dry run, removal and showing the configuration load nothing.
  CHECK(own("/sbin/modprobe -n --ignore-install amdgpu") == InstallEffect::blocks);
  CHECK(own("/sbin/modprobe -r amdgpu") == InstallEffect::blocks);
  CHECK(own("/sbin/modprobe -i --show-depends amdgpu") == InstallEffect::blocks);
  // Without --ignore-install the inner modprobe runs the same install line again, endlessly.
  const auto loop = judge_install_command("/sbin/modprobe amdgpu", "amdgpu");
  CHECK(loop.effect == InstallEffect::blocks);
  CHECK(loop.why.find("--ignore-install") != std::string::npos);
  // The load comes after a command that fails under `&&`.
  CHECK(own("/bin/false && /sbin/modprobe --ignore-install amdgpu") == InstallEffect::blocks);
  CHECK(own("exit 3; /sbin/modprobe -i amdgpu") == InstallEffect::blocks);
}

TEST_CASE("install wrappers that still load the module", "[kmod_install]") {
  CHECK(own("/sbin/modprobe --ignore-install amdgpu $CMDLINE_OPTS") == InstallEffect::loads);
  CHECK(own("/sbin/modprobe -i amdgpu") == InstallEffect::loads);
  CHECK(own("modprobe -qi amdgpu") == InstallEffect::loads);
  CHECK(own("/sbin/modprobe amdgpu --ignore-install") == InstallEffect::loads); // getopt permutes
  CHECK(own("/sbin/modprobe --ignore-inst amdgpu") == InstallEffect::loads);    // a prefix
  CHECK(own("/sbin/modprobe -i -C /etc/x.conf amdgpu") == InstallEffect::loads);
  CHECK(own("/sbin/modprobe -a -i ttm amdgpu") == InstallEffect::loads);
  CHECK(own("/sbin/modprobe --ignore-install amd-ttm", "amd_ttm") == InstallEffect::loads);
  CHECK(own("/sbin/modprobe --ignore-install amd-gpu") == InstallEffect::blocks); // amd_gpu
  CHECK(own("/sbin/modprobe --ignore-install $MODPROBE_MODULE") == InstallEffect::loads);
  CHECK(own("/sbin/insmod /lib/modules/6.8.0/updates/dkms/amdgpu.ko.zst") == InstallEffect::loads);
  // modprobe.d(5)'s example: another module first, then the module itself.
  CHECK(own("/sbin/modprobe barney; /sbin/modprobe --ignore-install amdgpu $CMDLINE_OPTS") ==
        InstallEffect::loads);
  CHECK(own("/bin/sh -c '/sbin/modprobe --ignore-install amdgpu && echo loaded'") ==
        InstallEffect::loads);
  CHECK(own("sleep 2; exec /sbin/modprobe --ignore-install amdgpu 2>/dev/null") ==
        InstallEffect::loads);
  CHECK(own("/bin/false || /sbin/modprobe -i amdgpu") == InstallEffect::loads);
  // Loaded, but the status is non-zero: the module is in, a dependency would stop kmod.
  CHECK(own("/sbin/modprobe -i amdgpu; false") == InstallEffect::loads);
  CHECK(dep("/sbin/modprobe -i ttm; false") == InstallEffect::blocks);
  CHECK(dep("/sbin/modprobe -i ttm $CMDLINE_OPTS") == InstallEffect::loads);
}

TEST_CASE("install commands the doctor cannot follow", "[kmod_install]") {
  CHECK(own("/usr/local/sbin/gpu-gate") == InstallEffect::unknown);
  CHECK(own("/sbin/modprobe -i $GPU_DRIVER") == InstallEffect::unknown);
  CHECK(own("/sbin/modprobe -i `cat /etc/gpu`") == InstallEffect::unknown);
  CHECK(own("if true; then /sbin/modprobe -i amdgpu; fi") == InstallEffect::unknown);
  // Loads only if another module loads first.
  CHECK(own("/sbin/modprobe barney && /sbin/modprobe -i amdgpu") == InstallEffect::unknown);
  CHECK(own("/sbin/modprobe -i amdgpu 'unterminated") == InstallEffect::unknown);
  CHECK_FALSE(judge_install_command("/usr/local/sbin/gpu-gate", "amdgpu").why.empty());
}
