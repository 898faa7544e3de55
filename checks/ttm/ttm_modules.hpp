// SPDX-License-Identifier: MIT
// The TTM modules amdgpu can use, named once for every probe and derivation that reads or judges
// their parameters.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace halo::probes {

/// The memory managers amdgpu can link against: the kernel's own `ttm`
/// (drivers/gpu/drm/ttm), and the copy a DKMS amdgpu (ROCm's amdgpu-dkms) builds and loads,
/// named `amdttm` or `amd_ttm` by its release (reference/parsing-facts.md). Each has its own
/// `pages_limit` and `page_pool_size` (ttm_device.c, ttm_pool.c), so a limit set for one does
/// nothing for the others.
inline constexpr std::array<const char*, 3> kTtmModules = {"ttm", "amdttm", "amd_ttm"};

/// True when `m` names one of kTtmModules.
inline bool is_ttm_module(std::string_view m) {
  return std::any_of(kTtmModules.begin(), kTtmModules.end(), [&](const char* t) { return m == t; });
}

} // namespace halo::probes
