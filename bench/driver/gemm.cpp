// SPDX-License-Identifier: MIT
// halo-bench gemm part: the BF16 GEMM, own matrix-core kernel and vendor BLAS, on every shape
// against a CPU reference; the int4 part (int4.cpp) runs on the same session and data.
#include "driver.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

namespace halo_bench::driver {

/// BF16 GEMM (own kernel, vendor BLAS) on every shape; with `int4_part` also the NF4 and int4
/// paths, which need the BF16 numbers for their ratio, so the BF16 GEMM always runs here.
void run_gemm_parts(const Options& o, const std::vector<GemmShape>& shapes, bool int4_part,
                    FactSet& facts, double peak_tflops) {
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
      const GemmMeasure measure{o, session, flat, flops, peak_tflops, facts};

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
      run_int4_shape(o, session, shape, a, w_float, samples, measure, is_ref, totals, facts);
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
  finish_int4_part(totals, ref_key, facts);
}

} // namespace halo_bench::driver
