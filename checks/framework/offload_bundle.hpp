// SPDX-License-Identifier: MIT
// The gfx targets a HIP library was compiled for, read from the clang offload bundles in its
// `.hip_fatbin` ELF section (issue 14), with bounded reads: no Python, no ROCm, no whole-file read.
//
// Formats, from LLVM's own readers (llvm/lib/Object/OffloadBundle.cpp, clang/lib/Driver/
// OffloadBundler.cpp) and checked against Debian's clang-offload-bundler-19
// (tests/cli/offload_bundle.sh):
// - Uncompressed bundle: the 24-byte magic `__CLANG_OFFLOAD_BUNDLE__`, a little-endian u64 entry
//   count, then per entry u64 offset (from the bundle's start), u64 size, u64 id length and the id
//   text, e.g. `hipv4-amdgcn-amd-amdhsa--gfx1151`, `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`,
//   `host-x86_64-unknown-linux-gnu-` (the empty host entry).
// - Compressed bundle (`--offload-compress`, pytorch.org wheels since PyTorch PR 147761): magic
//   `CCOB`, u16 version, u16 method (0 zlib, 1 zstd: llvm::compression::Format), then version 1:
//   u32 uncompressed size, u64 hash; version 2: u32 total size, u32 uncompressed size, u64 hash;
//   version 3: u64 total size, u64 uncompressed size, u64 hash; then the compressed uncompressed
//   bundle. Only its first bytes are decompressed: the entry ids come first.
// - A linked library's `.hip_fatbin` holds one bundle per translation unit, one after another
//   (each input section aligned, 4096 bytes for clang's HIP objects); LLVM finds the next one by
//   its magic.
#pragma once

#include "dynamic_loader.hpp" // find_elf_section(): the `.hip_fatbin` section

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace halo::probes {

/// Reads up to `out.size()` bytes at `offset` of the bundle stream (a section or a buffer);
/// returns how many were read (fewer at the end; 0 past it).
using ReadAt = std::function<std::size_t(std::uint64_t offset, std::span<std::byte> out)>;

/// Bounds of one scan of a `.hip_fatbin` section.
struct FatbinLimits {
  std::size_t max_bundles = 64;                          ///< bundles read before stopping
  std::size_t max_entries = 1024;                        ///< entries of one bundle
  std::size_t max_header_bytes = std::size_t{64} * 1024; ///< one bundle's header (bytes)
  std::uint64_t search_window =
      std::uint64_t{64} * 1024; ///< bytes searched for the next bundle's magic
};

/// What the bundles of one `.hip_fatbin` section say.
struct FatbinTargets {
  /// gfx processors (`gfx1151`; target features such as `:xnack+` dropped) that every bundle read
  /// has a code object for: what a kernel launched from any of them can run on.
  std::set<std::string> common;
  std::set<std::string> any;     ///< processors named by at least one bundle read
  std::size_t bundles = 0;       ///< bundles read
  std::size_t compressed = 0;    ///< of which CCOB bundles
  std::set<std::string> methods; ///< "zstd", "zlib" among the compressed ones
  bool truncated = false;        ///< stopped at a limit before the section's end
  /// Non-empty when the first bundle could not be read: "offset N: why". A later bad bundle
  /// ends the scan with the bundles before it kept (and `truncated`).
  std::string error;
};

/// The gfx processor of an offload bundle entry id: "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+" ->
/// "gfx90a"; std::nullopt for a host or non-AMDGPU entry. Id grammar: `KIND-TRIPLE-TARGETID`,
/// the triple with four components (clang OffloadBundler.cpp OffloadTargetInfo).
std::optional<std::string> gfx_from_bundle_id(std::string_view id);

/// Scans the bundles of a section of `size` bytes read through `read`. Never throws; bad input
/// ends in `error` or `truncated`.
FatbinTargets scan_fatbin(const ReadAt& read, std::uint64_t size, const FatbinLimits& limits = {});

} // namespace halo::probes
