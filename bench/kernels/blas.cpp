// SPDX-License-Identifier: MIT
// halo-bench vendor BLAS: cuBLAS (CUDA) or rocBLAS (HIP, when found at configure time), the
// reference the own GEMM and the fused 4-bit kernels are compared with.
#include "device_internal.hpp"

#include <string>

namespace halo_bench::gpu {

Blas::~Blas() {
#if defined(__CUDACC__)
  if (handle_ != nullptr) (void)cublasDestroy(handle_);
#elif defined(HALO_BENCH_HAVE_ROCBLAS)
  if (handle_ != nullptr) (void)rocblas_destroy_handle(handle_);
#endif
}

void Blas::gemm(int m, int n, int k, const std::uint16_t* a, const std::uint16_t* weights,
                float* c) {
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

} // namespace halo_bench::gpu
