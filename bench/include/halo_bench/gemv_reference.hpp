// SPDX-License-Identifier: MIT
// CPU model of the fused 4-bit GEMV kernel (kernels/gemv.cpp gemv4_kernel): the same decoding of
// the packed 16-byte chunks and the same arithmetic order per chunk, so the kernel's layout logic
// is tested without a GPU and the GPU result can be compared with it.
#pragma once

#include "halo_bench/bf16.hpp"
#include "halo_bench/quant.hpp"
#include "halo_bench/reference_gemm.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace halo_bench {

/// C[row, col] of C[M x N] = A[M x K] (bf16) * W[N x K]^T for each sample, W in NF4 (bitsandbytes
/// layout, block size a multiple of 32), in double precision with the kernel's decoding: per
/// 32-weight chunk (16 packed bytes) the sum of bf16(table[code]) * a, times the block's absmax
/// (bitsandbytes' kgemm_4bit_inference_naive also multiplies the code table in the compute dtype,
/// bf16). The GPU result is compared with this. Requires K % 32 == 0, |A| = M*K, count == N*K and
/// samples inside C (std::invalid_argument otherwise).
std::vector<double> gemv_nf4_reference(const GemmShape& shape, std::span<const bf16_bits> a,
                                       const Nf4Tensor& w, std::span<const GemmSample> samples);

/// The same for symmetric int4 (group size a multiple of 32): per chunk the sum of
/// (nibble - 8) * a, times the group's scale (exact: the kernel converts nibbles exactly).
std::vector<double> gemv_int4_reference(const GemmShape& shape, std::span<const bf16_bits> a,
                                        const Int4Tensor& w, std::span<const GemmSample> samples);

} // namespace halo_bench
