// SPDX-License-Identifier: MIT
// halo-bench dequantization part: the NF4 and int4 dequantize-to-bf16 kernels (the first step
// of bitsandbytes' training path, timed alone and before a GEMM by GemmSession). Compiled as HIP
// or CUDA (see gpu_compat.h).
#include "device_internal.hpp"

namespace halo_bench::gpu {
namespace {

// ---- dequantization kernels (bit-exact with bench/src/quant.cpp) --------------------------------
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

} // namespace

void launch_dequant_nf4(const std::uint8_t* packed, const float* absmax, int block_size,
                        const Nf4Table& table, std::uint16_t* out, std::size_t bytes) {
  const unsigned threads = 256;
  dequant_nf4_kernel<<<grid_for(bytes, threads), threads>>>(packed, absmax, block_size, table, out,
                                                            bytes);
  HALO_GPU_CHECK_LAUNCH();
}

void launch_dequant_int4(const std::uint8_t* packed, const float* scales, int group_size,
                         std::uint16_t* out, std::size_t bytes) {
  const unsigned threads = 256;
  dequant_int4_kernel<<<grid_for(bytes, threads), threads>>>(packed, scales, group_size, out,
                                                             bytes);
  HALO_GPU_CHECK_LAUNCH();
}

} // namespace halo_bench::gpu
