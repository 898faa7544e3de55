// SPDX-License-Identifier: MIT
// The GPU a training plan runs on (HIP device 0) and its capacity: a derivation (no files).
#include "derivation.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

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
  static constexpr std::array<std::string_view, 5> kDerivedKeys = {
      fact_keys::plan::gpu, fact_keys::plan::capacity_bytes,
      fact_keys::plan::capacity_with_ttm_fix_bytes, fact_keys::plan::apu,
      fact_keys::plan::gfx_target};
  if (facts.get<bool>(fact_keys::plan::present) != true) {
    for (const std::string_view k : kDerivedKeys)
      facts.put_status(std::string(k), Status::missing, kDerived,
                       "no training run given (--model)");
    return;
  }
  const auto dev0 = facts.get_int(fact_keys::gpu::device0);
  if (!dev0) {
    for (const std::string_view k : kDerivedKeys)
      facts.put_status(std::string(k), Status::missing, kDerived, "no GPU is visible to HIP");
    return;
  }
  facts.put_ok(std::string(fact_keys::plan::gpu), *dev0,
               fmt::format("derived: HIP device 0 ({})", fact_keys::gpu::device0));
  alias(facts, std::string(fact_keys::plan::capacity_bytes), fact_keys::gpu::usable_bytes(*dev0),
        "unknown");
  alias(facts, std::string(fact_keys::plan::apu), fact_keys::gpu::apu(*dev0), "unknown");
  alias(facts, std::string(fact_keys::plan::gfx_target), fact_keys::gpu::gfx_target(*dev0),
        "unknown");
  const auto vram = facts.get_int(fact_keys::gpu::vram_total_bytes(*dev0));
  const auto rec = facts.get_int(fact_keys::ttm::recommended_bytes);
  if (facts.get<bool>(fact_keys::gpu::apu(*dev0)) == true && vram && rec)
    facts.put_ok(
        std::string(fact_keys::plan::capacity_with_ttm_fix_bytes), std::max(*vram, *rec),
        fmt::format("derived: APU with the TTM limit at {}", fact_keys::ttm::recommended_bytes));
  else
    facts.put_status(std::string(fact_keys::plan::capacity_with_ttm_fix_bytes), Status::missing,
                     kDerived, "not an APU, or MemTotal unknown");
}

} // namespace

std::unique_ptr<Probe> make_plan_gpu_derivation() {
  return std::make_unique<BasicDerivation>(
      "plan_gpu", [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_plan(facts); });
}

} // namespace halo::probes
