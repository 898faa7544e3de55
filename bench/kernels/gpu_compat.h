// SPDX-License-Identifier: MIT
// Portability header: the halo-bench kernel source is written against the HIP API and builds
// unchanged with nvcc. Under __CUDACC__ every hip* name used by kernels/*.cpp maps to its
// cuda* counterpart; bf16 is carried as raw uint16_t bits everywhere (ROCm 5.2 has no
// __hip_bfloat16, and raw bits make the host and device conversions bit-identical).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#if defined(__CUDACC__)
#include <cuda_runtime.h>

#define hipError_t cudaError_t
#define hipSuccess cudaSuccess
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipGetLastError cudaGetLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceProp_t cudaDeviceProp
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeMemoryClockRate cudaDevAttrMemoryClockRate
#define hipDeviceAttributeMemoryBusWidth cudaDevAttrGlobalMemoryBusWidth
#define hipDeviceAttributeClockRate cudaDevAttrClockRate
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipDriverGetVersion cudaDriverGetVersion
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMallocManaged cudaMallocManaged
#define hipMemAttachGlobal cudaMemAttachGlobal
#define hipHostMalloc cudaHostAlloc
#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostFree cudaFreeHost
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemsetAsync cudaMemsetAsync
#define hipStreamCreate cudaStreamCreate
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipGetDevice cudaGetDevice
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemset cudaMemset
#define hipMemGetInfo cudaMemGetInfo
#define hipStream_t cudaStream_t
#define hipEvent_t cudaEvent_t
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define HALO_GPU_EVENT_NAME "cudaEvent"
/// What the runtime calls the memory totalGlobalMem reports (CUDA: the device's global memory).
#define HALO_GPU_POOL_TERM "CUDA device global memory (cudaDeviceProp::totalGlobalMem)"
#else
#include <hip/hip_runtime.h>
#define HALO_GPU_EVENT_NAME "hipEvent"
/// What the runtime calls the memory totalGlobalMem reports (HIP takes it from the agent's HSA
/// memory pool: hip/amd_detail device properties, ROCclr device.cpp).
#define HALO_GPU_POOL_TERM "HSA pool (hipDeviceProp_t::totalGlobalMem)"
#endif

/// XOR shuffle inside a group of 32 lanes: a whole CUDA warp, a whole RDNA wave32 or one half of
/// a CDNA wave64 (HIP's __shfl_xor with width 32 stays inside each 32-lane half).
__device__ __forceinline__ float halo_shfl_xor32(float value, int lane_mask) {
#if defined(__CUDACC__)
  return __shfl_xor_sync(0xffffffffu, value, lane_mask, 32);
#else
  return __shfl_xor(value, lane_mask, 32);
#endif
}

/// Throws halo_bench::gpu::GpuError (declared in bench_gpu.hpp) when a runtime call fails.
#define HALO_GPU_CHECK(call)                                                                       \
  do {                                                                                             \
    const hipError_t halo_status_ = (call);                                                        \
    if (halo_status_ != hipSuccess) {                                                              \
      throw ::halo_bench::gpu::GpuError(std::string(#call) +                                       \
                                        " failed: " + hipGetErrorString(halo_status_) +            \
                                        " (" __FILE__ ":" + std::to_string(__LINE__) + ")");       \
    }                                                                                              \
  } while (0)

/// Checks the launch status of the kernel launched just before.
#define HALO_GPU_CHECK_LAUNCH() HALO_GPU_CHECK(hipGetLastError())

/// Device-side bf16 helpers. Same bit recipe as halo_bench::float_to_bf16 (bench/src/bf16.cpp):
/// round to nearest even, NaN kept quiet with its sign and upper payload.
__device__ __forceinline__ std::uint16_t gpu_float_to_bf16_rne(float value) {
  const std::uint32_t bits = __float_as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  }
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/// Widens raw bf16 bits to float exactly.
__device__ __forceinline__ float gpu_bf16_to_float(std::uint16_t bits) {
  return __uint_as_float(static_cast<std::uint32_t>(bits) << 16);
}

/// Event-pair timer: start() and stop() enqueue events on the default stream, elapsed_ms() waits
/// for the stop event and returns the device time between them.
class GpuEventTimer {
public:
  GpuEventTimer() {
    HALO_GPU_CHECK(hipEventCreate(&start_));
    HALO_GPU_CHECK(hipEventCreate(&stop_));
  }
  ~GpuEventTimer() {
    (void)hipEventDestroy(start_);
    (void)hipEventDestroy(stop_);
  }
  GpuEventTimer(const GpuEventTimer&) = delete;
  GpuEventTimer& operator=(const GpuEventTimer&) = delete;
  void start() { HALO_GPU_CHECK(hipEventRecord(start_, 0)); }
  void stop() { HALO_GPU_CHECK(hipEventRecord(stop_, 0)); }
  double elapsed_ms() {
    HALO_GPU_CHECK(hipEventSynchronize(stop_));
    float ms = 0.0f;
    HALO_GPU_CHECK(hipEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms);
  }

private:
  hipEvent_t start_{};
  hipEvent_t stop_{};
};
