// SPDX-License-Identifier: MIT
// halo-bench device part: backend name, device discovery and properties, and the output gather
// and poison that the GEMM and GEMV sessions share. Compiled as HIP or CUDA (see gpu_compat.h).
#include "device_internal.hpp"

#include <cstring>
#include <string>

#ifndef HALO_BENCH_BACKEND_NAME
#if defined(__CUDACC__)
#define HALO_BENCH_BACKEND_NAME "cuda"
#else
#define HALO_BENCH_BACKEND_NAME "hip"
#endif
#endif

namespace halo_bench::gpu {
namespace {

__global__ void gather_kernel(const float* __restrict__ src, const std::int64_t* __restrict__ index,
                              float* __restrict__ dst, std::size_t count) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) {
    dst[i] = src[index[i]];
  }
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

const char* memory_pool_term() noexcept {
  return HALO_GPU_POOL_TERM;
}

void poison_floats(Buffer& c) {
  HALO_GPU_CHECK(hipMemset(c.as<void>(), 0xff, c.bytes()));
  HALO_GPU_CHECK(hipDeviceSynchronize());
}

std::vector<float> gather_floats(const Buffer& c, const std::vector<std::int64_t>& flat_indices) {
  const std::size_t count = flat_indices.size();
  std::vector<float> out(count);
  if (count == 0) return out;
  Buffer index(count * sizeof(std::int64_t));
  Buffer values(count * sizeof(float));
  index.upload(flat_indices.data(), count * sizeof(std::int64_t));
  gather_kernel<<<grid_for(count, 256), 256>>>(c.as<float>(), index.as<std::int64_t>(),
                                               values.as<float>(), count);
  HALO_GPU_CHECK_LAUNCH();
  HALO_GPU_CHECK(
      hipMemcpy(out.data(), values.as<float>(), count * sizeof(float), hipMemcpyDeviceToHost));
  return out;
}

} // namespace halo_bench::gpu
