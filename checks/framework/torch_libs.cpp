// SPDX-License-Identifier: MIT
// The framework probe (checks/framework/framework.cpp), the ROCm half of the wheel, read from
// files without running Python:
// - The gfx targets the wheel was built for, from the kernel file names pytorch.org wheels copy
//   into torch/lib/rocblas/library and torch/lib/hipblaslt/library (only the PYTORCH_ROCM_ARCH
//   targets: https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_rocm.sh), or,
//   for TheRock wheels, _rocm_sdk_libraries_*/lib
//   (https://github.com/ROCm/TheRock/blob/main/RELEASES.md). File names:
//   TensileLibrary_lazy_gfx1151.dat, Kernels.so-000-gfx90a-xnack+.hsaco
//   (reference/framework-facts.md 1.3).
// - torch/lib/libtorch_hip.so: the gfx processors of its `.hip_fatbin` offload bundles
//   (checks/framework/offload_bundle.cpp) and its dynamic section (DT_NEEDED, DT_RPATH,
//   DT_RUNPATH) against LD_LIBRARY_PATH, as ld.so(8) searches them.
// - The AOTriton kernel images in torch/lib/aotriton.images (cmake/External/aotriton.cmake).
#include "dynamic_loader.hpp"
#include "framework_internal.hpp"
#include "offload_bundle.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <set>

namespace halo::probes::framework_files {
namespace {

/// At most this many _rocm_sdk_libraries_* packages are looked into.
constexpr std::size_t kMaxSdkPackages = 8;

/// Where the dynamic linker finds the libraries libtorch_hip.so names, and whether
/// LD_LIBRARY_PATH takes one away from the place the wheel meant. ld.so(8), "a dependency without
/// a slash": (1) the object's DT_RPATH, only if it has no DT_RUNPATH; (2) LD_LIBRARY_PATH;
/// (3) the object's DT_RUNPATH; then ld.so.cache and the default directories (glibc
/// elf/dl-load.c _dl_map_object). pytorch.org ROCm wheels bundle ROCm in torch/lib and set
/// DT_RPATH `$ORIGIN` (`patchelf --force-rpath`: pytorch/builder PR 1468, .ci/manywheel/
/// build_rocm.sh FORCE_RPATH) so that LD_LIBRARY_PATH cannot override them; a DT_RUNPATH
/// (CMake's default for source builds, older wheels) lets an LD_LIBRARY_PATH into another ROCm
/// win ("invalid device function", crashes in mixed versions; TheRock issue 1011).
/// Facts: library_search ("DT_RPATH", "DT_RUNPATH" or "none"), linked_libraries (the DT_NEEDED
/// names the library's own search path holds, as "NAME (DIR)", DIR "torch/lib" for $ORIGIN: the
/// ROCm a wheel bundles in torch/lib, or the one a source build was linked against) and
/// ld_library_path_shadows (those an LD_LIBRARY_PATH directory supplies first instead). A library
/// already loaded under the same name (torch/_rocm_init.py's preloads in TheRock wheels) is not
/// modelled.
void collect_library_search(const Root& root, const std::string& lib, int fd,
                            const PythonEnvVars& env, FactSet& facts) {
  const std::string search_key = str(fact_keys::framework::torch_library_search);
  const std::string linked_key = str(fact_keys::framework::torch_linked_libraries);
  const std::string shadows_key = str(fact_keys::framework::torch_ld_library_path_shadows);
  std::string why;
  const auto dyn = read_elf_dynamic(fd, why);
  if (!dyn) {
    for (const auto& k : {search_key, linked_key, shadows_key})
      facts.put_status(k, Status::error, lib, why);
    return;
  }
  // The one reader of the loader's order (checks/common/dynamic_loader.hpp): $ORIGIN of the
  // library's own DT_RPATH/DT_RUNPATH is its directory; in LD_LIBRARY_PATH it would be the main
  // program's (python's, ld.so(8)), which is not known here, so such an entry is not followed.
  const std::string origin = parent_dir(lib);
  const OwnSearchPath own = own_search_path(*dyn, origin);
  const bool runpath = own.step == SearchStep::runpath;
  const std::string tag = own.step ? std::string(step_name(*own.step)) : "none";
  facts.put_ok(search_key, tag,
               tag == "none" ? fmt::format("{}: no DT_RPATH or DT_RUNPATH", lib)
                             : fmt::format("{}: {} {}", lib, tag, own.text));
  const SearchList ld =
      env.ld_library_path
          ? split_search_list(*env.ld_library_path, ListKind::ld_library_path, std::nullopt)
          : SearchList{};
  const std::vector<SearchDir> order = search_order(&own, ld, nullptr);
  std::vector<std::string> linked;
  std::vector<std::string> shadows;
  for (const auto& name : dyn->needed) {
    if (name.find('/') != std::string::npos) continue; // a path is opened as it is
    const auto wheel = own.step ? find_library(root, order, name, *own.step) : std::nullopt;
    if (!wheel) continue;
    const std::string wheel_dir = wheel->dir == origin ? "torch/lib" : wheel->dir;
    linked.push_back(fmt::format("{} ({})", name, wheel_dir));
    // DT_RPATH is searched before LD_LIBRARY_PATH, DT_RUNPATH after it.
    const auto first = find_library(root, order, name);
    if (first && first->step == SearchStep::ld_library_path && first->dir != wheel->dir)
      shadows.push_back(fmt::format("{} from {} (not {})", name, first->dir, wheel_dir));
  }
  const std::vector<std::string>& skipped = own.list.skipped;
  const std::vector<std::string>& ld_skipped = ld.skipped;
  facts.put_ok(linked_key, linked,
               tag == "none"
                   ? fmt::format("{}: no DT_RPATH or DT_RUNPATH, so no library is found through "
                                 "its own search path",
                                 lib)
                   : fmt::format("{}: DT_NEEDED names found in its {} directories{}", lib, tag,
                                 skipped.empty() ? std::string()
                                                 : fmt::format(" ({} not followed)",
                                                               fmt::join(skipped, ", "))));
  std::string source;
  if (!env.read_reason.empty())
    source = fmt::format("{} (LD_LIBRARY_PATH unknown: {})", env.source, env.read_reason);
  else if (!env.ld_library_path)
    source = fmt::format("LD_LIBRARY_PATH is not set ({})", env.source);
  else
    source = fmt::format(
        "LD_LIBRARY_PATH={} ({}) against {}'s {}{}", *env.ld_library_path, env.source, lib, tag,
        ld_skipped.empty() ? std::string()
                           : fmt::format("; not followed: {}", fmt::join(ld_skipped, ", ")));
  if (!env.read_reason.empty() && runpath)
    facts.put_status(shadows_key, Status::error, env.source,
                     fmt::format("LD_LIBRARY_PATH unknown: {}", env.read_reason));
  else
    facts.put_ok(shadows_key, shadows, source);
}

} // namespace

/// The distinct gfx targets named by the file names of the kernel library directories: for each of
/// rocBLAS and hipBLASLt (framework.torch.rocblas_targets, .hipblaslt_targets, and the directory
/// each was read from), and their union (framework.torch.gfx_targets).
///
/// Each library finds its kernels by the exact processor name of the GPU (no generic target, no
/// feature suffix), in the `library` directory beside its shared object:
/// - rocBLAS (library/src/tensile_host.cpp, TensileHost::initialize): `<dir>/<gfx>/` if present,
///   then TensileLibrary_lazy_<gfx>.dat, TensileLibrary_<gfx>.dat, TensileLibrary.dat; with none it
///   prints "rocBLAS error: Cannot read <dir>/TensileLibrary.dat: <strerror> for GPU arch : <gfx>"
///   and " List of available TensileLibrary Files : " with the files it has, and calls
///   rocblas_abort(), which aborts the process (pytorch issue 179865; rocBLAS issue 1339's gdb
///   stack: rocblas_abort_once -> abort).
/// - hipBLASLt (rocm-libraries projects/hipblaslt/.../rocblaslt/src/tensile_host.cpp): loads
///   `<dir>/TensileLibrary_lazy_<gfx>.dat`; without it "rocblaslt error: Cannot read <path>:
///   <strerror>" and "rocblaslt error: Could not load <path>", no abort, and the heuristic query
///   fails, which PyTorch raises as "HIPBLAS_STATUS_INVALID_VALUE when calling
///   hipblasLtMatmulAlgoGetHeuristic" (ollama issue 11555, sdnext issue 4035).
/// So a generic name (`gfx11-generic`, fewer than three digits) is not a GPU's file, and the
/// per-library lists are not expanded as libtorch_hip.so's offload targets are. A library directory
/// present in torch/lib and in a _rocm_sdk_libraries_* package is read in that order and its
/// targets joined; the
/// `_dir` fact names the first (the one beside librocblas.so / libhipblaslt.so in a pytorch.org
/// wheel; the family package's in a TheRock wheel).
void collect_gfx_targets(const Root& root, const std::string& site, const std::string& torch,
                         FactSet& facts) {
  struct Library {
    std::string_view subdir; ///< under lib/
    std::string_view targets_key;
    std::string_view dir_key;
    std::vector<std::string> dirs;
    std::vector<std::string> read;
    std::set<std::string> targets;
  };
  std::array<Library, 2> libs{{{"rocblas/library",
                                fact_keys::framework::torch_rocblas_targets,
                                fact_keys::framework::torch_rocblas_dir,
                                {},
                                {},
                                {}},
                               {"hipblaslt/library",
                                fact_keys::framework::torch_hipblaslt_targets,
                                fact_keys::framework::torch_hipblaslt_dir,
                                {},
                                {},
                                {}}}};
  for (auto& lib : libs)
    lib.dirs.push_back(join(join(torch, "lib"), std::string(lib.subdir)));
  if (auto names = root.list(site)) {
    std::size_t n = 0;
    for (const auto& name : *names)
      if (name.rfind("_rocm_sdk_libraries_", 0) == 0 && n++ < kMaxSdkPackages)
        for (auto& lib : libs)
          lib.dirs.push_back(join(join(join(site, name), "lib"), std::string(lib.subdir)));
  }
  // gfx90a, gfx942, gfx1151; `-xnack+` and `:xnack-` suffixes are not hex and stay out;
  // generic targets (gfx11-generic) have fewer than three digits and are not names of a GPU.
  static const RE2 kGfx(R"((gfx[0-9][0-9a-f]{2,3})(?:[^0-9a-f]|$))");
  std::set<std::string> all;
  std::vector<std::string> all_dirs; // torch/lib's, then each package's, rocBLAS before hipBLASLt
  for (std::size_t i = 0; i < libs[0].dirs.size(); ++i)
    for (const auto& lib : libs)
      all_dirs.push_back(lib.dirs[i]);
  std::vector<std::string> read_dirs;
  for (auto& lib : libs) {
    for (const auto& dir : lib.dirs) {
      auto names = root.list(dir);
      if (!names) continue;
      lib.read.push_back(dir);
      read_dirs.push_back(dir);
      std::size_t n = 0;
      for (const auto& name : *names) {
        if (++n > kMaxLibraryNames) break;
        re2::StringPiece in(name);
        std::string gfx;
        while (RE2::FindAndConsume(&in, kGfx, &gfx)) {
          lib.targets.insert(gfx);
          all.insert(gfx);
        }
      }
    }
    const std::string targets_key = str(lib.targets_key);
    const std::string dir_key = str(lib.dir_key);
    if (lib.read.empty()) {
      const std::string why =
          fmt::format("the wheel bundles no {} kernel library (looked in {})",
                      lib.subdir.substr(0, lib.subdir.find('/')), fmt::join(lib.dirs, ", "));
      facts.put_status(targets_key, Status::missing, join(torch, "lib"), why);
      facts.put_status(dir_key, Status::missing, join(torch, "lib"), why);
      continue;
    }
    facts.put_ok(targets_key, std::vector<std::string>(lib.targets.begin(), lib.targets.end()),
                 fmt::format("file names in {}", fmt::join(lib.read, ", ")));
    facts.put_ok(dir_key, lib.read.front(),
                 lib.read.size() == 1
                     ? std::string("the directory read")
                     : fmt::format("the first of {} (targets joined)", fmt::join(lib.read, ", ")));
  }
  const std::string key = str(fact_keys::framework::torch_gfx_targets);
  if (read_dirs.empty()) {
    facts.put_status(key, Status::missing, join(torch, "lib"),
                     "the wheel bundles no rocBLAS or hipBLASLt kernel library (looked in " +
                         fmt::format("{}", fmt::join(all_dirs, ", ")) + ")");
    return;
  }
  facts.put_ok(key, std::vector<std::string>(all.begin(), all.end()),
               fmt::format("file names in {}", fmt::join(read_dirs, ", ")));
}

/// The gfx processors of the code objects in libtorch_hip.so: PyTorch's own GPU kernels, one
/// offload bundle per translation unit in its `.hip_fatbin` section (offload_bundle.hpp). Only
/// the section's first bundles' headers are read (a real libtorch_hip.so is about 1 GB).
void collect_offload_targets(const std::string& lib, int fd, std::string_view fact_key,
                             FactSet& facts) {
  const std::string key = str(fact_key);
  std::string why;
  const auto section = find_elf_section(fd, ".hip_fatbin", why);
  if (!section) {
    facts.put_status(key, Status::error, lib, why);
    return;
  }
  const ReadAt read = [&](std::uint64_t offset, std::span<std::byte> out) -> std::size_t {
    if (offset >= section->size) return 0;
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), section->size - offset));
    const ssize_t r = ::pread(fd, out.data(), n, static_cast<off_t>(section->offset + offset));
    return r > 0 ? static_cast<std::size_t>(r) : 0;
  };
  const FatbinTargets t = scan_fatbin(read, section->size);
  if (!t.error.empty()) {
    facts.put_status(key, Status::error, lib, fmt::format(".hip_fatbin {}", t.error));
    return;
  }
  // No bundle, or bundles that name no AMDGPU code object (only host entries): the section is
  // not laid out as clang's offload bundler writes a HIP fat binary (clang OffloadBundler.cpp;
  // PyTorch's own kernels are one `hipv4-amdgcn-amd-amdhsa--gfxN` entry per target in each
  // translation unit's bundle). The device code is somewhere this reader does not know, so an
  // empty list would be a verdict ("no kernels for any GPU") the file does not support.
  if (t.bundles == 0 || t.any.empty()) {
    facts.put_status(key, Status::error, lib,
                     fmt::format("could not tell: {} .hip_fatbin holds {} (an unknown layout: "
                                 "the GPU code objects are not where clang's offload bundler "
                                 "puts them)",
                                 lib,
                                 t.bundles == 0
                                     ? std::string("no offload bundle")
                                     : fmt::format("{} offload bundle{} with no AMDGPU "
                                                   "code object",
                                                   t.bundles, t.bundles == 1 ? "" : "s")));
    return;
  }
  std::string source = fmt::format(
      "{} .hip_fatbin: {} offload bundle{}{}", lib, t.bundles, t.bundles == 1 ? "" : "s",
      t.compressed == 0
          ? std::string()
          : fmt::format(" ({} compressed, {})", t.compressed, fmt::join(t.methods, ", ")));
  if (t.truncated) source += ", the first ones of the section";
  std::vector<std::string> partial;
  std::set_difference(t.any.begin(), t.any.end(), t.common.begin(), t.common.end(),
                      std::back_inserter(partial));
  if (!partial.empty())
    source += fmt::format("; only some bundles have {}", fmt::join(partial, ", "));
  facts.put_ok(key, std::vector<std::string>(t.common.begin(), t.common.end()), source);
}

namespace {
/// True for a torch `__version__` of 2.3 or 2.4 ("2.4.1+rocm6.1"): the releases whose
/// cmake/External/aotriton.cmake links AOTriton statically (AOTRITON_NO_SHARED=ON,
/// libaotriton_v2.a). AOTriton came to ROCm builds in 2.3; 2.5 installs libaotriton_v2.so.
bool aotriton_linked_statically(const std::optional<std::string>& version) {
  if (!version) return false;
  static const RE2 re(R"((\d+)\.(\d+)(?:[.+a-z].*)?)");
  int major = 0;
  int minor = 0;
  if (!RE2::FullMatch(*version, re, &major, &minor)) return false;
  return major == 2 && (minor == 3 || minor == 4);
}
} // namespace

/// The AOTriton kernel images a ROCm wheel carries: scaled_dot_product_attention's flash and
/// memory-efficient backends on ROCm run AOTriton's kernels (aten/src/ATen/native/transformers/
/// cuda/sdp_utils.cpp; without them for the GPU: "Flash attention was not compiled for current AMD
/// GPU architecture" and the math backend). PyTorch installs AOTriton into torch/lib
/// (cmake/External/aotriton.cmake): libaotriton_v2.so and, since AOTriton 0.8, the kernels as
/// `aotriton.images/amd-<arch>/...`, one directory per chip (amd-gfx942, amd-gfx90a) or ISA family
/// with `x` for any digit (amd-gfx11xx, amd-gfx115x, amd-gfx120x). The fact lists those <arch>
/// names; an empty list is a wheel without AOTriton; libaotriton_v2.so without an images directory
/// keeps its kernels inside the library (older AOTriton), which is not read (missing).
void collect_aotriton(const Root& root, const std::string& torch, FactSet& facts) {
  const std::string key = str(fact_keys::framework::torch_aotriton_images);
  const std::string lib_dir = join(torch, "lib");
  const std::string images = join(lib_dir, "aotriton.images");
  if (auto names = root.list(images)) {
    std::vector<std::string> archs;
    for (const auto& n : *names) {
      if (archs.size() >= 64) break;
      if (n.starts_with("amd-gfx") && root.is_dir(join(images, n))) archs.push_back(n.substr(4));
    }
    facts.put_ok(key, archs, fmt::format("the amd-<arch> directories of {}", images));
    return;
  }
  bool runtime = false;
  if (auto names = root.list(lib_dir)) {
    std::size_t n = 0;
    for (const auto& name : *names) {
      if (++n > kMaxDirNames) break;
      if (name.starts_with("libaotriton")) runtime = true;
    }
  }
  if (runtime) {
    facts.put_status(key, Status::missing, lib_dir,
                     "libaotriton_v2.so without an aotriton.images directory: its kernels are "
                     "inside the library (AOTriton before 0.8) and are not read");
  } else if (aotriton_linked_statically(
                 facts.get<std::string>(str(fact_keys::framework::torch_version)))) {
    // PyTorch 2.3 and 2.4 build AOTriton with -DAOTRITON_NO_SHARED=ON and link
    // lib/libaotriton_v2.a into libtorch_hip.so (cmake/External/aotriton.cmake at v2.3.0 and
    // v2.4.0: target_link_libraries(__caffe2_aotriton INTERFACE .../libaotriton_v2.a)): no
    // libaotriton file and no images, yet SDPA has AOTriton's kernels.
    facts.put_status(key, Status::missing, join(lib_dir, "libtorch_hip.so"),
                     "PyTorch 2.3 and 2.4 link AOTriton statically into libtorch_hip.so "
                     "(cmake/External/aotriton.cmake: libaotriton_v2.a); its kernels are inside "
                     "the library and are not read");
  } else
    facts.put_ok(key, std::vector<std::string>{},
                 fmt::format("{} has neither aotriton.images nor libaotriton_v2.so: the wheel "
                             "has no AOTriton",
                             lib_dir));
}

/// The ROCm half of the wheel, from torch/lib/libtorch_hip.so: its offload targets and how the
/// dynamic linker finds the ROCm libraries it needs.
void collect_hip_library(const Root& root, const std::string& torch, const PythonEnvVars& env,
                         FactSet& facts) {
  const std::string lib = join(torch, "lib/libtorch_hip.so");
  const UniqueFd fd(root.open_regular(lib));
  if (!fd) {
    const int err = errno;
    for (const auto& k :
         {fact_keys::framework::torch_offload_targets, fact_keys::framework::torch_library_search,
          fact_keys::framework::torch_linked_libraries,
          fact_keys::framework::torch_ld_library_path_shadows}) {
      if (err == ENOENT)
        facts.put_status(str(k), Status::missing, lib, "the wheel has no libtorch_hip.so");
      else
        facts.put_status(str(k), err == EACCES ? Status::denied : Status::error, lib,
                         fmt::format("cannot open: {}", std::strerror(err)));
    }
    return;
  }
  collect_offload_targets(lib, fd.get(), fact_keys::framework::torch_offload_targets, facts);
  collect_library_search(root, lib, fd.get(), env, facts);
}

} // namespace halo::probes::framework_files
