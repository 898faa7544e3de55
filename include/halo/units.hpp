// SPDX-License-Identifier: MIT
// Units used across the doctor. Everything is bytes internally.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace halo::units {

/// TTM counts 4 KiB pages (PAGE_SIZE on x86-64): pages = bytes / 4096.
/// Source: drivers/gpu/drm/ttm/ttm_tt.c (ttm_pages_limit is in pages).
inline constexpr std::int64_t kTtmPageBytes = 4096;
/// One GiB in bytes.
inline constexpr std::int64_t kGiB = 1024LL * 1024 * 1024;
/// One MiB in bytes (amdgpu.gttsize is given in MiB).
inline constexpr std::int64_t kMiB = 1024LL * 1024;
/// One KiB in bytes (/proc/meminfo's "kB" are KiB: fs/proc/meminfo.c shows pages << (PAGE_SHIFT -
/// 10)).
inline constexpr std::int64_t kKiB = 1024;
/// 1 GiB = 262144 TTM pages.
inline constexpr std::int64_t kPagesPerGiB = kGiB / kTtmPageBytes;
/// Memory a TTM limit must leave to the operating system, in bytes (2 GiB): the headroom both
/// `ttm-limit-overcommit` (through the derived fact ttm.max_limit_bytes) and `fix --ttm-limit`
/// use, so the doctor never proposes a limit it would then flag.
inline constexpr std::int64_t kTtmOsHeadroomBytes = 2 * kGiB;

/// `count` x `unit_bytes` (pages x 4096, KiB x 1024, MiB x 2^20, GiB x 2^30) in checked
/// arithmetic (__builtin_mul_overflow; signed overflow is undefined behaviour): the product, or
/// std::nullopt when it does not fit a signed 64-bit integer. Every byte/page product of a probe
/// or derivation goes through this, and a std::nullopt becomes a fact with status error naming
/// the file the count came from (overflow_reason), never a wrapped value.
inline std::optional<std::int64_t> checked_bytes(std::int64_t count, std::int64_t unit_bytes) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(count, unit_bytes, &out)) return std::nullopt;
  return out;
}

/// The reason text of the error fact for an overflowing product:
/// "2305843009213693952 pages x 4096 bytes does not fit a signed 64-bit integer (bytes)".
std::string overflow_reason(std::int64_t count, std::string_view unit, std::int64_t unit_bytes);

/// Bytes as GiB with two decimals, e.g. "62.54 GiB".
std::string gib(std::int64_t bytes);

/// The same for a byte count held as a double (a product that may be beyond 64 bits, e.g. pages
/// x 4096 of a hostile pages_limit): computed in floating point, never cast back to an integer.
/// "inf GiB"/"nan GiB" for values that are not finite.
std::string gib_of(double bytes);

/// TTM pages as GiB ("8796093022208.00 GiB" for 2^61 pages), in floating point: no product that
/// could wrap.
std::string pages_gib(std::int64_t pages);

} // namespace halo::units
