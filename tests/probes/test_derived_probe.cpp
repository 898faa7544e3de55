// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::fixture;
using halo::test::probe_root;

TEST_CASE("derived: GPUs joined from KFD and DRM, with the APU decision", "[probe][derived]") {
  FactSet f = probe_root(fixture("strix-halo-default-ttm"));
  CHECK(f.get<bool>("amd.gpu_present") == true);
  CHECK(f.get_int("gpu.count") == 1);
  CHECK(f.get<std::string>("gpu.0.gfx_target") == std::string("gfx1151"));
  CHECK(f.get<std::string>("gpu.0.card") == std::string("card1"));
  CHECK(f.get<bool>("gpu.0.apu") == true);
  CHECK_THAT(f.find("gpu.0.apu")->source, Catch::Contains("0x1586"));
  CHECK(f.get_int("gpu.0.vram_total_bytes") == 536870912);
  CHECK(f.get<bool>("amdgpu.live") == true);
  FactSet mi = probe_root(fixture("mi300x-numa-4021"));
  CHECK(mi.get_int("gpu.count") == 8);
  CHECK(mi.get<bool>("gpu.7.mi300_series") == true);
  CHECK(mi.get<bool>("gpu.0.apu") == false);
}

TEST_CASE("derived: the recommended TTM limit is MemTotal minus --reserve in whole GiB",
          "[probe][derived]") {
  // 131151392 kB = 125.08 GiB -> 125 GiB whole.
  FactSet f4 = probe_root(fixture("strix-halo-default-ttm"), 4);
  CHECK(f4.get_int("ttm.recommended_gib") == 121);
  CHECK(f4.get_int("ttm.recommended_pages") == 121LL * 262144);
  FactSet f5 = probe_root(fixture("strix-halo-default-ttm"), 5);
  CHECK(f5.get_int("ttm.recommended_pages") == 31457280); // 120 GiB, the seed's value
  FactSet all = probe_root(fixture("strix-halo-default-ttm"), 200);
  CHECK(all.find("ttm.recommended_pages")->status == Status::error);
}

TEST_CASE("derived: TTM configuration on the used module vs elsewhere", "[probe][derived]") {
  FactSet wrong = probe_root(fixture("amdttm-on-inbox-5562"));
  CHECK(wrong.get<bool>("ttm.configured_on_used") == false);
  auto elsewhere = wrong.get<std::vector<std::string>>("ttm.configured_elsewhere");
  REQUIRE(elsewhere);
  CHECK(elsewhere->size() == 2);
  CHECK_THAT(elsewhere->at(0), Catch::Contains("amdttm.pages_limit"));
  FactSet fixed = probe_root(fixture("strix-halo-fixed"));
  CHECK(fixed.get<bool>("ttm.configured_on_used") == true);
  CHECK(fixed.get_int("ttm.configured.pages_limit_pages") == 31457280);
  CHECK(fixed.find("ttm.configured.pages_limit_pages")->source == "/proc/cmdline");
}

TEST_CASE("derived: gttsize and suspicious kernel arguments", "[probe][derived]") {
  FactSet f = probe_root(fixture("gttsize-typo-5595"));
  CHECK(f.get<bool>("amdgpu.gttsize_set") == true);
  CHECK(f.get_int("amdgpu.gttsize_bytes") == 122880LL * 1024 * 1024);
  CHECK(f.get<std::vector<std::string>>("kernel.cmdline.suspect_names") ==
        std::vector<std::string>{"amdgpu.gtt_size"});
  CHECK_THAT(f.get<std::vector<std::string>>("kernel.cmdline.suspect_hints")->at(0),
             Catch::Contains("amdgpu.gttsize"));
  FactSet ok = probe_root(fixture("strix-halo-default-ttm"));
  CHECK(ok.get<bool>("amdgpu.gttsize_set") == false);
  CHECK(ok.get<std::vector<std::string>>("kernel.cmdline.suspect_names")->empty());
}

TEST_CASE("derived: blockers of amdgpu", "[probe][derived]") {
  halo::test::FixtureTree t;
  t.file("/proc/cmdline", "ro nomodeset modprobe.blacklist=amdgpu,nouveau\n");
  t.file("/etc/modprobe.d/block.conf", "install amdgpu /bin/false\n");
  t.file("/sys/bus/pci/devices/0000:c5:00.0/vendor", "0x1002\n")
      .file("/sys/bus/pci/devices/0000:c5:00.0/class", "0x038000\n");
  t.file("/sys/bus/pci/devices/0000:c5:00.0/device", "0x1586\n");
  FactSet f = probe_root(t.path());
  CHECK(f.get<bool>("amd.gpu_present") == true);
  CHECK(f.get<bool>("amdgpu.live") == false);
  CHECK(f.get<bool>("gpu.0.apu") == true);
  auto blocked = f.get<std::vector<std::string>>("amdgpu.blocked_by");
  REQUIRE(blocked);
  CHECK(blocked->size() == 3);
}

// Issue 11 item 1: the APU wherever KFD lists it; what HIP calls device 0.
TEST_CASE("derived: APU found behind a dGPU; visible devices as ROCr and HIP read them",
          "[probe][derived][issue11]") {
  FactSet f = probe_root(fixture("strix-halo-r9700-dgpu-first"));
  CHECK(f.get<std::vector<std::string>>("kfd.gpu_nodes") == std::vector<std::string>{"1", "2"});
  CHECK(f.get<std::string>("gpu.0.gfx_target") == std::string("gfx1201"));
  CHECK(f.get<bool>("apu.present") == true);
  CHECK(f.get_int("apu.index") == 1);
  CHECK(f.get_int("apu.vram_total_bytes") == 536870912);
  CHECK(f.get_int("gpu.device0") == 0);
  CHECK(f.get<std::vector<std::string>>("env.hsa_override_mismatch") ==
        std::vector<std::string>{
            "gpu.0 (gfx1201) runs gfx1151 code (HSA_OVERRIDE_GFX_VERSION=11.5.1)"});

  const ProbeRegistry reg = builtin_probes();
  ProbeOptions opt;
  opt.no_runtime = true;
  Root root(fixture("strix-halo-r9700-dgpu-first"));
  auto with_env = [&](std::vector<std::pair<std::string, std::string>> env) {
    FactSet g = f;
    for (const auto& [k, v] : env)
      g.put_ok(k, v, "/proc/self/environ");
    reg.rederive(opt, g);
    return g;
  };
  // ROCR picks the APU only: the override now matches every GPU ROCm sees.
  FactSet r = with_env({{"env.rocr_visible_devices", "1"}});
  CHECK(r.get_int("gpu.device0") == 1);
  CHECK(r.get<std::vector<std::string>>("env.hsa_override_mismatch") == std::vector<std::string>{});
  // HIP indexes into what ROCR left: ROCR 1,0 then HIP 1 is gpu.0.
  CHECK(with_env({{"env.rocr_visible_devices", "1,0"}, {"env.hip_visible_devices", "1"}})
            .get_int("gpu.device0") == 0);
  // The list stops at the first invalid entry; -1 or empty hides everything.
  CHECK(with_env({{"env.hip_visible_devices", "1,-1,0"}})
            .get<std::vector<std::string>>("gpu.visible") ==
        std::vector<std::string>{"gpu.1 (gfx1151)"});
  CHECK(with_env({{"env.hip_visible_devices", "-1"}}).find("gpu.device0")->status ==
        Status::missing);
  CHECK(with_env({{"env.hip_visible_devices", ""}}).find("gpu.device0")->status == Status::missing);
  // CUDA_VISIBLE_DEVICES counts only when HIP_VISIBLE_DEVICES is unset.
  CHECK(with_env({{"env.cuda_visible_devices", "1"}}).get_int("gpu.device0") == 1);
  CHECK(with_env({{"env.hip_visible_devices", "0"}, {"env.cuda_visible_devices", "1"}})
            .get_int("gpu.device0") == 0);
  // ROCR hiding the APU: its HSA pool cannot be judged.
  CHECK(with_env({{"env.rocr_visible_devices", "0"}}).find("apu.hsa_coarse_pool_bytes")->reason ==
        "ROCR_VISIBLE_DEVICES hides the APU");
}

TEST_CASE("kfd topology: node ids are ordered as numbers", "[probe][kfd]") {
  halo::test::FixtureTree t;
  for (int n : {0, 2, 10, 11})
    t.file("/sys/class/kfd/kfd/topology/nodes/" + std::to_string(n) + "/properties",
           n == 0 ? "cpu_cores_count 16\ngfx_target_version 0\n"
                  : "cpu_cores_count 0\ngfx_target_version 90402\ndevice_id 29857\n");
  FactSet f = halo::test::probe_one(t.path(), "kfd_topology");
  CHECK(f.get<std::vector<std::string>>("kfd.gpu_nodes") ==
        std::vector<std::string>{"2", "10", "11"});
}

namespace {
/// A venv at /home/dev/venv holding torch TORCH and, where given, torchvision/torchaudio.
FactSet venv_with(const std::string& torch, const std::string& vision, const std::string& audio) {
  halo::test::FixtureTree t;
  const std::string env =
      std::string("VIRTUAL_ENV=/home/dev/venv") + '\0' + "HOME=/home/dev" + '\0';
  t.file("/proc/self/environ", env);
  t.file("/home/dev/venv/pyvenv.cfg", "include-system-site-packages = false\n");
  const std::string site = "/home/dev/venv/lib/python3.12/site-packages";
  // The formats torch, torchvision and torchaudio write at build time.
  t.file(site + "/torch/version.py", "__version__ = '" + torch + "'\nhip = None\ncuda = None\n");
  if (!vision.empty()) {
    t.file(site + "/torchvision/__init__.py", "");
    t.file(site + "/torchvision/version.py", "__version__ = '" + vision + "'\ngit_version = 'x'\n");
  }
  if (!audio.empty()) {
    // torchaudio without version.py: its dist-info METADATA names the version.
    t.file(site + "/torchaudio/__init__.py", "");
    t.file(site + "/torchaudio-" + audio + ".dist-info/METADATA",
           "Metadata-Version: 2.1\nName: torchaudio\nVersion: " + audio + "\n");
  }
  return probe_root(t.path());
}
} // namespace

TEST_CASE("derived: torchvision and torchaudio must be the torch's release and build",
          "[probe][derived][framework]") {
  auto problems = [](const FactSet& f) {
    return f.get<std::vector<std::string>>("framework.companion_problems")
        .value_or(std::vector<std::string>{"(not derived)"});
  };
  // The ROCm 6.2 index's three wheels.
  FactSet ok = venv_with("2.5.1+rocm6.2", "0.20.1+rocm6.2", "2.5.1+rocm6.2");
  CHECK(ok.get<std::string>("framework.torchaudio.version") == "2.5.1+rocm6.2");
  CHECK(problems(ok).empty());
  // Debian 12's python3-torch 1.13.1 with python3-torchvision 0.14.1 and torchaudio 0.13.1.
  CHECK(problems(venv_with("1.13.1", "0.14.1", "0.13.1")).empty());
  // TheRock nightlies: 2.10 pairs with torchvision 0.25.
  CHECK(problems(venv_with("2.10.0a0+rocm7.10.0a20251120", "0.25.0a0+rocm7.10.0a20251120", ""))
            .empty());
  // PyPI's torchvision (no label: the CUDA build) beside a ROCm torch.
  auto cuda = problems(venv_with("2.5.1+rocm6.2", "0.20.1", ""));
  REQUIRE(cuda.size() == 1);
  CHECK_THAT(cuda[0],
             Catch::Contains("has no build label (a PyPI wheel without one is the CUDA build"));
  // torchvision for torch 2.4 and torchaudio for 2.4 beside torch 2.5.
  auto old = problems(venv_with("2.5.1+rocm6.2", "0.19.1+rocm6.2", "2.4.1+rocm6.2"));
  REQUIRE(old.size() == 2);
  CHECK_THAT(old[0], Catch::Contains("it wants torchvision 0.20"));
  CHECK_THAT(old[1], Catch::Contains("it wants torchaudio 2.5"));
  // Another ROCm build of the right release.
  CHECK(problems(venv_with("2.5.1+rocm6.2", "0.20.1+rocm6.1", "")).size() == 1);
}

TEST_CASE("derived: a wheel's kernel targets are those both libtorch_hip.so and its BLAS kernels "
          "hold, generic targets expanded",
          "[probe][derived][framework]") {
  using List = std::vector<std::string>;
  const FactSet f = probe_root(fixture("strix-halo-torch-therock-gfx1151"));
  CHECK(f.get<List>("framework.torch.offload_targets") == List{"gfx1151"});
  CHECK(f.get<List>("framework.torch.kernel_targets") == List{"gfx1151"});
  const ProbeRegistry reg = builtin_probes();
  ProbeOptions opt;
  opt.no_runtime = true;
  Root root(fixture("strix-halo-torch-therock-gfx1151"));
  auto kernel_targets = [&](const List& offload, const std::optional<List>& blas) {
    FactSet g = f;
    g.put_ok("framework.torch.offload_targets", offload, "test");
    if (blas)
      g.put_ok("framework.torch.gfx_targets", *blas, "test");
    else
      g.put_status("framework.torch.gfx_targets", Status::missing, "test", "no rocBLAS here");
    reg.rederive(opt, g);
    return g.get<List>("framework.torch.kernel_targets").value_or(List{"(not derived)"});
  };
  // A GPU needs both: gfx1151 code in libtorch_hip.so but no gfx1151 rocBLAS kernels is no gfx1151.
  CHECK(kernel_targets({"gfx1151", "gfx942"}, List{"gfx942"}) == List{"gfx942"});
  // Without rocBLAS file names, libtorch_hip.so alone decides.
  CHECK(kernel_targets({"gfx1151", "gfx942"}, std::nullopt) == List{"gfx1151", "gfx942"});
  // gfx11-generic code objects load on gfx1151 (LLVM AMDGPUUsage, generic processor versions);
  // gfx9-4-generic does not cover gfx90a.
  CHECK(kernel_targets({"gfx11-generic"}, List{"gfx1151"}) == List{"gfx1151"});
  CHECK(kernel_targets({"gfx9-4-generic"}, List{"gfx90a", "gfx942"}) == List{"gfx942"});
  // Neither readable: missing, with both reasons.
  FactSet none = f;
  none.put_status("framework.torch.offload_targets", Status::error, "test", "not an ELF file");
  none.put_status("framework.torch.gfx_targets", Status::missing, "test", "no rocBLAS here");
  reg.rederive(opt, none);
  const Fact* k = none.find("framework.torch.kernel_targets");
  REQUIRE(k != nullptr);
  CHECK(k->status == Status::missing);
  CHECK(k->reason == "framework.torch.offload_targets: not an ELF file; "
                     "framework.torch.gfx_targets: no rocBLAS here");
}

TEST_CASE("derived: the ROCm release a wheel bundles is torch.version.hip's major.minor",
          "[probe][derived][framework]") {
  const FactSet f = probe_root(fixture("strix-halo-torch-therock-gfx1151"));
  CHECK(f.get<std::string>("framework.torch.rocm_version") == "7.13");
  const ProbeRegistry reg = builtin_probes();
  ProbeOptions opt;
  opt.no_runtime = true;
  Root root(fixture("strix-halo-torch-therock-gfx1151"));
  auto rocm = [&](const std::string& hip) {
    FactSet g = f;
    g.put_ok("framework.torch.hip_version", hip, "test");
    reg.rederive(opt, g);
    return *g.find("framework.torch.rocm_version");
  };
  // pytorch.org 2.5.1+rocm6.2 (ROCm 6.2.0's HIP), 2.9 +rocm6.4, a ROCm 7.1 wheel: the third
  // field is HIP's build number, never the ROCm patch release.
  CHECK(std::get<std::string>(rocm("6.2.41133-dd7f95766").value) == "6.2");
  CHECK(std::get<std::string>(rocm("6.4.43482-0f2d60242").value) == "6.4");
  CHECK(std::get<std::string>(rocm("7.1.25424").value) == "7.1");
  CHECK(std::get<std::string>(rocm("7.10").value) == "7.10");
  const Fact bad = rocm("seven");
  CHECK(bad.status == Status::error);
  CHECK(bad.reason == "torch.version.hip 'seven' is not MAJOR.MINOR[.BUILD]");
  // A CPU wheel: missing, with the probe's reason.
  FactSet cpu = f;
  cpu.put_status("framework.torch.hip_version", Status::missing, "test", "not a ROCm build");
  reg.rederive(opt, cpu);
  CHECK(cpu.find("framework.torch.rocm_version")->status == Status::missing);
  CHECK(cpu.find("framework.torch.rocm_version")->reason == "not a ROCm build");
}
