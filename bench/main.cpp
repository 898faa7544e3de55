// SPDX-License-Identifier: MIT
// halo-bench: GPU microbenchmarks behind `halo-doctor bench` (memory bandwidth, BF16 GEMM,
// dequantized NF4/int4 GEMM, usable memory ceiling). Prints text for people and writes bench.*
// facts (--json FILE) for `halo-doctor check --add-facts FILE`.
#include "bench_gpu.hpp"
#include "halo_bench/bf16.hpp"
#include "halo_bench/checks.hpp"
#include "halo_bench/facts.hpp"
#include "halo_bench/gemv_reference.hpp"
#include "halo_bench/host_memory.hpp"
#include "halo_bench/integrity.hpp"
#include "halo_bench/model_verdict.hpp"
#include "halo_bench/options.hpp"
#include "halo_bench/peaks.hpp"
#include "halo_bench/quant.hpp"
#include "halo_bench/reference_gemm.hpp"
#include "halo_bench/stats.hpp"

#include <CLI/CLI.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

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
  std::string only = "stream,gemm,int4,gemv,integrity";
  int device = 0;
  double stream_mib = 512.0;
  double transfer_mib = 256.0;
  int int4_group = 128;
  int samples = 1024;
  // fused GEMV (generation regime)
  std::string gemv_m = "1,8,16,64";
  std::string gemv_nk = "4096x4096,11008x4096";
  double gemv_rotate_mib = 1024.0; ///< weight copies rotated per timed repetition (> the LLC)
  // integrity
  std::string integrity_sizes = "4K,64K,1M,16M,256M,1G";
  bool integrity_child = false; ///< internal: this process is the HSA_ENABLE_SDMA=0 child
  bool no_sdma_child = false;
  // model (from `halo-doctor bench --model`)
  std::string model_linears;
  std::string model_name;
  std::int64_t train_tokens = 4096;
  std::string gen_m = "1,8,64";
};

/// Everything parsed and checked from Options before the GPU is touched.
struct Plan {
  std::set<std::string> parts;
  std::vector<GemmShape> shapes;
  std::vector<std::int64_t> gemv_m;
  std::vector<GemmShape> gemv_nk; ///< m unused
  std::vector<std::uint64_t> integrity_sizes;
  std::vector<halo_bench::ModelLinear> linears;
  std::vector<std::int64_t> gen_m;
};

constexpr std::array<std::string_view, 7> kParts = {"stream",    "gemm",  "int4",   "gemv",
                                                    "integrity", "model", "ceiling"};

/// Parses and validates every argument (UsageError: exit 2, nothing run).
Plan make_plan(const Options& o) {
  Plan p;
  for (auto& part : halo_bench::parse_name_list(o.only, kParts, "--only"))
    p.parts.insert(part);
  if (o.ceiling) p.parts.insert("ceiling");
  if (p.parts.count("ceiling") != 0 && !o.ceiling)
    throw halo_bench::UsageError("--only ceiling: the ceiling probe pressures the host; it needs "
                                 "--ceiling");
  if (o.int4_group % 2 != 0) throw halo_bench::UsageError("--int4-group must be even");
  p.shapes = halo_bench::parse_gemm_shapes(o.sizes, "--sizes");
  p.gemv_m = halo_bench::parse_int_list(o.gemv_m, 1, 64, 1, "--gemv-m");
  for (const auto& nk : halo_bench::parse_gemm_shapes(
           [&] {
             std::string t;
             std::stringstream in(o.gemv_nk);
             std::string item;
             while (std::getline(in, item, ','))
               if (!item.empty()) t += (t.empty() ? "16x" : ",16x") + item;
             return t;
           }(),
           "--gemv-nk"))
    p.gemv_nk.push_back(nk);
  p.integrity_sizes = halo_bench::parse_byte_sizes(o.integrity_sizes, 4096, std::uint64_t{16} << 30,
                                                   "--integrity-sizes");
  p.gen_m = halo_bench::parse_int_list(o.gen_m, 1, 64, 1, "--gen-m");
  const bool needs_fused = p.parts.count("gemv") != 0 || p.parts.count("model") != 0;
  if (needs_fused && o.int4_group % 32 != 0)
    throw halo_bench::UsageError("--int4-group " + std::to_string(o.int4_group) +
                                 ": the fused GEMV (parts gemv, model) needs a multiple of 32");
  if (p.parts.count("model") != 0) {
    if (o.model_linears.empty())
      throw halo_bench::UsageError("--only model needs --model-linears (halo-doctor bench --model "
                                   "DIR passes them)");
    p.linears = halo_bench::parse_model_linears(o.model_linears, "--model-linears");
    if (o.train_tokens < 16 || o.train_tokens > (1 << 20) || o.train_tokens % 16 != 0)
      throw halo_bench::UsageError("--train-tokens must be a multiple of 16 from 16 to 1048576");
    for (const auto& l : p.linears)
      halo_bench::validate_gemm_shape(GemmShape{o.train_tokens, l.n, l.k}, "--model-linears");
  } else if (!o.model_linears.empty()) {
    throw halo_bench::UsageError("--model-linears is only used by the model part (--only model)");
  }
  return p;
}

std::string shape_key(const GemmShape& s) {
  return "m" + std::to_string(s.m) + "_n" + std::to_string(s.n) + "_k" + std::to_string(s.k);
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
  std::optional<double> dequant_blas_ref; ///< best dequantize + vendor BLAS (representative)
  std::string dequant_blas_format;
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
void run_gemm_parts(const Options& o, const std::vector<GemmShape>& shapes, bool int4_part,
                    FactSet& facts, double peak_tflops) {
  Recorder rec{facts, o};
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
      const auto own = measure("bench.gemm.bf16." + sk, "bf16 own kernel (matrix-core proof)",
                               expected, [&] { return session.time_own_bf16(o.warmup, o.reps); });
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
        if (auto v = measure(base + ".fused." + sk,
                             fmt.name + (shape.m > 64 ? " fused (own tiles, not representative)"
                                                      : " fused dequant-gemm"),
                             expect_q,
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
            if (path == "dequant_blas" &&
                (!totals.dequant_blas_ref || tflops > *totals.dequant_blas_ref)) {
              totals.dequant_blas_ref = tflops;
              totals.dequant_blas_format = fmt.name;
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
  // At training M the representative 4-bit path is bitsandbytes' own: dequantize the whole
  // weight, then the vendor BLAS GEMM (bitsandbytes/autograd/_functions.py MatMul4Bit.forward:
  // dequantize_4bit, then torch.nn.functional.linear). The fused kernel above is our own tile
  // kernel and says more about that kernel than about 4-bit.
  const std::string note = "dequantize + " + blas + " vs " + blas + " bf16 at " + ref_key +
                           " (bitsandbytes' training path); the fused kernel is not representative";
  if (totals.dequant_blas_ref && totals.blas_bf16_ref) {
    facts.set_ok("bench.int4.representative_ratio_to_bf16",
                 *totals.dequant_blas_ref / *totals.blas_bf16_ref, note);
    facts.set_ok("bench.int4.representative_path", totals.dequant_blas_format + ".dequant_blas",
                 note);
    std::printf("Representative at training M (%s): %s dequantize + %s = %.2fx %s bf16\n",
                ref_key.c_str(), totals.dequant_blas_format.c_str(), blas.c_str(),
                *totals.dequant_blas_ref / *totals.blas_bf16_ref, blas.c_str());
  } else {
    facts.set_missing("bench.int4.representative_ratio_to_bf16",
                      gpu::GemmSession::blas_available() ? "dequantize + BLAS or BLAS failed"
                                                         : "vendor BLAS not built");
  }
  std::printf("Note: the own bf16 kernel proves the matrix cores work; it is not a peer of %s. The "
              "fused dequant-gemm at M > 64 is our own tile kernel, not what bitsandbytes runs.\n",
              blas.c_str());
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

// ---- fused 4-bit GEMV (generation regime)
// --------------------------------------------------------
/// Device STREAM triad of this run (GB/s): from the stream part when it ran, else measured now
/// (the same kernels, --stream-mib arrays, 5 repetitions).
double stream_triad_for_roofline(const Options& o, FactSet& facts) {
  if (facts.contains("bench.stream.device.triad_gbps") &&
      facts.at("bench.stream.device.triad_gbps").status == halo_bench::FactStatus::ok) {
    return facts.at("bench.stream.device.triad_gbps").value.get<double>();
  }
  const auto elements = static_cast<std::size_t>(o.stream_mib * 1024.0 * 1024.0 / 8.0);
  const gpu::StreamTimes t = gpu::run_stream(gpu::MemoryKind::device, elements, 1, 5);
  if (!t.verified) throw gpu::GpuError(t.verify_error);
  const Summary s = halo_bench::summarize(t.triad_ms);
  const double gbps =
      halo_bench::per_second_giga(3.0 * static_cast<double>(elements) * 8.0, s.median);
  facts.set_ok("bench.gemv.stream_triad_gbps", gbps,
               "halo-bench stream triad on device memory, median of 5 (for pct_of_stream)");
  return gbps;
}

struct QuantWeights {
  halo_bench::Nf4Tensor nf4;
  halo_bench::Int4Tensor int4;
};

/// One generation-regime measurement: bf16 vendor BLAS and both fused 4-bit kernels at one M.
struct GemvResult {
  std::optional<double> blas_ms;
  std::optional<double> nf4_ms;
  std::optional<double> int4_ms;
};

GemvResult run_gemv_shape(const Options& o, const GemmShape& shape, const std::string& key_prefix,
                          const std::vector<halo_bench::bf16_bits>& a,
                          const std::vector<halo_bench::bf16_bits>& w, const QuantWeights& q,
                          double stream_gbps, FactSet& facts) {
  Recorder rec{facts, o};
  GemvResult result;
  const std::string sk = shape_key(shape);
  const auto samples = halo_bench::pick_gemm_samples(shape, static_cast<std::size_t>(o.samples));
  std::vector<std::int64_t> flat;
  for (const auto& x : samples)
    flat.push_back(x.row * shape.n + x.col);
  gpu::GemvSession session(shape.m, shape.n, shape.k, a.data(),
                           gpu::GemmSession::blas_available() ? w.data() : nullptr,
                           static_cast<std::uint64_t>(o.gemv_rotate_mib * 1048576.0));
  session.upload_nf4(q.nf4.packed.data(), q.nf4.absmax.data(), q.nf4.absmax.size(),
                     q.nf4.block_size, halo_bench::nf4_code_table().data());
  session.upload_int4(q.int4.packed.data(), q.int4.scales.data(), q.int4.scales.size(),
                      q.int4.group_size);
  const std::string int4_name = "int4g" + std::to_string(o.int4_group);

  auto check = [&](const std::vector<double>& expected, const std::string& key,
                   const std::string& what) {
    const std::vector<float> got = session.gather_output(flat);
    const auto c = halo_bench::check_relative(expected, got, gemm_tolerance,
                                              halo_bench::relative_floor(expected));
    facts.set_ok(key + ".max_rel_err", c.max_rel_error,
                 "halo-bench " + what + " vs CPU reference on " + std::to_string(c.compared) +
                     " sampled outputs");
    if (!c.ok) {
      facts.set_error(key + ".gbps", c.reason);
      std::printf("  %-44s ERROR %s\n", what.c_str(), c.reason.c_str());
    }
    return c.ok;
  };
  auto timed = [&](const std::string& key, const std::string& what, double bytes,
                   const std::vector<double>& ms) {
    const Summary s = rec.record_rate(key + ".gbps", key, bytes, ms, what);
    const double gbps = halo_bench::per_second_giga(bytes, s.median);
    if (stream_gbps > 0.0) {
      facts.set_ok(key + ".pct_of_stream", 100.0 * gbps / stream_gbps,
                   "bytes moved / median time / STREAM triad of this run (" +
                       std::to_string(stream_gbps) + " GB/s)");
      std::printf("  %-44s %8.1f GB/s %5.1f%% of STREAM (median %.4f ms)\n", what.c_str(), gbps,
                  100.0 * gbps / stream_gbps, s.median);
    } else {
      facts.set_error(key + ".pct_of_stream", "no STREAM triad of this run to compare with");
      std::printf("  %-44s %8.1f GB/s (median %.4f ms)\n", what.c_str(), gbps, s.median);
    }
    return s.median;
  };

  try {
    if (gpu::GemmSession::blas_available()) {
      session.poison_output();
      const auto ms = session.time_blas_bf16(o.warmup, o.reps);
      const std::string key = key_prefix + ".bf16_blas." + sk;
      const std::string what = "bf16 " + std::string(gpu::GemmSession::blas_name()) + " " + sk;
      if (check(halo_bench::gemm_bf16_reference_sampled(shape, a, w, samples), key, what)) {
        const double bytes = static_cast<double>(shape.n * shape.k) * 2.0 +
                             static_cast<double>(shape.m * shape.k) * 2.0 +
                             static_cast<double>(shape.m * shape.n) * 4.0;
        result.blas_ms = timed(key, what, bytes, ms);
      }
    } else {
      facts.set_missing(key_prefix + ".bf16_blas." + sk + ".gbps", "vendor BLAS not built");
    }
  } catch (const gpu::GpuError& e) {
    facts.set_error(key_prefix + ".bf16_blas." + sk + ".gbps", e.what());
  }
  for (const auto format : {gpu::QuantFormat::nf4, gpu::QuantFormat::int4}) {
    const bool nf4 = format == gpu::QuantFormat::nf4;
    const std::string name = nf4 ? "nf4" : int4_name;
    const std::string key = key_prefix + "." + name + "." + sk;
    const std::string what = name + " fused gemv " + sk;
    try {
      session.poison_output();
      const auto ms = session.time_fused(format, o.warmup, o.reps);
      const auto expected = nf4 ? halo_bench::gemv_nf4_reference(shape, a, q.nf4, samples)
                                : halo_bench::gemv_int4_reference(shape, a, q.int4, samples);
      if (!check(expected, key, what)) continue;
      const double median = timed(key, what, session.fused_bytes(format), ms);
      facts.set_ok(key + ".config", session.fused_config(format), "halo-bench launch config");
      (nf4 ? result.nf4_ms : result.int4_ms) = median;
      if (result.blas_ms) {
        facts.set_ok(key + ".speedup_vs_bf16", *result.blas_ms / median,
                     "bf16 vendor BLAS median / fused 4-bit median at " + sk);
      }
    } catch (const gpu::GpuError& e) {
      facts.set_error(key + ".gbps", e.what());
      std::printf("  %-44s ERROR %s\n", what.c_str(), e.what());
    }
  }
  return result;
}

QuantWeights quantize_both(const std::vector<float>& w, int int4_group) {
  return QuantWeights{halo_bench::quantize_nf4(w),
                      halo_bench::quantize_int4(w, static_cast<std::size_t>(int4_group))};
}

/// stream_triad_for_roofline, or 0 with an error fact when the triad cannot be measured.
double stream_triad_or_zero(const Options& o, FactSet& facts) {
  try {
    return stream_triad_for_roofline(o, facts);
  } catch (const gpu::GpuError& e) {
    facts.set_error("bench.gemv.stream_triad_gbps", e.what());
    return 0.0;
  }
}

void run_gemv_part(const Options& o, const Plan& plan, FactSet& facts) {
  const double stream_gbps = stream_triad_or_zero(o, facts);
  std::printf("Fused 4-bit GEMV (generation regime), roofline = STREAM triad %.1f GB/s\n",
              stream_gbps);
  std::optional<double> worst[2];
  for (const GemmShape& nk : plan.gemv_nk) {
    const auto w_float = halo_bench::random_normal(static_cast<std::size_t>(nk.n * nk.k), 2, 0.02f);
    const auto w = halo_bench::to_bf16(w_float);
    const QuantWeights q = quantize_both(w_float, o.int4_group);
    for (const std::int64_t m : plan.gemv_m) {
      const GemmShape shape{m, nk.n, nk.k};
      const auto a = halo_bench::random_bf16(static_cast<std::size_t>(m * nk.k), 1);
      try {
        (void)run_gemv_shape(o, shape, "bench.gemv", a, w, q, stream_gbps, facts);
      } catch (const std::exception& e) {
        facts.set_error("bench.gemv.nf4." + shape_key(shape) + ".gbps", e.what());
        std::printf("  ERROR %s\n", e.what());
      }
      int i = 0;
      for (const auto& name : {std::string("nf4"), "int4g" + std::to_string(o.int4_group)}) {
        const std::string key = "bench.gemv." + name + "." + shape_key(shape) + ".pct_of_stream";
        if (facts.contains(key) && facts.at(key).status == halo_bench::FactStatus::ok) {
          const double pct = facts.at(key).value.get<double>();
          if (!worst[i] || pct < *worst[i]) worst[i] = pct;
        }
        ++i;
      }
    }
  }
  int i = 0;
  for (const auto& name : {std::string("nf4"), "int4g" + std::to_string(o.int4_group)}) {
    const std::string key = "bench.gemv." + name + ".min_pct_of_stream";
    if (worst[i]) {
      facts.set_ok(key, *worst[i], "lowest pct_of_stream over --gemv-m and --gemv-nk");
    } else {
      facts.set_error(key, "no fused GEMV result passed its check");
    }
    ++i;
  }
}

// ---- integrity
// ------------------------------------------------------------------------------------
/// Runs the transfer matrix and the conversion check; facts under bench.integrity.<mode>.
/// Returns true when everything matched.
bool run_integrity_checks(const Plan& plan, const std::string& mode, FactSet& facts) {
  const std::string base = "bench.integrity." + mode;
  bool all_ok = true;
  std::string first_failure;
  const struct {
    gpu::CopyPath path;
    const char* name;
  } paths[] = {{gpu::CopyPath::pageable, "pageable"},
               {gpu::CopyPath::pinned, "pinned"},
               {gpu::CopyPath::pinned_async, "async"}};
  std::printf("Transfer integrity (%s): host -> device -> host, %zu sizes x 3 paths\n",
              mode.c_str(), plan.integrity_sizes.size());
  for (const auto& path : paths) {
    for (const std::uint64_t bytes : plan.integrity_sizes) {
      const std::string key = base + "." + path.name + "." + halo_bench::size_label(bytes);
      // Every pattern up to 64 MiB; above, the address hash and the bf16 specials (the patterns
      // that show misplaced pages and lost special values) keep the run short.
      std::vector<int> kinds;
      for (int k = 0; k < halo_bench::pattern_kind_count; ++k)
        if (bytes <= (std::uint64_t{64} << 20) || k == halo_bench::pattern_address_hash ||
            k == halo_bench::pattern_bf16_specials)
          kinds.push_back(k);
      std::string failure;
      double seconds = 0.0;
      try {
        for (const int kind : kinds) {
          const gpu::RoundTrip r =
              gpu::run_round_trip(path.path, bytes, kind, static_cast<std::uint32_t>(bytes));
          seconds += r.seconds;
          if (!r.ok) {
            halo_bench::Mismatch m{r.first_bad_offset, r.first_bad_offset / 4, r.expected_word,
                                   r.got_word, r.bad_words};
            failure = std::string(halo_bench::pattern_name(kind)) + " pattern, " + r.stage + ": " +
                      halo_bench::describe(m, bytes / 4);
            facts.set_ok(key + ".first_bad_offset", r.first_bad_offset,
                         "halo-bench integrity (" + r.stage + ")");
            break;
          }
        }
      } catch (const gpu::GpuError& e) {
        failure = e.what();
      }
      if (failure.empty()) {
        facts.set_ok(key, "pass",
                     "halo-bench integrity: " + std::to_string(kinds.size()) +
                         " patterns round-tripped bit for bit in " + std::to_string(seconds) +
                         " s");
      } else {
        facts.set_error(key, failure);
        std::printf("  %-8s %-8s MISMATCH %s\n", path.name, halo_bench::size_label(bytes).c_str(),
                    failure.c_str());
        if (all_ok)
          first_failure =
              std::string(path.name) + " " + halo_bench::size_label(bytes) + ": " + failure;
        all_ok = false;
      }
    }
  }
  // On-device fp32 <-> bf16 conversion against the CPU's round to nearest even.
  try {
    const auto in = halo_bench::conversion_inputs();
    const auto widen = halo_bench::widening_inputs();
    const gpu::DeviceConversion d = gpu::convert_on_device(in, widen);
    const auto to = halo_bench::check_to_bf16(in, d.to_bf16);
    const auto back = halo_bench::check_widening(widen, d.widened);
    if (to) {
      facts.set_error(base + ".to_bf16",
                      "device " + d.function + ": " + halo_bench::describe(*to, in.size()));
      all_ok = false;
      if (first_failure.empty()) first_failure = "fp32 -> bf16 on the device";
    } else {
      facts.set_ok(base + ".to_bf16", "pass",
                   "device " + d.function + " vs CPU round to nearest even, " +
                       std::to_string(in.size()) + " inputs incl. subnormals, ties, inf, NaN");
    }
    if (back) {
      facts.set_error(base + ".from_bf16",
                      "device " + d.function + ": " + halo_bench::describe(*back, widen.size()));
      all_ok = false;
      if (first_failure.empty()) first_failure = "bf16 -> fp32 on the device";
    } else {
      facts.set_ok(base + ".from_bf16", "pass",
                   "device " + d.function + ", all 65536 bf16 patterns widened exactly");
    }
    std::printf("  bf16 conversion on the device (%s): to_bf16 %s, from_bf16 %s\n",
                d.function.c_str(), to ? "MISMATCH" : "pass", back ? "MISMATCH" : "pass");
  } catch (const gpu::GpuError& e) {
    facts.set_error(base + ".to_bf16", e.what());
    all_ok = false;
    if (first_failure.empty()) first_failure = e.what();
  }
  facts.set_ok(base + ".ok", all_ok, "halo-bench integrity (" + mode + ")");
  if (!all_ok) facts.set_ok(base + ".first_failure", first_failure, "halo-bench integrity");
  std::printf("  integrity (%s): %s\n", mode.c_str(), all_ok ? "all transfers intact" : "CORRUPT");
  return all_ok;
}

/// Re-runs the integrity part in a child with HSA_ENABLE_SDMA=0 (ROCm: copies by blit kernels
/// instead of the SDMA engines; ROCR-Runtime src/core/util/flag.h `enable_sdma`), reads its facts
/// and records them under bench.integrity.sdma_off.
void run_sdma_off_child(const Options& o, FactSet& facts) {
  char self[4096];
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    facts.set_error("bench.integrity.sdma_off.ok", "cannot find /proc/self/exe for the child");
    return;
  }
  self[len] = '\0';
  char dir_template[] = "/tmp/halo-bench-sdma.XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  if (dir == nullptr) {
    facts.set_error("bench.integrity.sdma_off.ok", "cannot create a temporary directory");
    return;
  }
  const std::string json = std::string(dir) + "/facts.json";
  std::vector<std::string> args = {self,
                                   "--only",
                                   "integrity",
                                   "--integrity-sizes",
                                   o.integrity_sizes,
                                   "--integrity-child",
                                   "--device",
                                   std::to_string(o.device),
                                   "--json",
                                   json};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).rfind("HSA_ENABLE_SDMA=", 0) != 0) env_s.emplace_back(*e);
  env_s.emplace_back("HSA_ENABLE_SDMA=0");
  std::vector<char*> envp;
  for (auto& e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  std::printf("Transfer integrity with HSA_ENABLE_SDMA=0 (child process)\n");
  std::fflush(stdout);
  pid_t pid = 0;
  int status = 0;
  if (::posix_spawn(&pid, self, nullptr, nullptr, argv.data(), envp.data()) != 0 ||
      ::waitpid(pid, &status, 0) != pid) {
    facts.set_error("bench.integrity.sdma_off.ok", "could not run the HSA_ENABLE_SDMA=0 child");
  } else {
    try {
      std::ifstream in(json);
      const auto doc = nlohmann::json::parse(in);
      bool found = false;
      for (const auto& [key, fact] : doc.at("facts").items()) {
        if (key.rfind("bench.integrity.default.", 0) != 0) continue;
        const std::string mine = "bench.integrity.sdma_off." + key.substr(24);
        const std::string st = fact.at("status").get<std::string>();
        if (st == "ok") {
          facts.set_ok(mine, fact.at("value"),
                       fact.at("source").get<std::string>() + " (child, HSA_ENABLE_SDMA=0)");
        } else {
          facts.set_error(mine, fact.value("reason", st));
        }
        found = true;
      }
      if (!found)
        facts.set_error("bench.integrity.sdma_off.ok",
                        "the HSA_ENABLE_SDMA=0 child wrote no integrity facts (exit status " +
                            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
    } catch (const std::exception& e) {
      facts.set_error("bench.integrity.sdma_off.ok",
                      std::string("cannot read the child's facts: ") + e.what());
    }
  }
  std::remove(json.c_str());
  ::rmdir(dir);
}

void run_integrity_part(const Options& o, const Plan& plan, FactSet& facts) {
  const bool hip = std::string(gpu::backend_name()) == "hip";
  const char* sdma = std::getenv("HSA_ENABLE_SDMA");
  facts.set_ok("bench.integrity.hsa_enable_sdma", sdma != nullptr ? sdma : "unset",
               "environment of this run");
  const bool ok = run_integrity_checks(plan, "default", facts);
  if (o.integrity_child) return;
  if (!hip) {
    facts.set_missing("bench.integrity.sdma_off.ok",
                      "not a ROCm run: HSA_ENABLE_SDMA is a ROCm runtime setting");
  } else if (o.no_sdma_child) {
    facts.set_missing("bench.integrity.sdma_off.ok", "not requested (--no-sdma-child)");
  } else {
    run_sdma_off_child(o, facts);
  }
  facts.set_ok("bench.integrity.ok", ok,
               "halo-bench integrity with the run's own settings (bench.integrity.default.*)");
}
// ---- model: the user's own projections in both regimes ------------------------------------------
void run_model_part(const Options& o, const Plan& plan, FactSet& facts) {
  const std::string blas = gpu::GemmSession::blas_name();
  const std::string name = o.model_name.empty() ? "unnamed" : o.model_name;
  facts.set_ok("bench.model.name", name, "halo-doctor bench --model");
  facts.set_ok("bench.model.train_tokens", o.train_tokens,
               "micro-batch x sequence length (halo-doctor bench --model)");
  if (!gpu::GemmSession::blas_available()) {
    for (const char* key : {"bench.model.training.verdict", "bench.model.generation.verdict"})
      facts.set_missing(key, "vendor BLAS not built: BF16 has no PyTorch-equivalent reference");
    return;
  }
  const double stream_gbps = stream_triad_or_zero(o, facts);
  const std::string int4_name = "int4g" + std::to_string(o.int4_group);
  const std::string formats[2] = {"nf4", int4_name};
  const std::string labels[2] = {"NF4", "int4 g" + std::to_string(o.int4_group)};
  std::vector<halo_bench::LinearTiming> train[2];
  std::vector<std::vector<halo_bench::LinearTiming>> gen[2];
  gen[0].resize(plan.gen_m.size());
  gen[1].resize(plan.gen_m.size());
  bool train_complete[2] = {true, true};
  std::vector<bool> gen_complete[2] = {std::vector<bool>(plan.gen_m.size(), true),
                                       std::vector<bool>(plan.gen_m.size(), true)};
  std::printf("Model %s: %zu projections, training M = %lld tokens, generation M = %s\n",
              name.c_str(), plan.linears.size(), static_cast<long long>(o.train_tokens),
              o.gen_m.c_str());
  Recorder rec{facts, o};
  for (const halo_bench::ModelLinear& l : plan.linears) {
    const std::string base = "bench.model.linear." + l.name;
    std::printf(" %s: W[%lld x %lld] x %lld per token%s\n", l.name.c_str(),
                static_cast<long long>(l.n), static_cast<long long>(l.k),
                static_cast<long long>(l.count),
                l.quantized ? "" : " (kept in bf16 by bitsandbytes: both sides bf16)");
    const auto w_float = halo_bench::random_normal(static_cast<std::size_t>(l.n * l.k), 2, 0.02f);
    const auto w = halo_bench::to_bf16(w_float);
    const QuantWeights q = quantize_both(w_float, o.int4_group);
    // Training: bf16 vendor BLAS vs dequantize + the same BLAS (bitsandbytes MatMul4Bit).
    const GemmShape shape{o.train_tokens, l.n, l.k};
    std::optional<double> bf16_ms;
    std::optional<double> quant_ms[2];
    try {
      const auto a = halo_bench::random_bf16(static_cast<std::size_t>(shape.m * shape.k), 1);
      const auto samples =
          halo_bench::pick_gemm_samples(shape, static_cast<std::size_t>(o.samples));
      std::vector<std::int64_t> flat;
      for (const auto& x : samples)
        flat.push_back(x.row * shape.n + x.col);
      gpu::GemmSession session(shape.m, shape.n, shape.k, a.data(), w.data());
      session.upload_nf4(q.nf4.packed.data(), q.nf4.absmax.data(), q.nf4.absmax.size(),
                         q.nf4.block_size, halo_bench::nf4_code_table().data());
      session.upload_int4(q.int4.packed.data(), q.int4.scales.data(), q.int4.scales.size(),
                          q.int4.group_size);
      auto run = [&](const std::string& key, const std::string& what,
                     const std::vector<double>& expected, auto&& timed) -> std::optional<double> {
        try {
          session.poison_output();
          const auto ms = timed();
          if (!check_gemm(session, flat, expected, facts, key, what)) return std::nullopt;
          const Summary s = rec.record_rate(key + ".tflops", key, shape.flops(), ms, what);
          print_rate(what.c_str(), halo_bench::per_second_giga(shape.flops(), s.median) / 1000.0,
                     "TFLOP/s", s);
          return s.median;
        } catch (const gpu::GpuError& e) {
          facts.set_error(key + ".tflops", e.what());
          std::printf("  %-34s ERROR %s\n", what.c_str(), e.what());
          return std::nullopt;
        }
      };
      bf16_ms = run(base + ".train.bf16_blas", "train bf16 " + blas,
                    halo_bench::gemm_bf16_reference_sampled(shape, a, w, samples),
                    [&] { return session.time_blas_bf16(o.warmup, o.reps); });
      for (int f = 0; f < 2 && l.quantized; ++f) {
        const auto format = f == 0 ? gpu::QuantFormat::nf4 : gpu::QuantFormat::int4;
        const auto deq = f == 0 ? halo_bench::dequantize_nf4_bf16(q.nf4)
                                : halo_bench::dequantize_int4_bf16(q.int4);
        quant_ms[f] = run(base + ".train." + formats[f] + "_dequant_blas",
                          "train " + formats[f] + " dequant + " + blas,
                          halo_bench::gemm_bf16_reference_sampled(shape, a, deq, samples), [&] {
                            return session.time_dequant_then_gemm(format, true, o.warmup, o.reps);
                          });
      }
    } catch (const std::exception& e) {
      facts.set_error(base + ".train.bf16_blas.tflops", e.what());
      std::printf("  ERROR %s\n", e.what());
    }
    if (!l.quantized) {
      // bitsandbytes keeps this module in bf16: both sides run the same bf16 GEMM.
      quant_ms[0] = bf16_ms;
      quant_ms[1] = bf16_ms;
    }
    for (int f = 0; f < 2; ++f) {
      if (bf16_ms && quant_ms[f])
        train[f].push_back({l.name, l.n, l.k, l.count, *bf16_ms, *quant_ms[f]});
      else
        train_complete[f] = false;
    }
    // Generation: bf16 vendor BLAS vs the fused 4-bit GEMV at each M.
    for (std::size_t i = 0; i < plan.gen_m.size(); ++i) {
      const GemmShape g{plan.gen_m[i], l.n, l.k};
      GemvResult r;
      try {
        const auto a = halo_bench::random_bf16(static_cast<std::size_t>(g.m * g.k), 1);
        r = run_gemv_shape(o, g, base + ".gen", a, w, q, stream_gbps, facts);
      } catch (const std::exception& e) {
        facts.set_error(base + ".gen.nf4." + shape_key(g) + ".gbps", e.what());
        std::printf("  ERROR %s\n", e.what());
      }
      const std::optional<double> fused[2] = {l.quantized ? r.nf4_ms : r.blas_ms,
                                              l.quantized ? r.int4_ms : r.blas_ms};
      for (int f = 0; f < 2; ++f) {
        if (r.blas_ms && fused[f])
          gen[f][i].push_back({l.name, l.n, l.k, l.count, *r.blas_ms, *fused[f]});
        else
          gen_complete[f][i] = false;
      }
    }
  }

  // Verdicts, weighted by how often a token passes through each projection.
  const std::string source = "halo-bench model part: sum over the projections of count x median "
                             "time, bf16 " +
                             blas + " vs 4-bit (docs/bench.md)";
  std::printf("Verdicts for %s:\n", name.c_str());
  for (int f = 0; f < 2; ++f) {
    const std::string key = "bench.model.training." + formats[f];
    const std::string regime =
        "training step GEMMs (M = " + std::to_string(o.train_tokens) + " tokens)";
    if (train_complete[f] && !train[f].empty()) {
      const auto v =
          halo_bench::weigh_regime(train[f], regime, labels[f] + " (dequantize + " + blas + ")");
      facts.set_ok(key + ".speedup", v.speedup, source);
      facts.set_ok(key + ".bf16_ms", v.bf16_ms, source);
      facts.set_ok(key + ".quant_ms", v.quant_ms, source);
      facts.set_ok(key + ".verdict", v.line, source);
      if (f == 0) facts.set_ok("bench.model.training.verdict", v.line, source);
      std::printf("  %s\n", v.line.c_str());
    } else {
      facts.set_error(key + ".verdict", "a projection failed its check or did not run");
      if (f == 0)
        facts.set_error("bench.model.training.verdict",
                        "a projection failed its check or did not run");
    }
    for (std::size_t i = 0; i < plan.gen_m.size(); ++i) {
      const std::string gkey =
          "bench.model.generation.m" + std::to_string(plan.gen_m[i]) + "." + formats[f];
      const std::string gregime = "generation (M = " + std::to_string(plan.gen_m[i]) + ")";
      if (gen_complete[f][i] && !gen[f][i].empty()) {
        const auto v =
            halo_bench::weigh_regime(gen[f][i], gregime, labels[f] + " (fused 4-bit GEMV)");
        facts.set_ok(gkey + ".speedup", v.speedup, source);
        facts.set_ok(gkey + ".bf16_ms", v.bf16_ms, source);
        facts.set_ok(gkey + ".quant_ms", v.quant_ms, source);
        facts.set_ok(gkey + ".verdict", v.line, source);
        if (f == 0 && i == 0) facts.set_ok("bench.model.generation.verdict", v.line, source);
        std::printf("  %s\n", v.line.c_str());
      } else {
        facts.set_error(gkey + ".verdict", "a projection failed its check or did not run");
        if (f == 0 && i == 0)
          facts.set_error("bench.model.generation.verdict",
                          "a projection failed its check or did not run");
      }
    }
  }
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
  app.add_option("--only", o.only, "parts to run: stream,gemm,int4,gemv,integrity,model,ceiling")
      ->capture_default_str();
  app.add_option("--device", o.device, "device index")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--stream-mib", o.stream_mib, "MiB per STREAM array (>= 4x the LLC)")
      ->check(CLI::Range(1.0, 1048576.0))
      ->capture_default_str();
  app.add_option("--transfer-mib", o.transfer_mib, "MiB per host<->device copy")
      ->check(CLI::Range(1.0, 1048576.0))
      ->capture_default_str();
  app.add_option("--int4-group", o.int4_group, "int4 group size (even; fused GEMV: multiple of 32)")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--samples", o.samples, "GEMM outputs checked against the CPU reference")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--gemv-m", o.gemv_m, "gemv part: activation rows M (1..64), comma separated")
      ->capture_default_str();
  app.add_option("--gemv-nk", o.gemv_nk, "gemv part: weight shapes NxK, comma separated")
      ->capture_default_str();
  app.add_option("--gemv-rotate-mib", o.gemv_rotate_mib,
                 "gemv and model parts: MiB of weight copies cycled per timed repetition (several "
                 "times the last-level cache; 0 = one copy, cache-resident)")
      ->check(CLI::Range(0.0, 65536.0))
      ->capture_default_str();
  app.add_option("--integrity-sizes", o.integrity_sizes,
                 "integrity part: transfer sizes (4K .. 16G, binary units), comma separated")
      ->capture_default_str();
  app.add_flag("--no-sdma-child", o.no_sdma_child,
               "integrity part on ROCm: skip the HSA_ENABLE_SDMA=0 child run");
  app.add_flag("--integrity-child", o.integrity_child)->group(""); // internal
  app.add_option("--model-linears", o.model_linears,
                 "model part: NAME:NxK:COUNT,... (halo-doctor bench --model passes them)");
  app.add_option("--model-name", o.model_name, "model part: the model's name for the facts");
  app.add_option("--train-tokens", o.train_tokens,
                 "model part: tokens per training GEMM (micro-batch x sequence, multiple of 16)")
      ->capture_default_str();
  app.add_option("--gen-m", o.gen_m, "model part: generation M values (1..64)")
      ->capture_default_str();
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
