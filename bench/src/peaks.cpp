// SPDX-License-Identifier: MIT
#include "halo_bench/peaks.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace halo_bench {
namespace {

// Sources (also listed in docs/bench.md):
//  [amd-strix]  AMD Ryzen AI Max+ 395 / Max 385 product pages: 256-bit LPDDR5X-8000, Radeon 8060S
//               (40 CU, 2900 MHz) / 8050S (32 CU, 2800 MHz). Bandwidth 256 bit / 8 * 8000 MT/s =
//               256 GB/s. BF16: RDNA 3/3.5 WMMA does 512 FLOP/clk/CU (AMD RDNA3 ISA guide, 7.9;
//               it gives the RX 7900 XTX's 122.8 TFLOP/s at 96 CU, 2.5 GHz), so 40 * 2.9e9 * 512.
//  [amd-mi300x] AMD Instinct MI300X data sheet: 5.3 TB/s HBM3, 1307.4 TFLOP/s dense BF16.
//  [amd-mi300a] AMD Instinct MI300A data sheet: 5.3 TB/s, 980.6 TFLOP/s dense BF16.
//  [amd-mi325x] AMD Instinct MI325X data sheet: 6.0 TB/s HBM3E, 1307.4 TFLOP/s dense BF16.
//  [amd-mi250x] AMD Instinct MI250X data sheet: 3.2768 TB/s, 383 TFLOP/s BF16.
//  [amd-mi210]  AMD Instinct MI210 data sheet: 1.6384 TB/s, 181 TFLOP/s BF16.
//  [amd-7900xtx] AMD Radeon RX 7900 XTX specifications: 960 GB/s, 122.8 TFLOP/s FP16/BF16 (WMMA).
//  [nv-h100]    NVIDIA H100 data sheet: SXM5 3.35 TB/s, 989.4 TFLOP/s dense BF16 (1979 sparse);
//               PCIe 2.0 TB/s, 756 TFLOP/s dense.
//  [nv-h200]    NVIDIA H200 data sheet: 4.8 TB/s, 989.4 TFLOP/s dense BF16.
//  [nv-a100]    NVIDIA A100 data sheet: 80GB SXM 2.039 TB/s, 312 TFLOP/s dense BF16.
constexpr std::array<PeakEntry, 14> table = {{
    {"strix-halo-8060s-gfx1151", "gfx1151", "8060s", 256.0, 59.4,
     "AMD Ryzen AI Max+ 395 spec: 256-bit LPDDR5X-8000; 40 CU x 2.9 GHz x 512 FLOP/clk/CU"},
    {"strix-halo-8050s-gfx1151", "gfx1151", "8050s", 256.0, 45.9,
     "AMD Ryzen AI Max 385 spec: 256-bit LPDDR5X-8000; 32 CU x 2.8 GHz x 512 FLOP/clk/CU"},
    {"strix-halo-gfx1151", "gfx1151", "", 256.0, 59.4,
     "AMD Strix Halo: 256-bit LPDDR5X-8000; assumes the 40 CU Radeon 8060S at 2.9 GHz"},
    {"mi300a-gfx942", "gfx942", "mi300a", 5300.0, 980.6, "AMD Instinct MI300A data sheet"},
    {"mi325x-gfx942", "gfx942", "mi325", 6000.0, 1307.4, "AMD Instinct MI325X data sheet"},
    {"mi300x-gfx942", "gfx942", "", 5300.0, 1307.4, "AMD Instinct MI300X data sheet"},
    {"mi210-gfx90a", "gfx90a", "mi210", 1638.4, 181.0, "AMD Instinct MI210 data sheet"},
    {"mi250x-gfx90a", "gfx90a", "", 3276.8, 383.0,
     "AMD Instinct MI250X data sheet (both GCDs; one GCD is half)"},
    {"rx7900xtx-gfx1100", "gfx1100", "", 960.0, 122.8, "AMD Radeon RX 7900 XTX specifications"},
    {"h100-pcie-sm_90", "sm_90", "pcie", 2000.0, 756.0, "NVIDIA H100 PCIe data sheet, dense BF16"},
    {"h200-sm_90", "sm_90", "h200", 4800.0, 989.4, "NVIDIA H200 data sheet, dense BF16"},
    {"h100-sxm-sm_90", "sm_90", "", 3350.0, 989.4, "NVIDIA H100 SXM5 data sheet, dense BF16"},
    {"a100-40gb-sm_80", "sm_80", "40gb", 1555.0, 312.0, "NVIDIA A100 40GB data sheet, dense BF16"},
    {"a100-80gb-sm_80", "sm_80", "", 2039.0, 312.0, "NVIDIA A100 80GB SXM data sheet, dense BF16"},
}};

bool contains_icase(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) {
    return true;
  }
  const auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                              [](char a, char b) {
                                return std::tolower(static_cast<unsigned char>(a)) ==
                                       std::tolower(static_cast<unsigned char>(b));
                              });
  return it != haystack.end();
}

} // namespace

std::span<const PeakEntry> peak_table() noexcept {
  return table;
}

std::string base_arch(std::string_view arch) {
  const auto colon = arch.find(':');
  return std::string(arch.substr(0, colon));
}

std::optional<PeakEntry> find_peak(std::string_view arch, std::string_view device_name) {
  const std::string base = base_arch(arch);
  for (const PeakEntry& entry : table) {
    if (entry.arch == base && contains_icase(device_name, entry.name_contains)) {
      return entry;
    }
  }
  return std::nullopt;
}

std::optional<double> bandwidth_from_properties(double memory_clock_khz, double bus_width_bits) {
  if (!(memory_clock_khz > 0.0) || !(bus_width_bits > 0.0)) {
    return std::nullopt;
  }
  return 2.0 * memory_clock_khz * 1e3 * bus_width_bits / 8.0 / 1e9;
}

} // namespace halo_bench
