// SPDX-License-Identifier: MIT
// The GPU a training plan runs on (HIP device 0) and its capacity: a derivation (no files).
#include "derivation.hpp"
#include "probes.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace halo::probes {
namespace {

/// The GPU a plan runs on (HIP device 0) and its capacity; on an APU also the capacity with the
/// recommended TTM limit (ttm.recommended_bytes), which `halo-doctor fix` sets.
void derive_plan(FactSet& facts) {
  if (facts.get<bool>("plan.present") != true) {
    for (const char* k : {"plan.gpu", "plan.capacity_bytes", "plan.capacity_with_ttm_fix_bytes",
                          "plan.apu", "plan.gfx_target"})
      facts.put_status(k, Status::missing, kDerived, "no training run given (--model)");
    return;
  }
  const auto dev0 = facts.get_int("gpu.device0");
  if (!dev0) {
    for (const char* k : {"plan.gpu", "plan.capacity_bytes", "plan.capacity_with_ttm_fix_bytes",
                          "plan.apu", "plan.gfx_target"})
      facts.put_status(k, Status::missing, kDerived, "no GPU is visible to HIP");
    return;
  }
  facts.put_ok("plan.gpu", *dev0, "derived: HIP device 0 (gpu.device0)");
  alias(facts, "plan.capacity_bytes", keys::gpu(*dev0, "usable_bytes"), "unknown");
  alias(facts, "plan.apu", keys::gpu(*dev0, "apu"), "unknown");
  alias(facts, "plan.gfx_target", keys::gpu(*dev0, "gfx_target"), "unknown");
  const auto vram = facts.get_int(keys::gpu(*dev0, "vram_total_bytes"));
  const auto rec = facts.get_int("ttm.recommended_bytes");
  if (facts.get<bool>(keys::gpu(*dev0, "apu")) == true && vram && rec)
    facts.put_ok("plan.capacity_with_ttm_fix_bytes", std::max(*vram, *rec),
                 "derived: APU with the TTM limit at ttm.recommended_bytes");
  else
    facts.put_status("plan.capacity_with_ttm_fix_bytes", Status::missing, kDerived,
                     "not an APU, or MemTotal unknown");
}

} // namespace

std::unique_ptr<Probe> make_plan_gpu_derivation() {
  return std::make_unique<BasicDerivation>(
      "plan_gpu", [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_plan(facts); });
}

} // namespace halo::probes
