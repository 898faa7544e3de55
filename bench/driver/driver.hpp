// SPDX-License-Identifier: MIT
// What the halo-bench driver's parts share (driver/*.cpp, host C++20): the options and the
// checked plan, fact recording and printing helpers, and each part's entry point. Internal to
// the halo-bench executable; the GPU side is behind kernels/bench_gpu.hpp.
#pragma once

#include "bench_gpu.hpp"
#include "halo_bench/bf16.hpp"
#include "halo_bench/facts.hpp"
#include "halo_bench/model_verdict.hpp"
#include "halo_bench/options.hpp"
#include "halo_bench/quant.hpp"
#include "halo_bench/reference_gemm.hpp"
#include "halo_bench/stats.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace halo_bench::driver {

/// Exit status when the runtime finds no GPU (documented in bench/README.md).
inline constexpr int exit_no_gpu = 3;
/// Relative tolerance of every GEMM/GEMV output against the CPU double-precision reference.
inline constexpr double gemm_tolerance = 0.02;
inline constexpr double gib = 1024.0 * 1024.0 * 1024.0;

/// The command line as given (defaults documented in bench/README.md).
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

/// The part names --only accepts.
inline constexpr std::array<std::string_view, 7> kParts = {"stream",    "gemm",  "int4",   "gemv",
                                                           "integrity", "model", "ceiling"};

/// Adds every option and flag of the command line to `app`, bound to `o` (options.cpp).
void add_options(CLI::App& app, Options& o);
/// Parses and validates every argument (UsageError: exit 2, nothing run).
Plan make_plan(const Options& o);

/// "m<M>_n<N>_k<K>", the shape part of a fact key.
std::string shape_key(const GemmShape& s);
/// Source text of a timed fact: backend, event timing, repetitions.
std::string timing_source(const std::string& what, const Options& o);

/// Records value, median time and spread for one measurement series.
struct Recorder {
  FactSet& facts;
  const Options& options;

  /// Sets `value_key` to the rate at the median time (GB/s, or TFLOP/s when the key ends in
  /// "tflops") and `stats_prefix`.median_ms / .spread; returns the summary.
  Summary record_rate(const std::string& value_key, const std::string& stats_prefix, double work,
                      const std::vector<double>& ms, const std::string& what);
};

/// Prints one measurement line: label, value and unit, median, spread and count.
void print_rate(const char* label, double value, const char* unit, const Summary& s);

/// Writes the facts document when --json was given.
void write_facts(const Options& o, const FactSet& facts);

/// Checks the sampled output of the last GEMM; on failure records an error for `key`.
bool check_gemm(gpu::GemmSession& session, const std::vector<std::int64_t>& flat,
                const std::vector<double>& expected, FactSet& facts, const std::string& key,
                const std::string& what);

/// Best results at the reference shape, collected by the GEMM part and the int4 part inside it.
struct GemmTotals {
  std::optional<double> own_bf16_ref; // TFLOP/s at the reference shape
  std::optional<double> blas_bf16_ref;
  std::optional<double> best_int4_ref;
  std::string best_int4_path;
  std::optional<double> dequant_blas_ref; ///< best dequantize + vendor BLAS (representative)
  std::string dequant_blas_format;
};

/// Times one GEMM path of `session`, checks its sampled output and records `key`.tflops (and
/// .pct_of_peak); the TFLOP/s, or nullopt with an error fact when it failed.
struct GemmMeasure {
  const Options& options;
  gpu::GemmSession& session;
  const std::vector<std::int64_t>& flat;
  double flops;
  double peak_tflops;
  FactSet& facts;
  std::optional<double> operator()(const std::string& key, const std::string& what,
                                   const std::vector<double>& expect,
                                   const std::function<std::vector<double>()>& timed) const;
};

// ---- the parts, in the order halo-bench runs them --------------------------------------------
/// stream part (stream.cpp): BabelStream on device, host and managed memory, and copy rates.
void run_stream_part(const Options& o, FactSet& facts, double peak_gbps);

/// gemm part (gemm.cpp): BF16 GEMM, own kernel and vendor BLAS, on every shape; with `int4_part`
/// also the int4 part on each shape.
void run_gemm_parts(const Options& o, const std::vector<GemmShape>& shapes, bool int4_part,
                    FactSet& facts, double peak_tflops);
/// int4 part (int4.cpp), one shape: NF4 and int4 dequantize alone, dequantize + GEMM, fused.
void run_int4_shape(const Options& o, gpu::GemmSession& session, const GemmShape& shape,
                    const std::vector<bf16_bits>& a, const std::vector<float>& w_float,
                    const std::vector<GemmSample>& samples, const GemmMeasure& measure, bool is_ref,
                    GemmTotals& totals, FactSet& facts);
/// int4 part (int4.cpp), after every shape: best path and ratios to BF16 at `ref_key`.
void finish_int4_part(const GemmTotals& totals, const std::string& ref_key, FactSet& facts);

/// NF4 and int4 copies of one weight.
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

/// gemv part (gemv.cpp), one shape: bf16 vendor BLAS and both fused 4-bit kernels; facts under
/// `key_prefix`.
GemvResult run_gemv_shape(const Options& o, const GemmShape& shape, const std::string& key_prefix,
                          const std::vector<halo_bench::bf16_bits>& a,
                          const std::vector<halo_bench::bf16_bits>& w, const QuantWeights& q,
                          double stream_gbps, FactSet& facts);
QuantWeights quantize_both(const std::vector<float>& w, int int4_group);
/// Device STREAM triad of this run (GB/s) for the GEMV roofline, or 0 with an error fact.
double stream_triad_or_zero(const Options& o, FactSet& facts);
/// gemv part (gemv.cpp): every --gemv-m x --gemv-nk shape, and the lowest pct_of_stream.
void run_gemv_part(const Options& o, const Plan& plan, FactSet& facts);

/// integrity part (integrity.cpp): round trips on every path and size, device bf16 conversion,
/// and on ROCm the same again in a HSA_ENABLE_SDMA=0 child.
void run_integrity_part(const Options& o, const Plan& plan, FactSet& facts);

/// model part (model.cpp): the model's projections in the training and generation regimes.
void run_model_part(const Options& o, const Plan& plan, FactSet& facts);

/// ceiling part (ceiling.cpp): allocate-and-touch up to the safety cap.
void run_ceiling_part(const Options& o, const gpu::DeviceInfo& info, FactSet& facts);

} // namespace halo_bench::driver
