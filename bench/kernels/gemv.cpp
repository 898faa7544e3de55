// SPDX-License-Identifier: MIT
// halo-bench GEMV part: the fused 4-bit GEMV/GEMM of the generation regime (M = 1..64) and
// GemvSession. Compiled as HIP or CUDA (see gpu_compat.h).
#include "device_internal.hpp"

#include <cstring>
#include <string>

namespace halo_bench::gpu {
namespace {

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

} // namespace

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
  poison_floats(impl_->c);
}

std::vector<float> GemvSession::gather_output(const std::vector<std::int64_t>& flat_indices) {
  return gather_floats(impl_->c, flat_indices);
}

} // namespace halo_bench::gpu
