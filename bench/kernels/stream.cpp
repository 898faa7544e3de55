// SPDX-License-Identifier: MIT
// halo-bench STREAM part: the four BabelStream kernels on device, pinned host and managed memory,
// and the pinned host <-> device copy times. Compiled as HIP or CUDA (see gpu_compat.h).
#include "device_internal.hpp"

#include <cmath>
#include <cstring>
#include <string>

namespace halo_bench::gpu {
namespace {

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

} // namespace halo_bench::gpu
