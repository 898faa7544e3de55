// SPDX-License-Identifier: MIT
// Per-rule verdicts on the fixture roots rebuilt from real machine states: the behaviour users
// rely on, asserted rule by rule (the goldens in tests/fixtures/*/expected.* pin the full output).
#include "fixture_tree.hpp"

#include <halo/checks.hpp>
#include <halo/error.hpp>
#include <halo/rules.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace halo;
using halo::test::fixture;
using halo::test::probe_root;

namespace {
std::vector<Result> run(const std::filesystem::path& root, std::int64_t reserve = 4,
                        const std::string& host_root = {}) {
  static const ProbeRegistry reg = builtin_probes();
  static const RuleSet rules = load_builtin_rules(&reg);
  return evaluate(rules, probe_root(root, reserve, host_root), Params{{"reserve_gib", reserve}});
}
/// Rules about the machine's own state, which a container may judge differently from its host
/// on purpose (access inside the container, the container's own seccomp).
bool container_scoped(std::string_view id) {
  return id == "kfd-access" || id == "render-node-access" || id == "container-seccomp-numa";
}
const Result& get(const std::vector<Result>& rs, std::string_view id) {
  for (const auto& r : rs)
    if (r.id == id) return r;
  throw std::runtime_error("no result for " + std::string(id));
}
} // namespace

TEST_CASE("Strix Halo at the default TTM cap: ttm-limit-low fails with the right fix",
          "[scenario]") {
  auto rs = run(fixture("strix-halo-default-ttm"));
  const Result& r = get(rs, "ttm-limit-low");
  CHECK(r.status == Outcome::fail);
  CHECK(r.severity == Severity::error);
  CHECK_FALSE(r.pending_reboot);
  CHECK_THAT(r.message, Catch::Contains("62.54 GiB of 125.08 GiB"));
  CHECK(r.fix["kernel_args"]["set"]["ttm.pages_limit"] == 121 * 262144);
  CHECK(r.fix["kernel_args"]["set"]["ttm.page_pool_size"] == 121 * 262144);
  CHECK(r.fix["modprobe"][0]["module"] == "ttm");
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::failed);
  // --reserve 5 gives the seed's 120 GiB = 31457280 pages.
  CHECK(get(run(fixture("strix-halo-default-ttm"), 5), "ttm-limit-low")
            .fix["kernel_args"]["set"]["ttm.pages_limit"] == 31457280);
}

TEST_CASE("Strix Halo after the fix: TTM rules pass, leftovers are flagged", "[scenario]") {
  auto rs = run(fixture("strix-halo-fixed"));
  for (const char* id : {"ttm-limit-low", "ttm-limit-overcommit", "ttm-page-pool-mismatch",
                         "ttm-wrong-module", "ttm-pending-reboot"}) {
    INFO(id);
    CHECK(get(rs, id).status == Outcome::pass);
  }
  CHECK(get(rs, "amdgpu-gttsize-deprecated").status == Outcome::fail);
  CHECK(get(rs, "amdgpu-gttsize-deprecated").severity == Severity::warning);
  CHECK(get(rs, "hsa-override-gfx").severity == Severity::info);
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::ok);
  CHECK(gate_exit_code(rs, FailOn::warning) == exit_code::failed);
}

TEST_CASE("gttsize raised without TTM, with the gtt_size typo (ROCm#5595)", "[scenario]") {
  auto rs = run(fixture("gttsize-typo-5595"));
  CHECK(get(rs, "amdgpu-gttsize-deprecated").severity == Severity::error);
  CHECK(get(rs, "cmdline-unknown-param").status == Outcome::fail);
  CHECK(get(rs, "cmdline-unknown-param").fix["kernel_args"]["remove"] ==
        nlohmann::json::array({"amdgpu.gtt_size"}));
  CHECK(get(rs, "ttm-limit-low").status == Outcome::fail);
  // 6.14 OEM has the GTT backport: not the < 6.15 error, but below OEM 6.14.0-1018.
  CHECK(get(rs, "gfx1151-kernel-min").severity == Severity::warning);
}

TEST_CASE("amdttm set on the in-kernel driver (ROCm#5562)", "[scenario]") {
  auto rs = run(fixture("amdttm-on-inbox-5562"));
  const Result& r = get(rs, "ttm-wrong-module");
  CHECK(r.status == Outcome::fail);
  CHECK_THAT(r.message, Catch::Contains("amdgpu uses ttm"));
  CHECK(r.fix["kernel_args"]["set"].contains("ttm.pages_limit"));
  CHECK(get(rs, "gfx1151-kernel-min").severity == Severity::error);
}

TEST_CASE("96 GiB carve-out: the carve-out rule, not the TTM rule", "[scenario]") {
  auto rs = run(fixture("carveout-96g-5902"));
  CHECK(get(rs, "apu-carveout-large").status == Outcome::fail);
  CHECK(get(rs, "ttm-limit-low").status == Outcome::skip);
  CHECK_THAT(get(rs, "ttm-limit-low").message, Catch::Contains("carve-out"));
}

TEST_CASE("/dev/kfd not accessible, DKMS amdttm stack", "[scenario]") {
  auto rs = run(fixture("kfd-no-access"));
  CHECK(get(rs, "kfd-access").status == Outcome::fail);
  CHECK(get(rs, "render-node-access").status == Outcome::fail);
  CHECK(get(rs, "kfd-access").fix["groups"] == nlohmann::json::array({"render", "video"}));
  CHECK(get(rs, "ttm-limit-low").status == Outcome::pass);
  CHECK(get(rs, "ttm-wrong-module").status == Outcome::pass);
}

TEST_CASE("MI300X with NUMA balancing on", "[scenario]") {
  auto rs = run(fixture("mi300x-numa-4021"));
  CHECK(get(rs, "instinct-numa-balancing").status == Outcome::fail);
  CHECK(get(rs, "instinct-numa-balancing").fix["sysctl"]["kernel.numa_balancing"] == "0");
  CHECK(get(rs, "instinct-iommu-pt").status == Outcome::fail);
  CHECK(get(rs, "ttm-limit-low").status == Outcome::skip);
  CHECK(get(rs, "gfx1151-kernel-min").status == Outcome::skip);
}

TEST_CASE("no AMD GPU: every GPU rule skips with that reason", "[scenario]") {
  auto rs = run(fixture("no-amd-gpu"));
  for (const auto& r : rs) {
    INFO(r.id);
    CHECK(r.status != Outcome::fail);
    CHECK(r.status != Outcome::error);
  }
  CHECK(get(rs, "hsa-override-gfx").message == "no AMD GPU found (PCI, DRM and KFD list none)");
  CHECK(get(rs, "ttm-limit-low").message == "no AMD GPU found (PCI, DRM and KFD list none)");
  CHECK(gate_exit_code(rs, FailOn::info) == exit_code::ok);
}

TEST_CASE("a TTM limit configured in modprobe.d but not yet active is pending a reboot (exit 4)",
          "[scenario]") {
  namespace fs = std::filesystem;
  halo::test::FixtureTree t;
  fs::copy(fixture("strix-halo-default-ttm"), t.path(),
           fs::copy_options::recursive | fs::copy_options::copy_symlinks |
               fs::copy_options::overwrite_existing);
  t.file("/etc/modprobe.d/halo-doctor-ttm.conf",
         "options ttm pages_limit=31719424 page_pool_size=31719424\n");
  auto rs = run(t.path());
  CHECK(get(rs, "ttm-limit-low").status == Outcome::fail);
  CHECK(get(rs, "ttm-limit-low").pending_reboot);
  CHECK(get(rs, "ttm-pending-reboot").status == Outcome::fail);
  CHECK(get(rs, "ttm-pending-reboot").pending_reboot);
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::pending_reboot);
  // A modprobe.d value that would still be too low is not "pending": it fails outright.
  t.file("/etc/modprobe.d/halo-doctor-ttm.conf", "options ttm pages_limit=20000000\n");
  rs = run(t.path());
  CHECK_FALSE(get(rs, "ttm-limit-low").pending_reboot);
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::failed);
}

TEST_CASE("an overcommitted TTM limit (a typo larger than RAM) is an error", "[scenario]") {
  namespace fs = std::filesystem;
  halo::test::FixtureTree t;
  fs::copy(fixture("strix-halo-fixed"), t.path(),
           fs::copy_options::recursive | fs::copy_options::copy_symlinks |
               fs::copy_options::overwrite_existing);
  t.file("/sys/module/ttm/parameters/pages_limit", "335544321\n"); // kyuz0's once-shipped typo
  auto rs = run(t.path());
  CHECK(get(rs, "ttm-limit-overcommit").severity == Severity::error);
  CHECK(get(rs, "ttm-limit-overcommit").status == Outcome::fail);
  t.file("/sys/module/ttm/parameters/pages_limit", "32700000\n"); // 124.7 GiB of 125.08
  rs = run(t.path());
  CHECK(get(rs, "ttm-limit-overcommit").severity == Severity::warning);
}

TEST_CASE("unreadable and garbage sysfs values give error results, never a pass", "[scenario]") {
  namespace fs = std::filesystem;
  halo::test::FixtureTree t;
  fs::copy(fixture("strix-halo-default-ttm"), t.path(),
           fs::copy_options::recursive | fs::copy_options::copy_symlinks |
               fs::copy_options::overwrite_existing);
  t.file("/sys/module/ttm/parameters/pages_limit", "\xff\xfe not a number\n");
  auto rs = run(t.path());
  const Result& r = get(rs, "ttm-limit-low");
  CHECK(r.status == Outcome::error);
  CHECK_THAT(r.message, Catch::Contains("ttm.pages_limit_bytes (error"));
  t.file("/proc/meminfo", "");
  rs = run(t.path());
  CHECK(get(rs, "ttm-limit-overcommit").status == Outcome::error);
}

TEST_CASE("facts saved as JSON and replayed give the same verdicts", "[scenario]") {
  for (const char* name : {"strix-halo-default-ttm", "kfd-no-access", "mi300x-numa-4021"}) {
    INFO(name);
    static const ProbeRegistry reg = builtin_probes();
    static const RuleSet rules = load_builtin_rules(&reg);
    FactSet live = probe_root(fixture(name));
    FactSet replay =
        facts_from_json_text(facts_to_json(live, "halo-doctor", "test").dump(), "saved.json");
    auto a = evaluate(rules, live, Params{{"reserve_gib", 4}});
    auto b = evaluate(rules, replay, Params{{"reserve_gib", 4}});
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].status == b[i].status);
      CHECK(a[i].message == b[i].message);
    }
  }
}

// Issue 11: classes of wrong verdicts, on roots rebuilt from public reports.
TEST_CASE("a '#' note after modprobe.d options: applied, no pending reboot, no misspelling",
          "[scenario][issue11]") {
  auto rs = run(fixture("strix-halo-modprobe-comment"));
  for (const char* id :
       {"ttm-limit-low", "ttm-pending-reboot", "cmdline-unknown-param", "module-option-invalid"}) {
    INFO(id);
    CHECK(get(rs, id).status == Outcome::pass);
  }
  CHECK_FALSE(get(rs, "ttm-limit-low").pending_reboot);
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::ok);
}

TEST_CASE("a unit suffix in modprobe.d is an invalid option that stops ttm and amdgpu",
          "[scenario][issue11]") {
  auto rs = run(fixture("strix-halo-invalid-option"));
  const Result& r = get(rs, "module-option-invalid");
  CHECK(r.status == Outcome::fail);
  CHECK(r.severity == Severity::error);
  CHECK_THAT(r.message, Catch::Contains("ttm.pages_limit=120G (/etc/modprobe.d/ttm.conf:1)"));
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::failed);
}

TEST_CASE("a pages_limit beyond 64-bit bytes is an error naming the file, never a pass",
          "[scenario][issue32]") {
  // tests/fixtures/strix-halo-ttm-overflow: strix-halo-default-ttm with 2^61 pages planted in
  // sysfs and modprobe.d. Before: pages x 4096 wrapped to 0 bytes and ttm-limit-overcommit
  // passed with "-8589934592.00 GiB".
  const FactSet facts = probe_root(fixture("strix-halo-ttm-overflow"), 4, {});
  const Fact* active = facts.find("ttm.pages_limit_bytes");
  REQUIRE(active != nullptr);
  CHECK(active->status == Status::error);
  CHECK(active->source == "/sys/module/ttm/parameters/pages_limit");
  CHECK_THAT(active->reason,
             Catch::Contains("2305843009213693952 pages x 4096 bytes does not fit"));
  CHECK(facts.get_int("ttm.pages_limit_pages") == std::int64_t{1} << 61);
  const Fact* configured = facts.find("ttm.configured.pages_limit_bytes");
  REQUIRE(configured != nullptr);
  CHECK(configured->status == Status::error);
  CHECK(configured->source == "/etc/modprobe.d/ttm.conf:1");
  auto rs = run(fixture("strix-halo-ttm-overflow"));
  for (const char* id : {"ttm-limit-overcommit", "ttm-limit-low", "ttm-page-pool-mismatch"}) {
    INFO(id);
    const Result& r = get(rs, id);
    CHECK(r.status == Outcome::error);
    CHECK_THAT(r.message,
               Catch::Contains("ttm.pages_limit_bytes (error: 2305843009213693952 pages"));
    CHECK_THAT(r.message, !Catch::Contains("-8589934592"));
  }
  // The same root with the plain default limit: the rule passes there, so the error above is
  // the planted value's doing.
  CHECK(get(run(fixture("strix-halo-default-ttm")), "ttm-limit-overcommit").status ==
        Outcome::pass);
}

TEST_CASE("a GPU that never reached KFD: gfx target from the PCI id, unbound GPU named",
          "[scenario][issue11]") {
  auto rs = run(fixture("strix-halo-kernel-too-old"));
  const Result& k = get(rs, "gfx1151-kernel-min");
  CHECK(k.status == Outcome::fail);
  CHECK(k.severity == Severity::error);
  const Result& d = get(rs, "amdgpu-driver-loaded");
  CHECK(d.status == Outcome::fail);
  CHECK_THAT(d.message, Catch::Contains("0000:c5:00.0 (Strix Halo"));
  CHECK_THAT(d.message, Catch::Contains("no driver is bound"));
  // Rules about the GPU's memory skip instead of "could not be checked".
  for (const char* id : {"ttm-limit-low", "apu-carveout-large"}) {
    INFO(id);
    CHECK(get(rs, id).status == Outcome::skip);
  }
}

TEST_CASE("a dGPU held by vfio-pci is named; amd_iommu=on is reported as ignored",
          "[scenario][issue11]") {
  auto rs = run(fixture("strix-halo-r9700-vfio"));
  const Result& d = get(rs, "amdgpu-driver-loaded");
  CHECK(d.status == Outcome::fail);
  CHECK(d.severity == Severity::warning);
  CHECK_THAT(d.message, Catch::Contains("Radeon AI PRO R9700, gfx1201): bound to vfio-pci"));
  CHECK_THAT(get(rs, "cmdline-unknown-param").message,
             Catch::Contains("amd_iommu=on has no effect"));
  CHECK(get(rs, "ttm-limit-low").status == Outcome::pass);
}

TEST_CASE("a container without /dev/dri gets the container remedy", "[scenario][issue11]") {
  auto rs = run(fixture("strix-halo-docker-no-dri"));
  const Result& r = get(rs, "render-node-access");
  CHECK(r.status == Outcome::fail);
  CHECK_THAT(r.message, Catch::Contains("no /dev/dri/renderD* node in this docker container"));
  CHECK_THAT(r.message, Catch::Contains("--device=/dev/dri"));
  // The same missing node on bare metal is not told to pass container flags.
  auto bare = run(fixture("strix-halo-kernel-too-old"));
  CHECK_THAT(get(bare, "render-node-access").message, !Catch::Contains("--device"));
}

TEST_CASE("the RDNA3.5 kernel minimum applies to Strix Point (gfx1150) too",
          "[scenario][issue21]") {
  auto rs = run(fixture("strix-point-6.14-generic"));
  const Result& r = get(rs, "gfx1151-kernel-min");
  CHECK(r.status == Outcome::fail);
  CHECK(r.severity == Severity::error);
  CHECK_THAT(r.message, Catch::Contains("gfx1150"));
  // A GPU outside the family is not judged by it.
  CHECK(get(run(fixture("mi300x-numa-4021")), "gfx1151-kernel-min").status == Outcome::skip);
  // The same Strix Point on Ubuntu's fixed HWE kernel 6.17.0-19 passes.
  CHECK(get(run(fixture("strix-point-6.17.0-19-hwe")), "gfx1151-kernel-min").status ==
        Outcome::pass);
  // Krackan Point (gfx1152): CachyOS 6.18.3 is below the 6.18.4 minimum, Ubuntu's 7.0 above it.
  const auto below = run(fixture("krackan-6.18.3-cachyos"));
  CHECK(get(below, "gfx1151-kernel-min").status == Outcome::fail);
  CHECK_THAT(get(below, "gfx1151-kernel-min").message, Catch::Contains("gfx1152"));
  CHECK(get(run(fixture("krackan-7.0-ubuntu2604")), "gfx1151-kernel-min").status == Outcome::pass);
}

// Issue 19: for every rule, the verdict inside toolbox equals the verdict on the bare-metal host.
TEST_CASE("inside toolbox every rule gets the bare-metal verdict; docker without the host "
          "skips host-configuration rules",
          "[scenario][issue19]") {
  auto bare = run(fixture("fedora-host-pending-ttm"));
  auto box = run(fixture("fedora-toolbox-on-pending-ttm"));
  REQUIRE(bare.size() == box.size());
  for (std::size_t i = 0; i < bare.size(); ++i) {
    INFO(bare[i].id);
    CHECK(bare[i].id == box[i].id);
    CHECK(bare[i].status == box[i].status);
    CHECK(bare[i].severity == box[i].severity);
    CHECK(bare[i].pending_reboot == box[i].pending_reboot);
  }
  CHECK(get(box, "ttm-limit-low").pending_reboot);
  CHECK(gate_exit_code(box, FailOn::error) == exit_code::pending_reboot);

  auto docker = run(fixture("fedora-docker-no-host-root"));
  for (const char* id : {"ttm-pending-reboot", "ttm-wrong-module", "module-option-invalid"}) {
    INFO(id);
    CHECK(get(docker, id).status == Outcome::skip);
    CHECK_THAT(get(docker, id).message, Catch::Contains("run halo-doctor on the host"));
  }
}

// Issue 19: an Ubuntu distrobox on a Fedora host judges the Fedora host's configuration, and
// fix plans the host's grubby and dracut (tests/cli/fix.sh runs the script side).
TEST_CASE("inside an Ubuntu distrobox every rule gets the Fedora host's verdict",
          "[scenario][issue19]") {
  auto bare = run(fixture("fedora-host-pending-ttm"));
  auto box = run(fixture("ubuntu-distrobox-on-fedora-pending-ttm"));
  REQUIRE(bare.size() == box.size());
  for (std::size_t i = 0; i < bare.size(); ++i) {
    INFO(bare[i].id);
    CHECK(bare[i].status == box[i].status);
    CHECK(bare[i].severity == box[i].severity);
    CHECK(bare[i].pending_reboot == box[i].pending_reboot);
  }
  CHECK(gate_exit_code(box, FailOn::error) == exit_code::pending_reboot);
}

// Issue 19: docker on an MI300X node, with the host's / mounted at /host and without it.
TEST_CASE("docker on an MI300X node: host rules need --host-root, and then match bare metal",
          "[scenario][issue19]") {
  const auto root = fixture("mi300x-docker-rocm-pytorch");
  auto bare = run(fixture("mi300x-host-tuned"));
  auto mounted = run(root, 4, (root / "host").string());
  REQUIRE(bare.size() == mounted.size());
  for (std::size_t i = 0; i < bare.size(); ++i) {
    INFO(bare[i].id);
    CHECK(bare[i].id == mounted[i].id);
    if (container_scoped(bare[i].id)) continue;
    CHECK(bare[i].status == mounted[i].status);
    CHECK(bare[i].severity == mounted[i].severity);
  }
  CHECK(get(mounted, "container-seccomp-numa").status == Outcome::fail);
  CHECK(get(bare, "container-seccomp-numa").status == Outcome::skip);

  auto unmounted = run(root);
  for (const auto& r : unmounted) {
    const Result& b = get(bare, r.id);
    INFO(r.id);
    // Without the host, a rule may skip for it, never pass where bare metal fails or the reverse.
    if (r.status == Outcome::skip && b.status != Outcome::skip) {
      CHECK_THAT(r.message, Catch::Contains("run halo-doctor on the host"));
      continue;
    }
    if (container_scoped(r.id)) continue;
    CHECK(r.status == b.status);
  }
  CHECK(get(unmounted, "ttm-pending-reboot").status == Outcome::skip);
}

// Issue 21 part 2: why amdgpu is not driving a GPU, from the kernel log.
TEST_CASE("the kernel log's probe error gives the cause", "[scenario][issue21]") {
  const Result enomem = get(run(fixture("dgpu-probe-enomem-2927")), "amdgpu-probe-failed");
  CHECK(enomem.status == Outcome::fail);
  CHECK_THAT(enomem.message, Catch::Contains("0000:03:00.0: -12"));
  CHECK_THAT(enomem.message, Catch::Contains("Above 4G Decoding"));
  const Result einval = get(run(fixture("strix-halo-kernel-too-old")), "amdgpu-probe-failed");
  CHECK_THAT(einval.message, Catch::Contains("-22 (the kernel does not know this GPU's IP blocks"));
  // No capture in the root: skipped with the reason, not an error and not a pass.
  const Result none = get(run(fixture("strix-halo-fixed")), "amdgpu-probe-failed");
  CHECK(none.status == Outcome::skip);
}

TEST_CASE("a firmware file on disk but not in the initramfs is named, with the image",
          "[scenario][issue21]") {
  const auto rs = run(fixture("vega-m-firmware-not-in-initramfs"));
  const Result& r = get(rs, "amdgpu-firmware-initramfs");
  CHECK(r.status == Outcome::fail);
  CHECK_THAT(r.message, Catch::Contains("amdgpu/vegam_pfp.bin"));
  CHECK_THAT(r.message, Catch::Contains("/boot/initrd-5.6.3-desktop-1.mga8.img"));
  CHECK(r.fix["initramfs"] == true);
  // A log without firmware failures: the image is not read and the rule skips.
  CHECK(get(run(fixture("strix-halo-fixed")), "amdgpu-firmware-initramfs").status == Outcome::skip);
  // A failure but no image in the root (a capture): skipped with the reason, never a pass.
  const auto enomem = run(fixture("dgpu-probe-enomem-2927"));
  const Result& n = get(enomem, "amdgpu-firmware-initramfs");
  CHECK(n.status == Outcome::skip);
  CHECK_THAT(n.message, Catch::Contains("no initramfs image"));
  // An unbound GPU has no RAS counters to judge: skipped, not "could not be checked".
  CHECK(get(enomem, "gpu-ras-uncorrectable").status == Outcome::skip);
}

TEST_CASE("rootless podman without keep-groups: the container's remedy for device access",
          "[scenario][issue19]") {
  auto rs = run(fixture("fedora-podman-rootless-no-keep-groups"));
  for (const char* id : {"kfd-access", "render-node-access"}) {
    INFO(id);
    CHECK(get(rs, id).status == Outcome::fail);
    CHECK_THAT(get(rs, id).message, Catch::Contains("--group-add keep-groups"));
    CHECK_THAT(get(rs, id).message, Catch::Contains("65534"));
  }
}

TEST_CASE("an APU outside ROCm's support list is told so, and the override is its workaround",
          "[scenario][issue21]") {
  auto rs = run(fixture("phoenix-780m-gfx1103"));
  const Result& u = get(rs, "apu-rocm-unsupported");
  CHECK(u.status == Outcome::fail);
  CHECK(u.severity == Severity::warning);
  CHECK(get(rs, "gfx1151-kernel-min").status == Outcome::skip);
  CHECK(get(run(fixture("strix-halo-fixed")), "apu-rocm-unsupported").status == Outcome::pass);
}

TEST_CASE("a carve-out already at the firmware's minimum is not flagged", "[scenario][issue11]") {
  CHECK(get(run(fixture("rog-flow-z13-min-carveout")), "apu-carveout-large").status ==
        Outcome::pass);
  // 96 GiB without a list of options: still a warning, worded for firmware that may not go lower.
  const Result big = get(run(fixture("carveout-96g-5902")), "apu-carveout-large");
  CHECK(big.status == Outcome::fail);
  CHECK_THAT(big.message, Catch::Contains("some laptops have a large minimum"));
}

TEST_CASE("an unsigned amdgpu-dkms module under Secure Boot is named as the cause",
          "[scenario][issue21]") {
  auto rs = run(fixture("secure-boot-dkms-rejected-4328"));
  const Result& r = get(rs, "amdgpu-probe-failed");
  CHECK(r.status == Outcome::fail);
  CHECK_THAT(r.message, Catch::Contains("Secure Boot: true"));
  CHECK_THAT(r.message, Catch::Contains("Loading of unsigned module is rejected"));
  CHECK(get(rs, "amdgpu-driver-loaded").status == Outcome::fail);
  // The module modprobe picks (updates/dkms over kernel/) is the unsigned DKMS build.
  const Result& m = get(rs, "dkms-module-unsigned");
  CHECK(m.status == Outcome::fail);
  CHECK(m.severity == Severity::error);
  CHECK_THAT(m.message,
             Catch::Contains("/lib/modules/6.8.0-45-generic/updates/dkms/amdgpu.ko.zst"));
  // Machines without Secure Boot, or whose /lib/modules is not in the root, are not judged.
  CHECK(get(run(fixture("strix-halo-fixed")), "dkms-module-unsigned").status == Outcome::skip);
}

// Issue 20's post-job check: a GPU hang since boot, from the kernel log.
TEST_CASE("a ring timeout and GPU reset in the kernel log fail the volatile hang rule",
          "[scenario][issue20]") {
  auto rs = run(fixture("strix-halo-gpu-hang"));
  const Result& r = get(rs, "amdgpu-gpu-hang");
  CHECK(r.status == Outcome::fail);
  CHECK(r.severity == Severity::error);
  CHECK_THAT(r.message, Catch::Contains("comp_1.0.0"));
  CHECK(get(run(fixture("strix-halo-kernel-too-old")), "amdgpu-gpu-hang").status == Outcome::pass);
}

namespace {
/// Every result of one rule id, in order (a per-GPU rule gives one per GPU it judges).
std::vector<const Result*> all_of(const std::vector<Result>& rs, std::string_view id) {
  std::vector<const Result*> out;
  for (const auto& r : rs)
    if (r.id == id) out.push_back(&r);
  return out;
}
} // namespace

TEST_CASE("8x MI300X behind 8 CPU KFD nodes: GPUs are numbered in KFD node order, read as numbers",
          "[scenario][gpu]") {
  const FactSet f = probe_root(fixture("mi300x-nps4-16-kfd-nodes"), 4);
  REQUIRE(f.get_int("gpu.count") == 8);
  const std::vector<std::string> slots = {"0000:0c:00.0", "0000:22:00.0", "0000:38:00.0",
                                          "0000:5c:00.0", "0000:9f:00.0", "0000:af:00.0",
                                          "0000:bf:00.0", "0000:df:00.0"};
  for (std::int64_t i = 0; i < 8; ++i) {
    INFO(i);
    // Node 10 is GPU 2, after node 9, not GPU 0 as text order would have it.
    CHECK(f.get<std::string>(fmt::format("gpu.{}.kfd_node", i)) == std::to_string(8 + i));
    CHECK(f.get<std::string>(fmt::format("gpu.{}.pci_slot", i)) ==
          slots[static_cast<std::size_t>(i)]);
    CHECK(f.get<std::string>(fmt::format("gpu.{}.name", i)) == "Instinct MI300X");
    // Slurm's ROCR_VISIBLE_DEVICES=4,5,6,7: HIP device 0 is gpu.4; GPUs 0-3 are not visible.
    if (i < 4)
      CHECK(f.find(fmt::format("gpu.{}.hip_device", i))->status == Status::missing);
    else
      CHECK(f.get_int(fmt::format("gpu.{}.hip_device", i)) == i - 4);
  }
  const auto rs = run(fixture("mi300x-nps4-16-kfd-nodes"));
  CHECK(gate_exit_code(rs, FailOn::info) == exit_code::ok);
}

TEST_CASE("Strix Halo behind an R9700: a per-GPU APU rule judges the APU, named as GPU 1",
          "[scenario][gpu]") {
  const auto rs = run(fixture("strix-halo-r9700-dgpu-first"));
  for (const char* id : {"apu-rocm-unsupported", "gfx1151-kernel-min"}) {
    INFO(id);
    const auto results = all_of(rs, id);
    REQUIRE(results.size() == 1);
    REQUIRE(results[0]->gpu.has_value());
    CHECK(results[0]->gpu->index == 1);
    CHECK(results[0]->gpu->pci_slot == "0000:c5:00.0");
    CHECK(results[0]->gpu->gfx_target == "gfx1151");
    CHECK(results[0]->gpu->hip_device == 1);
    CHECK(describe_gpu(*results[0]->gpu) == "GPU 1 (0000:c5:00.0, gfx1151)");
  }
}

TEST_CASE("a per-GPU rule no GPU matches is skipped once, for the host", "[scenario][gpu]") {
  const auto rs = run(fixture("mi300x-numa-4021"));
  const auto results = all_of(rs, "apu-rocm-unsupported");
  REQUIRE(results.size() == 1);
  CHECK(results[0]->status == Outcome::skip);
  CHECK_FALSE(results[0]->gpu.has_value());
  CHECK(results[0]->message == "no APU (integrated GPU) among the AMD GPUs");
  // The evidence shows the filter's fact on every GPU.
  CHECK(results[0]->evidence.size() == 8);
  const auto no_gpu = run(fixture("no-amd-gpu"));
  const auto none = all_of(no_gpu, "apu-rocm-unsupported");
  REQUIRE(none.size() == 1);
  CHECK(none[0]->message == "no AMD GPU found");
}

TEST_CASE("8x MI300X after an HBM fault: only GPU 3 fails the RAS rules, named by its slot",
          "[scenario][gpu][ras]") {
  const auto rs = run(fixture("mi300x-ras-errors"));
  const auto ue = all_of(rs, "gpu-ras-uncorrectable");
  REQUIRE(ue.size() == 8);
  for (const Result* r : ue) {
    INFO(r->gpu->index);
    CHECK(r->status == (r->gpu->index == 3 ? Outcome::fail : Outcome::pass));
  }
  CHECK(ue[3]->gpu->pci_slot == "0000:5c:00.0");
  CHECK_THAT(ue[3]->message, Catch::StartsWith("1 uncorrectable error(s)"));
  const auto pages = all_of(rs, "gpu-bad-pages");
  REQUIRE(pages.size() == 8);
  CHECK(pages[3]->status == Outcome::fail);
  CHECK(pages[3]->severity == Severity::warning);
  CHECK(pages[6]->status == Outcome::pass); // corrected errors only: no action
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::failed);
  // A Strix Halo has no RAS: the rule is skipped once, not passed.
  const auto apu = run(fixture("strix-halo-fixed"));
  const auto none = all_of(apu, "gpu-ras-uncorrectable");
  REQUIRE(none.size() == 1);
  CHECK(none[0]->status == Outcome::skip);
}

TEST_CASE("8x MI300X with one link at x8 and one at Gen4: only those GPUs fail gpu-pcie-link",
          "[scenario][gpu][pcie]") {
  const auto rs = run(fixture("mi300x-degraded-link"));
  const auto link = all_of(rs, "gpu-pcie-link");
  REQUIRE(link.size() == 8);
  for (const Result* r : link) {
    INFO(r->gpu->index);
    if (r->gpu->index == 5) {
      CHECK(r->status == Outcome::fail);
      CHECK(r->severity == Severity::error);
      CHECK_THAT(r->message, Catch::Contains("x8 of x16"));
    } else if (r->gpu->index == 2) {
      CHECK(r->status == Outcome::fail);
      CHECK(r->severity == Severity::warning);
    } else {
      CHECK(r->status == Outcome::pass);
    }
  }
  CHECK(link[5]->gpu->pci_slot == "0000:af:00.0");
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::failed);
  // A Strix Halo (an APU: no external link) is not judged.
  const auto apu_results = run(fixture("strix-halo-fixed")); // all_of points into it
  const auto apu = all_of(apu_results, "gpu-pcie-link");
  REQUIRE(apu.size() == 1);
  CHECK(apu[0]->status == Outcome::skip);
}

TEST_CASE("8x MI300X with GPU 7 left in CPX: its eight partitions are GPUs 7..14 on one card, "
          "each with its own memory, and the node's modes differ",
          "[scenario][gpu][partition]") {
  const FactSet f = probe_root(fixture("mi300x-partition-mismatch"), 4);
  REQUIRE(f.get_int("gpu.count") == 15);
  for (std::int64_t i = 7; i < 15; ++i) {
    INFO(i);
    // A partition's render node belongs to a partition device; KFD's location_id finds the card.
    CHECK(f.get<std::string>(fmt::format("gpu.{}.card", i)) == "card8");
    CHECK(f.get<std::string>(fmt::format("gpu.{}.pci_slot", i)) == "0000:df:00.0");
    CHECK(f.get_int(fmt::format("gpu.{}.partition_index", i)) == i - 7);
    CHECK(f.get_int(fmt::format("gpu.{}.partition_nodes", i)) == 8);
    CHECK(f.get_int(fmt::format("gpu.{}.partition_expected_nodes", i)) == 8);
    // The partition's own frame-buffer bank (ROCm#4750), not the card's 192 GiB.
    CHECK(f.get_int(fmt::format("gpu.{}.vram_total_bytes", i)) == 25767706624);
  }
  CHECK(f.get_int("gpu.6.vram_total_bytes") == 206141652992);
  CHECK(f.get_int("gpu.6.partition_nodes") == 1);
  const auto rs = run(fixture("mi300x-partition-mismatch"));
  const Result& uniform = get(rs, "gpu-partition-uniform");
  CHECK(uniform.status == Outcome::fail);
  CHECK(uniform.severity == Severity::warning);
  CHECK_THAT(uniform.message, Catch::Contains("CPX/NPS1 on GPU 7; SPX/NPS1 on GPUs 0, 1, 2"));
  // Physical-GPU rules judge each card once: 8 results, not 15.
  for (const char* id : {"gpu-partition-mode", "gpu-pcie-link", "gpu-ras-uncorrectable",
                         "xgmi-hive", "gpu-perf-level"}) {
    INFO(id);
    const auto results = all_of(rs, id);
    CHECK(results.size() == 8);
  }
  for (const Result* r : all_of(rs, "gpu-partition-mode"))
    CHECK(r->status == Outcome::pass);
  const auto perf = all_of(rs, "gpu-perf-level");
  CHECK(perf[7]->status == Outcome::fail);
  CHECK_THAT(perf[7]->message, Catch::Contains("profile_peak"));
  CHECK(gate_exit_code(rs, FailOn::error) == exit_code::ok);
  CHECK(gate_exit_code(rs, FailOn::warning) == exit_code::failed);
}

TEST_CASE("8x MI300X whose GPU 5 did not join the XGMI hive: every GPU fails xgmi-hive, and "
          "GPU 5's firmware differs",
          "[scenario][gpu][xgmi]") {
  const FactSet f = probe_root(fixture("mi300x-xgmi-missing-gpu"), 4);
  CHECK(f.get<bool>("gpu.5.xgmi.member") == false);
  CHECK(f.get_int("gpu.0.xgmi.hive_size") == 7);
  CHECK(f.get_int("gpu.0.xgmi.far_peers") == 0);
  // Members other than the first reach the hive's directory through their xgmi_hive_info link.
  CHECK(f.get<std::string>("gpu.7.xgmi.hive_id") == "11638818706288400384");
  CHECK(f.get<std::string>("xgmi.main_hive_id") == "11638818706288400384");
  CHECK(f.get_int("xgmi.expected_members") == 8);
  const auto rs = run(fixture("mi300x-xgmi-missing-gpu"));
  const auto hive = all_of(rs, "xgmi-hive");
  REQUIRE(hive.size() == 8);
  for (const Result* r : hive) {
    INFO(r->gpu->index);
    CHECK(r->status == Outcome::fail);
    CHECK_THAT(r->message,
               Catch::Contains(r->gpu->index == 5 ? "did not add this GPU" : "7 of the node's 8"));
  }
  const Result& fw = get(rs, "gpu-firmware-uniform");
  CHECK(fw.status == Outcome::fail);
  CHECK_THAT(fw.message,
             Catch::Contains("mec (0x000080a5: GPU 5; 0x000080b1: GPUs 0, 1, 2, 3, 4, 6, 7)"));
  // The healthy twin passes both.
  const auto ok = run(fixture("mi300x-host-tuned"));
  for (const Result* r : all_of(ok, "xgmi-hive"))
    CHECK(r->status == Outcome::pass);
  CHECK(get(ok, "gpu-firmware-uniform").status == Outcome::pass);
}

TEST_CASE("Strix Halo with MES 0x83: the card's sysfs fw_version is enough, without libdrm or root",
          "[scenario][gpu][firmware]") {
  const FactSet f = probe_root(fixture("strix-halo-mes-0x83-sysfs"), 4);
  CHECK(f.get_int("gpu.0.mes_fw_version") == 0x83);
  CHECK(f.find("gpu.0.mes_fw_version")->source ==
        "/sys/class/drm/card1/device/fw_version/mes_fw_version");
  const auto rs = run(fixture("strix-halo-mes-0x83-sysfs"));
  const Result& mes = get(rs, "gfx1151-mes-firmware");
  CHECK(mes.status == Outcome::fail);
  CHECK(mes.severity == Severity::error);
  CHECK(get(rs, "gfx1151-cwsr-hang").status == Outcome::fail);
  // Without the file (strix-halo-fixed), and without libdrm under --root, it is skipped.
  CHECK(get(run(fixture("strix-halo-fixed")), "gfx1151-mes-firmware").status == Outcome::skip);
}

TEST_CASE("modprobe.d install lines judged as kmod runs them, named by file and line",
          "[scenario][issue37]") {
  // strix-halo-default-ttm (amdgpu live on the in-kernel driver, ttm) with install lines added to
  // a copy: the next boot's kmod runs them instead of loading the module (modprobe.d(5)).
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("halo-install-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::copy(fixture("strix-halo-default-ttm"), dir,
                        std::filesystem::copy_options::recursive |
                            std::filesystem::copy_options::copy_symlinks);
  auto with = [&](const std::string& conf) {
    std::filesystem::create_directories(dir / "etc/modprobe.d");
    std::ofstream(dir / "etc/modprobe.d/zz-install.conf") << conf;
    return run(dir);
  };
  {
    auto rs = with("# keep the GPU off\ninstall amdgpu /bin/false\n");
    const Result& r = get(rs, "modprobe-install-line");
    CHECK(r.status == Outcome::fail);
    CHECK(r.severity == Severity::error);
    CHECK_THAT(r.message,
               Catch::Contains("install amdgpu /bin/false (/etc/modprobe.d/zz-install.conf:2)"));
    // The driver rule names the same line as what stops amdgpu at the next boot.
    CHECK_THAT(get(rs, "amdgpu-driver-loaded").message, Catch::Contains("zz-install.conf:2"));
  }
  {
    // ttm's line runs whenever kmod loads amdgpu, which needs ttm.
    auto rs = with("install ttm /bin/sh -c 'exit 1'\n");
    const Result& r = get(rs, "modprobe-install-line");
    CHECK(r.severity == Severity::error);
    CHECK_THAT(r.message, Catch::Contains("amdgpu needs ttm"));
  }
  {
    auto rs = with("install amdgpu /sbin/modprobe --ignore-install amdgpu $CMDLINE_OPTS; "
                   "/usr/bin/logger loaded\ninstall amdkfd /bin/false\n");
    const Result& r = get(rs, "modprobe-install-line");
    CHECK(r.status == Outcome::fail);
    CHECK(r.severity == Severity::info); // the wrapper loads amdgpu; amdkfd's line never runs
    CHECK_THAT(r.message, Catch::Contains("amdkfd is part of amdgpu"));
  }
  {
    auto rs = with("install amd* /usr/local/sbin/gpu-gate\n");
    const Result& r = get(rs, "modprobe-install-line");
    CHECK(r.severity == Severity::warning);
    CHECK_THAT(r.message, Catch::Contains("install amd* /usr/local/sbin/gpu-gate"));
  }
  CHECK(get(with("options ttm pages_limit=31457280\n"), "modprobe-install-line").status ==
        Outcome::pass);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a CUDA or CPU wheel fails in a container given no GPU device at all",
          "[scenario][issue37]") {
  // strix-halo-docker-no-dri with neither /dev/kfd nor /dev/dri passed (`docker run` without
  // --device): the GPU is still on the PCI bus the host's /sys shows, so the wheel is judged.
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("halo-nokfd-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::copy(fixture("strix-halo-docker-no-dri"), dir,
                        std::filesystem::copy_options::recursive |
                            std::filesystem::copy_options::copy_symlinks);
  std::ofstream(dir / ".halo/nodes.json") << "{}\n";
  std::filesystem::create_directories(dir / "usr/local/lib/python3.12/dist-packages/torch");
  std::ofstream(dir / "usr/local/lib/python3.12/dist-packages/torch/version.py")
      << "__version__ = '2.7.1+cu126'\ndebug = False\ncuda = '12.6'\nhip = None\n";
  auto rs = run(dir);
  const Result& r = get(rs, "torch-not-rocm");
  CHECK(r.status == Outcome::fail);
  CHECK(r.severity == Severity::error);
  CHECK_THAT(r.message, Catch::Contains("2.7.1+cu126"));
  CHECK_THAT(r.message, Catch::Contains("cuda build"));
  std::ofstream(dir / "usr/local/lib/python3.12/dist-packages/torch/version.py")
      << "__version__ = '2.7.1+cpu'\ndebug = False\ncuda = None\nhip = None\n";
  CHECK(get(run(dir), "torch-not-rocm").status == Outcome::fail);
  std::filesystem::remove_all(dir);
}

TEST_CASE("per-node HSA_OVERRIDE_GFX_VERSION_<node>: each GPU judged with the override for it",
          "[scenario][issue37]") {
  // strix-halo-r9700-dgpu-first: the R9700 (gfx1201) is KFD node 1, the Strix Halo (gfx1151)
  // node 2. libhsakmt's topology.c reads HSA_OVERRIDE_GFX_VERSION_<node> before the global one.
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("halo-pernode-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::copy(fixture("strix-halo-r9700-dgpu-first"), dir,
                        std::filesystem::copy_options::recursive |
                            std::filesystem::copy_options::copy_symlinks);
  auto with_env = [&](const std::string& vars) {
    std::string env = "PATH=/usr/bin:/bin";
    env.push_back('\0');
    env += vars;
    std::ofstream(dir / "proc/self/environ", std::ios::binary) << env;
    return run(dir);
  };
  const std::string nul(1, '\0');
  {
    // Only the APU's node: the dGPU is left alone, and the APU's own target changes nothing.
    const Result r = get(with_env("HSA_OVERRIDE_GFX_VERSION_2=11.5.1" + nul), "hsa-override-gfx");
    CHECK(r.status == Outcome::fail);
    CHECK(r.severity == Severity::info);
    CHECK_THAT(r.message, Catch::Contains("HSA_OVERRIDE_GFX_VERSION_2=11.5.1"));
  }
  {
    // A per-node value wins over the global one for its node only.
    auto rs = with_env("HSA_OVERRIDE_GFX_VERSION=11.5.1" + nul +
                       "HSA_OVERRIDE_GFX_VERSION_1=12.0.0" + nul);
    const Result& r = get(rs, "hsa-override-gfx");
    CHECK(r.severity == Severity::error);
    CHECK_THAT(r.message, Catch::Contains("gpu.0 (gfx1201) runs gfx1200 code "
                                          "(HSA_OVERRIDE_GFX_VERSION_1=12.0.0)"));
    CHECK_THAT(r.message, !Catch::Contains("gpu.1 (gfx1151) runs"));
  }
  {
    const Result r = get(with_env("HSA_OVERRIDE_GFX_VERSION_2=11" + nul), "hsa-override-gfx");
    CHECK(r.severity == Severity::error);
    CHECK_THAT(r.message, Catch::Contains("HSA_OVERRIDE_GFX_VERSION_2=11"));
  }
  CHECK(get(with_env(""), "hsa-override-gfx").status == Outcome::skip);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a torch whose rocBLAS lacks the GPU (pytorch#179865): rocBLAS and its own message are "
          "named, not invalid device function",
          "[scenario][issue45]") {
  // The Vega 56 (gfx900) with the 2.12 nightly: libtorch_hip.so has gfx900, rocBLAS's
  // TensileLibrary files do not, so rocBLAS aborts with its "Cannot read .../TensileLibrary.dat"
  // (rocBLAS tensile_host.cpp) at the first matrix multiply.
  const std::string site = "/media/HDD/programs/AI/ComfyUI/venv-linux/lib/python3.12/site-packages";
  const auto rs = run(fixture("vega56-torch-nightly-rocblas-no-gfx900"));
  const Result& r = get(rs, "torch-missing-gfx-target");
  CHECK(r.status == Outcome::fail);
  CHECK(r.severity == Severity::error);
  CHECK_THAT(r.message,
             Catch::StartsWith("rocBLAS beside PyTorch 2.12.0.dev20260408+rocm7.2 (" + site +
                               "/torch/lib/rocblas/library) has no kernels for "
                               "gfx900"));
  CHECK_THAT(r.message, Catch::Contains("\"rocBLAS error: Cannot read " + site +
                                        "/torch/lib/rocblas/library/TensileLibrary.dat: ... for "
                                        "GPU arch : gfx900\""));
  // The passing side through the same probe: TheRock's gfx1151 wheel, whose rocBLAS, hipBLASLt
  // and libtorch_hip.so all have gfx1151.
  CHECK(get(run(fixture("strix-halo-torch-therock-gfx1151")), "torch-missing-gfx-target").status ==
        Outcome::pass);
}

TEST_CASE("WSL2: the ROCr of TheRock's wheels in the venv is judged by its own release",
          "[scenario][issue45]") {
  // wsl2-halo-therock-venv-no-librocdxg (librocdxg issue 46) with its rocm-sdk-core said to be
  // 7.12: before 7.13 that ROCr looks for /dev/dxg only with HSA_ENABLE_DXG_DETECTION=1 (flag.h;
  // rocm-systems PR 3863), whatever /opt/rocm's 7.13 does. wsl-sdk-dxg-detection-off's failing
  // side through the wsl probe.
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("halo-wsl-sdk-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::copy(fixture("wsl2-halo-therock-venv-no-librocdxg"), dir,
                        std::filesystem::copy_options::recursive |
                            std::filesystem::copy_options::copy_symlinks);
  const auto site = dir / "home/krishkat/project/.venv/lib/python3.14/site-packages";
  std::ofstream(site / "_rocm_sdk_core/.info/version") << "7.12.0\n";
  {
    auto rs = run(dir);
    const Result& r = get(rs, "wsl-sdk-dxg-detection-off");
    CHECK(r.status == Outcome::fail);
    CHECK(r.severity == Severity::error);
    CHECK_THAT(r.message, Catch::Contains("ROCm 7.12.0"));
    CHECK_THAT(r.message, Catch::Contains("HSA_ENABLE_DXG_DETECTION=1"));
    // /opt/rocm's 7.13 is on by default: its rule passes on the same machine.
    CHECK(get(rs, "wsl-dxg-detection-off").status == Outcome::pass);
  }
  {
    std::string env;
    for (const char* kv :
         {"PATH=/usr/bin:/bin", "WSL_DISTRO_NAME=Ubuntu-26.04",
          "VIRTUAL_ENV=/home/krishkat/project/.venv", "HSA_ENABLE_DXG_DETECTION=1"}) {
      env += kv;
      env.push_back('\0');
    }
    std::ofstream(dir / "proc/self/environ", std::ios::binary) << env;
    auto rs = run(dir);
    CHECK(get(rs, "wsl-sdk-dxg-detection-off").status == Outcome::pass);
  }
  std::filesystem::remove_all(dir);
}
