// SPDX-License-Identifier: MIT
// Units used across the doctor. Everything is bytes internally.
#pragma once

#include <cstdint>
#include <string>

namespace halo::units {

/// TTM counts 4 KiB pages (PAGE_SIZE on x86-64): pages = bytes / 4096.
/// Source: drivers/gpu/drm/ttm/ttm_tt.c (ttm_pages_limit is in pages).
inline constexpr std::int64_t kTtmPageBytes = 4096;
/// One GiB in bytes.
inline constexpr std::int64_t kGiB = 1024LL * 1024 * 1024;
/// One MiB in bytes (amdgpu.gttsize is given in MiB).
inline constexpr std::int64_t kMiB = 1024LL * 1024;
/// 1 GiB = 262144 TTM pages.
inline constexpr std::int64_t kPagesPerGiB = kGiB / kTtmPageBytes;
/// Memory a TTM limit must leave to the operating system, in bytes (2 GiB): the headroom both
/// `ttm-limit-overcommit` (through the derived fact ttm.max_limit_bytes) and `fix --ttm-limit`
/// use, so the doctor never proposes a limit it would then flag.
inline constexpr std::int64_t kTtmOsHeadroomBytes = 2 * kGiB;

/// Bytes as GiB with two decimals, e.g. "62.54 GiB".
std::string gib(std::int64_t bytes);

} // namespace halo::units
