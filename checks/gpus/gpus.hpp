// SPDX-License-Identifier: MIT
// The GPU family's shared helpers (checks/gpus/): the AMD DRM cards every per-card probe walks,
// how a list of GPUs is worded, and which GPUs a process here sees.
#pragma once

#include <halo/fact.hpp>
#include <halo/fact_keys.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace halo::probes {

/// The fact listing the AMD DRM cards (`card1`, ...): the `/sys/class/drm/card<N>` whose
/// `device/vendor` is 0x1002, in the drm probe's order (checks/gpus/drm.cpp). A probe that walks
/// the cards declares it among its inputs.
inline constexpr std::string_view kAmdCards = fact_keys::drm::amd_cards;

/// Calls `f(card)` for each AMD DRM card of `drm.amd_cards` (checks/gpus/drm.cpp), in order;
/// nothing when the list is missing (no `/sys/class/drm`: the drm probe's fact says why).
template <class F> void for_each_amd_card(const FactSet& facts, F&& f) {
  if (const auto cards = facts.get<std::vector<std::string>>(kAmdCards))
    for (const auto& card : *cards)
      f(card);
}

/// The most AMD GPU PCI functions a machine can have: one PCI segment holds 256 buses x 32
/// devices x 8 functions (PCI Local Bus Specification 3.0, section 3.2.2.3.1: an 8-bit bus, 5-bit
/// device and 3-bit function number). `pci.amd_gpu_count` above it (a facts file or bundle says
/// so; the PCI probe lists at most this many) is refused rather than looped over (issue 44 item 4:
/// 2^62 hung `check --facts` and `fleet compare`).
inline constexpr std::int64_t kMaxPciGpuFunctions = std::int64_t{256} * 32 * 8;

/// The most GPUs (`gpu.N`: KFD GPU nodes, else DRM cards) a machine can have, with headroom:
/// KFD serves at most MAX_GPU_INSTANCE = 64 GPU nodes to a process (kfd_priv.h: the process's
/// `pdds[MAX_GPU_INSTANCE]`; amdgpu.h has the same 64 for its devices since Linux 6.10) and a
/// partitioned MI300X is at most 8 nodes (CPX: one per XCC), so 512; 1024 is the cap the rules
/// engine already puts on per-GPU rules (src/rules/engine.cpp). A list longer than this in a facts
/// file is refused.
inline constexpr std::int64_t kMaxGpuNodes = 1024;

/// `gpu.count` (derived by checks/gpus/gpu_list.cpp, bounded there by kMaxGpuNodes), read for a
/// loop over `gpu.N`: 0 when missing or not ok, never more than kMaxGpuNodes whatever a replayed
/// file holds.
inline std::int64_t bounded_gpu_count(const FactSet& facts) {
  const auto n = facts.get_int(keys::gpu_count).value_or(0);
  return n < 0 ? 0 : (n > kMaxGpuNodes ? kMaxGpuNodes : n);
}

/// Lists GPU indexes as "GPU 7" or "GPUs 0, 1, 2".
std::string gpu_list(const std::vector<std::int64_t>& idx);

/// The GPUs (indexes N of `gpu.N`) a process here sees through ROCr and HIP.
struct VisibleGpus {
  std::vector<std::int64_t> rocr; ///< what ROCR_VISIBLE_DEVICES leaves, in ROCr's order
  std::vector<std::int64_t> hip;  ///< what HIP_VISIBLE_DEVICES then leaves: HIP device 0 first
  bool uuid = false;              ///< a GPU-<uuid> entry was met (not resolved here)
  std::string source;             ///< "derived: ROCR_VISIBLE_DEVICES=1, ..." for the facts
};

/// Which GPUs training sees, in HIP's order (device 0 first), and the APU wherever it is.
/// GPUs are numbered in KFD node order (numerically), which is ROCr's enumeration order.
/// ROCR_VISIBLE_DEVICES filters and reorders first; HIP_VISIBLE_DEVICES (or
/// CUDA_VISIBLE_DEVICES) then indexes into what ROCr left (ROCm/pytorch#1895; HIP
/// env_variables reference). GPU_DEVICE_ORDINAL is not modelled.
/// Reads `gpu.count`, `env.rocr_visible_devices`, `env.hip_visible_devices`,
/// `env.cuda_visible_devices`.
VisibleGpus visible_gpus(const FactSet& facts);

} // namespace halo::probes
