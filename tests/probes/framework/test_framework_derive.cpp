// SPDX-License-Identifier: MIT
// The framework derivations (checks/framework/framework_derive.cpp): companions, kernel targets,
// ROCm release.
#include "fixture_tree.hpp"

#include <halo/checks.hpp>

#include <catch2/catch.hpp>

#include <algorithm>

using namespace halo;
using halo::test::fixture;
using halo::test::probe_root;

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

TEST_CASE("derived: flash_attn's and bitsandbytes' kernel targets expand generic targets as "
          "torch's do",
          "[probe][derived][framework]") {
  // Issue 42 item 3: a flash_attn or bitsandbytes built only for gfx11-generic has code for
  // gfx1151 (LLVM AMDGPUUsage, generic processor versions); their rules judge kernel_targets.
  using List = std::vector<std::string>;
  const FactSet f = probe_root(fixture("strix-halo-torch-therock-gfx1151"));
  const ProbeRegistry reg = builtin_probes();
  ProbeOptions opt;
  opt.no_runtime = true;
  FactSet g = f;
  g.put_ok("framework.flash_attn.offload_targets", List{"gfx11-generic", "gfx942"}, "test");
  g.put_ok("framework.bitsandbytes.library_targets", List{"gfx12-generic"}, "test");
  reg.rederive(opt, g);
  CHECK(g.get<List>("framework.flash_attn.kernel_targets") ==
        List{"gfx11-generic", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151",
             "gfx1152", "gfx1153", "gfx942"});
  CHECK(g.get<List>("framework.bitsandbytes.kernel_targets") ==
        List{"gfx12-generic", "gfx1200", "gfx1201"});
  // A list that could not be read passes its status and reason on.
  g.put_status("framework.bitsandbytes.library_targets", Status::error, "test", "not an ELF file");
  reg.rederive(opt, g);
  const Fact* k = g.find("framework.bitsandbytes.kernel_targets");
  REQUIRE(k != nullptr);
  CHECK(k->status == Status::error);
  CHECK(k->reason == "not an ELF file");
}

TEST_CASE("derived: libtorch_hip.so's own targets with generic targets expanded",
          "[probe][derived][framework][issue45]") {
  // torch-missing-gfx-target tells by offload_kernel_targets whether torch's own code or a math
  // library lacks a GPU: a gfx11-generic libtorch_hip.so has code for gfx1151.
  using List = std::vector<std::string>;
  const FactSet f = probe_root(fixture("strix-halo-torch-therock-gfx1151"));
  CHECK(f.get<List>("framework.torch.offload_kernel_targets") == List{"gfx1151"});
  const ProbeRegistry reg = builtin_probes();
  ProbeOptions opt;
  opt.no_runtime = true;
  FactSet g = f;
  g.put_ok("framework.torch.offload_targets", List{"gfx11-generic"}, "test");
  reg.rederive(opt, g);
  const List expanded = g.get<List>("framework.torch.offload_kernel_targets").value_or(List{});
  CHECK(std::find(expanded.begin(), expanded.end(), "gfx1151") != expanded.end());
  CHECK(std::find(expanded.begin(), expanded.end(), "gfx942") == expanded.end());
  g.put_status("framework.torch.offload_targets", Status::error, "test", ".hip_fatbin: damaged");
  reg.rederive(opt, g);
  const Fact* k = g.find("framework.torch.offload_kernel_targets");
  REQUIRE(k != nullptr);
  CHECK(k->status == Status::error);
  CHECK(k->reason == ".hip_fatbin: damaged");
}
