// SPDX-License-Identifier: MIT
// Which GPUs training sees (`gpu.visible`, `gpu.device0`, `gpu.N.hip_device`), the APU wherever
// it is (`apu.*`), what each GPU can allocate (`gpu.N.usable_bytes`) and the AOTriton images that
// cover it: derivations (no files).
#include "derivation.hpp"
#include "gpus/gfx.hpp"
#include "gpus/gpus.hpp"
#include "probe_util.hpp"
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

namespace gpu_keys = fact_keys::gpu;
namespace apu_keys = fact_keys::apu;

/// gpu.N.hip_device, gpu.visible*, gpu.device0*: which GPUs training sees, in HIP's order
/// (device 0 first), by visible_gpus(); apu.*: the APU wherever it is; gpu.N.hsa_coarse_pool_bytes:
/// ROCr's pool of GPU N's agent.
void derive_visibility(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  const VisibleGpus visible = visible_gpus(facts);
  const auto& rocr = visible.rocr;
  const auto& hip = visible.hip;
  const bool uuid = visible.uuid;
  const std::string& src = visible.source;
  // gpu.N.hip_device: the number HIP gives GPU N here, missing when it is not visible.
  for (std::int64_t i = 0; i < n; ++i) {
    const auto pos = std::find(hip.begin(), hip.end(), i);
    if (uuid)
      facts.put_status(gpu_keys::hip_device(i), Status::missing, src,
                       "a GPU-<uuid> entry in a *_VISIBLE_DEVICES list is not resolved");
    else if (pos == hip.end())
      facts.put_status(gpu_keys::hip_device(i), Status::missing, src, "not visible to HIP here");
    else
      facts.put_ok(gpu_keys::hip_device(i), static_cast<std::int64_t>(pos - hip.begin()), src);
  }
  if (uuid) {
    for (const auto k : {gpu_keys::visible, gpu_keys::device0, gpu_keys::device0_gfx_target,
                         gpu_keys::visible_gfx_targets, gpu_keys::visible_gfx_target_count})
      facts.put_status(std::string(k), Status::missing, src,
                       "a GPU-<uuid> entry in a *_VISIBLE_DEVICES list is not resolved");
  } else {
    std::vector<std::string> names;
    names.reserve(hip.size());
    for (auto i : hip)
      names.push_back(
          fmt::format("gpu.{} ({})", i,
                      facts.get<std::string>(gpu_keys::gfx_target(i)).value_or("unknown target")));
    facts.put_ok(std::string(gpu_keys::visible), names, src);
    // How many kinds of GPU HIP sees: an APU beside a discrete GPU (ROCm issue 5696) gives two.
    std::vector<std::string> targets;
    for (auto i : hip) {
      const auto g = facts.get<std::string>(gpu_keys::gfx_target(i));
      const std::string t = g.value_or("unknown target");
      if (std::find(targets.begin(), targets.end(), t) == targets.end()) targets.push_back(t);
    }
    facts.put_ok(std::string(gpu_keys::visible_gfx_targets), targets, src);
    facts.put_ok(std::string(gpu_keys::visible_gfx_target_count),
                 static_cast<std::int64_t>(targets.size()), src);
    if (hip.empty()) {
      facts.put_status(std::string(gpu_keys::device0), Status::missing, src,
                       "no GPU is visible to HIP");
      facts.put_status(std::string(gpu_keys::device0_gfx_target), Status::missing, src,
                       "no GPU is visible to HIP");
    } else {
      facts.put_ok(std::string(gpu_keys::device0), hip.front(), src);
      alias(facts, std::string(gpu_keys::device0_gfx_target), gpu_keys::gfx_target(hip.front()),
            "the device 0 GPU has no known target");
    }
  }
  // The APU, wherever KFD lists it (a Strix Halo with a discrete GPU that enumerates first).
  std::optional<std::int64_t> apu;
  for (std::int64_t i = 0; i < n && !apu; ++i)
    if (facts.get<bool>(gpu_keys::apu(i)) == true) apu = i;
  const std::string apu_src = fmt::format("derived: {}", gpu_keys::apu("*"));
  facts.put_ok(std::string(apu_keys::present), apu.has_value(), apu_src);
  const std::string why = "no APU among the AMD GPUs";
  if (apu)
    facts.put_ok(std::string(apu_keys::index), *apu, apu_src);
  else
    facts.put_status(std::string(apu_keys::index), Status::missing, kDerived, why);
  const std::int64_t a = apu.value_or(0);
  alias_each(facts, apu.has_value(),
             {{std::string(apu_keys::gfx_target), gpu_keys::gfx_target(a)},
              {std::string(apu_keys::vram_total_bytes), gpu_keys::vram_total_bytes(a)},
              {std::string(apu_keys::gtt_total_bytes), gpu_keys::gtt_total_bytes(a)},
              {std::string(apu_keys::amdgpu_bound), gpu_keys::amdgpu_bound(a)},
              {std::string(apu_keys::card), gpu_keys::card(a)}},
             why);
  // The smallest carve-out this machine's firmware offers (uma/carveout_options), where the
  // kernel lists them: a laptop whose minimum is large cannot go lower.
  const std::string card =
      apu ? facts.get<std::string>(gpu_keys::card(*apu)).value_or("") : std::string();
  alias(
      facts, std::string(apu_keys::carveout_min_bytes),
      card.empty() ? std::string() : fact_keys::drm::uma_carveout_min_bytes(card),
      "the firmware lists no carve-out options (uma/carveout_options: kernel 7.0+, some machines)");
  // gpu.N.hsa_coarse_pool_bytes: ROCr's GPU agents are the ROCR-visible GPUs in order, so GPU N's
  // agent is its position in that list.
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string key = gpu_keys::hsa_coarse_pool_bytes(i);
    const auto at = std::find(rocr.begin(), rocr.end(), i);
    const Fact* hs = facts.find(fact_keys::hsa::status);
    if (at == rocr.end())
      facts.put_status(key, Status::missing, kDerived, "ROCR_VISIBLE_DEVICES hides this GPU");
    else if (hs != nullptr && hs->not_probed())
      facts.put_status(key, Status::missing, hs->source, hs->reason);
    else
      alias(facts, key, fact_keys::hsa::gpu_coarse_pool_bytes(at - rocr.begin()),
            "the runtime probe did not report this GPU agent");
  }
  // ROCr's GPU agents are the ROCR-visible GPUs in order: the APU's agent is its position there.
  const auto pos = apu ? std::find(rocr.begin(), rocr.end(), *apu) : rocr.end();
  const Fact* hsa_status = facts.find(fact_keys::hsa::status);
  const std::string apu_pool(apu_keys::hsa_coarse_pool_bytes);
  if (pos != rocr.end() && hsa_status != nullptr && hsa_status->not_probed())
    facts.put_status(apu_pool, Status::missing, hsa_status->source, hsa_status->reason);
  else if (pos != rocr.end())
    alias(facts, apu_pool, fact_keys::hsa::gpu_coarse_pool_bytes(pos - rocr.begin()),
          "the runtime probe did not report this GPU agent");
  else
    facts.put_status(apu_pool, Status::missing, kDerived,
                     apu ? "ROCR_VISIBLE_DEVICES hides the APU" : why);
}

/// True when AOTriton's image architecture `arch` (the <arch> of aotriton.images/amd-<arch>: a
/// chip such as gfx942, or an ISA family with `x` for any character after "gfx": gfx11xx,
/// gfx115x, gfx120x) covers the gfx processor `target`.
bool aotriton_image_covers(std::string_view arch, std::string_view target) {
  if (arch.size() != target.size() || !arch.starts_with("gfx") || !target.starts_with("gfx"))
    return false;
  for (std::size_t i = 3; i < arch.size(); ++i)
    if (arch[i] != 'x' && arch[i] != target[i]) return false;
  return true;
}

/// gpu.N.aotriton_images: the AOTriton images of the wheel (framework.torch.aotriton_images) that
/// cover GPU N's gfx target; an empty list means SDPA's flash and memory-efficient backends have
/// no kernels for it. Missing when either side is unknown.
void derive_aotriton_per_gpu(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  const Fact* images_fact = facts.find(fact_keys::framework::torch_aotriton_images);
  const auto images =
      facts.get<std::vector<std::string>>(fact_keys::framework::torch_aotriton_images);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string key = gpu_keys::aotriton_images(i);
    const auto target = facts.get<std::string>(gpu_keys::gfx_target(i));
    if (!images || !target) {
      facts.put_status(key, Status::missing, kDerived,
                       !target                  ? std::string("the GPU's gfx target is unknown")
                       : images_fact == nullptr ? std::string("the framework probe did not run")
                       : images_fact->reason.empty()
                           ? fmt::format("{}: {}", fact_keys::framework::torch_aotriton_images,
                                         to_string(images_fact->status))
                           : images_fact->reason);
      continue;
    }
    std::vector<std::string> covering;
    for (const auto& arch : *images)
      if (aotriton_image_covers(arch, *target)) covering.push_back(arch);
    facts.put_ok(key, covering,
                 fmt::format("derived: the {} of {} that cover {}", images->size(),
                             fact_keys::framework::torch_aotriton_images, *target));
  }
}

/// gpu.N.usable_bytes: the memory a process on GPU N can allocate, the capacity `plan` sets a
/// run against. ROCr's coarse-grained pool when the runtime was asked (HIP's totalGlobalMem is
/// that pool: rocm-systems PR 8475); else, from sysfs: a discrete GPU's VRAM; an APU whose GTT is
/// larger than its carve-out allocates from GTT up to the TTM limit (the kernel's apu_prefer_gtt,
/// commit 759e764; reference/framework-facts.md 2), else from the carve-out.
void derive_usable_memory(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string key = gpu_keys::usable_bytes(i);
    if (auto pool = facts.get_int(gpu_keys::hsa_coarse_pool_bytes(i))) {
      facts.put_ok(key, *pool, "derived: ROCr's coarse-grained GPU pool (hsa_coarse_pool_bytes)");
      continue;
    }
    const auto vram = facts.get_int(gpu_keys::vram_total_bytes(i));
    if (!vram) {
      facts.put_status(key, Status::missing, kDerived, "the GPU's VRAM size is unknown");
      continue;
    }
    if (facts.get<bool>(gpu_keys::apu(i)) != true) {
      facts.put_ok(key, *vram, "derived: the GPU's VRAM (mem_info_vram_total)");
      continue;
    }
    const auto gtt = facts.get_int(gpu_keys::gtt_total_bytes(i));
    const auto ttm = facts.get_int(fact_keys::ttm::pages_limit_bytes);
    if (!gtt || *gtt <= *vram) {
      facts.put_ok(key, *vram, "derived: APU carve-out (GTT is not larger than it)");
      continue;
    }
    const std::int64_t gpu_side = ttm ? std::min(*gtt, *ttm) : *gtt;
    facts.put_ok(key, std::max(*vram, gpu_side),
                 ttm ? "derived: APU: max(carve-out, min(GTT, TTM pages_limit))"
                     : "derived: APU: max(carve-out, GTT) (TTM limit unknown)");
  }
}

} // namespace

std::unique_ptr<Probe> make_gpu_visibility_derivation() {
  return std::make_unique<BasicDerivation>(
      "gpu_visibility",
      [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_visibility(facts); });
}

std::unique_ptr<Probe> make_gpu_aotriton_derivation() {
  return std::make_unique<BasicDerivation>(
      "gpu_aotriton",
      [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_aotriton_per_gpu(facts); });
}

std::unique_ptr<Probe> make_gpu_usable_memory_derivation() {
  return std::make_unique<BasicDerivation>(
      "gpu_usable_memory",
      [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_usable_memory(facts); });
}

} // namespace halo::probes
