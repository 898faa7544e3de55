// SPDX-License-Identifier: MIT
// Probe: the environment training will see, read from /proc/self/environ (NUL-separated): the
// ROCm runtime (HSA_*, ROCR_*), HIP (HIP_*, GPU_*), rocBLAS, PyTorch allocator and BLAS
// variables. Keys are lower-cased: HSA_OVERRIDE_GFX_VERSION -> env.hsa_override_gfx_version.
#include "gfx.hpp"
#include "probes.hpp"

#include <algorithm>

namespace halo::probes {
namespace {

bool wanted(const std::string& name) {
  for (const char* p : {"HSA_", "HIP_", "ROCR_", "GPU_", "ROCBLAS_", "TORCH_BLAS_", "HCC_",
                        "PYTORCH_ROCM_", "PYTORCH_TUNABLEOP_", "MIOPEN_", "NCCL_", "RCCL_",
                        // flash_attn's backend choice (flash_attn/flash_attn_interface.py) and
                        // PyTorch's AOTriton tier switch (sdp_utils.cpp)
                        "FLASH_ATTENTION_", "TORCH_ROCM_AOTRITON_"})
    if (name.rfind(p, 0) == 0) return true;
  // SUDO_UID: under sudo, device access is judged for the invoking user (checks/device_access.cpp).
  return name == "PYTORCH_HIP_ALLOC_CONF" || name == "PYTORCH_CUDA_ALLOC_CONF" ||
         name == "PYTORCH_ALLOC_CONF" || name == "ROCM_PATH" || name == "CUDA_VISIBLE_DEVICES" ||
         name == "SUDO_UID" || name == "CONTAINER_ID" || // distrobox (distrobox-enter)
         // debugging switches (derived env.debug_settings)
         name == "AMD_SERIALIZE_KERNEL" || name == "AMD_SERIALIZE_COPY" ||
         name == "AMD_LOG_LEVEL" || name == "PYTORCH_NO_CUDA_MEMORY_CACHING" ||
         name == "PYTORCH_NO_HIP_MEMORY_CACHING";
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  ReadResult r = ctx.root.read("/proc/self/environ", std::size_t{1024} * 1024);
  if (!r.ok()) {
    facts.put_status("env.names", r.status, r.path, r.reason);
    return;
  }
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start < r.text.size()) {
    std::size_t end = r.text.find('\0', start);
    if (end == std::string::npos) end = r.text.size();
    std::string entry = r.text.substr(start, end - start);
    start = end + 1;
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (!wanted(name)) continue;
    std::string key = name;
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    names.push_back(name);
    facts.put_ok("env." + key, entry.substr(eq + 1), r.path);
  }
  std::sort(names.begin(), names.end());
  facts.put_ok("env.names", names, r.path);
  if (auto v = facts.get<std::string>("env.hsa_override_gfx_version")) {
    if (auto g = gfx_from_override(*v))
      facts.put_ok("env.hsa_override_gfx_target", *g, r.path);
    else
      facts.put_status("env.hsa_override_gfx_target", Status::error, r.path,
                       "HSA_OVERRIDE_GFX_VERSION is not MAJOR.MINOR.STEPPING: '" + *v + "'");
  }
}

} // namespace

std::unique_ptr<Probe> make_environment_probe() {
  using enum FactType;
  std::vector<FactDecl> decls{
      {"env.names", list, "",
       "the names of the relevant environment variables that are set, sorted"},
      {"env.*", string, "",
       "the value of environment variable `<NAME>` (the key is its lower-case name: "
       "`env.hsa_override_gfx_version`)"},
      {"env.hsa_override_gfx_target", string, "",
       "the gfx target `HSA_OVERRIDE_GFX_VERSION` names (`11.0.0` -> `gfx1100`); an error when it "
       "names none"},
  };
  return std::make_unique<BasicProbe>(
      "environment", std::move(decls),
      "`/proc/self/environ`: the variables named HSA_*, HIP_*, ROCR_*, GPU_*, ROCBLAS_*, "
      "TORCH_BLAS_*, HCC_*, PYTORCH_ROCM_*, PYTORCH_TUNABLEOP_*, MIOPEN_*, NCCL_*, RCCL_*, "
      "FLASH_ATTENTION_* (flash_attn's backend) and TORCH_ROCM_AOTRITON_*, and "
      "PYTORCH_ALLOC_CONF, PYTORCH_{CUDA,HIP}_ALLOC_CONF, ROCM_PATH, CUDA_VISIBLE_DEVICES, "
      "CONTAINER_ID (distrobox), SUDO_UID (device access under sudo), and the debugging switches "
      "AMD_SERIALIZE_KERNEL, AMD_SERIALIZE_COPY, AMD_LOG_LEVEL, "
      "PYTORCH_NO_{CUDA,HIP}_MEMORY_CACHING.",
      std::vector<std::string>{"/proc/self/environ"}, collect);
}

} // namespace halo::probes
