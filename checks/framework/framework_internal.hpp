// SPDX-License-Identifier: MIT
// The static framework probe's own helpers (checks/framework/framework.cpp builds the one probe,
// "framework"): its fact keys, its read bounds, the environment it reads from
// /proc/self/environ, and the collectors of its other files: checks/framework/torch_libs.cpp
// (the wheel's kernel library file names, libtorch_hip.so's offload bundles and dynamic
// section, AOTriton images) and checks/framework/companions.cpp (bitsandbytes, flash_attn,
// torchvision, torchaudio). Private to checks/framework/.
#pragma once

#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace halo::probes::framework_files {

/// A dist-info METADATA header block and bitsandbytes/__init__.py are a few KiB (bytes).
inline constexpr std::size_t kMaxMetadataBytes = std::size_t{64} * 1024;
/// torch/version.py is about ten lines; anything near this size (bytes) is not that file.
inline constexpr std::size_t kMaxVersionPyBytes = std::size_t{16} * 1024;
/// At most this many names of one directory are read (/usr/lib holds a few hundred).
inline constexpr std::size_t kMaxDirNames = 65536;
/// At most this many file names of one kernel library directory are read for gfx names
/// (a multi-target rocBLAS library holds a few thousand).
inline constexpr std::size_t kMaxLibraryNames = 20000;

/// A fact key (or any view) as the std::string FactSet takes.
inline std::string str(std::string_view s) {
  return std::string(s);
}

/// Joins an absolute directory and a relative tail without a doubled '/'
/// ("/a/" + "b" -> "/a/b"; "/" + "b" -> "/b"). Defined in framework.cpp.
std::string join(std::string_view dir, std::string_view tail);

/// The directory part of an absolute path ("/a/b/c" -> "/a/b"; "/a" -> "/"). Defined in
/// framework.cpp.
std::string parent_dir(std::string_view path);

/// The variables of the environment training will see that the probe reads, from
/// /proc/self/environ (read_env() in framework.cpp).
struct PythonEnvVars {
  std::string virtual_env;
  std::string conda_prefix;
  /// PATH as set; empty when it is not set.
  std::string path;
  /// LD_LIBRARY_PATH as set (possibly empty); std::nullopt when it is not set.
  std::optional<std::string> ld_library_path;
  /// HOME and PYTHONUSERBASE (absolute), and whether PYTHONNOUSERSITE is set non-empty: what
  /// site.py's user site directory depends on.
  std::string home;
  std::string python_user_base;
  bool no_user_site = false;
  /// BNB_ROCM_VERSION as set (bitsandbytes/cextension.py's override); std::nullopt when unset.
  std::optional<std::string> bnb_rocm_version;
  std::string source;
  std::string read_reason; ///< why /proc/self/environ could not be read; empty when it was
};

// checks/framework/torch_libs.cpp: the ROCm half of the wheel (each sets its facts, ok or with
// a status; none throws for bad input).

/// framework.torch.gfx_targets: the distinct gfx targets named by the file names of
/// SITE/torch/lib/{rocblas,hipblaslt}/library and SITE/_rocm_sdk_libraries_*/lib/... (TheRock).
void collect_gfx_targets(const Root& root, const std::string& site, const std::string& torch,
                         FactSet& facts);

/// FACT_KEY: the gfx processors every offload bundle in the `.hip_fatbin` section of the ELF
/// file open as FD (named LIB in sources) has a code object for; an error status when the file
/// is not ELF, has no such section, a damaged bundle or an unknown layout. Used for
/// libtorch_hip.so, the bitsandbytes library and flash_attn_2_cuda.
void collect_offload_targets(const std::string& lib, int fd, std::string_view fact_key,
                             FactSet& facts);

/// framework.torch.aotriton_images: the amd-<arch> directories of
/// TORCH/lib/aotriton.images.
void collect_aotriton(const Root& root, const std::string& torch, FactSet& facts);

/// framework.torch.{offload_targets,library_search,linked_libraries,ld_library_path_shadows}
/// from TORCH/lib/libtorch_hip.so (missing when the wheel has none).
void collect_hip_library(const Root& root, const std::string& torch, const PythonEnvVars& env,
                         FactSet& facts);

// checks/framework/companions.cpp: the packages beside torch in its site directory SITE.

/// framework.bitsandbytes.{library,library_choice,library_present,library_targets}: the
/// native library bitsandbytes loads beside a ROCm torch whose torch.version.hip is HIP
/// (std::nullopt: not a ROCm build, all missing).
void collect_bitsandbytes_library(const Root& root, const std::string& site,
                                  const std::optional<std::string>& hip, const PythonEnvVars& env,
                                  FactSet& facts);

/// framework.bitsandbytes.{version,rocm_libraries}.
void collect_bitsandbytes(const Root& root, const std::string& site, FactSet& facts);

/// KEY: the version of package PKG (torchvision, torchaudio, flash_attn) in SITE; missing when
/// it is not installed, an error when no file names a version.
void collect_companion(const Root& root, const std::string& site, std::string_view pkg,
                       std::string_view key, FactSet& facts);

/// KEY: `cuda`, `rocm` or `cpu`: the GPU runtime PKG's (torchvision, torchaudio) compiled
/// extension is linked against, from its DT_NEEDED names.
void collect_companion_build(const Root& root, const std::string& site, std::string_view pkg,
                             std::string_view key, FactSet& facts);

/// framework.flash_attn.{version,offload_targets}.
void collect_flash_attn(const Root& root, const std::string& site, FactSet& facts);

} // namespace halo::probes::framework_files
