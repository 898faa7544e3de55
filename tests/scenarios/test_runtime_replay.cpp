// SPDX-License-Identifier: MIT
// End to end through the replay ROCr (tests/replay): each recorded rocminfo capture is loaded with
// --hsa-library against the fixture root of the same machine, and the facts and the verdicts of
// the runtime rules are checked. Variants that hang and crash prove the time limit and isolation.
#include "fixture_tree.hpp"

#include <halo/checks.hpp>
#include <halo/probe.hpp>
#include <halo/rules.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace halo;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t KiB = 1024;
constexpr std::int64_t GiB = 1024 * 1024 * 1024;

struct Run {
  FactSet facts;
  std::vector<Result> results;

  const Result& result(std::string_view id) const {
    for (const auto& r : results)
      if (r.id == id) return r;
    FAIL("no result for " << id);
    return results.front();
  }
  std::string text(std::string_view key) const {
    return facts.get<std::string>(key).value_or("<not ok>");
  }
  std::int64_t num(std::string_view key) const { return facts.get_int(key).value_or(-1); }
};

/// Runs every probe over a fixture root with the replay ROCr answering from `capture`.
Run replay(std::string_view fixture, std::string_view capture, std::string_view mode = "",
           const std::string& library = HALO_REPLAY_LIBRARY, double timeout_s = 10.0) {
  ::setenv("HALO_REPLAY_CAPTURE", (fs::path(HALO_REPLAY_CAPTURES) / capture).c_str(), 1);
  if (mode.empty())
    ::unsetenv("HALO_REPLAY_MODE");
  else
    ::setenv("HALO_REPLAY_MODE", std::string(mode).c_str(), 1);
  ProbeOptions opt;
  opt.hsa_library = library;
  opt.runtime_timeout_s = timeout_s;
  const Root root(test::fixture(fixture));
  const ProbeRegistry reg = builtin_probes();
  Run r;
  r.facts = reg.collect(ProbeContext{root, opt});
  const RuleSet rules = load_builtin_rules(&reg);
  r.results = evaluate(rules, r.facts, Params{{"reserve_gib", 4}, {"reserve_bytes", 4 * GiB}});
  ::unsetenv("HALO_REPLAY_MODE");
  return r;
}

/// A copy of the replay library laid out like an AMD ROCm install, so the probe finds its
/// version: PREFIX/lib/libhsa-runtime64.so.1 and, when `info` is set, PREFIX/.info/version.
std::string fake_install(const test::FixtureTree& t, const std::string& prefix,
                         const std::string& info) {
  const fs::path lib = t.path() / prefix / "lib" / "libhsa-runtime64.so.1";
  fs::create_directories(lib.parent_path());
  fs::copy_file(HALO_REPLAY_LIBRARY, lib, fs::copy_options::overwrite_existing);
  if (!info.empty()) {
    fs::create_directories(t.path() / prefix / ".info");
    std::ofstream(t.path() / prefix / ".info" / "version") << info;
  }
  return lib.string();
}

} // namespace

TEST_CASE("replay: Strix Halo with the 120 GiB pool (ROCm#5643) on the fixed machine", "[replay]") {
  Run r = replay("strix-halo-fixed", "strix-halo-120g.json");
  CHECK(r.text("hsa.status") == "ok");
  CHECK(r.text("hsa.init_status").rfind("HSA_STATUS_SUCCESS", 0) == 0);
  CHECK(r.text("hsa.runtime_version") == "1.18");
  CHECK(r.num("hsa.agent_count") == 2);
  CHECK(r.num("hsa.gpu_count") == 1);
  // Agent 1 in rocminfo = hsa.agent.0: the CPU with its four pools.
  CHECK(r.text("hsa.agent.0.device_type") == "cpu");
  CHECK(r.num("hsa.agent.0.pool_count") == 4);
  CHECK(r.num("hsa.agent.0.pool.0.size_bytes") == 131009792 * KiB);
  CHECK(r.facts.get<bool>("hsa.agent.0.pool.2.kernarg") == true);
  CHECK(r.facts.get<bool>("hsa.agent.0.pool.1.extended_fine_grained") == true);
  // Agent 2 = hsa.agent.1: the gfx1151 GPU, Pool 1 COARSE GRAINED 125829120 KB.
  CHECK(r.text("hsa.agent.1.name") == "gfx1151");
  CHECK(r.text("hsa.agent.1.gfx_target") == "gfx1151");
  CHECK(r.text("hsa.agent.1.device_type") == "gpu");
  CHECK(r.num("hsa.agent.1.chip_id") == 0x1586);
  CHECK(r.num("hsa.agent.1.compute_units") == 40);
  CHECK(r.num("hsa.agent.1.wavefront_size") == 32);
  CHECK(r.facts.get<bool>("hsa.agent.1.apu") == true);
  CHECK(r.text("hsa.agent.1.pool.0.segment") == "global");
  CHECK(r.facts.get<bool>("hsa.agent.1.pool.0.coarse_grained") == true);
  CHECK(r.facts.get<bool>("hsa.agent.1.pool.0.fine_grained") == false);
  CHECK(r.num("hsa.agent.1.pool.0.size_bytes") == 125829120 * KiB);
  CHECK(r.num("hsa.agent.1.pool.0.alloc_granule_bytes") == 4 * KiB);
  CHECK(r.num("hsa.agent.1.pool.0.alloc_rec_granule_bytes") == 2048 * KiB);
  CHECK(r.facts.get<bool>("hsa.agent.1.pool.0.runtime_alloc_allowed") == true);
  CHECK(r.facts.get<bool>("hsa.agent.1.pool.0.accessible_by_all") == false);
  CHECK(r.text("hsa.agent.1.pool.2.segment") == "group");
  CHECK(r.num("hsa.agent.1.pool.2.size_bytes") == 64 * KiB);
  // rocminfo does not print the max single allocation: the runtime did not report it.
  CHECK(r.facts.find("hsa.agent.1.pool.0.alloc_max_bytes")->status == Status::missing);
  CHECK(r.num("hsa.gpu.0.coarse_pool_bytes") == 120 * GiB);
  CHECK(r.num("hsa.gpu.0.agent") == 1);

  CHECK(r.result("hsa-runtime-init").status == Outcome::pass);
  CHECK(r.result("hsa-gpu-pool-capped").status == Outcome::pass);
  // The replay library's path names no ROCm release: the matrix cannot be checked, and says so.
  CHECK(r.facts.find("hsa.rocm_version")->status == Status::missing);
  CHECK(r.result("gfx1151-rocm-kernel-matrix").status == Outcome::error);
  CHECK(r.result("gfx1151-rocm-kernel-matrix").message.find("hsa.rocm_version") !=
        std::string::npos);
}

TEST_CASE("replay: the ROCm version of the loaded ROCr decides the kernel matrix", "[replay]") {
  test::FixtureTree t;
  // Kernel 6.17.4-200.fc42 predates the gfx1151 fixes.
  Run r = replay("strix-halo-fixed", "strix-halo-120g.json", "",
                 fake_install(t, "opt/rocm-7.1.0", "7.1.0-20\n"));
  CHECK(r.text("hsa.rocm_version") == "7.1.0");
  CHECK(r.result("gfx1151-rocm-kernel-matrix").status == Outcome::fail);
  CHECK(r.result("gfx1151-rocm-kernel-matrix").severity == Severity::warning);

  r = replay("strix-halo-fixed", "strix-halo-120g.json", "", fake_install(t, "opt/rocm-7.2.0", ""));
  CHECK(r.text("hsa.rocm_version") == "7.2.0");
  CHECK(r.result("gfx1151-rocm-kernel-matrix").status == Outcome::fail);
  CHECK(r.result("gfx1151-rocm-kernel-matrix").severity == Severity::error);
  CHECK(r.result("gfx1151-rocm-kernel-matrix").message.find("unsupported") != std::string::npos);

  r = replay("strix-halo-fixed", "strix-halo-120g.json", "", fake_install(t, "opt/rocm-7.0.2", ""));
  CHECK(r.result("gfx1151-rocm-kernel-matrix").status == Outcome::fail);
  CHECK(r.result("gfx1151-rocm-kernel-matrix").message.find("not in AMD's gfx1151 table") !=
        std::string::npos);

  r = replay("strix-halo-fixed", "strix-halo-120g.json", "",
             fake_install(t, "opt/rocm-7.15.0", ""));
  CHECK(r.result("gfx1151-rocm-kernel-matrix").status == Outcome::pass);
}

TEST_CASE("replay: the 62.5 GiB pool (lhl#4) is what the default TTM offers", "[replay]") {
  Run r = replay("strix-halo-default-ttm", "strix-halo-62g.json");
  CHECK(r.num("hsa.gpu.0.coarse_pool_bytes") == 65575696 * KiB);
  // ROCr gets all the kernel offers; the cap is TTM's, which ttm-limit-low reports.
  CHECK(r.result("hsa-gpu-pool-capped").status == Outcome::pass);
  CHECK(r.result("ttm-limit-low").status == Outcome::fail);
  CHECK(r.facts.find("hsa.runtime_version")->status == Status::missing);
}

TEST_CASE("replay: a 62.5 GiB pool on a machine whose kernel offers 120 GiB blames the ROCm build",
          "[replay]") {
  Run r = replay("strix-halo-fixed", "strix-halo-62g.json");
  const Result& res = r.result("hsa-gpu-pool-capped");
  CHECK(res.status == Outcome::fail);
  CHECK(res.severity == Severity::error);
  CHECK(res.message.find("62.54 GiB") != std::string::npos);
  CHECK(res.message.find("mis-reports") != std::string::npos);
}

TEST_CASE("replay: the 96 GiB carve-out (ROCm#5902) with its NPU agent", "[replay]") {
  Run r = replay("carveout-96g-5902", "carveout-96g.json");
  CHECK(r.num("hsa.agent_count") == 3);
  CHECK(r.num("hsa.gpu_count") == 1);
  CHECK(r.text("hsa.agent.2.name") == "aie2p");
  CHECK(r.text("hsa.agent.2.device_type") == "dsp");
  // The NPU's coarse-grained pools are not the GPU's.
  CHECK(r.num("hsa.gpu.0.agent") == 1);
  CHECK(r.num("hsa.gpu.0.coarse_pool_bytes") == 96 * GiB);
  CHECK(r.result("hsa-gpu-pool-capped").status == Outcome::pass);
}

TEST_CASE("replay: kernel 6.12's 15.5 GiB pool (ROCm#5444) names the kernel", "[replay]") {
  Run r = replay("amdttm-on-inbox-5562", "kernel-6.12-15g.json");
  CHECK(r.num("hsa.gpu.0.coarse_pool_bytes") == 16323184 * KiB);
  const Result& res = r.result("hsa-gpu-pool-capped");
  CHECK(res.status == Outcome::fail);
  CHECK(res.message.find("older than 6.15") != std::string::npos);
  CHECK(res.message.find("15.57 GiB") != std::string::npos);
}

TEST_CASE("replay: 8 MI300X and 2 CPU agents (ROCm#4021)", "[replay]") {
  Run r = replay("mi300x-numa-4021", "mi300x-8gpu.json");
  CHECK(r.num("hsa.agent_count") == 10);
  CHECK(r.num("hsa.gpu_count") == 8);
  CHECK(r.text("hsa.agent.1.device_type") == "cpu");
  CHECK(r.num("hsa.agent.1.pool.0.size_bytes") == 1056871544 * KiB);
  CHECK(r.num("hsa.agent.2.wavefront_size") == 64);
  CHECK(r.num("hsa.agent.2.bdfid") == 6912);
  CHECK(r.facts.get<bool>("hsa.agent.2.apu") == false);
  for (int g = 0; g < 8; ++g) {
    CHECK(r.text("hsa.gpu." + std::to_string(g) + ".gfx_target") == "gfx942");
    CHECK(r.num("hsa.gpu." + std::to_string(g) + ".coarse_pool_bytes") == 201310208 * KiB);
  }
  // A field the capture does not publish is an honest gap, named with ROCr's own status string.
  const Fact* bdf = r.facts.find("hsa.agent.3.bdfid");
  REQUIRE(bdf != nullptr);
  CHECK(bdf->status == Status::missing);
  CHECK(bdf->reason.find("HSA_STATUS_ERROR_INVALID_ARGUMENT") != std::string::npos);
  CHECK(r.result("hsa-runtime-init").status == Outcome::pass);
  CHECK(r.result("hsa-gpu-pool-capped").status == Outcome::skip);
  CHECK(r.result("gfx1151-rocm-kernel-matrix").status == Outcome::skip);
}

TEST_CASE("replay: a ROCr that hangs in hsa_init is killed at the time limit",
          "[replay][isolation]") {
  Run r = replay("strix-halo-fixed", "strix-halo-120g.json", "hang", HALO_REPLAY_LIBRARY, 0.5);
  CHECK(r.text("hsa.status") == "error");
  CHECK(r.text("hsa.error").find("hung") != std::string::npos);
  CHECK(r.text("hsa.error").find("in hsa_init") != std::string::npos);
  CHECK(r.facts.find("hsa.library_path")->ok());
  CHECK(r.facts.find("hsa.gpu.0.coarse_pool_bytes")->status == Status::error);
  // The doctor went on: the sysfs probes and the other rules still ran.
  CHECK(r.num("gpu.0.gtt_total_bytes") == 120 * GiB);
  const Result& res = r.result("hsa-runtime-init");
  CHECK(res.status == Outcome::fail);
  CHECK(res.message.find("hung") != std::string::npos);
  CHECK(r.result("hsa-gpu-pool-capped").status == Outcome::error);
}

TEST_CASE("replay: a ROCr that crashes becomes an error fact", "[replay][isolation]") {
  Run r = replay("strix-halo-fixed", "strix-halo-120g.json", "crash");
  CHECK(r.text("hsa.status") == "error");
  CHECK(r.text("hsa.error").find("crashed") != std::string::npos);
  CHECK(r.text("hsa.error").find("in hsa_init") != std::string::npos);
  CHECK(r.result("hsa-runtime-init").status == Outcome::fail);

  // A crash half way keeps what was read before it and says where it happened.
  r = replay("strix-halo-fixed", "strix-halo-120g.json", "crash_in_pools");
  CHECK(r.text("hsa.status") == "error");
  CHECK(r.text("hsa.error").find("while querying agent 0") != std::string::npos);
  CHECK(r.text("hsa.agent.0.name") == "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S");
  CHECK(r.facts.find("hsa.agent_count")->status == Status::error);
}

TEST_CASE("replay: hsa_init failing is reported with ROCr's status string", "[replay]") {
  Run r = replay("strix-halo-fixed", "strix-halo-120g.json", "init_fail");
  CHECK(r.text("hsa.init_status").rfind("HSA_STATUS_ERROR_OUT_OF_RESOURCES", 0) == 0);
  CHECK(r.num("hsa.init_code") == 0x1008);
  const Result& res = r.result("hsa-runtime-init");
  CHECK(res.status == Outcome::fail);
  CHECK(res.message.find("hsa_init failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES") !=
        std::string::npos);
}

TEST_CASE("runtime rules: MES firmware 0x83 on gfx1151 fails, 0x80 passes", "[replay][mes]") {
  const ProbeRegistry reg = builtin_probes();
  const RuleSet rules = load_builtin_rules(&reg);
  const Params params{{"reserve_gib", 4}, {"reserve_bytes", 4 * GiB}};
  FactSet base = test::probe_root(test::fixture("strix-halo-fixed"));
  // The libdrm facts below stand for what the libdrm probe reads; the derive stage then maps
  // libdrm's device at the APU's PCI slot (0000:c5:00.0) to gpu.0 (gpu.0.mes_fw_version).
  const Root root(test::fixture("strix-halo-fixed"));
  ProbeOptions opt;
  opt.no_runtime = true;
  auto verdict = [&](FactSet f) {
    reg.rederive(opt, f);
    for (const auto& r : evaluate(rules, f, params))
      if (r.id == "gfx1151-mes-firmware") return r;
    FAIL("no gfx1151-mes-firmware result");
    return Result{};
  };
  // Without the runtime probes (probe_root runs with --no-runtime) the rule is skipped, and says
  // why.
  Result res = verdict(base);
  CHECK(res.status == Outcome::skip);
  CHECK_THAT(res.message, Catch::Equals("not checked: the probe was not run (--no-runtime)"));

  FactSet f = base;
  f.put_ok("libdrm.status", std::string("ok"), "drmGetDevices2");
  f.put_ok("libdrm.dev.0.bus_id", std::string("0000:c5:00.0"), "drmGetDevices2");
  f.put_ok("libdrm.dev.0.mes_fw_version", std::int64_t{0x83},
           "amdgpu_query_firmware_version(AMDGPU_INFO_FW_MES)");
  f.put_ok("libdrm.dev.0.mes_fw_version_hex", std::string("0x00000083"),
           "amdgpu_query_firmware_version");
  res = verdict(f);
  CHECK(res.status == Outcome::fail);
  CHECK(res.severity == Severity::error);
  CHECK(res.message.find("0x00000083") != std::string::npos);

  f.put_ok("libdrm.dev.0.mes_fw_version", std::int64_t{0x80},
           "amdgpu_query_firmware_version(AMDGPU_INFO_FW_MES)");
  CHECK(verdict(f).status == Outcome::pass);

  // A denied render node is an error naming the reason, never a pass.
  f.put_status("libdrm.dev.0.mes_fw_version", Status::denied, "open /dev/dri/renderD128",
               "open /dev/dri/renderD128: Permission denied (see rule render-node-access)");
  res = verdict(f);
  CHECK(res.status == Outcome::error);
  CHECK(res.message.find("render-node-access") != std::string::npos);

  f.put_ok("libdrm.status", std::string("no_device"), "drmGetDevices2");
  f.put_ok("libdrm.detail", std::string("drmGetDevices2 returned -2 = -ENOENT"), "drmGetDevices2");
  res = verdict(f);
  CHECK(res.status == Outcome::skip);
  CHECK(res.message.find("amdgpu_firmware_info") != std::string::npos);
}
