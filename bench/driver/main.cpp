// SPDX-License-Identifier: MIT
// halo-bench: GPU microbenchmarks behind `halo-doctor bench` (memory bandwidth, BF16 GEMM,
// dequantized NF4/int4 GEMM, fused 4-bit GEMV, transfer integrity, a model's projections, usable
// memory ceiling). Prints text for people and writes bench.* facts (--json FILE) for
// `halo-doctor check --add-facts FILE`. This file wires the command line, opens the device and
// runs the parts (driver/<part>.cpp) in order.
#include "driver.hpp"
#include "halo_bench/peaks.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <set>
#include <string>

namespace halo_bench::driver {
namespace {

int run(int argc, char** argv) {
  Options o;
  CLI::App app{"halo-bench: GPU microbenchmarks for halo-doctor (bandwidth, BF16 and int4 GEMM, "
               "memory ceiling)"};
  add_options(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every malformed command line is exit 2 (the documented set).
    return app.exit(e) == 0 ? 0 : 2;
  }

  // Every argument is checked before the GPU runtime is touched (exit 2, nothing has run).
  Plan plan;
  try {
    plan = make_plan(o);
  } catch (const halo_bench::UsageError& e) {
    std::fprintf(stderr, "halo-bench: %s\n", e.what());
    return 2;
  }
  const std::set<std::string>& parts = plan.parts;

  FactSet facts;
  facts.set_ok("bench.backend", gpu::backend_name(), "halo-bench");
  std::string why;
  const int count = gpu::device_count(why);
  if (count == 0) {
    std::fprintf(stderr, "halo-bench: %s\n", why.c_str());
    for (const char* key : {"bench.device.name", "bench.device.arch"}) {
      facts.set_missing(key, why);
    }
    try {
      write_facts(o, facts);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "halo-bench: %s\n", e.what());
    }
    return exit_no_gpu;
  }
  if (o.device >= count) {
    std::fprintf(stderr, "halo-bench: --device %d but only %d device(s)\n", o.device, count);
    return 2;
  }

  try {
    const gpu::DeviceInfo info = gpu::open_device(o.device);
    const std::string props = std::string(gpu::backend_name()) + " device properties";
    facts.set_ok("bench.device.name", info.name, props);
    facts.set_ok("bench.device.arch", halo_bench::base_arch(info.arch), props);
    facts.set_ok("bench.device.arch_target_id", info.arch, props);
    facts.set_ok("bench.device.compute_units", info.compute_units, props);
    facts.set_ok("bench.device.integrated", info.integrated, props);
    facts.set_ok("bench.device.total_memory_bytes", info.total_memory, props);
    facts.set_ok("bench.device.runtime_version", info.runtime_version, props);
    facts.set_ok("bench.gemm.own_kernel", info.gemm_kernel, "halo-bench (compiled path)");
    facts.set_ok("bench.gemm.blas_library", gpu::GemmSession::blas_name(), "halo-bench build");
    std::printf("halo-bench %s on %s (%s, %d CUs/SMs, %.1f GiB, %s)\n", gpu::backend_name(),
                info.name.c_str(), info.arch.c_str(), info.compute_units,
                static_cast<double>(info.total_memory) / gib,
                info.integrated ? "integrated" : "discrete");

    const auto peak = halo_bench::find_peak(info.arch, info.name);
    double peak_gbps = 0.0;
    double peak_tflops = 0.0;
    if (peak) {
      peak_gbps = peak->bandwidth_gbps;
      peak_tflops = peak->bf16_dense_tflops;
      facts.set_ok("bench.peak_bandwidth_gbps", peak_gbps, std::string(peak->source));
      facts.set_ok("bench.peak_bandwidth_source", "table: " + std::string(peak->row),
                   "halo-bench peak table (docs/bench.md)");
      facts.set_ok("bench.peak_bf16_tflops", peak_tflops, std::string(peak->source));
    } else if (auto bw = halo_bench::bandwidth_from_properties(info.memory_clock_khz,
                                                               info.memory_bus_bits)) {
      peak_gbps = *bw;
      facts.set_ok("bench.peak_bandwidth_gbps", peak_gbps,
                   "2 * memory clock * bus width / 8 from device properties");
      facts.set_ok("bench.peak_bandwidth_source", "device properties", "halo-bench");
      facts.set_missing("bench.peak_bf16_tflops", "device not in the peak table");
    } else {
      facts.set_missing("bench.peak_bandwidth_gbps", "device not in the peak table and no "
                                                     "memory clock/bus width in its properties");
      facts.set_missing("bench.peak_bandwidth_source", "no peak known");
      facts.set_missing("bench.peak_bf16_tflops", "device not in the peak table");
    }

    if (parts.count("stream") != 0) {
      run_stream_part(o, facts, peak_gbps);
    } else {
      facts.set_missing("bench.stream.device.triad_gbps", "not requested");
    }
    const bool gemm = parts.count("gemm") != 0;
    const bool int4 = parts.count("int4") != 0;
    if (gemm || int4) {
      run_gemm_parts(o, plan.shapes, int4, facts, peak_tflops);
    } else {
      facts.set_missing("bench.gemm.bf16.tflops", "not requested");
      facts.set_missing("bench.gemm.bf16_blas.tflops", "not requested");
    }
    if (!int4) {
      facts.set_missing("bench.int4.best_tflops", "not requested");
      facts.set_missing("bench.int4.best_ratio_to_bf16", "not requested");
    }
    if (parts.count("gemv") != 0) {
      run_gemv_part(o, plan, facts);
    } else {
      facts.set_missing("bench.gemv.nf4.min_pct_of_stream", "not requested");
    }
    if (parts.count("integrity") != 0) {
      run_integrity_part(o, plan, facts);
    } else {
      facts.set_missing("bench.integrity.ok", "not requested");
    }
    if (parts.count("model") != 0) {
      run_model_part(o, plan, facts);
    } else {
      facts.set_missing("bench.model.training.verdict", "not requested");
      facts.set_missing("bench.model.generation.verdict", "not requested");
    }
    if (parts.count("ceiling") != 0) {
      run_ceiling_part(o, info, facts);
    } else {
      facts.set_missing("bench.ceiling_bytes", "not requested");
    }
    write_facts(o, facts);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halo-bench: %s\n", e.what());
    try {
      write_facts(o, facts);
    } catch (const std::exception& inner) {
      std::fprintf(stderr, "halo-bench: %s\n", inner.what());
    }
    return 1;
  }
  return 0;
}

} // namespace
} // namespace halo_bench::driver

int main(int argc, char** argv) {
  return halo_bench::driver::run(argc, argv);
}
