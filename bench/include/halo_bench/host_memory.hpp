// SPDX-License-Identifier: MIT
// Host-side memory limits compared with the measured allocation ceiling (Linux sysfs/procfs).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace halo_bench {

/// Parses a /proc/meminfo text and returns the "MemAvailable:" line in bytes (the file gives kB,
/// 1 kB = 1024 bytes). nullopt when the line is missing or malformed.
std::optional<std::uint64_t> parse_meminfo_available(std::string_view meminfo_text);

/// MemAvailable of this machine in bytes, read from /proc/meminfo.
std::optional<std::uint64_t> read_mem_available();

/// TTM's limit on pages pinned for GPU use, in bytes: /sys/module/ttm/parameters/pages_limit
/// (a page count) times the page size. nullopt when the module parameter is not readable.
std::optional<std::uint64_t> read_ttm_limit_bytes();

/// GTT size of the first amdgpu device in bytes: /sys/class/drm/card*/device/mem_info_gtt_total.
std::optional<std::uint64_t> read_gtt_total_bytes();

/// VRAM (carve-out on an APU) of the first amdgpu device in bytes:
/// /sys/class/drm/card*/device/mem_info_vram_total.
std::optional<std::uint64_t> read_vram_total_bytes();

/// Safety cap of the ceiling probe: min(MemAvailable - reserve, pool) where an unknown term is
/// ignored; 0 when MemAvailable <= reserve or when neither term is known. `pool_bytes` is the
/// HSA pool (HIP) or device memory (CUDA) size of the device.
std::uint64_t ceiling_cap_bytes(std::optional<std::uint64_t> mem_available,
                                std::uint64_t reserve_bytes,
                                std::optional<std::uint64_t> pool_bytes) noexcept;

} // namespace halo_bench
