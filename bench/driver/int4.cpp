// SPDX-License-Identifier: MIT
// halo-bench int4 part: NF4 (bitsandbytes) and int4 weights, dequantized alone (checked bit for
// bit), dequantized then multiplied (own GEMM and vendor BLAS, bitsandbytes' training path) and
// fused into the GEMM tile, each against the BF16 GEMM of the gemm part.
#include "driver.hpp"
#include "halo_bench/checks.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <utility>

namespace halo_bench::driver {

void run_int4_shape(const Options& o, gpu::GemmSession& session, const GemmShape& shape,
                    const std::vector<bf16_bits>& a, const std::vector<float>& w_float,
                    const std::vector<GemmSample>& samples, const GemmMeasure& measure, bool is_ref,
                    GemmTotals& totals, FactSet& facts) {
  Recorder rec{facts, o};
  const std::string sk = shape_key(shape);
  const std::string blas = gpu::GemmSession::blas_name();
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
            rec.record_rate(base + ".dequant." + sk + ".gbps", base + ".dequant." + sk, bytes, ms,
                            fmt.name + " dequantize to bf16 (bytes read + written)");
        print_rate((fmt.name + " dequantize").c_str(), halo_bench::per_second_giga(bytes, s.median),
                   "GB/s", s);
      } else {
        facts.set_error(base + ".dequant." + sk + ".gbps", check.reason);
        std::printf("  %-34s ERROR %s\n", (fmt.name + " dequantize").c_str(), check.reason.c_str());
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
    if (auto v =
            measure(base + ".fused." + sk,
                    fmt.name + (shape.m > 64 ? " fused (own tiles, not representative)"
                                             : " fused dequant-gemm"),
                    expect_q, [&] { return session.time_fused(fmt.format, o.warmup, o.reps); })) {
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
}

void finish_int4_part(const GemmTotals& totals, const std::string& ref_key, FactSet& facts) {
  const std::string blas = gpu::GemmSession::blas_name();
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

} // namespace halo_bench::driver
