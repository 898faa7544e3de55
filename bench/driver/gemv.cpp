// SPDX-License-Identifier: MIT
// halo-bench gemv part: the fused 4-bit GEMV of the generation regime against the vendor BLAS
// and the STREAM roofline (also used by the model part's generation regime).
#include "driver.hpp"
#include "halo_bench/checks.hpp"
#include "halo_bench/gemv_reference.hpp"

#include <cstdio>
#include <exception>
#include <string>

namespace halo_bench::driver {

namespace {

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

} // namespace

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

} // namespace halo_bench::driver
