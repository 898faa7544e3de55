// SPDX-License-Identifier: MIT
// What the halo-bench kernel sources share (kernels/*.cpp, each compiled as HIP or CUDA, C++17):
// the owning device allocation, the launch-grid and repetition-timing helpers, the NF4 code table
// kernel argument, the vendor BLAS wrapper (blas.cpp), the output gather and poison (device.cpp)
// and the dequantization launchers (dequant.cpp). Internal: only kernels/*.cpp include it; the
// driver sees bench_gpu.hpp alone.
#pragma once

#include "bench_gpu.hpp"
#include "gpu_compat.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#if defined(__CUDACC__)
#include <cublas_v2.h>
#elif defined(HALO_BENCH_HAVE_ROCBLAS)
#include <rocblas/rocblas.h>
#endif

namespace halo_bench::gpu {

/// NF4 code table passed by value (kernel argument), copied to shared memory per block.
struct Nf4Table {
  float value[16];
};

/// Blocks for `n` work items of `threads` each, at least 1 and at most 2^20 (grid-stride loops
/// cover the rest).
inline unsigned grid_for(std::size_t n, unsigned threads) {
  const std::size_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(blocks, 1), 1u << 20));
}

/// Runs `launch` `warmup` times untimed, then `reps` times each between device events; ms per
/// repetition.
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

/// The vendor BLAS handle (created on first use) and the nn.Linear-layout bf16 GEMM (blas.cpp).
class Blas {
public:
  Blas() = default;
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  ~Blas();
  /// C[m x n] (fp32) = A[m x k] (bf16) * W[n x k]^T (bf16), fp32 accumulation. GpuError when the
  /// library fails or is not built.
  void gemm(int m, int n, int k, const std::uint16_t* a, const std::uint16_t* weights, float* c);

private:
#if defined(__CUDACC__)
  cublasHandle_t handle_ = nullptr;
#elif defined(HALO_BENCH_HAVE_ROCBLAS)
  rocblas_handle handle_ = nullptr;
#endif
};

/// Sets every float of `c` to a NaN pattern (0xff bytes) and waits (device.cpp).
void poison_floats(Buffer& c);
/// The floats of `c` at `flat_indices`, gathered on the device (device.cpp).
std::vector<float> gather_floats(const Buffer& c, const std::vector<std::int64_t>& flat_indices);

/// Dequantizes `bytes` packed NF4 bytes (bitsandbytes layout, high nibble first) to bf16 bits in
/// `out` (2 * bytes elements), bit-exact with bench/src/quant.cpp (dequant.cpp).
void launch_dequant_nf4(const std::uint8_t* packed, const float* absmax, int block_size,
                        const Nf4Table& table, std::uint16_t* out, std::size_t bytes);
/// Same for symmetric int4 with group scales (low nibble first).
void launch_dequant_int4(const std::uint8_t* packed, const float* scales, int group_size,
                         std::uint16_t* out, std::size_t bytes);

} // namespace halo_bench::gpu
