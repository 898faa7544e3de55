// SPDX-License-Identifier: MIT
// Pieces of the ROCr (HSA runtime) probe that tests reach directly. The probe itself is
// make_hsa_probe() in checks/common/probes.hpp; docs/hsa.md maps its facts to rocminfo's output.
#pragma once

#include <halo/fact.hpp>
#include <halo/probe.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo::probes::hsa {

/// The soname the probe loads: ROCr's `libhsa-runtime64.so.1` (same name in Debian's ROCm 5.2,
/// AMD's /opt/rocm and the copies bundled in PyTorch wheels).
inline constexpr const char* kLibraryName = "libhsa-runtime64.so.1";

/// The libraries to try, in order: `requested` (`--hsa-library`), then, on the live root only,
/// `$ROCM_PATH/lib`, `/opt/rocm/lib` and the bare soname (the system loader path). With a root
/// other than / only `requested` is tried (a replay library for a fixture). Duplicates dropped.
std::vector<std::string> library_candidates(const std::string& requested, const char* rocm_path,
                                            bool live);

/// A ROCm version and where it was read ("/opt/rocm-7.1.0/.info/version", "library path",
/// "library file name").
struct RocmVersion {
  std::string version; ///< "7.1.0"
  std::string source;
};

/// The leading dotted version of a `.info/version` text ("7.1.0-20\n" -> "7.1.0").
std::optional<std::string> version_from_info_text(std::string_view text);

/// The ROCm release a loaded ROCr belongs to, from its real path: PREFIX/.info/version next to
/// PREFIX/lib (AMD's packages), a `rocm-X.Y.Z` path component, or the file name's ROCm build
/// number (`libhsa-runtime64.so.1.18.70100` -> 7.1.0). std::nullopt when none says it (Debian's
/// `libhsa-runtime64.so.1.5.0`).
std::optional<RocmVersion> rocm_version_of(const std::filesystem::path& real_library_path);

/// Decodes the ROCr child's protocol (one JSON event object per line: load, init, system, agent,
/// pool, ... as checks/runtime/hsa_child.cpp's child_body writes them) into hsa.* facts, as the
/// probe does for a child that ended normally. The lines are untrusted (a replay library or a
/// broken ROCr writes them): anything malformed becomes a fact with status error, never an
/// exception. Used by the probe's tests and the fuzz target tests/fuzz/fuzz_hsa_child.cpp.
void decode_child_lines(const ProbeContext& ctx, const std::vector<std::string>& lines,
                        FactSet& facts);

/// HSA device type name: 0 cpu, 1 gpu, 2 dsp, 3 aie (newer ROCr), else "unknown(N)".
std::string device_type_name(std::uint32_t type);

/// HSA AMD segment name: 0 global, 1 readonly, 2 private, 3 group, else "unknown(N)".
std::string segment_name(std::uint32_t segment);

} // namespace halo::probes::hsa
