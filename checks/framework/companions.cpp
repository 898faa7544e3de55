// SPDX-License-Identifier: MIT
// The framework probe (checks/framework/framework.cpp), the packages beside torch in the site
// directory it came from, read from files without running Python: bitsandbytes (its version,
// the ROCm builds of its native library and the one bitsandbytes/cextension.py loads, with that
// library's offload targets), torchvision and torchaudio (version.py or dist-info METADATA, and
// the GPU runtime of their compiled extension from its DT_NEEDED names), flash_attn (its version
// and the offload targets of flash_attn_2_cuda; reference/framework-facts.md 3.3, 4.3).
#include "framework_internal.hpp"
#include "offload_bundle.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <re2/re2.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace halo::probes::framework_files {
namespace {

/// A version a package's files name, and the file that names it.
struct NamedVersion {
  std::string version;
  std::string source;
};

/// The `Version:` header of the first `SITE/PKG-*.dist-info/METADATA` that has one (Core
/// Metadata specification; pip writes one dist-info per installed distribution), or nullopt.
std::optional<NamedVersion> dist_info_version(const Root& root, const std::string& site,
                                              std::string_view pkg) {
  static const RE2 kMetaVersion(R"((?m)^Version:[ \t]*([0-9A-Za-z.+!_-]+)[ \t]*\r?$)");
  const RE2 dist_info(fmt::format(R"({}-[^/]+\.dist-info)", RE2::QuoteMeta(pkg)));
  auto names = root.list(site);
  if (!names) return std::nullopt;
  std::size_t n = 0;
  for (const auto& name : *names) {
    if (++n > kMaxDirNames) break;
    if (!RE2::FullMatch(name, dist_info)) continue;
    NamedVersion found;
    ReadResult r = root.read(join(join(site, name), "METADATA"), kMaxMetadataBytes);
    if (r.ok() && RE2::PartialMatch(r.text, kMetaVersion, &found.version)) {
      found.source = r.path;
      return found;
    }
  }
  return std::nullopt;
}

/// `__version__ = "..."` (or single quotes) in the Python file `file`, read up to `max_bytes`;
/// nullopt when it cannot be read or names none.
std::optional<NamedVersion> assigned_version(const Root& root, const std::string& file,
                                             std::size_t max_bytes) {
  static const RE2 kInitVersion(R"((?m)^__version__[ \t]*=[ \t]*["']([0-9A-Za-z.+!_-]+)["'])");
  NamedVersion found;
  ReadResult r = root.read(file, max_bytes);
  if (!r.ok() || !RE2::PartialMatch(r.text, kInitVersion, &found.version)) return std::nullopt;
  found.source = r.path;
  return found;
}

} // namespace

namespace {

/// How the installed bitsandbytes release names the native library it loads beside a ROCm
/// torch: its bitsandbytes/cextension.py get_cuda_bnb_library_path().
enum class BnbLoader {
  nearest,   ///< 0.50 and later (and main): BNB_ROCM_VERSION, else the nearest packaged release
  exact,     ///< 0.46 to 0.49: only libbitsandbytes_rocm<M><m>.so for torch.version.hip
  rocm_fork, ///< ROCm/bitsandbytes 0.43.x: libbitsandbytes_hip[<M><m>][_nohipblaslt].so
  cuda_name, ///< before 0.46 (upstream): no ROCm naming at all, libbitsandbytes_cuda<M><m>.so
};

/// The loader of release `version` (a dist-info or __version__ string; nullopt or unparsable:
/// the newest). `hip_libs`: the package ships libbitsandbytes_hip*.so, the ROCm fork's names
/// (upstream 0.43 to 0.45 ship CUDA builds only).
BnbLoader bnb_loader(const std::optional<std::string>& version, bool hip_libs) {
  static const RE2 kVer(R"((\d{1,4})\.(\d{1,4})(?:[.+a-z].*)?)");
  int major = 0;
  int minor = 0;
  if (!version || !RE2::FullMatch(*version, kVer, &major, &minor) || major > 0 || minor >= 50)
    return BnbLoader::nearest;
  if (minor >= 46) return BnbLoader::exact;
  if ((minor == 43 || minor == 44) && hip_libs) return BnbLoader::rocm_fork;
  return BnbLoader::cuda_name;
}

} // namespace

/// The native library bitsandbytes loads beside this ROCm torch, as the installed release's own
/// bitsandbytes/cextension.py chooses it (get_cuda_bnb_library_path(), get_native_library()):
/// - 0.50 and later (main): with BNB_ROCM_VERSION set (digits only, else a RuntimeError at
///   import) exactly libbitsandbytes_rocm<value>.so; otherwise from the packaged
///   libbitsandbytes_rocm<M><m>.so (ROCm: the first digit is the major, the rest the minor) the
///   exact torch.version.hip (major, minor), else the highest of the same major below it, else
///   the lowest of the same major above it, else the non-existent exact name (no cross-major
///   fallback).
/// - 0.46 to 0.49: exactly libbitsandbytes_rocm<M><m>.so for torch.version.hip; BNB_ROCM_VERSION
///   is not read; a missing file raises "Configured ROCm binary not found at ..." (0.46: "CUDA").
/// - ROCm/bitsandbytes (the fork, 0.43.x; commits 6d90452 and fd655b0 of its cextension.py):
///   below HIP 6.1 libbitsandbytes_hip_nohipblaslt.so, else libbitsandbytes_hip.so; from
///   fd655b0 on with the ROCm version in the name (libbitsandbytes_hip61.so), used here when the
///   package ships such a file.
/// - upstream before 0.46: libbitsandbytes_cuda<M><m>.so of torch.version.hip's numbers; when it
///   is missing the CPU library loads ("Could not find the bitsandbytes CUDA binary", 0.45.5).
/// Then the gfx targets of that library's offload bundles, read as libtorch_hip.so's (cextension
/// loads it with ctypes; a GPU outside them fails at the first kernel).
void collect_bitsandbytes_library(const Root& root, const std::string& site,
                                  const std::optional<std::string>& hip, const PythonEnvVars& env,
                                  FactSet& facts) {
  const std::string pkg = join(site, "bitsandbytes");
  auto skip = [&](const std::string& src, const std::string& why) {
    for (auto k : {fact_keys::framework::bitsandbytes_library,
                   fact_keys::framework::bitsandbytes_library_targets,
                   fact_keys::framework::bitsandbytes_library_present,
                   fact_keys::framework::bitsandbytes_library_choice})
      facts.put_status(str(k), Status::missing, src, why);
  };
  if (!root.exists(join(pkg, "__init__.py")))
    return skip(pkg, fmt::format("bitsandbytes is not installed in {}", site));
  if (!hip) return skip(pkg, "torch is not a ROCm build (torch.version.hip is None)");
  // The package's native libraries: the ROCm builds by version, and the fork's names.
  static const RE2 kLib(R"(libbitsandbytes_rocm([0-9])([0-9]{1,3})\.so)");
  static const RE2 kForkLib(R"(libbitsandbytes_hip([0-9]*)(?:_nohipblaslt)?\.so)");
  std::map<std::pair<int, int>, std::string> available;
  bool fork_libs = false;
  bool fork_versioned = false;
  if (auto names = root.list(pkg)) {
    std::size_t n = 0;
    for (const auto& f : *names) {
      if (++n > kMaxLibraryNames) break;
      int ma = 0;
      int mi = 0;
      std::string digits;
      if (RE2::FullMatch(f, kLib, &ma, &mi)) available.emplace(std::make_pair(ma, mi), f);
      if (RE2::FullMatch(f, kForkLib, &digits)) {
        fork_libs = true;
        fork_versioned = fork_versioned || !digits.empty();
      }
    }
  }
  const auto release = facts.get<std::string>(str(fact_keys::framework::bitsandbytes_version));
  const BnbLoader loader = bnb_loader(release, fork_libs);
  const std::string rel = release.value_or("of unknown version");
  static const RE2 kHip(R"(([0-9]{1,3})\.([0-9]{1,4}).*)");
  int major = 0;
  int minor = 0;
  const bool hip_ok = RE2::FullMatch(*hip, kHip, &major, &minor);
  std::string name;
  std::string how;
  std::string not_there = "the library is not there (\"ROCm binary not found\" at import)";
  if (loader == BnbLoader::nearest && env.bnb_rocm_version) {
    const std::string& v = *env.bnb_rocm_version;
    if (v.empty() ||
        !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      facts.put_status(str(fact_keys::framework::bitsandbytes_library), Status::error, env.source,
                       fmt::format("BNB_ROCM_VERSION={} is not digits: bitsandbytes raises at "
                                   "import (\"value must be digits only\")",
                                   v));
      for (auto k : {fact_keys::framework::bitsandbytes_library_targets,
                     fact_keys::framework::bitsandbytes_library_present,
                     fact_keys::framework::bitsandbytes_library_choice})
        facts.put_status(str(k), Status::missing, env.source, "no library is loaded");
      return;
    }
    name = fmt::format("libbitsandbytes_rocm{}.so", v);
    how = fmt::format("BNB_ROCM_VERSION={} ({})", v, env.source);
  } else if (!hip_ok) {
    return skip(pkg, fmt::format("torch.version.hip '{}' is not MAJOR.MINOR...", *hip));
  } else if (loader == BnbLoader::exact) {
    name = fmt::format("libbitsandbytes_rocm{}{}.so", major, minor);
    how = fmt::format(
        "bitsandbytes {} loads only the build for torch.version.hip {}.{}{}", rel, major, minor,
        env.bnb_rocm_version ? " (BNB_ROCM_VERSION is read from 0.50 on, not here)" : "");
    not_there = fmt::format("the library is not there: bitsandbytes {} raises \"Configured ROCm "
                            "binary not found at {}\" at import",
                            rel, join(pkg, name));
  } else if (loader == BnbLoader::rocm_fork) {
    const bool nohipblaslt = std::make_pair(major, minor) < std::make_pair(6, 1);
    name = fmt::format("libbitsandbytes_hip{}{}.so",
                       fork_versioned ? fmt::format("{}{}", major, minor) : "",
                       nohipblaslt ? "_nohipblaslt" : "");
    how = fmt::format("ROCm's bitsandbytes fork {}: torch.version.hip {}.{} is {} 6.1{}", rel,
                      major, minor, nohipblaslt ? "below" : "at or above",
                      nohipblaslt ? ", so the build without hipBLASLt" : "");
    not_there = "the library is not there (\"Configured ROCm binary not found\" at import)";
  } else if (loader == BnbLoader::cuda_name) {
    name = fmt::format("libbitsandbytes_cuda{}{}.so", major, minor);
    how = fmt::format("bitsandbytes {} has no ROCm builds: it looks for the CUDA name made of "
                      "torch.version.hip {}.{}",
                      rel, major, minor);
    not_there = fmt::format("the library is not there: bitsandbytes {} warns \"Could not find the "
                            "bitsandbytes CUDA binary\" and loads the CPU-only library",
                            rel);
  } else {
    const std::pair<int, int> want{major, minor};
    const std::string exact = fmt::format("libbitsandbytes_rocm{}{}.so", major, minor);
    if (available.contains(want)) {
      name = available[want];
      how = fmt::format("torch.version.hip {}.{}: the exact build", major, minor);
    } else {
      std::optional<std::pair<int, int>> pick;
      for (const auto& [v, f] : available)
        if (v.first == major && v < want) pick = v; // the highest below (map order)
      if (!pick)
        for (const auto& [v, f] : available)
          if (v.first == major && v > want) {
            pick = v; // the lowest above
            break;
          }
      if (pick) {
        name = available[*pick];
        how = fmt::format("torch.version.hip {}.{}: no build of it, so the ROCm {}.{} one", major,
                          minor, pick->first, pick->second);
      } else {
        name = exact;
        how = fmt::format("torch.version.hip {}.{}: no ROCm {} build is packaged", major, minor,
                          major);
      }
    }
  }
  const std::string path = join(pkg, name);
  facts.put_ok(str(fact_keys::framework::bitsandbytes_library), name, path);
  facts.put_ok(str(fact_keys::framework::bitsandbytes_library_choice), how, path);
  const UniqueFd fd(root.open_regular(path));
  facts.put_ok(str(fact_keys::framework::bitsandbytes_library_present), static_cast<bool>(fd),
               path);
  if (!fd) {
    facts.put_status(str(fact_keys::framework::bitsandbytes_library_targets), Status::missing, path,
                     not_there);
    return;
  }
  collect_offload_targets(path, fd.get(), fact_keys::framework::bitsandbytes_library_targets,
                          facts);
}

/// bitsandbytes in the site directory torch came from: its version from the installed
/// distribution's `bitsandbytes-VERSION.dist-info/METADATA` ("Version:" header, Core Metadata
/// specification), else `__version__` in bitsandbytes/__init__.py; and the ROCm builds of its
/// native library it ships: `libbitsandbytes_rocm<MAJOR><MINOR>.so`, one per ROCm release, and the
/// ROCm fork's `libbitsandbytes_hip[<MAJOR><MINOR>][_nohipblaslt].so`
/// (bitsandbytes/cextension.py picks the one matching torch.version.hip;
/// reference/framework-facts.md 4.3). No such file: a CUDA/CPU-only build.
void collect_bitsandbytes(const Root& root, const std::string& site, FactSet& facts) {
  const std::string pkg = join(site, "bitsandbytes");
  if (!root.exists(join(pkg, "__init__.py"))) {
    const std::string why = fmt::format("bitsandbytes is not installed in {}", site);
    facts.put_status(str(fact_keys::framework::bitsandbytes_version), Status::missing, pkg, why);
    facts.put_status(str(fact_keys::framework::bitsandbytes_rocm_libraries), Status::missing, pkg,
                     why);
    return;
  }
  auto found = dist_info_version(root, site, "bitsandbytes");
  if (!found) found = assigned_version(root, join(pkg, "__init__.py"), kMaxMetadataBytes);
  if (!found)
    facts.put_status(str(fact_keys::framework::bitsandbytes_version), Status::error, pkg,
                     "bitsandbytes is installed but neither its dist-info METADATA nor "
                     "__init__.py names a version");
  else
    facts.put_ok(str(fact_keys::framework::bitsandbytes_version), found->version, found->source);
  // Upstream's ROCm builds (libbitsandbytes_rocm64.so) and the ROCm fork's
  // (libbitsandbytes_hip_nohipblaslt.so, libbitsandbytes_hip61.so; ROCm/bitsandbytes
  // cextension.py).
  static const RE2 kRocmLib(R"(libbitsandbytes_((?:rocm[0-9]+|hip[0-9]*)(?:_nohipblaslt)?)\.so)");
  std::set<std::string> rocm;
  if (auto names = root.list(pkg)) {
    std::size_t n = 0;
    for (const auto& name : *names) {
      if (++n > kMaxLibraryNames) break;
      std::string v;
      if (RE2::FullMatch(name, kRocmLib, &v)) rocm.insert(v);
    }
  }
  facts.put_ok(str(fact_keys::framework::bitsandbytes_rocm_libraries),
               std::vector<std::string>(rocm.begin(), rocm.end()),
               join(pkg, "libbitsandbytes_rocm*.so"));
}

/// torchvision or torchaudio beside torch: `__version__` of PKG/version.py (both packages write
/// it at build time: "0.20.1+rocm6.2"), else the `Version:` of its dist-info METADATA. Missing
/// when the package is not installed in the site directory torch came from.
void collect_companion(const Root& root, const std::string& site, std::string_view pkg,
                       std::string_view key, FactSet& facts) {
  const std::string dir = join(site, pkg);
  if (!root.exists(join(dir, "__init__.py"))) {
    facts.put_status(str(key), Status::missing, dir,
                     fmt::format("{} is not installed in {}", pkg, site));
    return;
  }
  // PKG/version.py (torchvision, torchaudio write it at build time), else `__version__` in
  // PKG/__init__.py (flash_attn), else the installed distribution's METADATA.
  for (const char* file : {"version.py", "__init__.py"})
    if (auto found = assigned_version(root, join(dir, file), kMaxVersionPyBytes)) {
      facts.put_ok(str(key), found->version, found->source);
      return;
    }
  if (auto found = dist_info_version(root, site, pkg)) {
    facts.put_ok(str(key), found->version, found->source);
    return;
  }
  facts.put_status(str(key), Status::error, dir,
                   fmt::format("{} is installed but neither version.py, __init__.py nor its "
                               "dist-info METADATA names a version",
                               pkg));
}

/// Which GPU runtime a companion's compiled operators are linked against, from the DT_NEEDED
/// names of its extension (torchvision/_C.so; torchaudio/lib/libtorchaudio.so, older releases
/// torchaudio/_torchaudio.so): libc10_cuda/libtorch_cuda/libcudart is the CUDA build (PyPI's
/// default on Linux), libc10_hip/libtorch_hip/libamdhip64 the ROCm build, libc10/libtorch_cpu
/// alone a CPU build. The build label after '+' can be missing (a source build, a distribution's
/// package) or misleading; the library the loader must find cannot.
void collect_companion_build(const Root& root, const std::string& site, std::string_view pkg,
                             std::string_view key, FactSet& facts) {
  const std::string dir = join(site, pkg);
  std::vector<std::string> candidates;
  if (pkg == "torchvision")
    candidates = {join(dir, "_C.so")};
  else
    candidates = {join(dir, "lib/libtorchaudio.so"), join(dir, "_torchaudio.so")};
  if (!root.exists(join(dir, "__init__.py"))) {
    facts.put_status(str(key), Status::missing, dir,
                     fmt::format("{} is not installed in {}", pkg, site));
    return;
  }
  for (const auto& ext : candidates) {
    const UniqueFd fd(root.open_regular(ext));
    if (!fd) continue;
    std::string why;
    const auto dyn = read_elf_dynamic(fd.get(), why);
    if (!dyn) {
      facts.put_status(str(key), Status::error, ext, why);
      return;
    }
    auto has = [&](std::initializer_list<std::string_view> stems) {
      std::vector<std::string> hits;
      for (const auto& n : dyn->needed)
        for (auto stem : stems)
          if (n.starts_with(stem)) hits.push_back(n);
      return hits;
    };
    const auto cuda = has({"libc10_cuda.so", "libtorch_cuda.so", "libcudart.so"});
    const auto rocm = has({"libc10_hip.so", "libtorch_hip.so", "libamdhip64.so"});
    const auto cpu = has({"libc10.so", "libtorch_cpu.so", "libtorch.so"});
    if (!cuda.empty() && rocm.empty())
      facts.put_ok(str(key), std::string("cuda"),
                   fmt::format("{}: DT_NEEDED {}", ext, fmt::join(cuda, ", ")));
    else if (!rocm.empty() && cuda.empty())
      facts.put_ok(str(key), std::string("rocm"),
                   fmt::format("{}: DT_NEEDED {}", ext, fmt::join(rocm, ", ")));
    else if (cuda.empty() && rocm.empty() && !cpu.empty())
      facts.put_ok(
          str(key), std::string("cpu"),
          fmt::format("{}: DT_NEEDED {} and no CUDA or HIP library", ext, fmt::join(cpu, ", ")));
    else
      facts.put_status(str(key), Status::error, ext,
                       fmt::format("DT_NEEDED names no torch library the doctor knows ({})",
                                   fmt::join(dyn->needed, ", ")));
    return;
  }
  facts.put_status(str(key), Status::missing, dir,
                   fmt::format("no compiled extension ({})", fmt::join(candidates, ", ")));
}

/// flash_attn (FlashAttention 2; ROCm/flash-attention on AMD) in the site directory torch came
/// from: its version, and the gfx processors its compiled extension flash_attn_2_cuda has HIP
/// kernels for (the CK backend; its `.hip_fatbin` offload bundles, read as libtorch_hip.so's).
/// flash_attn/flash_attn_interface.py imports flash_attn_2_cuda on ROCm unless
/// FLASH_ATTENTION_TRITON_AMD_ENABLE is "TRUE", which selects the Triton backend (kernels
/// compiled at run time); prebuilt ROCm wheels carry CK kernels for gfx90a, gfx942 and gfx950
/// only (reference/framework-facts.md 3.3).
void collect_flash_attn(const Root& root, const std::string& site, FactSet& facts) {
  collect_companion(root, site, "flash_attn", fact_keys::framework::flash_attn_version, facts);
  const std::string key = str(fact_keys::framework::flash_attn_offload_targets);
  if (!facts.get<std::string>(str(fact_keys::framework::flash_attn_version))) {
    const Fact* v = facts.find(str(fact_keys::framework::flash_attn_version));
    facts.put_status(key, Status::missing, join(site, "flash_attn"),
                     v != nullptr && !v->reason.empty() ? v->reason
                                                        : "flash_attn is not installed");
    return;
  }
  // The extension module: flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so (setup.py's
  // CUDAExtension name, used for the HIP build too).
  std::string ext;
  if (auto names = root.list(site)) {
    std::size_t n = 0;
    for (const auto& name : *names) {
      if (++n > kMaxDirNames) break;
      if (name.starts_with("flash_attn_2_cuda") && name.ends_with(".so")) {
        ext = join(site, name);
        break;
      }
    }
  }
  if (ext.empty()) {
    facts.put_status(key, Status::missing, site,
                     "no flash_attn_2_cuda extension: flash_attn runs its Triton backend only");
    return;
  }
  const UniqueFd fd(root.open_regular(ext));
  if (!fd) {
    const int err = errno;
    facts.put_status(key, err == EACCES ? Status::denied : Status::error, ext,
                     fmt::format("cannot open: {}", std::strerror(err)));
    return;
  }
  collect_offload_targets(ext, fd.get(), fact_keys::framework::flash_attn_offload_targets, facts);
}

} // namespace halo::probes::framework_files
