// SPDX-License-Identifier: MIT
// The GPU visibility derivation (checks/gpus/gpu_visibility.cpp): the APU behind a dGPU,
// ROCR/HIP_VISIBLE_DEVICES.
#include "fixture_tree.hpp"

#include <halo/checks.hpp>

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::fixture;
using halo::test::probe_root;

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
