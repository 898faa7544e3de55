// SPDX-License-Identifier: MIT
// halo-bench ceiling part: allocates and touches device memory chunk by chunk until an
// allocation fails or the safety cap is reached. Compiled as HIP or CUDA (see gpu_compat.h).
#include "device_internal.hpp"

#include <chrono>
#include <string>

namespace halo_bench::gpu {

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
