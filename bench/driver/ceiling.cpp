// SPDX-License-Identifier: MIT
// halo-bench ceiling part: the usable device memory (allocate and touch chunks up to a safety
// cap) next to the TTM, GTT, VRAM and pool sizes it is compared with.
#include "driver.hpp"
#include "halo_bench/host_memory.hpp"

#include <cstdio>
#include <optional>
#include <string>

namespace halo_bench::driver {

void run_ceiling_part(const Options& o, const gpu::DeviceInfo& info, FactSet& facts) {
  const auto mem_available = halo_bench::read_mem_available();
  const auto ttm = halo_bench::read_ttm_limit_bytes();
  const auto gtt = halo_bench::read_gtt_total_bytes();
  const auto vram = halo_bench::read_vram_total_bytes();
  const auto reserve = static_cast<std::uint64_t>(o.reserve_gib * gib);
  const auto chunk = static_cast<std::uint64_t>(o.chunk_gib * gib);
  // Discrete GPUs: host MemAvailable does not bound device memory, only the pool does.
  const std::uint64_t cap = halo_bench::ceiling_cap_bytes(
      info.integrated ? mem_available : std::nullopt, reserve, info.total_memory);
  auto put = [&](const char* key, const std::optional<std::uint64_t>& v, const char* source) {
    if (v) {
      facts.set_ok(key, *v, source);
    } else {
      facts.set_missing(key, std::string("not readable: ") + source);
    }
  };
  put("bench.ttm_limit_bytes", ttm, "/sys/module/ttm/parameters/pages_limit * page size");
  put("bench.gtt_total_bytes", gtt, "/sys/class/drm/card*/device/mem_info_gtt_total");
  put("bench.vram_total_bytes", vram, "/sys/class/drm/card*/device/mem_info_vram_total");
  put("bench.mem_available_bytes", mem_available, "/proc/meminfo MemAvailable");
  const std::string pool_term = gpu::memory_pool_term();
  if (std::string(gpu::backend_name()) == "hip") {
    facts.set_ok("bench.hsa_pool_bytes", info.total_memory, pool_term);
  } else {
    facts.set_missing("bench.hsa_pool_bytes", "not a ROCm device: the pool is " + pool_term +
                                                  ", see bench.device_memory_bytes");
  }
  facts.set_ok("bench.device_memory_bytes", info.total_memory, pool_term);
  facts.set_ok("bench.ceiling_cap_bytes", cap,
               info.integrated ? "min(MemAvailable - reserve, pool)" : "device pool size");
  if (chunk == 0 || cap < chunk) {
    facts.set_error("bench.ceiling_bytes", "safety cap " + std::to_string(cap) +
                                               " bytes is below one chunk; nothing allocated");
    return;
  }
  std::printf("Memory ceiling: allocating %.2f GiB chunks up to a cap of %.1f GiB\n", o.chunk_gib,
              static_cast<double>(cap) / gib);
  const gpu::CeilingResult r = gpu::run_ceiling(chunk, cap);
  facts.set_ok("bench.ceiling_bytes", r.bytes,
               "halo-bench ceiling: " + std::to_string(r.chunks) + " chunks of " +
                   std::to_string(chunk) +
                   " bytes allocated and touched, stopped: " + r.stop_reason);
  facts.set_ok("bench.ceiling_reached_cap", r.reached_cap, "halo-bench ceiling");
  facts.set_ok("bench.ceiling_stop_reason", r.stop_reason, "halo-bench ceiling");
  std::printf("  allocated %.1f GiB in %zu chunks (%s) in %.1f s\n",
              static_cast<double>(r.bytes) / gib, r.chunks, r.stop_reason.c_str(), r.seconds);
  if (ttm) {
    std::printf("  TTM limit %.1f GiB\n", static_cast<double>(*ttm) / gib);
  }
  if (gtt) {
    std::printf("  GTT size  %.1f GiB\n", static_cast<double>(*gtt) / gib);
  }
  std::printf("  %s %.1f GiB\n", pool_term.c_str(), static_cast<double>(info.total_memory) / gib);
}

} // namespace halo_bench::driver
