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
// - The wheel's ROCm libraries (kernel file names, libtorch_hip.so's offload bundles and dynamic
//   section, AOTriton): checks/framework/torch_libs.cpp; bitsandbytes, flash_attn, torchvision
//   and torchaudio beside torch: checks/framework/companions.cpp. One probe, built here; its
//   keys and shared helpers are in checks/framework/framework_internal.hpp.
#include "framework_internal.hpp"
#include "probe_util.hpp"
#include "probes.hpp"
#include "python_env.hpp"

#include <halo/text.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace halo::probes::framework_files {
namespace {

/// At most this many `python3.*` entries of one `lib/` directory are considered, among at most
/// kMaxDirNames names (/usr/lib holds a few hundred).
constexpr std::size_t kMaxPythonDirs = 48;
/// At most this many site directories are searched in all.
constexpr std::size_t kMaxSiteDirs = 24;

/// The environment variables this probe reads (Probe::env_reads; a capture bundle keeps these).
constexpr std::string_view kEnvVirtualEnv = "VIRTUAL_ENV";
constexpr std::string_view kEnvCondaPrefix = "CONDA_PREFIX";
constexpr std::string_view kEnvPath = "PATH";
constexpr std::string_view kEnvLdLibraryPath = "LD_LIBRARY_PATH";
constexpr std::string_view kEnvHome = "HOME";
constexpr std::string_view kEnvPythonUserBase = "PYTHONUSERBASE";
constexpr std::string_view kEnvPythonNoUserSite = "PYTHONNOUSERSITE";
constexpr std::string_view kEnvBnbRocmVersion = "BNB_ROCM_VERSION";

/// The variables this probe reads, the `env` of its checks/framework/facts.json entry: the
/// interpreter's resolution (python_env_reads(), python_env.hpp) and the site directories' own
/// (LD_LIBRARY_PATH, PYTHONUSERBASE, PYTHONNOUSERSITE, BNB_ROCM_VERSION).
const std::vector<std::string>& framework_env_reads() {
  static const std::vector<std::string> names = declared_env_reads("framework");
  return names;
}

PythonEnvVars read_env(const Root& root) {
  PythonEnvVars out;
  const EnvironRead env = read_environ(root, framework_env_reads());
  out.source = env.source;
  if (!env.ok()) {
    out.read_reason = env.reason;
    return out;
  }
  for (const auto& entry : env.vars) {
    const auto& name = entry.first;
    const auto& value = entry.second;
    // Only absolute paths name a directory the doctor can resolve inside the root.
    auto take = [&](std::string_view want, std::string& dst) {
      if (name == want && !value.empty() && value.front() == '/') dst = std::string(value);
    };
    take(kEnvVirtualEnv, out.virtual_env);
    take(kEnvCondaPrefix, out.conda_prefix);
    take(kEnvHome, out.home);
    take(kEnvPythonUserBase, out.python_user_base);
    // Python's -s flag: "PYTHONNOUSERSITE: If this is set, Python won't add the user
    // site-packages directory to sys.path" (a non-empty string, Python/initconfig.c).
    if (name == kEnvPythonNoUserSite && !value.empty()) out.no_user_site = true;
    if (name == kEnvBnbRocmVersion) out.bnb_rocm_version = std::string(value);
    if (name == kEnvPath) out.path = std::string(value);
    if (name == kEnvLdLibraryPath) out.ld_library_path = std::string(value);
  }
  return out;
}

} // namespace

std::string join(std::string_view dir, std::string_view tail) {
  return join_path(dir, tail);
}

std::string parent_dir(std::string_view path) {
  return probes::parent_dir(path);
}

namespace {

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
  // The interpreter checks/framework/python_env.cpp resolves, the one --framework-deep runs:
  // --python, an activated venv or conda environment, else python3 on PATH (a pyenv shim resolved
  // as pyenv does).
  // A uv project environment is told from its interpreter's place like --python: its pyvenv.cfg.
  const bool by_interpreter = choice.kind == PythonKind::given ||
                              choice.kind == PythonKind::pyenv || choice.kind == PythonKind::path ||
                              choice.kind == PythonKind::uv_project;
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
  for (const std::string_view line_view : split_records(text, '\n')) {
    const std::string line(line_view);
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
  }
  auto v = out.values.find("__version__");
  if (v == out.values.end() || !v->second.value || v->second.value->empty())
    out.error = fmt::format("{}: no __version__ string", path);
  return out;
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
    for (const auto& k : {fact_keys::framework::python_env,
                          fact_keys::framework::torch_version,
                          fact_keys::framework::torch_gfx_targets,
                          fact_keys::framework::torch_rocblas_targets,
                          fact_keys::framework::torch_rocblas_dir,
                          fact_keys::framework::torch_hipblaslt_targets,
                          fact_keys::framework::torch_hipblaslt_dir,
                          fact_keys::framework::torch_offload_targets,
                          fact_keys::framework::torch_library_search,
                          fact_keys::framework::torch_linked_libraries,
                          fact_keys::framework::torch_ld_library_path_shadows,
                          fact_keys::framework::torch_aotriton_images,
                          fact_keys::framework::flash_attn_version,
                          fact_keys::framework::flash_attn_offload_targets,
                          fact_keys::framework::bitsandbytes_version,
                          fact_keys::framework::bitsandbytes_rocm_libraries,
                          fact_keys::framework::torchvision_version,
                          fact_keys::framework::torchaudio_version,
                          fact_keys::framework::torchvision_build,
                          fact_keys::framework::torchaudio_build,
                          fact_keys::framework::bitsandbytes_library,
                          fact_keys::framework::bitsandbytes_library_targets,
                          fact_keys::framework::bitsandbytes_library_present,
                          fact_keys::framework::bitsandbytes_library_choice})
      facts.put_status(str(k), Status::missing, env.source, reason);
    return;
  }
  const std::string torch = join(site, "torch");
  const std::string version_py = join(torch, "version.py");
  facts.put_ok(str(fact_keys::framework::python_env), site, plan.basis);
  facts.put_ok(str(fact_keys::framework::torch_path), torch,
               version_py + " (the first torch found)");
  collect_bitsandbytes(root, site, facts);
  collect_companion(root, site, "torchvision", fact_keys::framework::torchvision_version, facts);
  collect_companion(root, site, "torchaudio", fact_keys::framework::torchaudio_version, facts);
  collect_companion_build(root, site, "torchvision", fact_keys::framework::torchvision_build,
                          facts);
  collect_companion_build(root, site, "torchaudio", fact_keys::framework::torchaudio_build, facts);
  collect_flash_attn(root, site, facts);

  ReadResult r = root.read(version_py, kMaxVersionPyBytes);
  if (!r.ok()) {
    facts.put_status(str(fact_keys::framework::torch_version), r.status, r.path, r.reason);
    return;
  }
  VersionPy v = parse_version_py(r.path, r.text);
  if (!v.error.empty()) {
    facts.put_status(str(fact_keys::framework::torch_version), Status::error, r.path, v.error);
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
  facts.put_ok(str(fact_keys::framework::torch_version), *get("__version__"),
               source("__version__"));
  const auto hip = get("hip");
  const auto cuda = get("cuda");
  if (hip)
    facts.put_ok(str(fact_keys::framework::torch_hip_version), *hip, source("hip"));
  else
    facts.put_status(str(fact_keys::framework::torch_hip_version), Status::missing, source("hip"),
                     "not a ROCm build");
  if (cuda)
    facts.put_ok(str(fact_keys::framework::torch_cuda_version), *cuda, source("cuda"));
  else
    facts.put_status(str(fact_keys::framework::torch_cuda_version), Status::missing, source("cuda"),
                     "not a CUDA build");
  if (auto git = get("git_version"))
    facts.put_ok(str(fact_keys::framework::torch_git_version), *git, source("git_version"));
  else
    facts.put_status(str(fact_keys::framework::torch_git_version), Status::missing,
                     source("git_version"), "version.py names no git_version");
  const char* build = hip ? "rocm" : cuda ? "cuda" : "cpu";
  facts.put_ok(str(fact_keys::framework::torch_build), std::string(build),
               fmt::format("{} (hip and cuda)", r.path));
  collect_bitsandbytes_library(root, site, hip, env, facts);
  if (hip) {
    collect_gfx_targets(root, site, torch, facts);
    collect_hip_library(root, torch, env, facts);
    collect_aotriton(root, torch, facts);
  } else {
    for (const auto& k :
         {fact_keys::framework::torch_gfx_targets, fact_keys::framework::torch_rocblas_targets,
          fact_keys::framework::torch_rocblas_dir, fact_keys::framework::torch_hipblaslt_targets,
          fact_keys::framework::torch_hipblaslt_dir, fact_keys::framework::torch_offload_targets,
          fact_keys::framework::torch_library_search, fact_keys::framework::torch_linked_libraries,
          fact_keys::framework::torch_ld_library_path_shadows,
          fact_keys::framework::torch_aotriton_images})
      facts.put_status(str(k), Status::missing, r.path, "not a ROCm build");
  }
}

} // namespace

} // namespace halo::probes::framework_files

namespace halo::probes {

std::unique_ptr<Probe> make_framework_probe() {
  return std::make_unique<BasicProbe>("framework", framework_files::collect);
}

} // namespace halo::probes
