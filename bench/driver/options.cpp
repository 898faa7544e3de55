// SPDX-License-Identifier: MIT
// halo-bench command line: the CLI11 options and the plan checked from them before the GPU is
// touched (every malformed argument is exit 2).
#include "driver.hpp"

#include <CLI/CLI.hpp>

#include <sstream>
#include <string>

namespace halo_bench::driver {

void add_options(CLI::App& app, Options& o) {
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
}

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

} // namespace halo_bench::driver
