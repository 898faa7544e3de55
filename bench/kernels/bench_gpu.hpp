// SPDX-License-Identifier: MIT
// Host-side interface of the halo-bench GPU code (kernels/*.cpp, compiled as HIP or CUDA).
// Plain C++17: the driver (driver/*.cpp) is compiled by the host C++ compiler and never sees a GPU
// header, so the GPU translation unit is the only one that needs hipcc/clang/nvcc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace halo_bench::gpu {

/// Raised for any runtime or library error (the message names the call, file and line).
struct GpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// "hip" or "cuda": the backend this binary was compiled for.
const char* backend_name() noexcept;

/// Number of usable devices; 0 with a one-line explanation in `why` when the runtime reports no
/// device or no driver (hipErrorNoDevice, cudaErrorInsufficientDriver, cudaErrorNoDevice, ...).
int device_count(std::string& why);

/// Device facts from the runtime's device properties.
struct DeviceInfo {
  std::string name;               ///< marketing name, e.g. "AMD Radeon 8060S Graphics"
  std::string arch;               ///< gcnArchName ("gfx1151", "gfx942:sramecc+:xnack-") or sm_XY
  int compute_units = 0;          ///< CUs (AMD) or SMs (NVIDIA)
  std::uint64_t total_memory = 0; ///< totalGlobalMem, bytes (HIP: the agent's HSA pool)
  double memory_clock_khz = 0.0;  ///< memory clock attribute, kHz (0 when not reported)
  double memory_bus_bits = 0.0;   ///< memory bus width attribute, bits (0 when not reported)
  double core_clock_khz = 0.0;    ///< peak core clock attribute, kHz
  bool integrated = false;        ///< true on APUs (Strix Halo, MI300A)
  int runtime_version = 0;        ///< hipRuntimeGetVersion / cudaRuntimeGetVersion
  int driver_version = 0;         ///< hipDriverGetVersion / cudaDriverGetVersion
  std::string gemm_kernel;        ///< matrix path compiled for this device, see gemm_kernel_name
};

/// Selects device `index` and reads its properties. Throws GpuError.
DeviceInfo open_device(int index);

/// Where the STREAM arrays live.
enum class MemoryKind {
  device,      ///< hipMalloc / cudaMalloc
  host_pinned, ///< hipHostMalloc / cudaHostAlloc: pinned, coherent host memory used in place
  managed      ///< hipMallocManaged / cudaMallocManaged, first touched on the device
};

/// Per-repetition kernel times (ms, device event timing) of the four BabelStream kernels on
/// `elements` doubles per array: copy c=a, mul b=s*c, add c=a+b, triad a=b+s*c, s = 0.4.
struct StreamTimes {
  std::size_t elements = 0;
  std::vector<double> copy_ms, mul_ms, add_ms, triad_ms;
  bool verified = false;    ///< sampled final values match the host recurrence (rel 1e-8)
  std::string verify_error; ///< why not, when verified is false
};

/// Runs warm-up + timed repetitions of copy, mul, add, triad in that order (as BabelStream does).
StreamTimes run_stream(MemoryKind kind, std::size_t elements, int warmup, int reps);

/// Host<->device copy times (ms) for `bytes` between pinned host memory and a device buffer.
struct TransferTimes {
  std::vector<double> h2d_ms, d2h_ms;
};
TransferTimes run_transfers(std::size_t bytes, int warmup, int reps);

/// Quantized weight formats.
enum class QuantFormat { nf4, int4 };

/// GEMM and dequantization benchmark on one shape: C[M x N] (fp32) = A[M x K] (bf16) *
/// W[N x K]^T (bf16, or dequantized from NF4/int4). Requires M % 16 == 0, N % 16 == 0,
/// K % 32 == 0 (checked, GpuError otherwise). All buffers live on the device for the session.
class GemmSession {
public:
  /// Uploads A (M*K bf16 bits) and W (N*K bf16 bits).
  GemmSession(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a,
              const std::uint16_t* w);
  ~GemmSession();
  GemmSession(const GemmSession&) = delete;
  GemmSession& operator=(const GemmSession&) = delete;

  /// Uploads NF4 weights: N*K/2 packed bytes (high nibble first), absmax per `block_size`
  /// elements, and the 16-entry code table (from the CPU reference, so both use the same floats).
  void upload_nf4(const std::uint8_t* packed, const float* absmax, std::size_t absmax_count,
                  std::size_t block_size, const float* table16);
  /// Uploads int4 weights: N*K/2 packed bytes (low nibble first), one scale per `group_size`.
  void upload_int4(const std::uint8_t* packed, const float* scales, std::size_t scale_count,
                   std::size_t group_size);

  /// Own matrix-core (or tiled) bf16 GEMM of A and W into C.
  std::vector<double> time_own_bf16(int warmup, int reps);
  /// Vendor BLAS bf16 GEMM (fp32 accumulate, fp32 out); GpuError when blas_available() is false.
  std::vector<double> time_blas_bf16(int warmup, int reps);
  /// true when this binary has a vendor BLAS (cuBLAS, rocBLAS).
  static bool blas_available() noexcept;
  /// "cublas", "rocblas" or "not built".
  static const char* blas_name() noexcept;

  /// Dequantization kernel alone: packed weights -> bf16 W' on the device.
  std::vector<double> time_dequant(QuantFormat format, int warmup, int reps);
  /// Path one: dequantize kernel, then the bf16 GEMM on W' (own kernel, or BLAS when use_blas),
  /// timed together per repetition.
  std::vector<double> time_dequant_then_gemm(QuantFormat format, bool use_blas, int warmup,
                                             int reps);
  /// Path two: one kernel that dequantizes the weight tile in shared memory inside the GEMM.
  std::vector<double> time_fused(QuantFormat format, int warmup, int reps);

  /// Sets every C element to a NaN pattern, so an output the next kernel fails to write is caught.
  void poison_output();
  /// C values at flat indices row * N + col (gathered on the device).
  std::vector<float> gather_output(const std::vector<std::int64_t>& flat_indices);
  /// The dequantized W' (N*K bf16 bits) from the last time_dequant / time_dequant_then_gemm.
  std::vector<std::uint16_t> download_dequantized();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Fused 4-bit GEMV/GEMM for the generation regime (M = 1..64 activation rows): the packed
/// weights are streamed once with 128-bit loads, dequantized in registers and reduced across K
/// (see kernels/gemv.cpp `gemv4_kernel` and docs/bench.md "Fused 4-bit GEMV"). Also times the
/// vendor BLAS on the bf16 weight at the same M for the comparison. Requires 1 <= M <= 64,
/// N % 16 == 0, K % 32 == 0, int4 group size and NF4 block size multiples of 32 (GpuError
/// otherwise; halo-bench validates them before it opens the device).
class GemvSession {
public:
  /// Uploads A (M*K bf16 bits); W (N*K bf16 bits) may be null when no BLAS run is wanted. Each
  /// weight (bf16 and packed) is held in as many device copies as make `rotate_bytes` (choose
  /// several times the last-level cache), and each timed repetition launches once per copy, so
  /// every launch streams its weight from DRAM and launch latency overlaps as in a decoder step.
  GemvSession(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a,
              const std::uint16_t* w, std::uint64_t rotate_bytes);
  ~GemvSession();
  GemvSession(const GemvSession&) = delete;
  GemvSession& operator=(const GemvSession&) = delete;

  /// Same layouts as GemmSession::upload_nf4 / upload_int4.
  void upload_nf4(const std::uint8_t* packed, const float* absmax, std::size_t absmax_count,
                  std::size_t block_size, const float* table16);
  void upload_int4(const std::uint8_t* packed, const float* scales, std::size_t scale_count,
                   std::size_t group_size);
  /// Vendor BLAS bf16 GEMM at this M (fp32 accumulate and output); ms per GEMM.
  std::vector<double> time_blas_bf16(int warmup, int reps);
  /// The fused kernel; ms per launch.
  std::vector<double> time_fused(QuantFormat format, int warmup, int reps);
  /// Launch configuration of the fused kernel, e.g. "mt8 r4 k-splits/block 2, 256 threads, 64
  /// weight copies rotated".
  std::string fused_config(QuantFormat format) const;
  /// Bytes the fused kernel must move at least: packed weights + scales + A (bf16) + C (fp32).
  double fused_bytes(QuantFormat format) const;

  void poison_output();
  std::vector<float> gather_output(const std::vector<std::int64_t>& flat_indices);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// What the runtime calls the memory that totalGlobalMem reports: "HSA pool (...)" on HIP,
/// "CUDA device global memory (...)" on CUDA.
const char* memory_pool_term() noexcept;

/// Host memory and copy call of one integrity round trip.
enum class CopyPath {
  pageable,    ///< malloc'd host memory, hipMemcpy (the runtime stages it)
  pinned,      ///< hipHostMalloc'd host memory, hipMemcpy
  pinned_async ///< hipHostMalloc'd host memory, hipMemcpyAsync on a created stream, then sync
};

/// Result of one host->device->host round trip of `bytes` bytes of a known pattern.
struct RoundTrip {
  bool ok = false;
  /// First differing byte offset and where it was seen: "h2d" (checked on the device right after
  /// the upload), "d2h" (device-written pattern read back), "round trip"; empty when ok.
  std::uint64_t first_bad_offset = 0;
  std::string stage;
  std::uint32_t expected_word = 0; ///< the 32-bit word around first_bad_offset, expected
  std::uint32_t got_word = 0;      ///< and seen
  std::uint64_t bad_words = 0;     ///< differing 32-bit words in that stage
  double seconds = 0.0;
};

/// Copies a pattern (halo_bench/pattern.hpp, `pattern_kind`, `seed`) host->device, checks it on
/// the device, writes the device-generated pattern back device->host and checks it on the host,
/// then copies the uploaded buffer back and compares it byte for byte with what was sent.
RoundTrip run_round_trip(CopyPath path, std::uint64_t bytes, int pattern_kind, std::uint32_t seed);

/// On-device fp32 -> bf16 conversion with the runtime's own bf16 type (CUDA `__float2bfloat16`,
/// HIP `__float2bfloat16` from hip_bf16.h, or `hip_bfloat16::round_to_bfloat16` on older ROCm),
/// and bf16 -> fp32 widening. Returns (bf16 bits of every input, fp32 bits of every widened bf16).
struct DeviceConversion {
  std::vector<std::uint16_t> to_bf16;
  std::vector<std::uint32_t> widened;
  std::string function; ///< which device conversion ran
};
DeviceConversion convert_on_device(const std::vector<std::uint32_t>& fp32_bits,
                                   const std::vector<std::uint16_t>& bf16_bits);

/// Name of the GEMM inner loop compiled for the current device: "wmma-gfx11" (RDNA3/3.5
/// __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32), "mfma-cdna" (gfx90a/gfx94x
/// __builtin_amdgcn_mfma_f32_16x16x16bf16_1k), "wmma-sm80" (nvcuda::wmma bf16) or "tiled-simt".
std::string gemm_kernel_name();

/// Result of the allocation-ceiling probe.
struct CeilingResult {
  std::uint64_t bytes = 0;  ///< bytes allocated and touched before stopping
  std::size_t chunks = 0;   ///< successful chunk allocations
  bool reached_cap = false; ///< stopped by the safety cap, not by an allocation failure
  std::string stop_reason;  ///< "cap reached", or the runtime's error string
  double seconds = 0.0;     ///< wall time of the probe
};

/// Allocates `chunk_bytes` device chunks, touching each with a device memset, until an allocation
/// or memset fails or the next chunk would pass `cap_bytes`; then frees everything.
CeilingResult run_ceiling(std::uint64_t chunk_bytes, std::uint64_t cap_bytes);

} // namespace halo_bench::gpu
