// SPDX-License-Identifier: MIT
// PyTorch's caching-allocator settings string (PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF,
// PYTORCH_HIP_ALLOC_CONF), checked as c10 parses it. Used by the framework_env derivation
// (checks/framework/framework_derive.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace halo::probes {

/// The problems c10::CachingAllocator::AllocatorConfig::parseArgs (c10/core/AllocatorConfig.cpp,
/// pytorch main) raises for `conf`, each as the TORCH_CHECK text it would throw at the first GPU
/// allocation ("Unrecognized CachingAllocator option: X", "CachingAllocator option
/// max_split_size_mb too small, must be >= 20", ...); empty when PyTorch accepts it. Tokens as
/// lexArgs splits them: ',', ':', '[' and ']' stand alone, spaces are dropped. Keys of the newest
/// parser are accepted (an older torch may still refuse one of them); both the "cuda" and the
/// "hip" spellings of the device-specific keys are accepted, as ROCm builds do. At most 16
/// problems are returned; the input is read up to 4096 bytes.
std::vector<std::string> alloc_conf_problems(std::string_view conf);

} // namespace halo::probes
