// SPDX-License-Identifier: MIT
// Probe: the framework layer, statically: which PyTorch the Python environment training will see
// holds, read from files without running Python (issue 14, step 1).
//
// - The environment: `--python PATH`'s (a venv, a prefix or the system: see plan_search), else
//   VIRTUAL_ENV, else CONDA_PREFIX, from /proc/self/environ (the environment training will see,
//   as checks/framework/environment.cpp reads it), else the system site directories.
//   A venv sees the system directories only with `include-system-site-packages = true` in its
//   pyvenv.cfg (https://docs.python.org/3/library/venv.html). The first torch/version.py found
//   in the bounded list of site directories wins.
// - torch/version.py is the text PyTorch's tools/generate_torch_version.py writes:
//   `__version__ = '2.10.0+rocm7.1'`, `cuda: Optional[str] = None`, `git_version = '...'`,
//   `hip: Optional[str] = '7.1.25424'` (older releases: `hip = None`)
//   (https://github.com/pytorch/pytorch/blob/main/tools/generate_torch_version.py).
// - The gfx targets the wheel was built for, from the kernel file names pytorch.org wheels copy
//   into torch/lib/rocblas/library and torch/lib/hipblaslt/library (only the PYTORCH_ROCM_ARCH
//   targets: https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_rocm.sh), or,
//   for TheRock wheels, _rocm_sdk_libraries_*/lib
//   (https://github.com/ROCm/TheRock/blob/main/RELEASES.md). File names:
//   TensileLibrary_lazy_gfx1151.dat, Kernels.so-000-gfx90a-xnack+.hsaco
//   (reference/framework-facts.md 1.3).
#include "offload_bundle.hpp"
#include "probes.hpp"
#include "python_env.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace halo::probes {
namespace {

constexpr std::string_view kPythonEnv = "framework.python_env";
constexpr std::string_view kTorchPath = "framework.torch.path";
constexpr std::string_view kTorchVersion = "framework.torch.version";
constexpr std::string_view kTorchHip = "framework.torch.hip_version";
constexpr std::string_view kTorchCuda = "framework.torch.cuda_version";
constexpr std::string_view kTorchGit = "framework.torch.git_version";
constexpr std::string_view kTorchBuild = "framework.torch.build";
constexpr std::string_view kTorchGfx = "framework.torch.gfx_targets";
constexpr std::string_view kTorchOffload = "framework.torch.offload_targets";
constexpr std::string_view kTorchSearch = "framework.torch.library_search";
constexpr std::string_view kTorchLinked = "framework.torch.linked_libraries";
constexpr std::string_view kTorchShadows = "framework.torch.ld_library_path_shadows";
constexpr std::string_view kTorchAotriton = "framework.torch.aotriton_images";
constexpr std::string_view kFlashAttnVersion = "framework.flash_attn.version";
constexpr std::string_view kFlashAttnTargets = "framework.flash_attn.offload_targets";
constexpr std::string_view kBnbVersion = "framework.bitsandbytes.version";
constexpr std::string_view kBnbRocm = "framework.bitsandbytes.rocm_libraries";
constexpr std::string_view kVisionVersion = "framework.torchvision.version";
constexpr std::string_view kAudioVersion = "framework.torchaudio.version";
constexpr std::string_view kBnbLibrary = "framework.bitsandbytes.library";
constexpr std::string_view kBnbLibraryTargets = "framework.bitsandbytes.library_targets";
constexpr std::string_view kBnbLibraryPresent = "framework.bitsandbytes.library_present";
constexpr std::string_view kBnbLibraryChoice = "framework.bitsandbytes.library_choice";
constexpr std::string_view kVisionBuild = "framework.torchvision.build";
constexpr std::string_view kAudioBuild = "framework.torchaudio.build";

/// A dist-info METADATA header block and bitsandbytes/__init__.py are a few KiB.
constexpr std::size_t kMaxMetadataBytes = std::size_t{64} * 1024;

/// torch/version.py is about ten lines; anything near this size is not that file.
constexpr std::size_t kMaxVersionPyBytes = std::size_t{16} * 1024;
/// At most this many `python3.*` entries of one `lib/` directory are considered, among at most
/// kMaxDirNames names (/usr/lib holds a few hundred).
constexpr std::size_t kMaxPythonDirs = 48;
constexpr std::size_t kMaxDirNames = 65536;
/// At most this many site directories are searched in all.
constexpr std::size_t kMaxSiteDirs = 24;
/// At most this many file names of one kernel library directory are read for gfx names
/// (a multi-target rocBLAS library holds a few thousand).
constexpr std::size_t kMaxLibraryNames = 20000;
/// At most this many _rocm_sdk_libraries_* packages are looked into.
constexpr std::size_t kMaxSdkPackages = 8;

std::string str(std::string_view s) {
  return std::string(s);
}

/// The environment variables this probe reads (Probe::env_reads; a capture bundle keeps these).
constexpr std::string_view kEnvVirtualEnv = "VIRTUAL_ENV";
constexpr std::string_view kEnvCondaPrefix = "CONDA_PREFIX";
constexpr std::string_view kEnvPath = "PATH";
constexpr std::string_view kEnvLdLibraryPath = "LD_LIBRARY_PATH";
constexpr std::string_view kEnvHome = "HOME";
constexpr std::string_view kEnvPythonUserBase = "PYTHONUSERBASE";
constexpr std::string_view kEnvPythonNoUserSite = "PYTHONNOUSERSITE";
constexpr std::string_view kEnvBnbRocmVersion = "BNB_ROCM_VERSION";

/// VIRTUAL_ENV and CONDA_PREFIX from the environment training will see.
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

PythonEnvVars read_env(const Root& root) {
  PythonEnvVars out;
  ReadResult r = root.read("/proc/self/environ", std::size_t{1024} * 1024);
  out.source = r.path;
  if (!r.ok()) {
    out.read_reason = r.reason.empty() ? std::string(to_string(r.status)) : r.reason;
    return out;
  }
  std::size_t start = 0;
  while (start < r.text.size()) {
    std::size_t end = r.text.find('\0', start);
    if (end == std::string::npos) end = r.text.size();
    std::string_view entry(r.text.data() + start, end - start);
    start = end + 1;
    // Only absolute paths name a directory the doctor can resolve inside the root.
    auto take = [&](std::string_view name, std::string& dst) {
      if (entry.size() > name.size() + 1 && entry.substr(0, name.size()) == name &&
          entry[name.size()] == '=' && entry[name.size() + 1] == '/')
        dst = std::string(entry.substr(name.size() + 1));
    };
    take(kEnvVirtualEnv, out.virtual_env);
    take(kEnvCondaPrefix, out.conda_prefix);
    take(kEnvHome, out.home);
    take(kEnvPythonUserBase, out.python_user_base);
    auto value_of = [&](std::string_view name) -> std::optional<std::string> {
      if (entry.size() > name.size() && entry.substr(0, name.size()) == name &&
          entry[name.size()] == '=')
        return std::string(entry.substr(name.size() + 1));
      return std::nullopt;
    };
    // Python's -s flag: "PYTHONNOUSERSITE: If this is set, Python won't add the user
    // site-packages directory to sys.path" (a non-empty string, Python/initconfig.c).
    if (auto v = value_of(kEnvPythonNoUserSite); v && !v->empty()) out.no_user_site = true;
    if (auto v = value_of(kEnvBnbRocmVersion)) out.bnb_rocm_version = *v;
    if (auto v = value_of(kEnvPath)) out.path = *v;
    if (auto v = value_of(kEnvLdLibraryPath)) out.ld_library_path = *v;
  }
  return out;
}

/// Joins an absolute directory and a relative tail without a doubled '/'.
std::string join(std::string_view dir, std::string_view tail) {
  std::string out(dir);
  while (out.size() > 1 && out.back() == '/')
    out.pop_back();
  if (out != "/") out += '/';
  out += tail;
  return out;
}

/// Expands `PREFIX/python3.*/TAIL`: the python3.N entries of PREFIX (at most kMaxPythonDirs),
/// newest Python first.
std::vector<std::string> expand_python_dirs(const Root& root, const std::string& prefix,
                                            std::string_view tail) {
  static const RE2 kPython(R"(python3\.([0-9]{1,3})t?)");
  std::vector<std::pair<int, std::string>> found;
  auto names = root.list(prefix);
  if (!names) return {};
  std::size_t seen = 0;
  for (const auto& name : *names) {
    if (++seen > kMaxDirNames || found.size() >= kMaxPythonDirs) break;
    int minor = 0;
    if (RE2::FullMatch(name, kPython, &minor)) found.emplace_back(minor, name);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> out;
  out.reserve(found.size());
  for (const auto& f : found)
    out.push_back(join(join(prefix, f.second), tail));
  return out;
}

/// True when a venv's pyvenv.cfg says `include-system-site-packages = true`.
bool venv_sees_system(const Root& root, const std::string& venv) {
  ReadResult r = root.read(join(venv, "pyvenv.cfg"), kMaxVersionPyBytes);
  if (!r.ok()) return false;
  static const RE2 kLine(R"((?m)^\s*include-system-site-packages\s*=\s*(?i:true)\s*$)");
  return RE2::PartialMatch(r.text, kLine);
}

/// The site directories searched, in order, and a sentence saying where they came from.
struct SearchPlan {
  std::vector<std::string> patterns; ///< for the "looked in" reason
  std::vector<std::string> dirs;
  std::string basis;
};

/// The directory part of an absolute path ("/a/b/c" -> "/a/b"; "/a" -> "/").
std::string parent_dir(std::string_view path) {
  while (path.size() > 1 && path.back() == '/')
    path.remove_suffix(1);
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

/// The user site directory ahead of the others (site.py main(): addusersitepackages() runs
/// before addsitepackages(), so `pip install --user` packages shadow the environment's):
/// $PYTHONUSERBASE, else $HOME/.local, then lib/python3.N/site-packages for the Python versions
/// the environment's own directories name (the interpreter's X.Y; all of them when none does).
/// site.py adds it only when it is a directory (os.path.isdir) and ENABLE_USER_SITE holds; a
/// process whose uid differs from its euid (setuid) has it off too, which a file read cannot
/// see.
void add_user_site(const Root& root, const PythonEnvVars& env, bool enabled, SearchPlan& p) {
  if (!enabled || env.no_user_site) {
    if (env.no_user_site) p.basis += "; PYTHONNOUSERSITE is set, so no user site directory";
    return;
  }
  const std::string base = !env.python_user_base.empty() ? env.python_user_base
                           : !env.home.empty()           ? join(env.home, ".local")
                                                         : std::string();
  if (base.empty()) return;
  static const RE2 kVersion(R"(/(python3\.[0-9]{1,3}t?)/(?:site|dist)-packages$)");
  std::vector<std::string> versions;
  for (const auto& d : p.dirs) {
    std::string v;
    if (RE2::PartialMatch(d, kVersion, &v) &&
        std::find(versions.begin(), versions.end(), v) == versions.end())
      versions.push_back(v);
  }
  const std::string lib = join(base, "lib");
  std::vector<std::string> dirs;
  if (versions.empty()) {
    dirs = expand_python_dirs(root, lib, "site-packages");
  } else {
    for (const auto& v : versions)
      dirs.push_back(join(join(lib, v), "site-packages"));
  }
  std::vector<std::string> present;
  for (auto& d : dirs)
    if (root.is_dir(d)) present.push_back(std::move(d));
  p.patterns.insert(p.patterns.begin(), join(join(lib, "python3.*"), "site-packages"));
  if (present.empty()) return;
  p.basis += fmt::format(", after the user site directory {} ({}; site.py ENABLE_USER_SITE)",
                         fmt::join(present, ", "),
                         env.python_user_base.empty() ? "$HOME/.local" : "$PYTHONUSERBASE");
  p.dirs.insert(p.dirs.begin(), present.begin(), present.end());
  if (p.dirs.size() > kMaxSiteDirs) p.dirs.resize(kMaxSiteDirs);
}

SearchPlan plan_search(const Root& root, const PythonEnvVars& env, const PythonChoice& choice) {
  SearchPlan p;
  // The interpreter checks/framework/python_env.cpp resolves, the one --framework-deep runs: --python, an
  // activated venv or conda environment, else python3 on PATH (a pyenv shim resolved as pyenv
  // does).
  const bool by_interpreter = choice.kind == PythonKind::given ||
                              choice.kind == PythonKind::pyenv || choice.kind == PythonKind::path;
  const std::string python = by_interpreter ? choice.python : std::string();
  const std::string& label = choice.basis;
  bool system = true;
  // site.py's ENABLE_USER_SITE: off in a venv that does not see the system site directories
  // (venv(): "ENABLE_USER_SITE = False"), else on unless PYTHONNOUSERSITE (-s) is set; a conda
  // environment or another prefix is no venv, so the user's directory applies there too.
  bool user_site = true;
  auto add = [&](const std::string& prefix, std::string_view tail) {
    p.patterns.push_back(join(join(prefix, "python3.*"), tail));
    for (auto& d : expand_python_dirs(root, prefix, tail))
      if (p.dirs.size() < kMaxSiteDirs) p.dirs.push_back(std::move(d));
  };
  auto add_plain = [&](const std::string& dir) {
    p.patterns.push_back(dir);
    if (p.dirs.size() < kMaxSiteDirs) p.dirs.push_back(dir);
  };
  if (!python.empty()) {
    // `--python PATH`: the environment that interpreter belongs to, told from its place without
    // running it, as Python's site.py does: a pyvenv.cfg beside the interpreter's directory
    // makes that directory's parent a venv (https://docs.python.org/3/library/site.html);
    // otherwise the parent of bin/ is the prefix (a conda env, /opt/python3.12, /usr). The
    // interpreter link itself is not followed: a venv's bin/python points at the system one.
    const std::string prefix = parent_dir(parent_dir(python));
    if (root.exists(join(prefix, "pyvenv.cfg"))) {
      add(join(prefix, "lib"), "site-packages");
      system = venv_sees_system(root, prefix);
      user_site = system;
      p.basis = fmt::format("{} (the venv {})", label, prefix);
      if (system) p.basis += ", with the system site directories (pyvenv.cfg)";
    } else if (prefix == "/usr" || prefix == "/usr/local" || prefix == "/") {
      p.basis = fmt::format("{} (the system site directories)", label);
    } else {
      add(join(prefix, "lib"), "site-packages");
      system = false;
      p.basis = fmt::format("{} (the prefix {})", label, prefix);
    }
  } else if (choice.kind == PythonKind::virtual_env) {
    add(join(env.virtual_env, "lib"), "site-packages");
    system = venv_sees_system(root, env.virtual_env);
    user_site = system;
    p.basis = fmt::format("VIRTUAL_ENV={} ({})", env.virtual_env, env.source);
    if (system) p.basis += ", with the system site directories (pyvenv.cfg)";
  } else if (choice.kind == PythonKind::conda) {
    add(join(env.conda_prefix, "lib"), "site-packages");
    system = false;
    p.basis = choice.basis;
  } else if (!env.read_reason.empty()) {
    p.basis = fmt::format("the system site directories ({} could not be read: {})", env.source,
                          env.read_reason);
  } else {
    p.basis = "the system site directories (" + choice.basis + ")";
  }
  if (system) {
    // pip's and the distribution's directories: Debian/Ubuntu dist-packages, Fedora/Arch
    // site-packages (lib64 for compiled packages on Fedora).
    add("/usr/local/lib", "dist-packages");
    add("/usr/local/lib", "site-packages");
    add_plain("/usr/lib/python3/dist-packages");
    add("/usr/lib", "site-packages");
    add("/usr/lib64", "site-packages");
  }
  add_user_site(root, env, user_site, p);
  return p;
}

/// One assignment of version.py: the quoted string, or std::nullopt for `None`.
struct Assigned {
  std::optional<std::string> value;
  int line = 0;
};

struct VersionPy {
  std::map<std::string, Assigned, std::less<>> values;
  std::string error; ///< "PATH:LINE: ..." when malformed
};

VersionPy parse_version_py(const std::string& path, std::string_view text) {
  // `NAME = VALUE` or `NAME: Optional[str] = VALUE`, as generate_torch_version.py writes.
  static const RE2 kAssign(R"(\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?=\s*(.*?)\s*)");
  static const RE2 kQuoted(R"('([ -&(-~]{0,200})'|"([ !#-~]{0,200})\")");
  VersionPy out;
  int line_no = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    std::string name;
    std::string value;
    if (!RE2::FullMatch(line, kAssign, &name, &value)) continue;
    if (name != "__version__" && name != "cuda" && name != "hip" && name != "git_version") continue;
    Assigned a;
    a.line = line_no;
    std::string single;
    std::string dbl;
    if (value == "None") {
      a.value = std::nullopt;
    } else if (RE2::FullMatch(value, kQuoted, &single, &dbl)) {
      a.value = value.front() == '\'' ? single : dbl;
    } else {
      out.error = fmt::format("{}:{}: {} is not a quoted string or None: '{}'", path, line_no, name,
                              value.substr(0, 80));
      return out;
    }
    out.values[name] = a;
    if (end == text.size()) break;
  }
  auto v = out.values.find("__version__");
  if (v == out.values.end() || !v->second.value || v->second.value->empty())
    out.error = fmt::format("{}: no __version__ string", path);
  return out;
}

/// The distinct gfx targets named by the file names of the kernel library directories.
void collect_gfx_targets(const Root& root, const std::string& site, const std::string& torch,
                         FactSet& facts) {
  std::vector<std::string> dirs = {join(torch, "lib/rocblas/library"),
                                   join(torch, "lib/hipblaslt/library")};
  if (auto names = root.list(site)) {
    std::size_t n = 0;
    for (const auto& name : *names)
      if (name.rfind("_rocm_sdk_libraries_", 0) == 0 && n++ < kMaxSdkPackages) {
        dirs.push_back(join(join(site, name), "lib/rocblas/library"));
        dirs.push_back(join(join(site, name), "lib/hipblaslt/library"));
      }
  }
  // gfx90a, gfx942, gfx1151; `-xnack+` and `:xnack-` suffixes are not hex and stay out;
  // generic targets (gfx11-generic) have fewer than three digits and are not names of a GPU.
  static const RE2 kGfx(R"((gfx[0-9][0-9a-f]{2,3})(?:[^0-9a-f]|$))");
  std::set<std::string> targets;
  std::vector<std::string> read_dirs;
  for (const auto& dir : dirs) {
    auto names = root.list(dir);
    if (!names) continue;
    read_dirs.push_back(dir);
    std::size_t n = 0;
    for (const auto& name : *names) {
      if (++n > kMaxLibraryNames) break;
      re2::StringPiece in(name);
      std::string gfx;
      while (RE2::FindAndConsume(&in, kGfx, &gfx))
        targets.insert(gfx);
    }
  }
  const std::string key = str(kTorchGfx);
  if (read_dirs.empty()) {
    facts.put_status(key, Status::missing, join(torch, "lib"),
                     "the wheel bundles no rocBLAS or hipBLASLt kernel library (looked in " +
                         fmt::format("{}", fmt::join(dirs, ", ")) + ")");
    return;
  }
  facts.put_ok(key, std::vector<std::string>(targets.begin(), targets.end()),
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

/// One directory of a search path list, as ld.so reads it (ld.so(8) "Dynamic string tokens";
/// glibc elf/dl-load.c fillin_rpath, expand_dynamic_string_token): `$ORIGIN` and `${ORIGIN}` are
/// the directory of the object; an entry with another token ($LIB, $PLATFORM) or not starting
/// with '/' (relative to the process's working directory, which the doctor cannot know) is not
/// followed and returned as std::nullopt.
std::optional<std::string> search_dir(std::string_view entry, std::string_view origin) {
  std::string out;
  for (std::size_t i = 0; i < entry.size();) {
    if (entry[i] != '$') {
      out += entry[i++];
      continue;
    }
    std::string_view rest = entry.substr(i);
    if (rest.starts_with("${ORIGIN}")) {
      out += origin;
      i += 9;
    } else if (rest.starts_with("$ORIGIN") &&
               (rest.size() == 7 ||
                !(std::isalnum(static_cast<unsigned char>(rest[7])) != 0 || rest[7] == '_'))) {
      out += origin;
      i += 7;
    } else {
      return std::nullopt;
    }
  }
  if (out.empty() || out.front() != '/') return std::nullopt;
  return std::filesystem::path(out).lexically_normal().string();
}

/// Splits a search path list into directories: DT_RPATH and DT_RUNPATH at ':' (elf(5)),
/// LD_LIBRARY_PATH at ':' or ';' (ld.so(8)). At most 64 entries are kept.
std::vector<std::string> split_search_path(std::string_view list, std::string_view seps,
                                           std::string_view origin,
                                           std::vector<std::string>& skipped) {
  std::vector<std::string> out;
  if (list.empty()) return out; // no list (glibc ignores an empty LD_LIBRARY_PATH too)
  std::size_t start = 0;
  while (start <= list.size() && out.size() + skipped.size() < 64) {
    const std::size_t end = std::min(list.find_first_of(seps, start), list.size());
    const std::string_view entry = list.substr(start, end - start);
    if (auto dir = search_dir(entry, origin))
      out.push_back(std::move(*dir));
    else
      skipped.emplace_back(entry.empty() ? "(empty: the working directory)" : entry);
    start = end + 1;
  }
  return out;
}

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
  const std::string search_key = str(kTorchSearch);
  const std::string linked_key = str(kTorchLinked);
  const std::string shadows_key = str(kTorchShadows);
  std::string why;
  const auto dyn = read_elf_dynamic(fd, why);
  if (!dyn) {
    for (const auto& k : {search_key, linked_key, shadows_key})
      facts.put_status(k, Status::error, lib, why);
    return;
  }
  const std::string origin = parent_dir(lib);
  std::vector<std::string> skipped;
  const bool runpath = dyn->runpath.has_value();
  const std::string tag = runpath ? "DT_RUNPATH" : dyn->rpath ? "DT_RPATH" : "none";
  const std::vector<std::string> own =
      split_search_path(runpath ? *dyn->runpath : dyn->rpath.value_or(""), ":", origin, skipped);
  facts.put_ok(search_key, tag,
               tag == "none"
                   ? fmt::format("{}: no DT_RPATH or DT_RUNPATH", lib)
                   : fmt::format("{}: {} {}", lib, tag, runpath ? *dyn->runpath : *dyn->rpath));
  auto holder = [&](const std::vector<std::string>& dirs,
                    const std::string& name) -> std::optional<std::string> {
    for (const auto& d : dirs)
      if (root.exists(join(d, name))) return d;
    return std::nullopt;
  };
  std::vector<std::string> linked;
  std::vector<std::string> shadows;
  std::vector<std::string> ld_skipped;
  const std::vector<std::string> ld =
      env.ld_library_path ? split_search_path(*env.ld_library_path, ":;", origin, ld_skipped)
                          : std::vector<std::string>{};
  for (const auto& name : dyn->needed) {
    if (name.find('/') != std::string::npos) continue; // a path is opened as it is
    const auto wheel_dir = holder(own, name);
    if (!wheel_dir) continue;
    linked.push_back(fmt::format("{} ({})", name, *wheel_dir == origin ? "torch/lib" : *wheel_dir));
    if (!runpath) continue; // DT_RPATH is searched before LD_LIBRARY_PATH
    const auto ld_dir = holder(ld, name);
    if (ld_dir && *ld_dir != *wheel_dir)
      shadows.push_back(fmt::format("{} from {} (not {})", name, *ld_dir,
                                    *wheel_dir == origin ? "torch/lib" : *wheel_dir));
  }
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
  const std::string key = str(kTorchAotriton);
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
  if (runtime)
    facts.put_status(key, Status::missing, lib_dir,
                     "libaotriton_v2.so without an aotriton.images directory: its kernels are "
                     "inside the library (AOTriton before 0.8) and are not read");
  else
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
    for (const auto& k : {kTorchOffload, kTorchSearch, kTorchLinked, kTorchShadows}) {
      if (err == ENOENT)
        facts.put_status(str(k), Status::missing, lib, "the wheel has no libtorch_hip.so");
      else
        facts.put_status(str(k), err == EACCES ? Status::denied : Status::error, lib,
                         fmt::format("cannot open: {}", std::strerror(err)));
    }
    return;
  }
  collect_offload_targets(lib, fd.get(), kTorchOffload, facts);
  collect_library_search(root, lib, fd.get(), env, facts);
}

/// The native library bitsandbytes loads beside this ROCm torch, as
/// bitsandbytes/cextension.py get_cuda_bnb_library_path() chooses it (0.50, main): with
/// BNB_ROCM_VERSION set (digits only, else a RuntimeError at import) exactly
/// libbitsandbytes_rocm<value>.so; otherwise from the packaged libbitsandbytes_rocm<M><m>.so
/// (ROCm: the first digit is the major, the rest the minor) the exact torch.version.hip
/// (major, minor), else the highest of the same major below it, else the lowest of the same major
/// above it, else the non-existent exact name (no cross-major fallback). Then the gfx targets of
/// that library's offload bundles, read as libtorch_hip.so's (cextension loads it with ctypes;
/// a GPU outside them fails at the first kernel).
void collect_bitsandbytes_library(const Root& root, const std::string& site,
                                  const std::optional<std::string>& hip, const PythonEnvVars& env,
                                  FactSet& facts) {
  const std::string pkg = join(site, "bitsandbytes");
  auto skip = [&](const std::string& src, const std::string& why) {
    for (auto k : {kBnbLibrary, kBnbLibraryTargets, kBnbLibraryPresent, kBnbLibraryChoice})
      facts.put_status(str(k), Status::missing, src, why);
  };
  if (!root.exists(join(pkg, "__init__.py")))
    return skip(pkg, fmt::format("bitsandbytes is not installed in {}", site));
  if (!hip) return skip(pkg, "torch is not a ROCm build (torch.version.hip is None)");
  std::string name;
  std::string how;
  if (env.bnb_rocm_version) {
    const std::string& v = *env.bnb_rocm_version;
    if (v.empty() ||
        !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      facts.put_status(str(kBnbLibrary), Status::error, env.source,
                       fmt::format("BNB_ROCM_VERSION={} is not digits: bitsandbytes raises at "
                                   "import (\"value must be digits only\")",
                                   v));
      for (auto k : {kBnbLibraryTargets, kBnbLibraryPresent, kBnbLibraryChoice})
        facts.put_status(str(k), Status::missing, env.source, "no library is loaded");
      return;
    }
    name = fmt::format("libbitsandbytes_rocm{}.so", v);
    how = fmt::format("BNB_ROCM_VERSION={} ({})", v, env.source);
  } else {
    static const RE2 kHip(R"(([0-9]{1,3})\.([0-9]{1,4}).*)");
    int major = 0;
    int minor = 0;
    if (!RE2::FullMatch(*hip, kHip, &major, &minor))
      return skip(pkg, fmt::format("torch.version.hip '{}' is not MAJOR.MINOR...", *hip));
    static const RE2 kLib(R"(libbitsandbytes_rocm([0-9])([0-9]{1,3})\.so)");
    std::map<std::pair<int, int>, std::string> available;
    if (auto names = root.list(pkg)) {
      std::size_t n = 0;
      for (const auto& f : *names) {
        if (++n > kMaxLibraryNames) break;
        int ma = 0;
        int mi = 0;
        if (RE2::FullMatch(f, kLib, &ma, &mi)) available.emplace(std::make_pair(ma, mi), f);
      }
    }
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
  facts.put_ok(str(kBnbLibrary), name, path);
  facts.put_ok(str(kBnbLibraryChoice), how, path);
  const UniqueFd fd(root.open_regular(path));
  facts.put_ok(str(kBnbLibraryPresent), static_cast<bool>(fd), path);
  if (!fd) {
    facts.put_status(str(kBnbLibraryTargets), Status::missing, path,
                     "the library is not there (\"ROCm binary not found\" at import)");
    return;
  }
  collect_offload_targets(path, fd.get(), kBnbLibraryTargets, facts);
}

/// bitsandbytes in the site directory torch came from: its version from the installed
/// distribution's `bitsandbytes-VERSION.dist-info/METADATA` ("Version:" header, Core Metadata
/// specification), else `__version__` in bitsandbytes/__init__.py; and the ROCm builds of its
/// native library it ships: `libbitsandbytes_rocm<MAJOR><MINOR>.so`, one per ROCm release
/// (bitsandbytes/cextension.py picks the one matching torch.version.hip;
/// reference/framework-facts.md 4.3). No such file: a CUDA/CPU-only build.
void collect_bitsandbytes(const Root& root, const std::string& site, FactSet& facts) {
  const std::string pkg = join(site, "bitsandbytes");
  if (!root.exists(join(pkg, "__init__.py"))) {
    const std::string why = fmt::format("bitsandbytes is not installed in {}", site);
    facts.put_status(str(kBnbVersion), Status::missing, pkg, why);
    facts.put_status(str(kBnbRocm), Status::missing, pkg, why);
    return;
  }
  static const RE2 kDistInfo(R"(bitsandbytes-[^/]+\.dist-info)");
  static const RE2 kMetaVersion(R"((?m)^Version:[ \t]*([0-9A-Za-z.+!_-]+)[ \t]*\r?$)");
  static const RE2 kInitVersion(R"((?m)^__version__[ \t]*=[ \t]*["']([0-9A-Za-z.+!_-]+)["'])");
  std::string version;
  std::string source;
  if (auto names = root.list(site)) {
    std::size_t n = 0;
    for (const auto& name : *names) {
      if (++n > kMaxDirNames) break;
      if (!RE2::FullMatch(name, kDistInfo)) continue;
      ReadResult r = root.read(join(join(site, name), "METADATA"), kMaxMetadataBytes);
      if (r.ok() && RE2::PartialMatch(r.text, kMetaVersion, &version)) {
        source = r.path;
        break;
      }
    }
  }
  if (version.empty()) {
    ReadResult r = root.read(join(pkg, "__init__.py"), kMaxMetadataBytes);
    if (r.ok() && RE2::PartialMatch(r.text, kInitVersion, &version)) source = r.path;
  }
  if (version.empty())
    facts.put_status(str(kBnbVersion), Status::error, pkg,
                     "bitsandbytes is installed but neither its dist-info METADATA nor "
                     "__init__.py names a version");
  else
    facts.put_ok(str(kBnbVersion), version, source);
  static const RE2 kRocmLib(R"(libbitsandbytes_(rocm[0-9]+)\.so)");
  std::set<std::string> rocm;
  if (auto names = root.list(pkg)) {
    std::size_t n = 0;
    for (const auto& name : *names) {
      if (++n > kMaxLibraryNames) break;
      std::string v;
      if (RE2::FullMatch(name, kRocmLib, &v)) rocm.insert(v);
    }
  }
  facts.put_ok(str(kBnbRocm), std::vector<std::string>(rocm.begin(), rocm.end()),
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
  static const RE2 kInitVersion(R"((?m)^__version__[ \t]*=[ \t]*["']([0-9A-Za-z.+!_-]+)["'])");
  static const RE2 kMetaVersion(R"((?m)^Version:[ \t]*([0-9A-Za-z.+!_-]+)[ \t]*\r?$)");
  std::string version;
  // PKG/version.py (torchvision, torchaudio write it at build time), else `__version__` in
  // PKG/__init__.py (flash_attn), else the installed distribution's METADATA.
  for (const char* file : {"version.py", "__init__.py"})
    if (ReadResult r = root.read(join(dir, file), kMaxVersionPyBytes);
        r.ok() && RE2::PartialMatch(r.text, kInitVersion, &version)) {
      facts.put_ok(str(key), version, r.path);
      return;
    }
  const RE2 dist_info(fmt::format(R"({}-[^/]+\.dist-info)", pkg));
  if (auto names = root.list(site)) {
    std::size_t n = 0;
    for (const auto& name : *names) {
      if (++n > kMaxDirNames) break;
      if (!RE2::FullMatch(name, dist_info)) continue;
      ReadResult r = root.read(join(join(site, name), "METADATA"), kMaxMetadataBytes);
      if (r.ok() && RE2::PartialMatch(r.text, kMetaVersion, &version)) {
        facts.put_ok(str(key), version, r.path);
        return;
      }
    }
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
  collect_companion(root, site, "flash_attn", kFlashAttnVersion, facts);
  const std::string key = str(kFlashAttnTargets);
  if (!facts.get<std::string>(str(kFlashAttnVersion))) {
    const Fact* v = facts.find(str(kFlashAttnVersion));
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
  collect_offload_targets(ext, fd.get(), kFlashAttnTargets, facts);
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  const Root& root = ctx.root;
  const PythonEnvVars env = read_env(root);
  // A relative --python names a file of the machine the doctor runs on: only the live root has it.
  const SearchPlan plan = plan_search(root, env, resolve_python(root, ctx.options.python));
  std::string site;
  for (const auto& dir : plan.dirs)
    if (root.exists(join(dir, "torch/version.py"))) {
      site = dir;
      break;
    }
  if (site.empty()) {
    const std::string reason = fmt::format("no torch/version.py in {} (searched {})", plan.basis,
                                           fmt::format("{}", fmt::join(plan.patterns, ", ")));
    for (const auto& k :
         {kPythonEnv,   kTorchVersion, kTorchGfx,          kTorchOffload,      kTorchSearch,
          kTorchLinked, kTorchShadows, kTorchAotriton,     kFlashAttnVersion,  kFlashAttnTargets,
          kBnbVersion,  kBnbRocm,      kVisionVersion,     kAudioVersion,      kVisionBuild,
          kAudioBuild,  kBnbLibrary,   kBnbLibraryTargets, kBnbLibraryPresent, kBnbLibraryChoice})
      facts.put_status(str(k), Status::missing, env.source, reason);
    return;
  }
  const std::string torch = join(site, "torch");
  const std::string version_py = join(torch, "version.py");
  facts.put_ok(str(kPythonEnv), site, plan.basis);
  facts.put_ok(str(kTorchPath), torch, version_py + " (the first torch found)");
  collect_bitsandbytes(root, site, facts);
  collect_companion(root, site, "torchvision", kVisionVersion, facts);
  collect_companion(root, site, "torchaudio", kAudioVersion, facts);
  collect_companion_build(root, site, "torchvision", kVisionBuild, facts);
  collect_companion_build(root, site, "torchaudio", kAudioBuild, facts);
  collect_flash_attn(root, site, facts);

  ReadResult r = root.read(version_py, kMaxVersionPyBytes);
  if (!r.ok()) {
    facts.put_status(str(kTorchVersion), r.status, r.path, r.reason);
    return;
  }
  VersionPy v = parse_version_py(r.path, r.text);
  if (!v.error.empty()) {
    facts.put_status(str(kTorchVersion), Status::error, r.path, v.error);
    return;
  }
  auto source = [&](const char* name) {
    auto it = v.values.find(name);
    return it == v.values.end() ? r.path : fmt::format("{}:{}", r.path, it->second.line);
  };
  auto get = [&](const char* name) -> std::optional<std::string> {
    auto it = v.values.find(name);
    if (it == v.values.end() || !it->second.value || it->second.value->empty()) return std::nullopt;
    return it->second.value;
  };
  facts.put_ok(str(kTorchVersion), *get("__version__"), source("__version__"));
  const auto hip = get("hip");
  const auto cuda = get("cuda");
  if (hip)
    facts.put_ok(str(kTorchHip), *hip, source("hip"));
  else
    facts.put_status(str(kTorchHip), Status::missing, source("hip"), "not a ROCm build");
  if (cuda)
    facts.put_ok(str(kTorchCuda), *cuda, source("cuda"));
  else
    facts.put_status(str(kTorchCuda), Status::missing, source("cuda"), "not a CUDA build");
  if (auto git = get("git_version"))
    facts.put_ok(str(kTorchGit), *git, source("git_version"));
  else
    facts.put_status(str(kTorchGit), Status::missing, source("git_version"),
                     "version.py names no git_version");
  const char* build = hip ? "rocm" : cuda ? "cuda" : "cpu";
  facts.put_ok(str(kTorchBuild), std::string(build), fmt::format("{} (hip and cuda)", r.path));
  collect_bitsandbytes_library(root, site, hip, env, facts);
  if (hip) {
    collect_gfx_targets(root, site, torch, facts);
    collect_hip_library(root, torch, env, facts);
    collect_aotriton(root, torch, facts);
  } else {
    for (const auto& k :
         {kTorchGfx, kTorchOffload, kTorchSearch, kTorchLinked, kTorchShadows, kTorchAotriton})
      facts.put_status(str(k), Status::missing, r.path, "not a ROCm build");
  }
}

} // namespace

std::unique_ptr<Probe> make_framework_probe() {
  using enum FactType;
  std::vector<FactDecl> decls{
      {str(kPythonEnv), string, "",
       "the site directory of the environment training will see that holds the first "
       "`torch/version.py`"},
      {str(kTorchPath), string, "", "the `torch` package directory found there"},
      {str(kTorchVersion), string, "", "`__version__` of `torch/version.py` (source `file:line`)"},
      {str(kTorchHip), string, "",
       "`hip` of `torch/version.py`; missing for `hip = None`: \"not a ROCm build\""},
      {str(kTorchCuda), string, "", "`cuda` of `torch/version.py`; missing for `cuda = None`"},
      {str(kTorchGit), string, "", "`git_version` of `torch/version.py`"},
      {str(kTorchBuild), string, "", "the build: `rocm`, `cuda` or `cpu` (from `hip` and `cuda`)"},
      {str(kTorchGfx), list, "",
       "the distinct `gfxNNN` names in the file names of `torch/lib/{rocblas,hipblaslt}/library` "
       "(or `_rocm_sdk_libraries_*/lib/...` for TheRock wheels)"},
      {str(kTorchOffload), list, "",
       "the gfx processors every offload bundle in the `.hip_fatbin` section of "
       "`torch/lib/libtorch_hip.so` has a code object for; `error` (\"could not tell\") when the "
       "section holds no bundle or no AMDGPU code object (an unknown layout)"},
      {str(kTorchSearch), string, "",
       "how ld.so finds libtorch_hip.so's libraries: `DT_RPATH`, `DT_RUNPATH` or `none` (source: "
       "the path list)"},
      {str(kTorchLinked), list, "",
       "each `DT_NEEDED` library of libtorch_hip.so that its own search path holds, as `NAME "
       "(DIR)` "
       "(`torch/lib` for `$ORIGIN`): the ROCm a wheel bundles, or the one a source build was "
       "linked "
       "against"},
      {str(kTorchShadows), list, "",
       "those an `LD_LIBRARY_PATH` directory supplies first (only under a `DT_RUNPATH`), as `NAME "
       "from DIR (not DIR)`"},
      {str(kTorchAotriton), list, "",
       "the `<arch>` of each `torch/lib/aotriton.images/amd-<arch>` directory (`gfx942`, "
       "`gfx11xx`); "
       "empty: no AOTriton in the wheel; missing: `libaotriton_v2.so` alone (older AOTriton, "
       "kernels inside the library)"},
      {str(kFlashAttnVersion), string, "",
       "flash_attn's version: `__version__` of `flash_attn/__init__.py`, else its dist-info "
       "`Version:`; missing when not installed"},
      {str(kFlashAttnTargets), list, "",
       "the gfx processors every offload bundle of `flash_attn_2_cuda*.so` (its CK backend) has a "
       "code object for; missing without that extension (a Triton-only build)"},
      {str(kBnbVersion), string, "",
       "bitsandbytes' version: `Version:` of `bitsandbytes-*.dist-info/METADATA`, else "
       "`__version__` of `bitsandbytes/__init__.py`"},
      {str(kBnbRocm), list, "",
       "the ROCm builds bitsandbytes ships (`libbitsandbytes_rocm<MAJ><MIN>.so` -> `rocm72`; none: "
       "a CUDA/CPU-only wheel)"},
      {str(kVisionVersion), string, "",
       "torchvision's version: `__version__` of `torchvision/version.py`, else "
       "`torchvision-*.dist-info/METADATA` `Version:`; missing when not installed"},
      {str(kAudioVersion), string, "", "torchaudio's version, the same way"},
      {str(kBnbLibrary), string, "",
       "the native library bitsandbytes loads beside this ROCm torch "
       "(`libbitsandbytes_rocm<M><m>.so`, chosen as bitsandbytes/cextension.py does from "
       "torch.version.hip or `BNB_ROCM_VERSION`; an error for a `BNB_ROCM_VERSION` that is not "
       "digits)"},
      {str(kBnbLibraryPresent), boolean, "", "that library file is in the bitsandbytes package"},
      {str(kBnbLibraryChoice), string, "",
       "why that library: the exact torch.version.hip build, a same-major fallback, or "
       "`BNB_ROCM_VERSION`"},
      {str(kBnbLibraryTargets), list, "",
       "the gfx targets of that library's offload bundles (read as libtorch_hip.so's)"},
      {str(kVisionBuild), string, "",
       "the GPU runtime torchvision's `_C.so` is linked against: `cuda`, `rocm` or `cpu`, from "
       "its DT_NEEDED names (libc10_cuda/libcudart, libc10_hip/libamdhip64); source names them"},
      {str(kAudioBuild), string, "",
       "the same for torchaudio (`lib/libtorchaudio.so`, older `_torchaudio.so`)"},
  };
  auto probe = std::make_unique<BasicProbe>(
      "framework", std::move(decls),
      "without running Python (docs/framework.md): the site directory of the environment training "
      "will see (`--python PATH`'s venv or prefix, else `VIRTUAL_ENV`, else `CONDA_PREFIX`, from "
      "`/proc/self/environ`, else the first `python3` on its PATH: a pyenv shim resolved to the "
      "pyenv version's interpreter as pyenv picks it (PYENV_VERSION, `.python-version` from PWD "
      "up, `$PYENV_ROOT/version`, `system`; checks/framework/python_env.hpp), another script passed over; "
      "else the system site directories) holding the first "
      "`torch/version.py`; `__version__`, `hip`, `cuda`, `git_version` from that file (source "
      "`file:line`; `hip = None`: hip_version missing, \"not a ROCm build\"); build "
      "`rocm`/`cuda`/`cpu`; gfx_targets: the distinct `gfxNNN` names in the file names of "
      "`torch/lib/{rocblas,hipblaslt}/library` (or `_rocm_sdk_libraries_*/lib/...` for TheRock "
      "wheels). offload_targets (checks/framework/offload_bundle.cpp): entry ids "
      "`hipv4-amdgcn-amd-amdhsa--gfxNNN[:features]`; CCOB bundles decompressed only as far as "
      "their header, zstd or zlib; at most 64 bundles; source: the bundles read, how many "
      "compressed, targets only some have; `error` for a library that is not ELF, has no such "
      "section or a damaged bundle. The dynamic section of `torch/lib/libtorch_hip.so` (libelf; "
      "names read with bounded preads): `DT_NEEDED`, `DT_RPATH`/`DT_RUNPATH` (`$ORIGIN` = "
      "torch/lib); LD_LIBRARY_PATH (`:` or `;` separated) from `/proc/self/environ`, searched "
      "before a `DT_RUNPATH` and after a `DT_RPATH` (ld.so(8)); `error` for a library without a "
      "dynamic section or with names outside its string table. AOTriton: the `amd-<arch>` "
      "directories of `torch/lib/aotriton.images` (AOTriton 0.8b and later, pytorch PR 140172). "
      "flash_attn: `flash_attn/__init__.py` or its dist-info, and the offload bundles of "
      "`flash_attn_2_cuda*.so`. bitsandbytes, torchvision, torchaudio and flash_attn are looked up "
      "in the site directory torch came from. The framework derivations add "
      "`framework.torch.rocm_version`, `framework.torch.kernel_targets`, "
      "`framework.companion_problems` and `gpu.N.aotriton_images`.",
      std::vector<std::string>{
          "/proc/self/environ",
          "PATH entries/python3 (the first 4 KiB: a pyenv shim?)",
          "$PYENV_DIR or $PWD and their parents/.python-version, $PYENV_ROOT/version",
          "$PYENV_ROOT/versions/",
          "$VIRTUAL_ENV/pyvenv.cfg",
          "--python PATH: PATH/../../pyvenv.cfg",
          "PATH/../../lib/python3.*/site-packages/torch/version.py",
          "$VIRTUAL_ENV/lib/python3.*/site-packages/torch/version.py",
          "$CONDA_PREFIX/lib/python3.*/site-packages/torch/version.py",
          "/usr/local/lib/python3.*/dist-packages/torch/version.py",
          "/usr/local/lib/python3.*/site-packages/torch/version.py",
          "/usr/lib/python3/dist-packages/torch/version.py",
          "/usr/lib/python3.*/site-packages/torch/version.py",
          "/usr/lib64/python3.*/site-packages/torch/version.py",
          "SITE/torch/lib/rocblas/library/",
          "SITE/torch/lib/hipblaslt/library/",
          "SITE/torch/lib/libtorch_hip.so (.hip_fatbin, .dynamic)",
          "LD_LIBRARY_PATH and DT_RPATH/DT_RUNPATH directories: DT_NEEDED names",
          "SITE/torch/lib/aotriton.images/amd-*/, SITE/torch/lib/libaotriton*",
          "SITE/_rocm_sdk_libraries_*/lib/{rocblas,hipblaslt}/library/",
          "SITE/bitsandbytes-*.dist-info/METADATA",
          "SITE/bitsandbytes/__init__.py",
          "SITE/bitsandbytes/libbitsandbytes_rocm*.so",
          "SITE/flash_attn/__init__.py, SITE/flash_attn-*.dist-info/METADATA",
          "SITE/flash_attn_2_cuda*.so (.hip_fatbin section)",
          "SITE/torchvision/version.py",
          "SITE/torchaudio/version.py",
          "SITE/torch{vision,audio}-*.dist-info/METADATA"},
      collect);
  // The interpreter's resolution (checks/framework/python_env.hpp) and the site directories' own.
  std::vector<std::string> env_reads = python_env_reads();
  for (const auto name : {kEnvVirtualEnv, kEnvCondaPrefix, kEnvPath, kEnvLdLibraryPath, kEnvHome,
                          kEnvPythonUserBase, kEnvPythonNoUserSite, kEnvBnbRocmVersion})
    if (std::find(env_reads.begin(), env_reads.end(), name) == env_reads.end())
      env_reads.emplace_back(name);
  probe->set_env_reads(std::move(env_reads));
  return probe;
}

} // namespace halo::probes
