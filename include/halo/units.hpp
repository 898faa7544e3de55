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

/// Bytes as GiB with two decimals, e.g. "62.54 GiB".
std::string gib(std::int64_t bytes);

} // namespace halo::units
