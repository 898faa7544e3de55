// SPDX-License-Identifier: MIT
// Theoretical peaks used for "% of peak", with their sources.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace halo_bench {

/// One row of the documented peak table (docs/bench.md repeats it with the same sources).
struct PeakEntry {
  std::string_view row;           ///< row name used in facts, e.g. "strix-halo-gfx1151"
  std::string_view arch;          ///< gfx target or sm_XY the row applies to
  std::string_view name_contains; ///< substring of the device name that selects it ("" = any)
  double bandwidth_gbps;          ///< peak DRAM/HBM bandwidth, GB/s (1e9 bytes/s)
  double bf16_dense_tflops;       ///< peak dense BF16 matrix throughput, TFLOP/s (1e12 flop/s)
  std::string_view source;        ///< where the numbers come from
};

/// The whole table, most specific rows first.
std::span<const PeakEntry> peak_table() noexcept;

/// Finds the row for a device: the first row whose arch equals `arch` (gfx targets compared
/// without feature suffixes such as ":sramecc+:xnack-") and whose name_contains is empty or
/// appears (case-insensitively) in `device_name`. nullopt when no row fits.
std::optional<PeakEntry> find_peak(std::string_view arch, std::string_view device_name);

/// Peak bandwidth from device properties: 2 (double data rate) * memory clock [kHz] * 1e3 *
/// bus width [bits] / 8 / 1e9, in GB/s. nullopt when either value is not positive. Unreliable on
/// APUs, which report the GPU's view of system memory; the table is preferred when a row fits.
std::optional<double> bandwidth_from_properties(double memory_clock_khz, double bus_width_bits);

/// Strips target-ID features: "gfx90a:sramecc+:xnack-" becomes "gfx90a".
std::string base_arch(std::string_view arch);

} // namespace halo_bench
