// SPDX-License-Identifier: MIT
// halo-bench GPU kernels and their host wrappers. One source: compiled as HIP (clang/hipcc,
// LANGUAGE HIP) or as CUDA (nvcc, LANGUAGE CUDA); see gpu_compat.h. C++17.
#include "bench_gpu.hpp"
#include "gpu_compat.h"
#include "halo_bench/pattern.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

#if defined(__CUDACC__)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <mma.h>
#define HALO_DEVICE_BF16_FUNCTION "__float2bfloat16 / __bfloat162float (cuda_bf16.h)"
#else
#if defined(HALO_BENCH_HAVE_ROCBLAS)
#include <rocblas/rocblas.h>
#endif
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
#define HALO_HIP_BF16_HEADER 1
#define HALO_DEVICE_BF16_FUNCTION "__float2bfloat16 / __bfloat162float (hip/hip_bf16.h)"
#else
#include <hip/hip_bfloat16.h>
#define HALO_DEVICE_BF16_FUNCTION "hip_bfloat16::round_to_bfloat16 (hip/hip_bfloat16.h)"
#endif
#endif

#ifndef HALO_BENCH_BACKEND_NAME
#if defined(__CUDACC__)
#define HALO_BENCH_BACKEND_NAME "cuda"
#else
#define HALO_BENCH_BACKEND_NAME "hip"
#endif
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

// ---- GEMM tiling
// ---------------------------------------------------------------------------------
constexpr int kBlockM = 128;      // rows of C per block
constexpr int kBlockN = 128;      // columns of C per block
constexpr int kBlockK = 32;       // reduction slice per shared-memory stage
constexpr int kLds = kBlockK + 8; // padded shared row (bf16 elements), 80 bytes
constexpr int kThreads = 256;     // threads per GEMM block

using SharedTile = std::uint16_t[kBlockM][kLds];

/// NF4 code table passed by value (kernel argument), copied to shared memory per block.
struct Nf4Table {
  float value[16];
};

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

// ---- dequantization kernels (bit-exact with bench/src/quant.cpp)
// ---------------------------------
__global__ void dequant_nf4_kernel(const std::uint8_t* __restrict__ packed,
                                   const float* __restrict__ absmax, int block_size, Nf4Table table,
                                   std::uint16_t* __restrict__ out, std::size_t bytes) {
  __shared__ float s_table[16];
  if (threadIdx.x < 16) {
    s_table[threadIdx.x] = table.value[threadIdx.x];
  }
  __syncthreads();
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes;
       i += stride) {
    const std::uint8_t byte = packed[i];
    const std::size_t idx = 2 * i;
    const std::uint32_t lo = gpu_float_to_bf16_rne(s_table[byte >> 4] * absmax[idx / block_size]);
    const std::uint32_t hi =
        gpu_float_to_bf16_rne(s_table[byte & 15] * absmax[(idx + 1) / block_size]);
    reinterpret_cast<std::uint32_t*>(out)[i] = lo | (hi << 16);
  }
}

__global__ void dequant_int4_kernel(const std::uint8_t* __restrict__ packed,
                                    const float* __restrict__ scales, int group_size,
                                    std::uint16_t* __restrict__ out, std::size_t bytes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes;
       i += stride) {
    const std::uint8_t byte = packed[i];
    const std::size_t idx = 2 * i;
    const std::uint32_t lo = gpu_float_to_bf16_rne(
        static_cast<float>(static_cast<int>(byte & 15) - 8) * scales[idx / group_size]);
    const std::uint32_t hi = gpu_float_to_bf16_rne(
        static_cast<float>(static_cast<int>(byte >> 4) - 8) * scales[(idx + 1) / group_size]);
    reinterpret_cast<std::uint32_t*>(out)[i] = lo | (hi << 16);
  }
}

__global__ void gather_kernel(const float* __restrict__ src, const std::int64_t* __restrict__ index,
                              float* __restrict__ dst, std::size_t count) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) {
    dst[i] = src[index[i]];
  }
}

// ---- fused 4-bit GEMV/GEMM for small M (generation) ---------------------------------------------
// Memory-bound design (docs/bench.md "Fused 4-bit GEMV"), the layout of bitsandbytes'
// kgemm_4bit_inference_naive (csrc/kernels.cu) generalised to M <= 64 rows and several output
// rows per group:
//  * a group of 32 lanes (a CUDA warp, an RDNA wave32, half a CDNA wave64) owns R rows of W;
//    lane l reads the 16-byte chunks l, l+32, l+64, ... of each row: one 128-bit load per lane
//    per row, 512 contiguous bytes per group per row, every byte of W read exactly once;
//  * the 32 weights of a chunk share one scale (int4 group and NF4 block sizes are multiples of
//    32), so the chunk's dot products are summed unscaled and scaled once;
//  * int4 nibbles become floats with the 0x4B000000 magic (2^23 + n, exact), NF4 bytes index a
//    256-entry table of bf16 pairs in shared memory (one lookup per two weights; bitsandbytes keeps
//    its quant_map in the compute dtype too);
//  * the 32 lanes' partial sums are reduced with xor shuffles; with split-K (grid.y > 1, chosen so
//    the grid fills the device) the groups' results are added into a zeroed C with atomics.
constexpr int kGemvThreads = 256;
constexpr int kGemvLanes = 32;
constexpr int kGemvGroups = kGemvThreads / kGemvLanes;
constexpr int kGemvMaxM = 64;

__device__ __forceinline__ float bf16_lo(std::uint32_t pair) {
  return __uint_as_float(pair << 16);
}
__device__ __forceinline__ float bf16_hi(std::uint32_t pair) {
  return __uint_as_float(pair & 0xffff0000u);
}

/// Partial dot product of one 16-byte chunk of packed weights (32 weights) with 32 bf16
/// activations (`a`, 16 words); unscaled.
template <bool kNf4>
__device__ __forceinline__ float chunk_dot(const uint4& w, const std::uint32_t* a,
                                           const std::uint32_t* s_pairs) {
  const std::uint32_t words[4] = {w.x, w.y, w.z, w.w};
  float sum0 = 0.0f;
  float sum1 = 0.0f;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const std::uint32_t byte = (words[q] >> (8 * b)) & 0xffu;
      const std::uint32_t act = a[q * 4 + b]; // elements 8q+2b (low half), 8q+2b+1 (high half)
      float w0;
      float w1;
      if (kNf4) {
        // bitsandbytes: first element in the high nibble; the table holds both, low half first.
        const std::uint32_t pair = s_pairs[byte];
        w0 = bf16_lo(pair);
        w1 = bf16_hi(pair);
      } else {
        // int4: first element in the low nibble; (2^23 + n) - (2^23 + 8) = n - 8 exactly.
        w0 = __uint_as_float(0x4b000000u | (byte & 15u)) - 8388616.0f;
        w1 = __uint_as_float(0x4b000000u | (byte >> 4)) - 8388616.0f;
      }
      sum0 = fmaf(w0, bf16_lo(act), sum0);
      sum1 = fmaf(w1, bf16_hi(act), sum1);
    }
  }
  return sum0 + sum1;
}

/// Scale (absmax) index of a 32-weight chunk: chunk / (group / 32), a shift for the usual
/// power-of-two groups (64, 128) instead of an integer division per chunk.
__device__ __forceinline__ unsigned scale_index(unsigned chunk, unsigned chunks_per_scale,
                                                int shift) {
  return shift >= 0 ? chunk >> shift : chunk / chunks_per_scale;
}

/// Accumulates the chunk `c` of the R rows (already loaded in `w`, scales in `scale`) against
/// activation rows m0 .. m0+MT-1 (those < M).
template <bool kNf4, int MT, int R>
__device__ __forceinline__ void gemv4_chunk(float (&acc)[MT][R], const uint4 (&w)[R],
                                            const float (&scale)[R], const std::uint16_t* A,
                                            std::size_t a_row_words, int m0, int M, int c,
                                            const std::uint32_t* s_pairs) {
#pragma unroll
  for (int i = 0; i < MT; ++i) {
    if (m0 + i >= M) break;
    const uint4* a4 = reinterpret_cast<const uint4*>(
        reinterpret_cast<const std::uint32_t*>(A) + static_cast<std::size_t>(m0 + i) * a_row_words +
        static_cast<std::size_t>(c) * 16);
    std::uint32_t a[16];
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const uint4 x = a4[v];
      a[4 * v] = x.x;
      a[4 * v + 1] = x.y;
      a[4 * v + 2] = x.z;
      a[4 * v + 3] = x.w;
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
      acc[i][r] = fmaf(scale[r], chunk_dot<kNf4>(w[r], a, s_pairs), acc[i][r]);
  }
}

/// C[M x N] = A[M x K] (bf16) * W[N x K]^T with W packed 4-bit (see above). MT activation rows
/// per register tile (rows beyond M skipped), R weight rows per 32-lane group, S K-splits per
/// row group inside the block (the 8 groups of a block are 8/S row groups x S splits; split s
/// reads the chunks s*32 + lane + j*32*S, so the S groups of a row read S*512 contiguous bytes per
/// step), two chunks in flight per lane. The S partial sums meet in shared memory; no atomics.
template <bool kNf4, int MT, int R>
__global__ void __launch_bounds__(kGemvThreads)
    gemv4_kernel(const std::uint16_t* __restrict__ A, const uint4* __restrict__ W,
                 const float* __restrict__ scales, unsigned chunks_per_scale, int scale_shift,
                 Nf4Table table, float* __restrict__ C, int M, int N, int K, int S) {
  __shared__ std::uint32_t s_pairs[256];
  __shared__ float s_partial[kGemvGroups][MT][R];
  if (kNf4) {
    // Selected with constant indices: a dynamic index into the by-value table would copy the
    // kernel argument to the stack.
    const int b = static_cast<int>(threadIdx.x);
    float hi = 0.0f;
    float lo = 0.0f;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      hi = (b >> 4) == j ? table.value[j] : hi;
      lo = (b & 15) == j ? table.value[j] : lo;
    }
    s_pairs[b] = static_cast<std::uint32_t>(gpu_float_to_bf16_rne(hi)) |
                 (static_cast<std::uint32_t>(gpu_float_to_bf16_rne(lo)) << 16);
    __syncthreads();
  }
  const int lane = static_cast<int>(threadIdx.x) % kGemvLanes;
  const int group = static_cast<int>(threadIdx.x) / kGemvLanes;
  const int row_group = group / S;
  const int split = group % S;
  const int row0 = (static_cast<int>(blockIdx.x) * (kGemvGroups / S) + row_group) * R;
  // N % 16 == 0 and R <= 4: a group's R rows are all in range or all out of range.
  const bool active = row0 < N;
  const int chunks = K / 32;
  const int step = kGemvLanes * S;
  const std::size_t a_row_words = static_cast<std::size_t>(K) / 2;

  for (int m0 = 0; m0 < M; m0 += MT) {
    float acc[MT][R];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int r = 0; r < R; ++r)
        acc[i][r] = 0.0f;
    if (active) {
      for (int c = split * kGemvLanes + lane; c < chunks; c += 2 * step) {
        const int c2 = c + step;
        const bool second = c2 < chunks;
        uint4 w[R];
        uint4 w2[R];
        float scale[R];
        float scale2[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          // N*K <= 2^31, so chunk indices (N*K/32) fit 32 bits.
          const unsigned chunk = static_cast<unsigned>(row0 + r) * static_cast<unsigned>(chunks) +
                                 static_cast<unsigned>(c);
          w[r] = W[chunk];
          scale[r] = scales[scale_index(chunk, chunks_per_scale, scale_shift)];
          if (second) {
            w2[r] = W[chunk + static_cast<unsigned>(step)];
            scale2[r] = scales[scale_index(chunk + static_cast<unsigned>(step), chunks_per_scale,
                                           scale_shift)];
          } else {
            w2[r] = make_uint4(0u, 0u, 0u, 0u);
            scale2[r] = 0.0f;
          }
        }
        gemv4_chunk<kNf4, MT, R>(acc, w, scale, A, a_row_words, m0, M, c, s_pairs);
        if (second) gemv4_chunk<kNf4, MT, R>(acc, w2, scale2, A, a_row_words, m0, M, c2, s_pairs);
      }
    }
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float v = acc[i][r];
#pragma unroll
        for (int mask = kGemvLanes / 2; mask > 0; mask /= 2)
          v += halo_shfl_xor32(v, mask);
        if (lane == 0) s_partial[group][i][r] = v;
      }
    }
    __syncthreads();
    if (active && split == 0 && lane < MT * R) {
      const int i = lane / R;
      const int r = lane % R;
      float sum = 0.0f;
      for (int s2 = 0; s2 < S; ++s2)
        sum += s_partial[group + s2][i][r];
      if (m0 + i < M) C[static_cast<std::size_t>(m0 + i) * N + row0 + r] = sum;
    }
    __syncthreads();
  }
}

// ---- integrity kernels --------------------------------------------------------------------------
/// Records in `first_bad` (initialised to ~0) the smallest word index whose value differs from
/// pattern `kind`, and counts the differing words.
__global__ void pattern_check_kernel(const std::uint32_t* __restrict__ data, std::size_t words,
                                     int kind, std::uint32_t seed,
                                     unsigned long long* __restrict__ first_bad,
                                     unsigned long long* __restrict__ bad_count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride) {
    if (data[i] != halo_bench::pattern_word(kind, i, seed)) {
      atomicMin(first_bad, static_cast<unsigned long long>(i));
      atomicAdd(bad_count, 1ull);
    }
  }
}

__global__ void pattern_fill_kernel(std::uint32_t* __restrict__ data, std::size_t words, int kind,
                                    std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride)
    data[i] = halo_bench::pattern_word(kind, i, seed);
}

/// fp32 -> bf16 and bf16 -> fp32 with the runtime's own bf16 type.
__global__ void convert_kernel(const std::uint32_t* __restrict__ f32_in, std::size_t n_f32,
                               std::uint16_t* __restrict__ bf16_out,
                               const std::uint16_t* __restrict__ bf16_in, std::size_t n_bf16,
                               std::uint32_t* __restrict__ f32_out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n_f32) {
    const float x = __uint_as_float(f32_in[i]);
#if defined(__CUDACC__)
    const __nv_bfloat16 b = __float2bfloat16(x);
    bf16_out[i] = *reinterpret_cast<const unsigned short*>(&b);
#elif defined(HALO_HIP_BF16_HEADER)
    const __hip_bfloat16 b = __float2bfloat16(x);
    bf16_out[i] = *reinterpret_cast<const unsigned short*>(&b);
#else
    bf16_out[i] = hip_bfloat16::round_to_bfloat16(x).data;
#endif
  }
  if (i < n_bf16) {
    const unsigned short bits = bf16_in[i];
#if defined(__CUDACC__)
    __nv_bfloat16 b;
    *reinterpret_cast<unsigned short*>(&b) = bits;
    f32_out[i] = __float_as_uint(__bfloat162float(b));
#elif defined(HALO_HIP_BF16_HEADER)
    __hip_bfloat16 b;
    *reinterpret_cast<unsigned short*>(&b) = bits;
    f32_out[i] = __float_as_uint(__bfloat162float(b));
#else
    hip_bfloat16 b;
    b.data = bits;
    f32_out[i] = __float_as_uint(static_cast<float>(b));
#endif
  }
}
// ---- BabelStream kernels
// ---------------------------------------------------------------------------
constexpr double kStreamScalar = 0.4;
constexpr double kStreamInitA = 0.1;
constexpr double kStreamInitB = 0.2;
constexpr double kStreamInitC = 0.0;

__global__ void stream_init(double* a, double* b, double* c, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    a[i] = kStreamInitA;
    b[i] = kStreamInitB;
    c[i] = kStreamInitC;
  }
}
__global__ void stream_copy(const double* __restrict__ a, double* __restrict__ c, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    c[i] = a[i];
}
__global__ void stream_mul(double* __restrict__ b, const double* __restrict__ c, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    b[i] = kStreamScalar * c[i];
}
__global__ void stream_add(const double* __restrict__ a, const double* __restrict__ b,
                           double* __restrict__ c, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    c[i] = a[i] + b[i];
}
__global__ void stream_triad(double* __restrict__ a, const double* __restrict__ b,
                             const double* __restrict__ c, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    a[i] = b[i] + kStreamScalar * c[i];
}

// ---- host helpers
// ----------------------------------------------------------------------------------
unsigned grid_for(std::size_t n, unsigned threads) {
  const std::size_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(blocks, 1), 1u << 20));
}

template <class Launch> std::vector<double> time_reps(Launch&& launch, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) {
    launch();
  }
  HALO_GPU_CHECK(hipDeviceSynchronize());
  GpuEventTimer timer;
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    timer.start();
    launch();
    timer.stop();
    ms.push_back(timer.elapsed_ms());
  }
  return ms;
}

/// Owning device (or pinned/managed) allocation.
class Buffer {
public:
  Buffer() = default;
  Buffer(std::size_t bytes, MemoryKind kind = MemoryKind::device) : bytes_(bytes), kind_(kind) {
    switch (kind) {
    case MemoryKind::device:
      HALO_GPU_CHECK(hipMalloc(&ptr_, bytes));
      break;
    case MemoryKind::host_pinned:
      HALO_GPU_CHECK(hipHostMalloc(&ptr_, bytes, hipHostMallocDefault));
      break;
    case MemoryKind::managed:
      HALO_GPU_CHECK(hipMallocManaged(&ptr_, bytes, hipMemAttachGlobal));
      break;
    }
  }
  ~Buffer() { release(); }
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
      kind_ = other.kind_;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }
  void upload(const void* src, std::size_t n) {
    HALO_GPU_CHECK(hipMemcpy(ptr_, src, n, hipMemcpyHostToDevice));
  }

private:
  void release() noexcept {
    if (ptr_ == nullptr) {
      return;
    }
    if (kind_ == MemoryKind::host_pinned) {
      (void)hipHostFree(ptr_);
    } else {
      (void)hipFree(ptr_);
    }
    ptr_ = nullptr;
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  MemoryKind kind_ = MemoryKind::device;
};

double stream_expected(int iterations, double& b, double& c) {
  double a = kStreamInitA;
  b = kStreamInitB;
  c = kStreamInitC;
  for (int i = 0; i < iterations; ++i) {
    c = a;
    b = kStreamScalar * c;
    c = a + b;
    a = b + kStreamScalar * c;
  }
  return a;
}

} // namespace

const char* backend_name() noexcept {
  return HALO_BENCH_BACKEND_NAME;
}

int device_count(std::string& why) {
  int count = 0;
  const hipError_t status = hipGetDeviceCount(&count);
  if (status != hipSuccess) {
    why = std::string("no GPU: ") + HALO_BENCH_BACKEND_NAME + "GetDeviceCount returned " +
          hipGetErrorName(status) + " (" + hipGetErrorString(status) + ")";
    (void)hipGetLastError();
    return 0;
  }
  if (count <= 0) {
    why = std::string("no GPU: ") + HALO_BENCH_BACKEND_NAME + "GetDeviceCount found 0 devices";
    return 0;
  }
  return count;
}

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

DeviceInfo open_device(int index) {
  HALO_GPU_CHECK(hipSetDevice(index));
  hipDeviceProp_t prop;
  std::memset(&prop, 0, sizeof prop);
  HALO_GPU_CHECK(hipGetDeviceProperties(&prop, index));
  DeviceInfo info;
  info.name = prop.name;
#if defined(__CUDACC__)
  info.arch = "sm_" + std::to_string(prop.major * 10 + prop.minor);
#else
  info.arch = prop.gcnArchName;
#endif
  info.compute_units = prop.multiProcessorCount;
  info.total_memory = static_cast<std::uint64_t>(prop.totalGlobalMem);
  info.integrated = prop.integrated != 0;
  int value = 0;
  if (hipDeviceGetAttribute(&value, hipDeviceAttributeMemoryClockRate, index) == hipSuccess)
    info.memory_clock_khz = value;
  if (hipDeviceGetAttribute(&value, hipDeviceAttributeMemoryBusWidth, index) == hipSuccess)
    info.memory_bus_bits = value;
  if (hipDeviceGetAttribute(&value, hipDeviceAttributeClockRate, index) == hipSuccess)
    info.core_clock_khz = value;
  (void)hipGetLastError();
  (void)hipRuntimeGetVersion(&info.runtime_version);
  (void)hipDriverGetVersion(&info.driver_version);
  info.gemm_kernel = gemm_kernel_name();
  return info;
}

StreamTimes run_stream(MemoryKind kind, std::size_t elements, int warmup, int reps) {
  StreamTimes t;
  t.elements = elements;
  const std::size_t bytes = elements * sizeof(double);
  Buffer a(bytes, kind), b(bytes, kind), c(bytes, kind);
  double* pa = a.as<double>();
  double* pb = b.as<double>();
  double* pc = c.as<double>();
  const unsigned threads = 256;
  const unsigned grid = grid_for(elements, threads);
  stream_init<<<grid, threads>>>(pa, pb, pc, elements);
  HALO_GPU_CHECK_LAUNCH();
  HALO_GPU_CHECK(hipDeviceSynchronize());
  GpuEventTimer timer;
  for (int iter = 0; iter < warmup + reps; ++iter) {
    const bool timed = iter >= warmup;
    timer.start();
    stream_copy<<<grid, threads>>>(pa, pc, elements);
    timer.stop();
    HALO_GPU_CHECK_LAUNCH();
    if (timed) t.copy_ms.push_back(timer.elapsed_ms());
    timer.start();
    stream_mul<<<grid, threads>>>(pb, pc, elements);
    timer.stop();
    HALO_GPU_CHECK_LAUNCH();
    if (timed) t.mul_ms.push_back(timer.elapsed_ms());
    timer.start();
    stream_add<<<grid, threads>>>(pa, pb, pc, elements);
    timer.stop();
    HALO_GPU_CHECK_LAUNCH();
    if (timed) t.add_ms.push_back(timer.elapsed_ms());
    timer.start();
    stream_triad<<<grid, threads>>>(pa, pb, pc, elements);
    timer.stop();
    HALO_GPU_CHECK_LAUNCH();
    if (timed) t.triad_ms.push_back(timer.elapsed_ms());
  }
  HALO_GPU_CHECK(hipDeviceSynchronize());

  double exp_b = 0.0;
  double exp_c = 0.0;
  const double exp_a = stream_expected(warmup + reps, exp_b, exp_c);
  t.verified = true;
  const std::size_t probes = 64;
  for (std::size_t p = 0; p < probes && t.verified; ++p) {
    const std::size_t i = (elements - 1) * p / (probes - 1);
    double got[3] = {0.0, 0.0, 0.0};
    HALO_GPU_CHECK(hipMemcpy(&got[0], pa + i, sizeof(double), hipMemcpyDeviceToHost));
    HALO_GPU_CHECK(hipMemcpy(&got[1], pb + i, sizeof(double), hipMemcpyDeviceToHost));
    HALO_GPU_CHECK(hipMemcpy(&got[2], pc + i, sizeof(double), hipMemcpyDeviceToHost));
    const double want[3] = {exp_a, exp_b, exp_c};
    for (int arr = 0; arr < 3; ++arr) {
      if (!(std::fabs(got[arr] - want[arr]) <= 1e-8 * std::fabs(want[arr]))) {
        t.verified = false;
        t.verify_error = std::string("stream check failed: array ") + "abc"[arr] + "[" +
                         std::to_string(i) + "] = " + std::to_string(got[arr]) + ", expected " +
                         std::to_string(want[arr]);
        break;
      }
    }
  }
  return t;
}

TransferTimes run_transfers(std::size_t bytes, int warmup, int reps) {
  Buffer host(bytes, MemoryKind::host_pinned);
  Buffer device(bytes, MemoryKind::device);
  std::memset(host.as<void>(), 0x5a, bytes);
  TransferTimes t;
  t.h2d_ms = time_reps(
      [&] {
        HALO_GPU_CHECK(
            hipMemcpyAsync(device.as<void>(), host.as<void>(), bytes, hipMemcpyHostToDevice, 0));
      },
      warmup, reps);
  t.d2h_ms = time_reps(
      [&] {
        HALO_GPU_CHECK(
            hipMemcpyAsync(host.as<void>(), device.as<void>(), bytes, hipMemcpyDeviceToHost, 0));
      },
      warmup, reps);
  return t;
}

// ---- vendor BLAS ------------------------------------------------------------------------------
/// The vendor BLAS handle (created on first use) and the nn.Linear-layout bf16 GEMM.
class Blas {
public:
  Blas() = default;
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  ~Blas() {
#if defined(__CUDACC__)
    if (handle_ != nullptr) (void)cublasDestroy(handle_);
#elif defined(HALO_BENCH_HAVE_ROCBLAS)
    if (handle_ != nullptr) (void)rocblas_destroy_handle(handle_);
#endif
  }
  /// C[m x n] (fp32) = A[m x k] (bf16) * W[n x k]^T (bf16), fp32 accumulation.
  void gemm(int m, int n, int k, const std::uint16_t* a, const std::uint16_t* weights, float* c) {
    const float alpha = 1.0f;
    const float beta = 0.0f;
#if defined(__CUDACC__)
    if (handle_ == nullptr) {
      if (cublasCreate(&handle_) != CUBLAS_STATUS_SUCCESS) throw GpuError("cublasCreate failed");
    }
    // Column-major view: C^T (N x M) = W (K x N)^T * A^T (K x M), the nn.Linear "TN" layout.
    const cublasStatus_t status = cublasGemmEx(
        handle_, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, weights, CUDA_R_16BF, k, a, CUDA_R_16BF,
        k, &beta, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS)
      throw GpuError("cublasGemmEx failed with status " + std::to_string(static_cast<int>(status)));
#elif defined(HALO_BENCH_HAVE_ROCBLAS)
    if (handle_ == nullptr) {
      if (rocblas_create_handle(&handle_) != rocblas_status_success)
        throw GpuError("rocblas_create_handle failed");
    }
    const rocblas_status status = rocblas_gemm_ex(
        handle_, rocblas_operation_transpose, rocblas_operation_none, n, m, k, &alpha, weights,
        rocblas_datatype_bf16_r, k, a, rocblas_datatype_bf16_r, k, &beta, c, rocblas_datatype_f32_r,
        n, c, rocblas_datatype_f32_r, n, rocblas_datatype_f32_r, rocblas_gemm_algo_standard, 0, 0);
    if (status != rocblas_status_success)
      throw GpuError(std::string("rocblas_gemm_ex failed: ") + rocblas_status_to_string(status));
#else
    (void)alpha;
    (void)beta;
    (void)m;
    (void)n;
    (void)k;
    (void)a;
    (void)weights;
    (void)c;
    throw GpuError("vendor BLAS not built");
#endif
  }

private:
#if defined(__CUDACC__)
  cublasHandle_t handle_ = nullptr;
#elif defined(HALO_BENCH_HAVE_ROCBLAS)
  rocblas_handle handle_ = nullptr;
#endif
};

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
    const unsigned threads = 256;
    const unsigned grid = grid_for(bytes, threads);
    if (format == QuantFormat::nf4) {
      if (nf4_packed.bytes() == 0) throw GpuError("NF4 weights not uploaded");
      dequant_nf4_kernel<<<grid, threads>>>(nf4_packed.as<std::uint8_t>(), nf4_absmax.as<float>(),
                                            nf4_block, table, w_deq.as<std::uint16_t>(), bytes);
    } else {
      if (int4_packed.bytes() == 0) throw GpuError("int4 weights not uploaded");
      dequant_int4_kernel<<<grid, threads>>>(int4_packed.as<std::uint8_t>(),
                                             int4_scales.as<float>(), int4_group,
                                             w_deq.as<std::uint16_t>(), bytes);
    }
    HALO_GPU_CHECK_LAUNCH();
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

bool GemmSession::blas_available() noexcept {
#if defined(__CUDACC__) || defined(HALO_BENCH_HAVE_ROCBLAS)
  return true;
#else
  return false;
#endif
}

const char* GemmSession::blas_name() noexcept {
#if defined(__CUDACC__)
  return "cublas";
#elif defined(HALO_BENCH_HAVE_ROCBLAS)
  return "rocblas";
#else
  return "not built";
#endif
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
  HALO_GPU_CHECK(hipMemset(impl_->c.as<void>(), 0xff, impl_->c.bytes()));
  HALO_GPU_CHECK(hipDeviceSynchronize());
}

std::vector<float> GemmSession::gather_output(const std::vector<std::int64_t>& flat_indices) {
  const std::size_t count = flat_indices.size();
  std::vector<float> out(count);
  if (count == 0) return out;
  Buffer index(count * sizeof(std::int64_t));
  Buffer values(count * sizeof(float));
  index.upload(flat_indices.data(), count * sizeof(std::int64_t));
  gather_kernel<<<grid_for(count, 256), 256>>>(impl_->c.as<float>(), index.as<std::int64_t>(),
                                               values.as<float>(), count);
  HALO_GPU_CHECK_LAUNCH();
  HALO_GPU_CHECK(
      hipMemcpy(out.data(), values.as<float>(), count * sizeof(float), hipMemcpyDeviceToHost));
  return out;
}

std::vector<std::uint16_t> GemmSession::download_dequantized() {
  std::vector<std::uint16_t> out(static_cast<std::size_t>(impl_->n) * impl_->k);
  HALO_GPU_CHECK(hipMemcpy(out.data(), impl_->w_deq.as<std::uint16_t>(), out.size() * 2,
                           hipMemcpyDeviceToHost));
  return out;
}

// ---- fused 4-bit GEMV session ------------------------------------------------------------------
struct GemvSession::Impl {
  int m = 0, n = 0, k = 0;
  int compute_units = 1;
  std::uint64_t rotate_bytes = 0;
  Buffer a, c;
  /// Copies of each weight, cycled through launch by launch so that together they exceed the
  /// last-level cache: every launch streams its weight from DRAM, as a decoder step does.
  std::vector<Buffer> w, nf4_packed, int4_packed;
  Buffer nf4_absmax, int4_scales; // scales: one copy (1/16 to 1/32 of the packed bytes)
  int nf4_block = 64, int4_group = 128;
  Nf4Table table{};
  Blas blas;

  /// Register tile (MT activation rows, R weight rows per 32-lane group): small M keeps R at 1
  /// so that N groups fill the device; from M = 5 each A load serves 2 rows. Registers (sm_90,
  /// nvcc 13, int4/NF4): 40/48 (1x1), 80/94 (2x1), 80 (4x1), 128 (8x2); 8 rows x 4 (247) would
  /// leave one block per SM and too few loads in flight.
  void tile(int& mt, int& r) const {
    if (m <= 1) {
      mt = 1;
      r = 1;
    } else if (m <= 2) {
      mt = 2;
      r = 1;
    } else if (m <= 4) {
      mt = 4;
      r = 1;
    } else {
      mt = 8;
      r = 2;
    }
  }
  /// K-splits per row group inside a block: the smallest of 1, 2, 4, 8 that gives at least 4
  /// blocks (32 groups of 32 lanes) per CU/SM, and never more splits than chunks per lane.
  int splits() const {
    int mt = 1;
    int r = 1;
    tile(mt, r);
    int s = 1;
    while (s < kGemvGroups &&
           static_cast<long long>(n) * s / (static_cast<long long>(kGemvGroups) * r) <
               4LL * compute_units &&
           (k / 32) / (kGemvLanes * s * 2) >= 1)
      s *= 2;
    return s;
  }
  static std::size_t copies_for(std::uint64_t rotate, std::size_t bytes) {
    if (bytes == 0) return 1;
    return static_cast<std::size_t>(std::max<std::uint64_t>(1, (rotate + bytes - 1) / bytes));
  }
  /// Uploads `bytes` into copies (the first from the host, the rest device to device).
  static std::vector<Buffer> replicate(const void* host, std::size_t bytes, std::size_t copies) {
    std::vector<Buffer> out;
    out.reserve(copies);
    out.emplace_back(bytes);
    out.back().upload(host, bytes);
    for (std::size_t i = 1; i < copies; ++i) {
      out.emplace_back(bytes);
      HALO_GPU_CHECK(
          hipMemcpy(out.back().as<void>(), out.front().as<void>(), bytes, hipMemcpyDeviceToDevice));
    }
    return out;
  }
  template <bool kNf4, int MT, int R>
  void launch_tile(const uint4* packed, const float* scale, int group) {
    const int s = splits();
    const int rows_per_block = (kGemvGroups / s) * R;
    const dim3 grid(static_cast<unsigned>((n + rows_per_block - 1) / rows_per_block));
    const unsigned per_scale = static_cast<unsigned>(group / 32);
    int shift = -1;
    for (int b = 0; b < 31; ++b)
      if ((1u << b) == per_scale) shift = b;
    gemv4_kernel<kNf4, MT, R><<<grid, kGemvThreads>>>(
        a.as<std::uint16_t>(), packed, scale, per_scale, shift, table, c.as<float>(), m, n, k, s);
    HALO_GPU_CHECK_LAUNCH();
  }
  template <bool kNf4> void launch_format(const uint4* packed, const float* scale, int group) {
    int mt = 1;
    int r = 1;
    tile(mt, r);
    if (mt == 1)
      launch_tile<kNf4, 1, 1>(packed, scale, group);
    else if (mt == 2)
      launch_tile<kNf4, 2, 1>(packed, scale, group);
    else if (mt == 4)
      launch_tile<kNf4, 4, 1>(packed, scale, group);
    else
      launch_tile<kNf4, 8, 2>(packed, scale, group);
  }
  void launch(QuantFormat format, std::size_t copy) {
    if (format == QuantFormat::nf4) {
      if (nf4_packed.empty()) throw GpuError("NF4 weights not uploaded");
      launch_format<true>(nf4_packed[copy % nf4_packed.size()].as<uint4>(), nf4_absmax.as<float>(),
                          nf4_block);
    } else {
      if (int4_packed.empty()) throw GpuError("int4 weights not uploaded");
      launch_format<false>(int4_packed[copy % int4_packed.size()].as<uint4>(),
                           int4_scales.as<float>(), int4_group);
    }
  }
  /// Times `launches` back-to-back launches per repetition (one per weight copy); returns the
  /// time per launch.
  template <class Launch>
  std::vector<double> time_rotating(Launch&& launch_one, std::size_t launches, int warmup,
                                    int reps) {
    std::vector<double> ms = time_reps(
        [&] {
          for (std::size_t i = 0; i < launches; ++i)
            launch_one(i);
        },
        warmup, reps);
    for (double& v : ms)
      v /= static_cast<double>(launches);
    return ms;
  }
};

GemvSession::GemvSession(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a,
                         const std::uint16_t* w, std::uint64_t rotate_bytes)
    : impl_(std::make_unique<Impl>()) {
  if (m < 1 || m > kGemvMaxM || n <= 0 || k <= 0 || n % 16 != 0 || k % 32 != 0 || n > (1LL << 24) ||
      k > (1LL << 24) || n * k > (1LL << 31)) {
    throw GpuError("GEMV shape " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                   std::to_string(k) + " unsupported: need 1 <= M <= 64, N%16 == 0, K%32 == 0");
  }
  impl_->m = static_cast<int>(m);
  impl_->n = static_cast<int>(n);
  impl_->k = static_cast<int>(k);
  impl_->rotate_bytes = rotate_bytes;
  int device = 0;
  HALO_GPU_CHECK(hipGetDevice(&device));
  HALO_GPU_CHECK(
      hipDeviceGetAttribute(&impl_->compute_units, hipDeviceAttributeMultiprocessorCount, device));
  impl_->compute_units = std::max(1, impl_->compute_units);
  const auto mk = static_cast<std::size_t>(m * k);
  const auto nk = static_cast<std::size_t>(n * k);
  impl_->a = Buffer(mk * 2);
  impl_->a.upload(a, mk * 2);
  impl_->c = Buffer(static_cast<std::size_t>(m * n) * 4);
  if (w != nullptr) impl_->w = Impl::replicate(w, nk * 2, Impl::copies_for(rotate_bytes, nk * 2));
}

GemvSession::~GemvSession() = default;

void GemvSession::upload_nf4(const std::uint8_t* packed, const float* absmax,
                             std::size_t absmax_count, std::size_t block_size,
                             const float* table16) {
  if (block_size == 0 || block_size % 32 != 0)
    throw GpuError("fused GEMV needs an NF4 block size that is a multiple of 32");
  const std::size_t bytes = static_cast<std::size_t>(impl_->n) * impl_->k / 2;
  impl_->nf4_packed = Impl::replicate(packed, bytes, Impl::copies_for(impl_->rotate_bytes, bytes));
  impl_->nf4_absmax = Buffer(absmax_count * sizeof(float));
  impl_->nf4_absmax.upload(absmax, absmax_count * sizeof(float));
  impl_->nf4_block = static_cast<int>(block_size);
  std::memcpy(impl_->table.value, table16, sizeof impl_->table.value);
}

void GemvSession::upload_int4(const std::uint8_t* packed, const float* scales,
                              std::size_t scale_count, std::size_t group_size) {
  if (group_size == 0 || group_size % 32 != 0)
    throw GpuError("fused GEMV needs an int4 group size that is a multiple of 32");
  const std::size_t bytes = static_cast<std::size_t>(impl_->n) * impl_->k / 2;
  impl_->int4_packed = Impl::replicate(packed, bytes, Impl::copies_for(impl_->rotate_bytes, bytes));
  impl_->int4_scales = Buffer(scale_count * sizeof(float));
  impl_->int4_scales.upload(scales, scale_count * sizeof(float));
  impl_->int4_group = static_cast<int>(group_size);
}

std::vector<double> GemvSession::time_blas_bf16(int warmup, int reps) {
  if (impl_->w.empty()) throw GpuError("no bf16 weight uploaded for the BLAS run");
  return impl_->time_rotating(
      [&](std::size_t i) {
        impl_->blas.gemm(impl_->m, impl_->n, impl_->k, impl_->a.as<std::uint16_t>(),
                         impl_->w[i].as<std::uint16_t>(), impl_->c.as<float>());
      },
      impl_->w.size(), warmup, reps);
}

std::vector<double> GemvSession::time_fused(QuantFormat format, int warmup, int reps) {
  const std::size_t copies =
      format == QuantFormat::nf4 ? impl_->nf4_packed.size() : impl_->int4_packed.size();
  return impl_->time_rotating([&](std::size_t i) { impl_->launch(format, i); },
                              std::max<std::size_t>(copies, 1), warmup, reps);
}

std::string GemvSession::fused_config(QuantFormat format) const {
  int mt = 1;
  int r = 1;
  impl_->tile(mt, r);
  const std::size_t copies =
      format == QuantFormat::nf4 ? impl_->nf4_packed.size() : impl_->int4_packed.size();
  return "mt" + std::to_string(mt) + " r" + std::to_string(r) + " k-splits/block " +
         std::to_string(impl_->splits()) + ", " + std::to_string(kGemvThreads) + " threads, " +
         std::to_string(copies) + " weight copies rotated";
}

double GemvSession::fused_bytes(QuantFormat format) const {
  const double nk = static_cast<double>(impl_->n) * impl_->k;
  const double per_scale = format == QuantFormat::nf4 ? impl_->nf4_block : impl_->int4_group;
  return nk / 2.0 + nk / per_scale * 4.0 + static_cast<double>(impl_->m) * impl_->k * 2.0 +
         static_cast<double>(impl_->m) * impl_->n * 4.0;
}

void GemvSession::poison_output() {
  HALO_GPU_CHECK(hipMemset(impl_->c.as<void>(), 0xff, impl_->c.bytes()));
  HALO_GPU_CHECK(hipDeviceSynchronize());
}

std::vector<float> GemvSession::gather_output(const std::vector<std::int64_t>& flat_indices) {
  const std::size_t count = flat_indices.size();
  std::vector<float> out(count);
  if (count == 0) return out;
  Buffer index(count * sizeof(std::int64_t));
  Buffer values(count * sizeof(float));
  index.upload(flat_indices.data(), count * sizeof(std::int64_t));
  gather_kernel<<<grid_for(count, 256), 256>>>(impl_->c.as<float>(), index.as<std::int64_t>(),
                                               values.as<float>(), count);
  HALO_GPU_CHECK_LAUNCH();
  HALO_GPU_CHECK(
      hipMemcpy(out.data(), values.as<float>(), count * sizeof(float), hipMemcpyDeviceToHost));
  return out;
}

const char* memory_pool_term() noexcept {
  return HALO_GPU_POOL_TERM;
}

// ---- integrity ---------------------------------------------------------------------------------
namespace {

/// Host buffer of `bytes` bytes: pinned (hipHostMalloc) or pageable (operator new).
class HostBuffer {
public:
  HostBuffer(std::size_t bytes, bool pinned) : pinned_(pinned) {
    if (pinned) {
      pinned_buffer_ = Buffer(bytes, MemoryKind::host_pinned);
    } else {
      pageable_.resize((bytes + 3) / 4);
    }
  }
  std::uint32_t* words() { return pinned_ ? pinned_buffer_.as<std::uint32_t>() : pageable_.data(); }

private:
  bool pinned_;
  Buffer pinned_buffer_;
  std::vector<std::uint32_t> pageable_;
};

void copy(void* dst, const void* src, std::size_t bytes, bool to_device, CopyPath path,
          hipStream_t stream) {
  const auto kind = to_device ? hipMemcpyHostToDevice : hipMemcpyDeviceToHost;
  if (path == CopyPath::pinned_async) {
    HALO_GPU_CHECK(hipMemcpyAsync(dst, src, bytes, kind, stream));
    HALO_GPU_CHECK(hipStreamSynchronize(stream));
  } else {
    HALO_GPU_CHECK(hipMemcpy(dst, src, bytes, kind));
  }
}

/// Host-side first difference against the pattern (the CPU library has the same logic,
/// halo_bench::check_pattern; this copy avoids linking C++20 code into the device TU).
bool host_check(const std::uint32_t* got, std::size_t words, int kind, std::uint32_t seed,
                RoundTrip& r, const char* stage) {
  bool ok = true;
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint32_t want = halo_bench::pattern_word(kind, i, seed);
    if (got[i] != want) {
      if (ok) {
        const std::uint32_t diff = got[i] ^ want;
        unsigned byte = 0;
        while (((diff >> (8 * byte)) & 0xffu) == 0)
          ++byte;
        r.first_bad_offset = static_cast<std::uint64_t>(i) * 4 + byte;
        r.expected_word = want;
        r.got_word = got[i];
        r.stage = stage;
        ok = false;
      }
      ++r.bad_words;
    }
  }
  return ok;
}

} // namespace

RoundTrip run_round_trip(CopyPath path, std::uint64_t bytes, int pattern_kind, std::uint32_t seed) {
  RoundTrip r;
  const auto begin = std::chrono::steady_clock::now();
  const std::size_t words = static_cast<std::size_t>(bytes / 4);
  const std::size_t size = words * 4;
  const bool pinned = path != CopyPath::pageable;
  hipStream_t stream{};
  if (path == CopyPath::pinned_async) HALO_GPU_CHECK(hipStreamCreate(&stream));
  struct StreamGuard {
    hipStream_t s;
    bool owned;
    ~StreamGuard() {
      if (owned) (void)hipStreamDestroy(s);
    }
  } guard{stream, path == CopyPath::pinned_async};
  HostBuffer host(size, pinned);
  HostBuffer back(size, pinned);
  Buffer device(size);
  Buffer device2(size);
  Buffer first_bad(sizeof(unsigned long long));
  Buffer bad_count(sizeof(unsigned long long));
  std::uint32_t* h = host.words();
  for (std::size_t i = 0; i < words; ++i)
    h[i] = halo_bench::pattern_word(pattern_kind, i, seed);
  r.ok = true;

  // 1. host -> device, checked on the device.
  copy(device.as<void>(), h, size, true, path, stream);
  HALO_GPU_CHECK(hipMemset(first_bad.as<void>(), 0xff, sizeof(unsigned long long)));
  HALO_GPU_CHECK(hipMemset(bad_count.as<void>(), 0, sizeof(unsigned long long)));
  const unsigned grid = grid_for(words, 256);
  pattern_check_kernel<<<std::min(grid, 65535u), 256>>>(
      device.as<std::uint32_t>(), words, pattern_kind, seed, first_bad.as<unsigned long long>(),
      bad_count.as<unsigned long long>());
  HALO_GPU_CHECK_LAUNCH();
  unsigned long long first = 0;
  unsigned long long count = 0;
  HALO_GPU_CHECK(hipMemcpy(&first, first_bad.as<void>(), sizeof first, hipMemcpyDeviceToHost));
  HALO_GPU_CHECK(hipMemcpy(&count, bad_count.as<void>(), sizeof count, hipMemcpyDeviceToHost));
  if (count != 0 && first < words) {
    r.ok = false;
    r.stage = "h2d";
    std::uint32_t got = 0;
    HALO_GPU_CHECK(hipMemcpy(&got, device.as<std::uint32_t>() + first, 4, hipMemcpyDeviceToHost));
    const std::uint32_t want = halo_bench::pattern_word(pattern_kind, first, seed);
    unsigned byte = 0;
    while (byte < 3 && (((got ^ want) >> (8 * byte)) & 0xffu) == 0)
      ++byte;
    r.first_bad_offset = first * 4 + byte;
    r.expected_word = want;
    r.got_word = got;
    r.bad_words = count;
  }
  // 2. device-written pattern -> host.
  if (r.ok) {
    pattern_fill_kernel<<<std::min(grid, 65535u), 256>>>(device2.as<std::uint32_t>(), words,
                                                         pattern_kind, seed);
    HALO_GPU_CHECK_LAUNCH();
    HALO_GPU_CHECK(hipDeviceSynchronize());
    copy(back.words(), device2.as<void>(), size, false, path, stream);
    r.ok = host_check(back.words(), words, pattern_kind, seed, r, "d2h");
  }
  // 3. the uploaded buffer back to the host: the whole round trip.
  if (r.ok) {
    std::memset(back.words(), 0, size);
    copy(back.words(), device.as<void>(), size, false, path, stream);
    r.ok = host_check(back.words(), words, pattern_kind, seed, r, "round trip");
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return r;
}

DeviceConversion convert_on_device(const std::vector<std::uint32_t>& fp32_bits,
                                   const std::vector<std::uint16_t>& bf16_bits) {
  DeviceConversion out;
  out.function = HALO_DEVICE_BF16_FUNCTION;
  const std::size_t nf = fp32_bits.size();
  const std::size_t nb = bf16_bits.size();
  Buffer f_in(std::max<std::size_t>(nf, 1) * 4), b_out(std::max<std::size_t>(nf, 1) * 2);
  Buffer b_in(std::max<std::size_t>(nb, 1) * 2), f_out(std::max<std::size_t>(nb, 1) * 4);
  if (nf != 0) f_in.upload(fp32_bits.data(), nf * 4);
  if (nb != 0) b_in.upload(bf16_bits.data(), nb * 2);
  const std::size_t n = std::max(nf, nb);
  convert_kernel<<<grid_for(n, 256), 256>>>(f_in.as<std::uint32_t>(), nf, b_out.as<std::uint16_t>(),
                                            b_in.as<std::uint16_t>(), nb,
                                            f_out.as<std::uint32_t>());
  HALO_GPU_CHECK_LAUNCH();
  out.to_bf16.resize(nf);
  out.widened.resize(nb);
  if (nf != 0)
    HALO_GPU_CHECK(hipMemcpy(out.to_bf16.data(), b_out.as<void>(), nf * 2, hipMemcpyDeviceToHost));
  if (nb != 0)
    HALO_GPU_CHECK(hipMemcpy(out.widened.data(), f_out.as<void>(), nb * 4, hipMemcpyDeviceToHost));
  return out;
}

CeilingResult run_ceiling(std::uint64_t chunk_bytes, std::uint64_t cap_bytes) {
  CeilingResult r;
  const auto begin = std::chrono::steady_clock::now();
  std::vector<void*> chunks;
  while (true) {
    if (r.bytes + chunk_bytes > cap_bytes) {
      r.reached_cap = true;
      r.stop_reason = "cap reached";
      break;
    }
    void* p = nullptr;
    const hipError_t status = hipMalloc(&p, static_cast<std::size_t>(chunk_bytes));
    if (status != hipSuccess || p == nullptr) {
      r.stop_reason = std::string("allocation failed: ") + hipGetErrorString(status);
      (void)hipGetLastError();
      break;
    }
    chunks.push_back(p);
    hipError_t touch = hipMemset(p, 0xa5, static_cast<std::size_t>(chunk_bytes));
    if (touch == hipSuccess) touch = hipDeviceSynchronize();
    if (touch != hipSuccess) {
      r.stop_reason = std::string("touching the chunk failed: ") + hipGetErrorString(touch);
      (void)hipGetLastError();
      break;
    }
    r.bytes += chunk_bytes;
    ++r.chunks;
  }
  for (void* p : chunks)
    (void)hipFree(p);
  (void)hipDeviceSynchronize();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return r;
}

} // namespace halo_bench::gpu
