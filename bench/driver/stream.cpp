// SPDX-License-Identifier: MIT
// halo-bench stream part: memory bandwidth with the BabelStream kernels on device, pinned host
// and managed memory, and pinned host <-> device copy rates.
#include "driver.hpp"

#include <cstdio>
#include <string>

namespace halo_bench::driver {

void run_stream_part(const Options& o, FactSet& facts, double peak_gbps) {
  Recorder rec{facts, o};
  const auto elements = static_cast<std::size_t>(o.stream_mib * 1024.0 * 1024.0 / 8.0);
  const double array_bytes = static_cast<double>(elements) * 8.0;
  std::printf("Memory bandwidth (BabelStream kernels, 3 arrays of %.0f MiB doubles)\n",
              array_bytes / 1048576.0);
  const struct {
    gpu::MemoryKind kind;
    const char* name;
  } kinds[] = {{gpu::MemoryKind::device, "device"},
               {gpu::MemoryKind::host_pinned, "host"},
               {gpu::MemoryKind::managed, "managed"}};
  for (const auto& kind : kinds) {
    const std::string prefix = std::string("bench.stream.") + kind.name;
    try {
      const gpu::StreamTimes t = gpu::run_stream(kind.kind, elements, o.warmup, o.reps);
      if (!t.verified) {
        for (const char* op : {"copy", "mul", "add", "triad"}) {
          facts.set_error(prefix + "." + op + "_gbps", t.verify_error);
        }
        std::printf("  %-8s ERROR %s\n", kind.name, t.verify_error.c_str());
        continue;
      }
      const struct {
        const char* op;
        const std::vector<double>& ms;
        double arrays;
      } ops[] = {{"copy", t.copy_ms, 2},
                 {"mul", t.mul_ms, 2},
                 {"add", t.add_ms, 3},
                 {"triad", t.triad_ms, 3}};
      for (const auto& op : ops) {
        const std::string key = prefix + "." + op.op;
        const Summary s =
            rec.record_rate(key + "_gbps", key, op.arrays * array_bytes, op.ms,
                            std::string("stream ") + op.op + " (" + kind.name + " memory)");
        const double gbps = halo_bench::per_second_giga(op.arrays * array_bytes, s.median);
        const std::string label = std::string(kind.name) + " " + op.op;
        print_rate(label.c_str(), gbps, "GB/s", s);
        if (peak_gbps > 0.0) {
          facts.set_ok(key + ".pct_of_peak", 100.0 * gbps / peak_gbps,
                       "median GB/s / bench.peak_bandwidth_gbps");
        }
      }
    } catch (const gpu::GpuError& e) {
      facts.set_error(prefix + ".triad_gbps", e.what());
      std::printf("  %-8s ERROR %s\n", kind.name, e.what());
    }
  }
  try {
    const auto bytes = static_cast<std::size_t>(o.transfer_mib * 1048576.0);
    const gpu::TransferTimes t = gpu::run_transfers(bytes, o.warmup, o.reps);
    const Summary h =
        rec.record_rate("bench.transfer.h2d_gbps", "bench.transfer.h2d", static_cast<double>(bytes),
                        t.h2d_ms, "pinned host to device copy");
    const Summary d =
        rec.record_rate("bench.transfer.d2h_gbps", "bench.transfer.d2h", static_cast<double>(bytes),
                        t.d2h_ms, "device to pinned host copy");
    print_rate("host to device copy", facts.at("bench.transfer.h2d_gbps").value.get<double>(),
               "GB/s", h);
    print_rate("device to host copy", facts.at("bench.transfer.d2h_gbps").value.get<double>(),
               "GB/s", d);
  } catch (const gpu::GpuError& e) {
    facts.set_error("bench.transfer.h2d_gbps", e.what());
    facts.set_error("bench.transfer.d2h_gbps", e.what());
  }
}

} // namespace halo_bench::driver
