// Probe: the framework layer, statically: which PyTorch the Python environment training will see
// holds, read from files without running Python (issue 14, step 1).
//
// - The environment: `--python PATH`'s (a venv, a prefix or the system: see plan_search), else
//   VIRTUAL_ENV, else CONDA_PREFIX, from /proc/self/environ (the environment training will see,
//   as checks/environment.cpp reads it), else the system site directories.
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

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
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
constexpr std::string_view kBnbVersion = "framework.bitsandbytes.version";
constexpr std::string_view kBnbRocm = "framework.bitsandbytes.rocm_libraries";
constexpr std::string_view kVisionVersion = "framework.torchvision.version";
constexpr std::string_view kAudioVersion = "framework.torchaudio.version";

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

/// VIRTUAL_ENV and CONDA_PREFIX from the environment training will see.
struct PythonEnvVars {
  std::string virtual_env;
  std::string conda_prefix;
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
    take("VIRTUAL_ENV", out.virtual_env);
    take("CONDA_PREFIX", out.conda_prefix);
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

SearchPlan plan_search(const Root& root, const PythonEnvVars& env, const std::string& python) {
  SearchPlan p;
  bool system = true;
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
      p.basis = fmt::format("--python {} (the venv {})", python, prefix);
      if (system) p.basis += ", with the system site directories (pyvenv.cfg)";
    } else if (prefix == "/usr" || prefix == "/usr/local" || prefix == "/") {
      p.basis = fmt::format("--python {} (the system site directories)", python);
    } else {
      add(join(prefix, "lib"), "site-packages");
      system = false;
      p.basis = fmt::format("--python {} (the prefix {})", python, prefix);
    }
  } else if (!env.virtual_env.empty()) {
    add(join(env.virtual_env, "lib"), "site-packages");
    system = venv_sees_system(root, env.virtual_env);
    p.basis = fmt::format("VIRTUAL_ENV={} ({})", env.virtual_env, env.source);
    if (system) p.basis += ", with the system site directories (pyvenv.cfg)";
  } else if (!env.conda_prefix.empty()) {
    add(join(env.conda_prefix, "lib"), "site-packages");
    system = false;
    p.basis = fmt::format("CONDA_PREFIX={} ({})", env.conda_prefix, env.source);
  } else if (!env.read_reason.empty()) {
    p.basis = fmt::format("the system site directories ({} could not be read: {})", env.source,
                          env.read_reason);
  } else {
    p.basis = "the system site directories (no VIRTUAL_ENV or CONDA_PREFIX in " + env.source + ")";
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
void collect_offload_targets(const Root& root, const std::string& torch, FactSet& facts) {
  const std::string key = str(kTorchOffload);
  const std::string lib = join(torch, "lib/libtorch_hip.so");
  const int fd = root.open_regular(lib);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT)
      facts.put_status(key, Status::missing, lib, "the wheel has no libtorch_hip.so");
    else
      facts.put_status(key, err == EACCES ? Status::denied : Status::error, lib,
                       fmt::format("cannot open: {}", std::strerror(err)));
    return;
  }
  auto close_fd = [](const int* p) { ::close(*p); };
  const std::unique_ptr<const int, decltype(close_fd)> closer(&fd, close_fd);
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
  if (ReadResult r = root.read(join(dir, "version.py"), kMaxVersionPyBytes);
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
                   fmt::format("{} is installed but neither version.py nor its dist-info METADATA "
                               "names a version",
                               pkg));
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  const Root& root = ctx.root;
  const PythonEnvVars env = read_env(root);
  // A relative --python names a file of the machine the doctor runs on: only the live root has it.
  std::string python = ctx.options.python;
  if (!python.empty() && python.front() != '/')
    python = root.is_live() ? std::filesystem::absolute(python).lexically_normal().string() : "";
  const SearchPlan plan = plan_search(root, env, python);
  std::string site;
  for (const auto& dir : plan.dirs)
    if (root.exists(join(dir, "torch/version.py"))) {
      site = dir;
      break;
    }
  if (site.empty()) {
    const std::string reason = fmt::format("no torch/version.py in {} (searched {})", plan.basis,
                                           fmt::format("{}", fmt::join(plan.patterns, ", ")));
    facts.put_status(str(kPythonEnv), Status::missing, env.source, reason);
    facts.put_status(str(kTorchVersion), Status::missing, env.source, reason);
    facts.put_status(str(kBnbVersion), Status::missing, env.source, reason);
    facts.put_status(str(kBnbRocm), Status::missing, env.source, reason);
    facts.put_status(str(kVisionVersion), Status::missing, env.source, reason);
    facts.put_status(str(kAudioVersion), Status::missing, env.source, reason);
    return;
  }
  const std::string torch = join(site, "torch");
  const std::string version_py = join(torch, "version.py");
  facts.put_ok(str(kPythonEnv), site, plan.basis);
  facts.put_ok(str(kTorchPath), torch, version_py + " (the first torch found)");
  collect_bitsandbytes(root, site, facts);
  collect_companion(root, site, "torchvision", kVisionVersion, facts);
  collect_companion(root, site, "torchaudio", kAudioVersion, facts);

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
  if (hip) {
    collect_gfx_targets(root, site, torch, facts);
    collect_offload_targets(root, torch, facts);
  } else {
    facts.put_status(str(kTorchGfx), Status::missing, r.path, "not a ROCm build");
    facts.put_status(str(kTorchOffload), Status::missing, r.path, "not a ROCm build");
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
       "`torch/lib/libtorch_hip.so` has a code object for"},
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
  };
  return std::make_unique<BasicProbe>(
      "framework", std::move(decls),
      "without running Python (docs/framework.md): the site directory of the environment training "
      "will see (`VIRTUAL_ENV`, else `CONDA_PREFIX`, from `/proc/self/environ`, else the system "
      "site directories) holding the first `torch/version.py`; `__version__`, `hip`, `cuda`, "
      "`git_version` from that file (source `file:line`; `hip = None`: hip_version missing, \"not "
      "a ROCm build\"); build `rocm`/`cuda`/`cpu`; gfx_targets: the distinct `gfxNNN` names in the "
      "file names of `torch/lib/{rocblas,hipblaslt}/library` (or `_rocm_sdk_libraries_*/lib/...` "
      "for TheRock wheels). offload_targets (checks/offload_bundle.cpp): entry ids "
      "`hipv4-amdgcn-amd-amdhsa--gfxNNN[:features]`; CCOB bundles decompressed only as far as "
      "their header, zstd or zlib; at most 64 bundles; source: the bundles read, how many "
      "compressed, targets only some have; `error` for a library that is not ELF, has no such "
      "section or a damaged bundle. bitsandbytes, torchvision and torchaudio are looked up in the "
      "site directory torch came from. The derived probe adds `framework.torch.rocm_version`, "
      "`framework.torch.kernel_targets` and `framework.companion_problems`.",
      std::vector<std::string>{"/proc/self/environ",
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
                               "SITE/torch/lib/libtorch_hip.so (.hip_fatbin section)",
                               "SITE/_rocm_sdk_libraries_*/lib/{rocblas,hipblaslt}/library/",
                               "SITE/bitsandbytes-*.dist-info/METADATA",
                               "SITE/bitsandbytes/__init__.py",
                               "SITE/bitsandbytes/libbitsandbytes_rocm*.so",
                               "SITE/torchvision/version.py",
                               "SITE/torchaudio/version.py",
                               "SITE/torch{vision,audio}-*.dist-info/METADATA"},
      collect);
}

} // namespace halo::probes
