// SPDX-License-Identifier: MIT
// Command-line value parsers of halo-bench. Every argument is validated here, before the driver
// touches the GPU runtime, so a bad argument is exit 2 with a message and nothing has run.
#pragma once

#include "halo_bench/reference_gemm.hpp"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace halo_bench {

/// A bad command-line value; what() names the option and the offending text. halo-bench turns it
/// into exit code 2 before any GPU call.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Largest GEMM dimension accepted (elements). Far above any model projection (the largest
/// vocabularies are 262,144) and small enough that every index product fits the kernels' types.
inline constexpr std::int64_t max_gemm_dim = std::int64_t{1} << 20;
/// Largest matrix accepted (elements of A, W or C): 2^31, 4 GiB of bf16.
inline constexpr std::int64_t max_gemm_elements = std::int64_t{1} << 31;

/// Checks one GEMM shape for the halo-bench kernels: M % 16 == 0, N % 16 == 0, K % 32 == 0 (the
/// matrix-core tiles and the 128-bit packed-weight loads: 32 four-bit weights), every dimension in
/// [1, max_gemm_dim] and every matrix at most max_gemm_elements. Throws UsageError naming `option`.
void validate_gemm_shape(const GemmShape& shape, std::string_view option);

/// Parses "MxNxK[,MxNxK...]" (C[MxN] = A[MxK] W[NxK]^T) and validates each shape
/// (validate_gemm_shape). Throws UsageError for a malformed item, an empty list or a bad shape.
std::vector<GemmShape> parse_gemm_shapes(std::string_view text,
                                         std::string_view option = "--sizes");

/// Parses a comma-separated list of names, each of which must be one of `known`; duplicates are
/// kept once, order of first appearance. Throws UsageError naming the unknown name.
std::vector<std::string> parse_name_list(std::string_view text,
                                         std::span<const std::string_view> known,
                                         std::string_view option);

/// Parses a comma-separated list of integers in [lo, hi], each a multiple of `multiple_of`
/// (1 = any). Throws UsageError.
std::vector<std::int64_t> parse_int_list(std::string_view text, std::int64_t lo, std::int64_t hi,
                                         std::int64_t multiple_of, std::string_view option);

/// Parses a byte size with an optional binary suffix: "4096", "4K"/"4KiB", "64M"/"64MiB",
/// "1G"/"1GiB" (K = 1024). Throws UsageError for text that is not such a size or overflows.
std::uint64_t parse_byte_size(std::string_view text, std::string_view option);

/// Parses a comma-separated list of byte sizes (parse_byte_size), each in [lo, hi] and a multiple
/// of 4 (the integrity patterns are 32-bit words). Throws UsageError.
std::vector<std::uint64_t> parse_byte_sizes(std::string_view text, std::uint64_t lo,
                                            std::uint64_t hi, std::string_view option);

/// One weight matrix of a model, as `halo-doctor bench --model` passes it to halo-bench:
/// W[N x K] applied `count` times per token (e.g. once per decoder layer).
struct ModelLinear {
  std::string name;       ///< module name, e.g. "q_proj", "gate_up_proj", "lm_head"
  std::int64_t n = 0;     ///< out_features (rounded up to a multiple of 16)
  std::int64_t k = 0;     ///< in_features (rounded up to a multiple of 32)
  std::int64_t count = 0; ///< occurrences per token (layers; 1 for lm_head)
  bool quantized = true;  ///< false (":bf16"): kept in bf16 by bitsandbytes, e.g. lm_head
};

/// Parses "NAME:NxK:COUNT[:bf16][,...]" (the --model-linears format; NAME is [a-z0-9_]; a
/// trailing ":bf16" marks a module bitsandbytes does not quantize). N % 16 == 0 and K % 32 == 0
/// are required, COUNT in [1, 65536]. Throws UsageError.
std::vector<ModelLinear> parse_model_linears(std::string_view text, std::string_view option);

} // namespace halo_bench
