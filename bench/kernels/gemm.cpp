// SPDX-License-Identifier: MIT
// halo-bench GEMM part: the 128 x 128 tile kernel on the matrix cores (WMMA on RDNA3/3.5, MFMA
// on CDNA, nvcuda::wmma on sm_80+, a tiled SIMT fallback), its bf16/NF4/int4 weight loaders (the
// fused dequant-GEMM) and GemmSession. Compiled as HIP or CUDA (see gpu_compat.h).
#include "device_internal.hpp"

#include <cstring>
#include <string>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <mma.h>
#endif

// ---- which matrix-core path the device pass compiles -------------------------------------------
#define HALO_MMA_SIMT 0
#define HALO_MMA_WMMA_GFX11 1
#define HALO_MMA_MFMA_CDNA 2
#define HALO_MMA_WMMA_SM80 3

#if defined(__HIP_DEVICE_COMPILE__) &&                                                             \
    (defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) ||                       \
     defined(__gfx1103__) || defined(__gfx1150__) || defined(__gfx1151__) ||                       \
     defined(__gfx1152__) || defined(__gfx1153__))
#define HALO_MMA HALO_MMA_WMMA_GFX11
#elif defined(__HIP_DEVICE_COMPILE__) &&                                                           \
    (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) ||   \
     defined(__gfx950__))
#define HALO_MMA HALO_MMA_MFMA_CDNA
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define HALO_MMA HALO_MMA_WMMA_SM80
#else
#define HALO_MMA HALO_MMA_SIMT
#endif

namespace halo_bench::gpu {
namespace {

// ---- GEMM tiling --------------------------------------------------------------------------------
constexpr int kBlockM = 128;      // rows of C per block
constexpr int kBlockN = 128;      // columns of C per block
constexpr int kBlockK = 32;       // reduction slice per shared-memory stage
constexpr int kLds = kBlockK + 8; // padded shared row (bf16 elements), 80 bytes
constexpr int kThreads = 256;     // threads per GEMM block

using SharedTile = std::uint16_t[kBlockM][kLds];

/// Loads a kBlockM x kBlockK slice of a row-major bf16 matrix (rows x K) into shared memory,
/// 16 bytes per load; rows past `rows` are zero.
__device__ __forceinline__ void load_bf16_tile(SharedTile tile, const std::uint16_t* src, int row0,
                                               int rows, int k0, int K, int tid) {
  for (int chunk = tid; chunk < kBlockM * kBlockK / 8; chunk += kThreads) {
    const int r = chunk / (kBlockK / 8);
    const int kc = (chunk % (kBlockK / 8)) * 8;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (row0 + r < rows) {
      v = *reinterpret_cast<const uint4*>(src + static_cast<std::size_t>(row0 + r) * K + k0 + kc);
    }
    *reinterpret_cast<uint4*>(&tile[r][kc]) = v;
  }
}

/// W operand as plain bf16.
struct Bf16Weights {
  const std::uint16_t* w;
  __device__ __forceinline__ void prepare(float*, int) const {}
  __device__ __forceinline__ void load(SharedTile tile, const float*, int n0, int N, int k0, int K,
                                       int tid) const {
    load_bf16_tile(tile, w, n0, N, k0, K, tid);
  }
};

/// W operand as NF4 (bitsandbytes layout): dequantized into the shared tile.
struct Nf4Weights {
  const std::uint8_t* packed;
  const float* absmax;
  int block_size;
  Nf4Table table;
  __device__ __forceinline__ void prepare(float* s_table, int tid) const {
    if (tid < 16) {
      s_table[tid] = table.value[tid];
    }
  }
  __device__ __forceinline__ void load(SharedTile tile, const float* s_table, int n0, int N, int k0,
                                       int K, int tid) const {
    for (int pair = tid; pair < kBlockN * kBlockK / 2; pair += kThreads) {
      const int r = pair / (kBlockK / 2);
      const int kc = (pair % (kBlockK / 2)) * 2;
      std::uint16_t lo = 0;
      std::uint16_t hi = 0;
      if (n0 + r < N) {
        const std::size_t idx = static_cast<std::size_t>(n0 + r) * K + k0 + kc;
        const std::uint8_t byte = packed[idx / 2];
        lo = gpu_float_to_bf16_rne(s_table[byte >> 4] * absmax[idx / block_size]);
        hi = gpu_float_to_bf16_rne(s_table[byte & 15] * absmax[(idx + 1) / block_size]);
      }
      tile[r][kc] = lo;
      tile[r][kc + 1] = hi;
    }
  }
};

/// W operand as symmetric int4 with group scales: dequantized into the shared tile.
struct Int4Weights {
  const std::uint8_t* packed;
  const float* scales;
  int group_size;
  __device__ __forceinline__ void prepare(float*, int) const {}
  __device__ __forceinline__ void load(SharedTile tile, const float*, int n0, int N, int k0, int K,
                                       int tid) const {
    for (int pair = tid; pair < kBlockN * kBlockK / 2; pair += kThreads) {
      const int r = pair / (kBlockK / 2);
      const int kc = (pair % (kBlockK / 2)) * 2;
      std::uint16_t lo = 0;
      std::uint16_t hi = 0;
      if (n0 + r < N) {
        const std::size_t idx = static_cast<std::size_t>(n0 + r) * K + k0 + kc;
        const std::uint8_t byte = packed[idx / 2];
        lo = gpu_float_to_bf16_rne(static_cast<float>(static_cast<int>(byte & 15) - 8) *
                                   scales[idx / group_size]);
        hi = gpu_float_to_bf16_rne(static_cast<float>(static_cast<int>(byte >> 4) - 8) *
                                   scales[(idx + 1) / group_size]);
      }
      tile[r][kc] = lo;
      tile[r][kc + 1] = hi;
    }
  }
};

#if HALO_MMA == HALO_MMA_WMMA_GFX11
typedef short halo_v16s __attribute__((ext_vector_type(16)));
typedef float halo_v8f __attribute__((ext_vector_type(8)));
#elif HALO_MMA == HALO_MMA_MFMA_CDNA
typedef short halo_v4s __attribute__((ext_vector_type(4)));
typedef float halo_v4f __attribute__((ext_vector_type(4)));
#endif

/// C[M x N] = A[M x K] * W[N x K]^T with W supplied by `Weights` (bf16, NF4 or int4). One block
/// computes a 128 x 128 tile of C; the inner product runs on the matrix cores where the target
/// has them. Requires M % 16 == 0, N % 16 == 0, K % 32 == 0 (checked by the host wrapper).
template <class Weights>
__global__ void __launch_bounds__(kThreads)
    gemm_kernel(const std::uint16_t* __restrict__ A, Weights weights, float* __restrict__ C, int M,
                int N, int K) {
  __shared__ __align__(16) std::uint16_t As[kBlockM][kLds];
  __shared__ __align__(16) std::uint16_t Bs[kBlockN][kLds];
  __shared__ float s_table[16];
  const int tid = static_cast<int>(threadIdx.x);
  const int m0 = static_cast<int>(blockIdx.y) * kBlockM;
  const int n0 = static_cast<int>(blockIdx.x) * kBlockN;
  weights.prepare(s_table, tid);
  __syncthreads();

#if HALO_MMA == HALO_MMA_WMMA_GFX11
  // wave32: 8 waves as 4 (M) x 2 (N), each 32 x 64 = 2 x 4 tiles of 16 x 16.
  const int lane = tid % 32;
  const int wave = tid / 32;
  const int wm = (wave % 4) * 32;
  const int wn = (wave / 4) * 64;
  halo_v8f acc[2][4];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 8; ++e)
        acc[i][j][e] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kBlockK) {
    load_bf16_tile(As, A, m0, M, k0, K, tid);
    weights.load(Bs, s_table, n0, N, k0, K, tid);
    __syncthreads();
    for (int ks = 0; ks < kBlockK; ks += 16) {
      halo_v16s a[2];
      halo_v16s b[4];
      for (int i = 0; i < 2; ++i)
        for (int e = 0; e < 16; ++e)
          a[i][e] = static_cast<short>(As[wm + i * 16 + lane % 16][ks + e]);
      for (int j = 0; j < 4; ++j)
        for (int e = 0; e < 16; ++e)
          b[j][e] = static_cast<short>(Bs[wn + j * 16 + lane % 16][ks + e]);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j)
          acc[i][j] = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      const int col = n0 + wn + j * 16 + lane % 16;
      for (int e = 0; e < 8; ++e) {
        const int row = m0 + wm + i * 16 + e * 2 + lane / 16;
        if (row < M && col < N) C[static_cast<std::size_t>(row) * N + col] = acc[i][j][e];
      }
    }
#elif HALO_MMA == HALO_MMA_MFMA_CDNA
  // wave64: 4 waves as 2 (M) x 2 (N), each 64 x 64 = 4 x 4 tiles of 16 x 16.
  const int lane = tid % 64;
  const int wave = tid / 64;
  const int wm = (wave % 2) * 64;
  const int wn = (wave / 2) * 64;
  halo_v4f acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 4; ++e)
        acc[i][j][e] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kBlockK) {
    load_bf16_tile(As, A, m0, M, k0, K, tid);
    weights.load(Bs, s_table, n0, N, k0, K, tid);
    __syncthreads();
    for (int ks = 0; ks < kBlockK; ks += 16) {
      const int kq = ks + 4 * (lane / 16);
      halo_v4s a[4];
      halo_v4s b[4];
      for (int i = 0; i < 4; ++i)
        for (int e = 0; e < 4; ++e)
          a[i][e] = static_cast<short>(As[wm + i * 16 + lane % 16][kq + e]);
      for (int j = 0; j < 4; ++j)
        for (int e = 0; e < 4; ++e)
          b[j][e] = static_cast<short>(Bs[wn + j * 16 + lane % 16][kq + e]);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          acc[i][j] = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a[i], b[j], acc[i][j], 0, 0, 0);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int col = n0 + wn + j * 16 + lane % 16;
      for (int e = 0; e < 4; ++e) {
        const int row = m0 + wm + i * 16 + 4 * (lane / 16) + e;
        if (row < M && col < N) C[static_cast<std::size_t>(row) * N + col] = acc[i][j][e];
      }
    }
#elif HALO_MMA == HALO_MMA_WMMA_SM80
  // warp32: 8 warps as 4 (M) x 2 (N), each 32 x 64 = 2 x 4 nvcuda::wmma 16x16x16 bf16 fragments.
  namespace wmma = nvcuda::wmma;
  const int warp = tid / 32;
  const int wm = (warp % 4) * 32;
  const int wn = (warp / 4) * 64;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][4];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      wmma::fill_fragment(acc[i][j], 0.0f);
  for (int k0 = 0; k0 < K; k0 += kBlockK) {
    load_bf16_tile(As, A, m0, M, k0, K, tid);
    weights.load(Bs, s_table, n0, N, k0, K, tid);
    __syncthreads();
    for (int ks = 0; ks < kBlockK; ks += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[4];
      for (int i = 0; i < 2; ++i)
        wmma::load_matrix_sync(a[i], reinterpret_cast<const __nv_bfloat16*>(&As[wm + i * 16][ks]),
                               kLds);
      for (int j = 0; j < 4; ++j)
        wmma::load_matrix_sync(b[j], reinterpret_cast<const __nv_bfloat16*>(&Bs[wn + j * 16][ks]),
                               kLds);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j)
          wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      const int row = m0 + wm + i * 16;
      const int col = n0 + wn + j * 16;
      if (row < M && col < N)
        wmma::store_matrix_sync(C + static_cast<std::size_t>(row) * N + col, acc[i][j], N,
                                wmma::mem_row_major);
    }
#else
  // Portable tiled fallback: 16 x 16 threads, each 8 x 8 outputs strided by 16.
  const int ty = tid / 16;
  const int tx = tid % 16;
  float acc[8][8];
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kBlockK) {
    load_bf16_tile(As, A, m0, M, k0, K, tid);
    weights.load(Bs, s_table, n0, N, k0, K, tid);
    __syncthreads();
    for (int kk = 0; kk < kBlockK; ++kk) {
      float a[8];
      float b[8];
      for (int i = 0; i < 8; ++i)
        a[i] = gpu_bf16_to_float(As[ty + 16 * i][kk]);
      for (int j = 0; j < 8; ++j)
        b[j] = gpu_bf16_to_float(Bs[tx + 16 * j][kk]);
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j)
          acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      const int row = m0 + ty + 16 * i;
      const int col = n0 + tx + 16 * j;
      if (row < M && col < N) C[static_cast<std::size_t>(row) * N + col] = acc[i][j];
    }
#endif
}

__global__ void mma_kind_kernel(int* out) {
  *out = HALO_MMA;
}

} // namespace

std::string gemm_kernel_name() {
  Buffer out(sizeof(int));
  mma_kind_kernel<<<1, 1>>>(out.as<int>());
  HALO_GPU_CHECK_LAUNCH();
  int kind = -1;
  HALO_GPU_CHECK(hipMemcpy(&kind, out.as<int>(), sizeof kind, hipMemcpyDeviceToHost));
  switch (kind) {
  case HALO_MMA_WMMA_GFX11:
    return "wmma-gfx11";
  case HALO_MMA_MFMA_CDNA:
    return "mfma-cdna";
  case HALO_MMA_WMMA_SM80:
    return "wmma-sm80";
  default:
    return "tiled-simt";
  }
}

// ---- GEMM session ------------------------------------------------------------------------------
struct GemmSession::Impl {
  int m = 0, n = 0, k = 0;
  Buffer a, w, c, w_deq;
  Buffer nf4_packed, nf4_absmax, int4_packed, int4_scales;
  int nf4_block = 64, int4_group = 128;
  Nf4Table table{};
  Blas blas;

  dim3 gemm_grid() const {
    return dim3(static_cast<unsigned>((n + kBlockN - 1) / kBlockN),
                static_cast<unsigned>((m + kBlockM - 1) / kBlockM));
  }
  template <class Weights> void launch(const Weights& weights) {
    gemm_kernel<Weights>
        <<<gemm_grid(), kThreads>>>(a.as<std::uint16_t>(), weights, c.as<float>(), m, n, k);
    HALO_GPU_CHECK_LAUNCH();
  }
  void launch_own(const std::uint16_t* weights) { launch(Bf16Weights{weights}); }
  void launch_blas(const std::uint16_t* weights) {
    blas.gemm(m, n, k, a.as<std::uint16_t>(), weights, c.as<float>());
  }
  void launch_dequant(QuantFormat format) {
    const std::size_t bytes = static_cast<std::size_t>(n) * static_cast<std::size_t>(k) / 2;
    if (format == QuantFormat::nf4) {
      if (nf4_packed.bytes() == 0) throw GpuError("NF4 weights not uploaded");
      launch_dequant_nf4(nf4_packed.as<std::uint8_t>(), nf4_absmax.as<float>(), nf4_block, table,
                         w_deq.as<std::uint16_t>(), bytes);
    } else {
      if (int4_packed.bytes() == 0) throw GpuError("int4 weights not uploaded");
      launch_dequant_int4(int4_packed.as<std::uint8_t>(), int4_scales.as<float>(), int4_group,
                          w_deq.as<std::uint16_t>(), bytes);
    }
  }
};

GemmSession::GemmSession(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a,
                         const std::uint16_t* w)
    : impl_(std::make_unique<Impl>()) {
  if (m <= 0 || n <= 0 || k <= 0 || m % 16 != 0 || n % 16 != 0 || k % 32 != 0 || m > (1LL << 30) ||
      n > (1LL << 30) || k > (1LL << 30)) {
    throw GpuError("GEMM shape " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                   std::to_string(k) + " unsupported: need M%16 == 0, N%16 == 0, K%32 == 0");
  }
  impl_->m = static_cast<int>(m);
  impl_->n = static_cast<int>(n);
  impl_->k = static_cast<int>(k);
  const auto mk = static_cast<std::size_t>(m * k);
  const auto nk = static_cast<std::size_t>(n * k);
  const auto mn = static_cast<std::size_t>(m * n);
  impl_->a = Buffer(mk * 2);
  impl_->w = Buffer(nk * 2);
  impl_->c = Buffer(mn * 4);
  impl_->w_deq = Buffer(nk * 2);
  impl_->a.upload(a, mk * 2);
  impl_->w.upload(w, nk * 2);
}

GemmSession::~GemmSession() = default;

void GemmSession::upload_nf4(const std::uint8_t* packed, const float* absmax,
                             std::size_t absmax_count, std::size_t block_size,
                             const float* table16) {
  const std::size_t bytes = static_cast<std::size_t>(impl_->n) * impl_->k / 2;
  impl_->nf4_packed = Buffer(bytes);
  impl_->nf4_packed.upload(packed, bytes);
  impl_->nf4_absmax = Buffer(absmax_count * sizeof(float));
  impl_->nf4_absmax.upload(absmax, absmax_count * sizeof(float));
  impl_->nf4_block = static_cast<int>(block_size);
  std::memcpy(impl_->table.value, table16, sizeof impl_->table.value);
}

void GemmSession::upload_int4(const std::uint8_t* packed, const float* scales,
                              std::size_t scale_count, std::size_t group_size) {
  const std::size_t bytes = static_cast<std::size_t>(impl_->n) * impl_->k / 2;
  impl_->int4_packed = Buffer(bytes);
  impl_->int4_packed.upload(packed, bytes);
  impl_->int4_scales = Buffer(scale_count * sizeof(float));
  impl_->int4_scales.upload(scales, scale_count * sizeof(float));
  impl_->int4_group = static_cast<int>(group_size);
}

std::vector<double> GemmSession::time_own_bf16(int warmup, int reps) {
  return time_reps([&] { impl_->launch_own(impl_->w.as<std::uint16_t>()); }, warmup, reps);
}

std::vector<double> GemmSession::time_blas_bf16(int warmup, int reps) {
  return time_reps([&] { impl_->launch_blas(impl_->w.as<std::uint16_t>()); }, warmup, reps);
}

std::vector<double> GemmSession::time_dequant(QuantFormat format, int warmup, int reps) {
  return time_reps([&] { impl_->launch_dequant(format); }, warmup, reps);
}

std::vector<double> GemmSession::time_dequant_then_gemm(QuantFormat format, bool use_blas,
                                                        int warmup, int reps) {
  return time_reps(
      [&] {
        impl_->launch_dequant(format);
        if (use_blas)
          impl_->launch_blas(impl_->w_deq.as<std::uint16_t>());
        else
          impl_->launch_own(impl_->w_deq.as<std::uint16_t>());
      },
      warmup, reps);
}

std::vector<double> GemmSession::time_fused(QuantFormat format, int warmup, int reps) {
  if (format == QuantFormat::nf4) {
    if (impl_->nf4_packed.bytes() == 0) throw GpuError("NF4 weights not uploaded");
    const Nf4Weights weights{impl_->nf4_packed.as<std::uint8_t>(), impl_->nf4_absmax.as<float>(),
                             impl_->nf4_block, impl_->table};
    return time_reps([&] { impl_->launch(weights); }, warmup, reps);
  }
  if (impl_->int4_packed.bytes() == 0) throw GpuError("int4 weights not uploaded");
  const Int4Weights weights{impl_->int4_packed.as<std::uint8_t>(), impl_->int4_scales.as<float>(),
                            impl_->int4_group};
  return time_reps([&] { impl_->launch(weights); }, warmup, reps);
}

void GemmSession::poison_output() {
  poison_floats(impl_->c);
}

std::vector<float> GemmSession::gather_output(const std::vector<std::int64_t>& flat_indices) {
  return gather_floats(impl_->c, flat_indices);
}

std::vector<std::uint16_t> GemmSession::download_dequantized() {
  std::vector<std::uint16_t> out(static_cast<std::size_t>(impl_->n) * impl_->k);
  HALO_GPU_CHECK(hipMemcpy(out.data(), impl_->w_deq.as<std::uint16_t>(), out.size() * 2,
                           hipMemcpyDeviceToHost));
  return out;
}

} // namespace halo_bench::gpu
