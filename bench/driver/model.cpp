// SPDX-License-Identifier: MIT
// halo-bench model part: the model's own projections (from `halo-doctor bench --model`) timed in
// the training regime (bf16 vendor BLAS vs dequantize + BLAS) and the generation regime (bf16
// vendor BLAS vs the fused 4-bit GEMV), weighed into per-regime verdicts.
#include "driver.hpp"

#include <cstdio>
#include <exception>
#include <string>

namespace halo_bench::driver {

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

} // namespace halo_bench::driver
