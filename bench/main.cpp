// SPDX-License-Identifier: MIT
// halo-bench: GPU microbenchmarks behind `halo-doctor bench` (memory bandwidth, BF16 GEMM,
// dequantized NF4/int4 GEMM, usable memory ceiling). Prints text for people and writes bench.*
// facts (--json FILE) for `halo-doctor check --add-facts FILE`.
#include "bench_gpu.hpp"
#include "halo_bench/bf16.hpp"
#include "halo_bench/checks.hpp"
#include "halo_bench/facts.hpp"
#include "halo_bench/host_memory.hpp"
#include "halo_bench/peaks.hpp"
#include "halo_bench/quant.hpp"
#include "halo_bench/reference_gemm.hpp"
#include "halo_bench/stats.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using halo_bench::FactSet;
using halo_bench::GemmShape;
using halo_bench::Summary;
namespace gpu = halo_bench::gpu;

constexpr int exit_no_gpu = 3;
constexpr double gemm_tolerance = 0.02;
constexpr double gib = 1024.0 * 1024.0 * 1024.0;

struct Options {
  std::string json_path;
  std::string sizes = "4096x4096x4096,4096x11008x4096,4096x4096x11008";
  int reps = 20;
  int warmup = 3;
  bool ceiling = false;
  double chunk_gib = 1.0;
  double reserve_gib = 4.0;
  std::string only = "stream,gemm,int4";
  int device = 0;
  double stream_mib = 512.0;
  double transfer_mib = 256.0;
  int int4_group = 128;
  int samples = 1024;
};

std::string shape_key(const GemmShape& s) {
  return "m" + std::to_string(s.m) + "_n" + std::to_string(s.n) + "_k" + std::to_string(s.k);
}

std::vector<GemmShape> parse_sizes(const std::string& text) {
  std::vector<GemmShape> shapes;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) {
      continue;
    }
    GemmShape s;
    char x1 = 0;
    char x2 = 0;
    std::stringstream one(item);
    if (!(one >> s.m >> x1 >> s.n >> x2 >> s.k) || x1 != 'x' || x2 != 'x' || s.m <= 0 || s.n <= 0 ||
        s.k <= 0) {
      throw CLI::ValidationError("--sizes", "expected MxNxK[,MxNxK...], got '" + item + "'");
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) {
    throw CLI::ValidationError("--sizes", "no shape given");
  }
  return shapes;
}

std::string timing_source(const std::string& what, const Options& o) {
  return "halo-bench " + what + ", " + std::string(gpu::backend_name()) +
         "Event timing, median of " + std::to_string(o.reps);
}

/// Records value, median time and spread for one measurement series.
struct Recorder {
  FactSet& facts;
  const Options& options;

  /// Sets `value_key` to the rate at the median time (GB/s, or TFLOP/s when the key ends in
  /// "tflops") and `stats_prefix`.median_ms / .spread; returns the summary.
  Summary record_rate(const std::string& value_key, const std::string& stats_prefix, double work,
                      const std::vector<double>& ms, const std::string& what) {
    const Summary s = halo_bench::summarize(ms);
    const double rate = halo_bench::per_second_giga(work, s.median);
    const std::string source = timing_source(what, options);
    facts.set_ok(value_key, value_key.ends_with("tflops") ? rate / 1000.0 : rate, source);
    facts.set_ok(stats_prefix + ".median_ms", s.median, source);
    facts.set_ok(stats_prefix + ".spread", s.spread, source + "; (max-min)/median");
    return s;
  }
};

void print_rate(const char* label, double value, const char* unit, const Summary& s) {
  std::printf("  %-34s %10.2f %-7s (median %.3f ms, spread %.1f%%, n=%zu)\n", label, value, unit,
              s.median, 100.0 * s.spread, s.count);
}

// ---- stream -------------------------------------------------------------------------------------
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

// ---- GEMM and int4
// ---------------------------------------------------------------------------------
struct GemmTotals {
  std::optional<double> own_bf16_ref; // TFLOP/s at the reference shape
  std::optional<double> blas_bf16_ref;
  std::optional<double> best_int4_ref;
  std::string best_int4_path;
};

/// Checks the sampled output of the last GEMM; on failure records an error for `key`.
bool check_gemm(gpu::GemmSession& session, const std::vector<std::int64_t>& flat,
                const std::vector<double>& expected, FactSet& facts, const std::string& key,
                const std::string& what) {
  const std::vector<float> got = session.gather_output(flat);
  const halo_bench::CheckResult check = halo_bench::check_relative(
      expected, got, gemm_tolerance, halo_bench::relative_floor(expected));
  facts.set_ok(key + ".max_rel_err", check.max_rel_error,
               "halo-bench " + what + " vs CPU reference on " + std::to_string(check.compared) +
                   " sampled outputs");
  if (!check.ok) {
    facts.set_error(key + ".tflops", check.reason);
    std::printf("  %-34s ERROR %s\n", what.c_str(), check.reason.c_str());
  }
  return check.ok;
}

/// BF16 GEMM (own kernel, vendor BLAS) on every shape; with `int4_part` also the NF4 and int4
/// paths, which need the BF16 numbers for their ratio, so the BF16 GEMM always runs here.
void run_gemm_parts(const Options& o, bool int4_part, FactSet& facts, double peak_tflops) {
  Recorder rec{facts, o};
  const std::vector<GemmShape> shapes = parse_sizes(o.sizes);
  const auto ref_it = std::find_if(shapes.begin(), shapes.end(), [](const GemmShape& s) {
    return s.m == 4096 && s.n == 4096 && s.k == 4096;
  });
  const GemmShape ref_shape = ref_it != shapes.end() ? *ref_it : shapes.front();
  GemmTotals totals;
  const std::string blas = gpu::GemmSession::blas_name();

  for (const GemmShape& shape : shapes) {
    const bool is_ref = shape.m == ref_shape.m && shape.n == ref_shape.n && shape.k == ref_shape.k;
    const std::string sk = shape_key(shape);
    std::printf("GEMM C[%lld x %lld] = A[%lld x %lld] * W[%lld x %lld]^T (%s)\n",
                static_cast<long long>(shape.m), static_cast<long long>(shape.n),
                static_cast<long long>(shape.m), static_cast<long long>(shape.k),
                static_cast<long long>(shape.n), static_cast<long long>(shape.k), sk.c_str());
    try {
      const auto a = halo_bench::random_bf16(static_cast<std::size_t>(shape.m * shape.k), 1);
      const auto w_float =
          halo_bench::random_normal(static_cast<std::size_t>(shape.n * shape.k), 2, 0.02f);
      const auto w = halo_bench::to_bf16(w_float);
      const auto samples =
          halo_bench::pick_gemm_samples(shape, static_cast<std::size_t>(o.samples));
      std::vector<std::int64_t> flat;
      for (const auto& s : samples) {
        flat.push_back(s.row * shape.n + s.col);
      }
      const auto expected = halo_bench::gemm_bf16_reference_sampled(shape, a, w, samples);
      gpu::GemmSession session(shape.m, shape.n, shape.k, a.data(), w.data());
      const double flops = shape.flops();

      auto measure = [&](const std::string& key, const std::string& what,
                         const std::vector<double>& expect, auto&& timed) -> std::optional<double> {
        try {
          session.poison_output();
          const std::vector<double> ms = timed();
          if (!check_gemm(session, flat, expect, facts, key, what)) {
            return std::nullopt;
          }
          const Summary s = rec.record_rate(key + ".tflops", key, flops, ms, what);
          const double tflops = halo_bench::per_second_giga(flops, s.median) / 1000.0;
          if (peak_tflops > 0.0) {
            facts.set_ok(key + ".pct_of_peak", 100.0 * tflops / peak_tflops,
                         "TFLOP/s / table peak dense BF16");
          }
          print_rate(what.c_str(), tflops, "TFLOP/s", s);
          return tflops;
        } catch (const gpu::GpuError& e) {
          facts.set_error(key + ".tflops", e.what());
          std::printf("  %-34s ERROR %s\n", what.c_str(), e.what());
          return std::nullopt;
        }
      };

      // BF16: own kernel and vendor BLAS.
      const auto own = measure("bench.gemm.bf16." + sk, "bf16 own kernel", expected,
                               [&] { return session.time_own_bf16(o.warmup, o.reps); });
      std::optional<double> blas_tflops;
      if (gpu::GemmSession::blas_available()) {
        blas_tflops = measure("bench.gemm.bf16_blas." + sk, "bf16 " + blas, expected,
                              [&] { return session.time_blas_bf16(o.warmup, o.reps); });
      } else {
        facts.set_missing("bench.gemm.bf16_blas." + sk + ".tflops", "not built");
      }
      if (is_ref) {
        totals.own_bf16_ref = own;
        totals.blas_bf16_ref = blas_tflops;
      }
      if (!int4_part) {
        continue;
      }

      // Dequantized int4: NF4 (bitsandbytes) and plain int4 with group scales.
      const struct {
        gpu::QuantFormat format;
        std::string name;
      } formats[] = {{gpu::QuantFormat::nf4, "nf4"},
                     {gpu::QuantFormat::int4, "int4g" + std::to_string(o.int4_group)}};
      for (const auto& fmt : formats) {
        std::vector<halo_bench::bf16_bits> w_deq;
        if (fmt.format == gpu::QuantFormat::nf4) {
          const auto q = halo_bench::quantize_nf4(w_float);
          session.upload_nf4(q.packed.data(), q.absmax.data(), q.absmax.size(), q.block_size,
                             halo_bench::nf4_code_table().data());
          w_deq = halo_bench::dequantize_nf4_bf16(q);
        } else {
          const auto q = halo_bench::quantize_int4(w_float, static_cast<std::size_t>(o.int4_group));
          session.upload_int4(q.packed.data(), q.scales.data(), q.scales.size(), q.group_size);
          w_deq = halo_bench::dequantize_int4_bf16(q);
        }
        const std::string base = "bench.int4." + fmt.name;
        const auto expect_q = halo_bench::gemm_bf16_reference_sampled(shape, a, w_deq, samples);
        std::vector<std::pair<std::string, double>> results;

        // Dequantization kernel alone, checked bit for bit.
        bool dequant_ok = false;
        try {
          const auto ms = session.time_dequant(fmt.format, o.warmup, o.reps);
          const auto check = halo_bench::check_bit_exact(w_deq, session.download_dequantized());
          if (check.ok) {
            dequant_ok = true;
            const double bytes = static_cast<double>(shape.n * shape.k) * (0.5 + 2.0);
            const Summary s =
                rec.record_rate(base + ".dequant." + sk + ".gbps", base + ".dequant." + sk, bytes,
                                ms, fmt.name + " dequantize to bf16 (bytes read + written)");
            print_rate((fmt.name + " dequantize").c_str(),
                       halo_bench::per_second_giga(bytes, s.median), "GB/s", s);
          } else {
            facts.set_error(base + ".dequant." + sk + ".gbps", check.reason);
            std::printf("  %-34s ERROR %s\n", (fmt.name + " dequantize").c_str(),
                        check.reason.c_str());
          }
        } catch (const gpu::GpuError& e) {
          facts.set_error(base + ".dequant." + sk + ".gbps", e.what());
        }
        if (dequant_ok) {
          if (auto v = measure(
                  base + ".dequant_gemm." + sk, fmt.name + " dequant + own gemm", expect_q, [&] {
                    return session.time_dequant_then_gemm(fmt.format, false, o.warmup, o.reps);
                  })) {
            results.emplace_back("dequant_gemm", *v);
          }
          if (gpu::GemmSession::blas_available()) {
            if (auto v = measure(
                    base + ".dequant_blas." + sk, fmt.name + " dequant + " + blas, expect_q, [&] {
                      return session.time_dequant_then_gemm(fmt.format, true, o.warmup, o.reps);
                    })) {
              results.emplace_back("dequant_blas", *v);
            }
          } else {
            facts.set_missing(base + ".dequant_blas." + sk + ".tflops", "not built");
          }
        } else {
          facts.set_error(base + ".dequant_gemm." + sk + ".tflops",
                          "dequantization failed its bit-exact check");
        }
        if (auto v = measure(base + ".fused." + sk, fmt.name + " fused dequant-gemm", expect_q,
                             [&] { return session.time_fused(fmt.format, o.warmup, o.reps); })) {
          results.emplace_back("fused", *v);
        }
        if (is_ref) {
          for (const auto& [path, tflops] : results) {
            facts.set_ok(base + "." + path + ".tflops", tflops,
                         "halo-bench " + fmt.name + " " + path + " at " + sk);
            if (!totals.best_int4_ref || tflops > *totals.best_int4_ref) {
              totals.best_int4_ref = tflops;
              totals.best_int4_path = fmt.name + "." + path;
            }
          }
        }
      }
    } catch (const std::exception& e) {
      facts.set_error("bench.gemm.bf16." + sk + ".tflops", e.what());
      std::printf("  ERROR %s\n", e.what());
    }
  }

  const std::string ref_key = shape_key(ref_shape);
  const std::string ref_note = "halo-bench own kernel at " + ref_key;
  if (totals.own_bf16_ref) {
    facts.set_ok("bench.gemm.bf16.tflops", *totals.own_bf16_ref, ref_note);
  } else {
    facts.set_error("bench.gemm.bf16.tflops", "own bf16 GEMM at " + ref_key + " failed");
  }
  if (!gpu::GemmSession::blas_available()) {
    facts.set_missing("bench.gemm.bf16_blas.tflops", "not built");
  } else if (totals.blas_bf16_ref) {
    facts.set_ok("bench.gemm.bf16_blas.tflops", *totals.blas_bf16_ref,
                 "halo-bench " + blas + " at " + ref_key);
  } else {
    facts.set_error("bench.gemm.bf16_blas.tflops", blas + " GEMM at " + ref_key + " failed");
  }
  if (!int4_part) {
    return;
  }
  std::optional<double> best_bf16 = totals.own_bf16_ref;
  if (totals.blas_bf16_ref && (!best_bf16 || *totals.blas_bf16_ref > *best_bf16)) {
    best_bf16 = totals.blas_bf16_ref;
  }
  if (totals.best_int4_ref) {
    facts.set_ok("bench.int4.best_tflops", *totals.best_int4_ref,
                 "halo-bench best int4/NF4 path (" + totals.best_int4_path + ") at " + ref_key);
    facts.set_ok("bench.int4.best_path", totals.best_int4_path, "halo-bench at " + ref_key);
    if (best_bf16) {
      facts.set_ok("bench.int4.best_ratio_to_bf16", *totals.best_int4_ref / *best_bf16,
                   "best int4 TFLOP/s / best bf16 TFLOP/s (own kernel, vendor BLAS) at " + ref_key);
      std::printf("Best int4 path %s: %.2f TFLOP/s = %.2fx the best BF16 GEMM\n",
                  totals.best_int4_path.c_str(), *totals.best_int4_ref,
                  *totals.best_int4_ref / *best_bf16);
    } else {
      facts.set_error("bench.int4.best_ratio_to_bf16", "no BF16 GEMM result to compare with");
    }
  } else {
    facts.set_error("bench.int4.best_tflops", "every int4/NF4 path failed at " + ref_key);
    facts.set_error("bench.int4.best_ratio_to_bf16", "every int4/NF4 path failed at " + ref_key);
  }
}

// ---- ceiling
// ----------------------------------------------------------------------------------------
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
  facts.set_ok("bench.hsa_pool_bytes", info.total_memory, "device properties totalGlobalMem");
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
  std::printf("  HSA pool  %.1f GiB\n", static_cast<double>(info.total_memory) / gib);
}

void write_facts(const Options& o, const FactSet& facts) {
  if (!o.json_path.empty()) {
    facts.write(o.json_path, halo_bench::tool_version);
    std::printf("facts written to %s\n", o.json_path.c_str());
  }
}

} // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"halo-bench: GPU microbenchmarks for halo-doctor (bandwidth, BF16 and int4 GEMM, "
               "memory ceiling)"};
  app.add_option("--json", o.json_path, "write bench.* facts to FILE");
  app.add_option("--sizes", o.sizes, "GEMM shapes MxNxK, comma separated (C = A[MxK] W[NxK]^T)")
      ->capture_default_str();
  app.add_option("--reps", o.reps, "timed repetitions")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed warm-up runs")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_flag("--ceiling", o.ceiling, "probe the usable memory ceiling (pressures the host)");
  app.add_option("--chunk-gib", o.chunk_gib, "ceiling allocation chunk, GiB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--reserve", o.reserve_gib, "GiB of MemAvailable the ceiling probe leaves free")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--only", o.only, "parts to run: stream,gemm,int4,ceiling")->capture_default_str();
  app.add_option("--device", o.device, "device index")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--stream-mib", o.stream_mib, "MiB per STREAM array (>= 4x the LLC)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--transfer-mib", o.transfer_mib, "MiB per host<->device copy")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--int4-group", o.int4_group, "int4 group size (even)")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--samples", o.samples, "GEMM outputs checked against the CPU reference")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::set<std::string> parts;
  {
    std::stringstream list(o.only);
    std::string part;
    while (std::getline(list, part, ',')) {
      if (part != "stream" && part != "gemm" && part != "int4" && part != "ceiling") {
        std::fprintf(stderr, "halo-bench: unknown part '%s' in --only\n", part.c_str());
        return 2;
      }
      parts.insert(part);
    }
  }
  if (o.ceiling) {
    parts.insert("ceiling");
  } else if (parts.count("ceiling") != 0) {
    std::fprintf(stderr, "halo-bench: the ceiling probe pressures the host; it needs --ceiling\n");
    return 2;
  }
  if (o.int4_group % 2 != 0) {
    std::fprintf(stderr, "halo-bench: --int4-group must be even\n");
    return 2;
  }
  try {
    (void)parse_sizes(o.sizes);
  } catch (const CLI::ValidationError& e) {
    std::fprintf(stderr, "halo-bench: %s\n", e.what());
    return 2;
  }

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
      run_gemm_parts(o, int4, facts, peak_tflops);
    } else {
      facts.set_missing("bench.gemm.bf16.tflops", "not requested");
      facts.set_missing("bench.gemm.bf16_blas.tflops", "not requested");
    }
    if (!int4) {
      facts.set_missing("bench.int4.best_tflops", "not requested");
      facts.set_missing("bench.int4.best_ratio_to_bf16", "not requested");
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
