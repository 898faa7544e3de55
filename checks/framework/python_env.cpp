// SPDX-License-Identifier: MIT
// The interpreter training will get (checks/framework/python_env.hpp): --python, an activated venv
// or conda environment, else python3 on PATH with pyenv's shims resolved as pyenv resolves them.
// Sources: pyenv's libexec/pyenv-rehash (the shim: `export PYENV_ROOT=...`, `exec "$(command -v
// pyenv)" exec "$program" "$@"`), libexec/pyenv-version-name, pyenv-version-file,
// pyenv-version-file-read, pyenv-which, pyenv-latest
// (https://github.com/pyenv/pyenv/tree/master/libexec); conda's activation variables (CONDA_PREFIX,
// CONDA_DEFAULT_ENV:
// https://docs.conda.io/projects/conda/en/latest/dev-guide/deep-dives/activation.html); venv's
// VIRTUAL_ENV (https://docs.python.org/3/library/venv.html#how-venvs-work).
#include "python_env.hpp"

#include "probe_util.hpp"
#include "probes.hpp"

#include <fmt/format.h>

#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <optional>

namespace halo::probes {
namespace {

constexpr std::string_view kVirtualEnv = "VIRTUAL_ENV";
constexpr std::string_view kCondaPrefix = "CONDA_PREFIX";
constexpr std::string_view kCondaDefaultEnv = "CONDA_DEFAULT_ENV";
constexpr std::string_view kPath = "PATH";
constexpr std::string_view kPyenvVersion = "PYENV_VERSION";
constexpr std::string_view kPyenvRoot = "PYENV_ROOT";
constexpr std::string_view kPyenvDir = "PYENV_DIR";
constexpr std::string_view kPwd = "PWD";
constexpr std::string_view kHome = "HOME";
constexpr std::string_view kUvProjectEnvironment = "UV_PROJECT_ENVIRONMENT";
/// uv's environment twins of `--project DIR` (uv 0.4.4) and `--no-project` (uv 0.11.8):
/// crates/uv-static/src/env_vars.rs ("Equivalent to the `--project` command-line argument").
constexpr std::string_view kUvProject = "UV_PROJECT";
constexpr std::string_view kUvNoProject = "UV_NO_PROJECT";

/// A shim script is a few hundred bytes; only its head is read.
constexpr std::size_t kMaxShimBytes = 4096;
/// pyenv-version-file-read cuts each line at 1024 bytes; a version file of more than this is
/// not one.
constexpr std::size_t kMaxVersionFileBytes = std::size_t{64} * 1024;
constexpr std::size_t kMaxPathEntries = 64;
constexpr std::size_t kMaxVersions = 16;
constexpr int kMaxDirDepth = 128;
/// A pyproject.toml is a few kilobytes; only its head is searched for the workspace table.
constexpr std::size_t kMaxPyprojectBytes = std::size_t{256} * 1024;

struct Env {
  std::map<std::string, std::string, std::less<>> vars;
  std::string source;      ///< the environ file read
  std::string read_reason; ///< why it could not be read; empty when it was
  std::optional<std::string> get(std::string_view name) const {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  }
  /// The value when it is an absolute path (the only kind resolvable inside a root).
  std::string abs(std::string_view name) const {
    auto v = get(name);
    return v && !v->empty() && v->front() == '/' ? *v : std::string();
  }
};

Env read_env(const Root& root) {
  Env out;
  EnvironRead env = read_environ(root, python_env_reads());
  out.source = env.source;
  if (!env.ok()) {
    out.read_reason = env.reason;
    return out;
  }
  out.vars = std::move(env.vars);
  return out;
}

/// Joins an absolute directory and a relative tail (probe_util.hpp join_path).
std::string join(std::string_view dir, std::string_view tail) {
  return join_path(dir, tail);
}

std::string normal(std::string_view dir) {
  return std::filesystem::path(dir).lexically_normal().string();
}

/// One `python3` candidate on PATH: an interpreter, or a `#!` script with its head.
struct OnPath {
  std::string path;
  bool script = false;
  std::string head; ///< the script's first kMaxShimBytes bytes
};

/// The `python3` entries of PATH, in order, that are regular files (at most kMaxPathEntries
/// absolute entries; `without` is a directory left out, as pyenv-which's remove_from_path).
std::vector<OnPath> pythons_on_path(const Root& root, std::string_view path,
                                    const std::string& without) {
  std::vector<OnPath> out;
  std::size_t start = 0;
  for (std::size_t n = 0; n < kMaxPathEntries && start < path.size(); ++n) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    const std::string_view dir = path.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir.front() != '/') continue;
    if (!without.empty() && normal(dir) == without) continue;
    OnPath c{join(dir, "python3"), false, {}};
    const UniqueFd fd(root.open_regular(c.path));
    if (!fd) continue;
    std::array<char, kMaxShimBytes> buf{};
    const ssize_t got = ::pread(fd.get(), buf.data(), buf.size(), 0);
    if (got >= 2 && buf[0] == '#' && buf[1] == '!') {
      c.script = true;
      c.head.assign(buf.data(), static_cast<std::size_t>(got));
    }
    out.push_back(std::move(c));
  }
  return out;
}

/// A pyenv shim: pyenv-rehash's prototype ends in `exec "<pyenv>" exec "$program" "$@"`.
bool is_pyenv_shim(const OnPath& c) {
  static const RE2 kExec(R"((?m)^\s*exec\s+"?[^"\s]*pyenv"?\s+exec\s)");
  return c.script && RE2::PartialMatch(c.head, kExec);
}

/// The first interpreter on PATH (scripts passed over); `skipped` names the first script.
std::optional<std::string> first_interpreter(const std::vector<OnPath>& all, std::string& skipped) {
  for (const auto& c : all) {
    if (!c.script) return c.path;
    if (skipped.empty()) skipped = c.path;
  }
  return std::nullopt;
}

/// pyenv-version-file-read (pyenv 2.6): the first whitespace-separated word of each line (lines
/// read 1024 bytes at a time), empty lines and `#` comments skipped, joined by ':'; std::nullopt
/// when the file is absent, empty or names nothing.
std::optional<std::string> read_version_file(const Root& root, const std::string& file) {
  ReadResult r = root.read(file, kMaxVersionFileBytes);
  if (!r.ok()) return std::nullopt;
  std::vector<std::string> words;
  for (auto line : split_lines(r.text)) {
    if (line.size() > 1024) line.resize(1024);
    std::size_t b = line.find_first_not_of(" \t\r\v\f");
    if (b == std::string::npos || line[b] == '#') continue;
    std::size_t e = line.find_first_of(" \t\r\v\f", b);
    words.push_back(line.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (words.size() >= kMaxVersions) break;
  }
  if (words.empty()) return std::nullopt;
  return fmt::format("{}", fmt::join(words, ":"));
}

/// pyenv-version-file's find_local_version_file: DIR/.python-version from `dir` up to /.
std::optional<std::string> find_local_version_file(const Root& root, std::string dir) {
  for (int n = 0; n < kMaxDirDepth && !dir.empty(); ++n) {
    const std::string f = join(dir, ".python-version");
    // `[ -f FILE ]`: a regular file (a directory of that name is passed over).
    if (const UniqueFd fd(root.open_regular(f)); fd) return f;
    if (dir == "/") break;
    dir = parent_dir(dir);
  }
  return std::nullopt;
}

/// A version-sort key: the numbers of "3.11.7" ({3, 11, 7}); std::nullopt for a name with
/// anything else (pyenv-latest leaves out dev, rc, a, b and named versions unless asked).
std::optional<std::vector<long>> numeric_version(std::string_view v) {
  std::vector<long> out;
  for (const auto& part : split_list(v, '.', 8)) {
    if (part.empty() || part.size() > 9 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    out.push_back(std::stol(part));
  }
  if (out.empty()) return std::nullopt;
  return out;
}

/// pyenv-prefix for one version name: `versions/V`, `versions/V` without a `python-` prefix
/// (pyenv-version-name), else the newest installed `V.*` (pyenv-latest -b: a prefix of a
/// release). The name of the directory, or std::nullopt.
std::optional<std::string> installed_version(const Root& root, const std::string& versions,
                                             std::string v) {
  // is_version_safe (pyenv-version-file-read, CVE-2022-35861): a name with '/' (a
  // pyenv-virtualenv `3.11.7/envs/NAME`) must stay inside versions/; none may climb out.
  if (v.empty() || v.front() == '/' || v == "." || v == ".." || v.starts_with("../") ||
      v.ends_with("/..") || v.find("/../") != std::string::npos)
    return std::nullopt;
  if (root.is_dir(join(versions, v))) return v;
  if (v.starts_with("python-")) {
    v = v.substr(7);
    if (!v.empty() && root.is_dir(join(versions, v))) return v;
  }
  auto names = root.list(versions);
  if (!names) return std::nullopt;
  std::optional<std::pair<std::vector<long>, std::string>> best;
  for (const auto& name : *names) {
    if (!name.starts_with(v + ".")) continue;
    auto key = numeric_version(name);
    if (!key) continue;
    if (!best || *key > best->first) best = std::make_pair(*key, name);
  }
  if (best) return best->second;
  return std::nullopt;
}

/// Where a lookup from the working directory starts: $PYENV_DIR, then $PWD (pyenv's order; uv and
/// a shell use the working directory, which PWD names); on the live system without either, the
/// doctor's own working directory.
std::vector<std::string> start_dirs(const Root& root, const Env& env, bool with_pyenv_dir) {
  std::vector<std::string> starts;
  if (with_pyenv_dir && !env.abs(kPyenvDir).empty()) starts.push_back(normal(env.abs(kPyenvDir)));
  if (!env.abs(kPwd).empty()) starts.push_back(normal(env.abs(kPwd)));
  if (starts.empty() && root.is_live()) {
    std::error_code ec;
    auto cwd = std::filesystem::current_path(ec);
    if (!ec) starts.push_back(cwd.string());
  }
  return starts;
}

/// A uv project as `uv run` finds it: the project directory, the directory holding uv.lock (the
/// workspace root: uv writes one lockfile, beside the root's pyproject.toml), and the project
/// environment. uv finds the project as the nearest directory with a pyproject.toml from the
/// working directory up, or from `--project` / UV_PROJECT (relative to the working directory)
/// (https://docs.astral.sh/uv/concepts/projects/layout/, https://docs.astral.sh/uv/reference/cli/
/// `--project`); the environment is the workspace root's `.venv`, or UV_PROJECT_ENVIRONMENT
/// (absolute, or relative to the workspace root)
/// (https://docs.astral.sh/uv/concepts/projects/config/#project-environment-path). UV_NO_PROJECT
/// (`--no-project`) turns discovery off.
struct UvProject {
  std::string dir;      ///< the nearest directory with a pyproject.toml
  std::string lock_dir; ///< the directory with uv.lock (dir or a workspace root above it); empty
                        ///< when none: a project uv has never locked
  std::string venv;     ///< the project environment's directory
  bool venv_ok = false; ///< it holds a pyvenv.cfg (a venv uv has created)
  std::string via;      ///< "the working directory D" or "UV_PROJECT=D"
};

/// Whether DIR's pyproject.toml declares a uv workspace (a `[tool.uv.workspace]` table line; the
/// file's first kMaxPyprojectBytes read).
bool is_uv_workspace_root(const Root& root, const std::string& dir) {
  const ReadResult r = root.read(join(dir, "pyproject.toml"), kMaxPyprojectBytes);
  if (!r.ok()) return false;
  static const RE2 kTable(R"re((?m)^\s*\[\s*tool\s*\.\s*uv\s*\.\s*workspace\s*\]\s*(#.*)?$)re");
  return RE2::PartialMatch(r.text, kTable);
}

std::optional<UvProject> find_uv_project(const Root& root, const Env& env) {
  if (auto no = env.get(kUvNoProject); no && !no->empty() && *no != "0" && *no != "false")
    return std::nullopt;
  const auto starts = start_dirs(root, env, false);
  std::string dir;
  std::string via;
  if (auto proj = env.get(kUvProject); proj && !proj->empty()) {
    if (proj->front() == '/')
      dir = normal(*proj);
    else if (!starts.empty())
      dir = normal(join(starts.front(), *proj));
    else
      return std::nullopt;
    via = fmt::format("UV_PROJECT={}", *proj);
  } else {
    if (starts.empty()) return std::nullopt;
    dir = starts.front();
    via = fmt::format("the working directory {}", dir);
  }
  UvProject p;
  p.via = via;
  for (int n = 0; n < kMaxDirDepth && !dir.empty(); ++n) {
    if (root.exists(join(dir, "pyproject.toml"))) {
      if (p.dir.empty()) p.dir = dir;
      if (root.exists(join(dir, "uv.lock"))) {
        // Above the project, only a workspace root owns it: a pyproject.toml with a
        // [tool.uv.workspace] table (uv docs: concepts/projects/workspaces); any other project
        // above is a separate one, and the nearest project has no lockfile of its own.
        if (dir == p.dir || is_uv_workspace_root(root, dir)) p.lock_dir = dir;
        break;
      }
    }
    if (dir == "/") break;
    dir = parent_dir(dir);
  }
  if (p.dir.empty()) return std::nullopt;
  const std::string base = p.lock_dir.empty() ? p.dir : p.lock_dir;
  p.venv = join(base, ".venv");
  if (auto v = env.get(kUvProjectEnvironment); v && !v->empty())
    p.venv = v->front() == '/' ? normal(*v) : normal(join(base, *v));
  p.venv_ok = root.exists(join(p.venv, "pyvenv.cfg"));
  return p;
}

/// A uv project environment the interpreter found is not, which the doctor names and does not
/// judge: one uv has not locked (no uv.lock: the project may not be uv's, and a plain `python3`
/// is what its owner runs). Empty when there is none, it is `python`'s own, or it was chosen.
std::string uv_note(const Root& root, const Env& env, const std::string& python) {
  const auto p = find_uv_project(root, env);
  if (!p || !p->venv_ok || python.starts_with(p->venv + "/")) return {};
  return fmt::format("; not judged: {}, the environment `uv run` would use in {} (no uv.lock: "
                     "uv has not managed this project; activate it or pass --python {}/bin/python "
                     "to judge it)",
                     p->venv, p->dir, p->venv);
}

PythonChoice resolve_pyenv(const Root& root, const Env& env, const OnPath& shim) {
  // PYENV_ROOT: the shim exports the root it was made for before it runs `pyenv exec`
  // (pyenv-rehash create_prototype_shim), which wins over the caller's; the shims live in
  // $PYENV_ROOT/shims; pyenv's own default is $HOME/.pyenv (libexec/pyenv).
  static const RE2 kRoot(R"re((?m)^\s*export\s+PYENV_ROOT="([^"$`\\]{1,1000})"\s*$)re");
  std::string pyenv_root;
  std::string root_basis;
  const std::string shim_dir = parent_dir(shim.path);
  if (std::string baked; RE2::PartialMatch(shim.head, kRoot, &baked) && baked.front() == '/') {
    pyenv_root = normal(baked);
    root_basis = "exported by the shim";
  } else if (shim_dir.ends_with("/shims")) {
    pyenv_root = parent_dir(shim_dir);
    root_basis = "the shim's directory";
  } else if (!env.abs(kPyenvRoot).empty()) {
    pyenv_root = normal(env.abs(kPyenvRoot));
    root_basis = "$PYENV_ROOT";
  } else if (!env.abs(kHome).empty()) {
    pyenv_root = join(env.abs(kHome), ".pyenv");
    root_basis = "$HOME/.pyenv";
  }
  // The version: PYENV_VERSION, else .python-version from PYENV_DIR (else PWD) up, else
  // $PYENV_ROOT/version, else `system` (pyenv-version-name, pyenv-version-file).
  std::string version;
  std::string origin;
  if (auto v = env.get(kPyenvVersion); v && !v->empty()) {
    version = *v;
    origin = "PYENV_VERSION";
  } else {
    const std::vector<std::string> starts = start_dirs(root, env, true);
    std::optional<std::string> file;
    for (const auto& s : starts)
      if ((file = find_local_version_file(root, s))) break;
    if (!file && !pyenv_root.empty()) file = join(pyenv_root, "version");
    if (file) {
      if (auto words = read_version_file(root, *file)) {
        version = *words;
        origin = *file;
      }
    }
    if (version.empty()) {
      version = "system";
      origin = starts.empty() ? "no .python-version (no PWD to start from) and no " +
                                    join(pyenv_root, "version")
                              : "no .python-version from " + starts.front() + " up and no " +
                                    join(pyenv_root, "version");
    }
  }
  const std::string shims = join(pyenv_root, "shims");
  const std::string via = fmt::format("through the pyenv shim {} (PYENV_ROOT {}, {})", shim.path,
                                      pyenv_root, root_basis);
  std::vector<std::string> missing;
  // pyenv-which: each version of the list, then `system`, the first with bin/python3 wins.
  std::vector<std::string> versions = split_list(version, ':', kMaxVersions);
  versions.emplace_back("system");
  for (const auto& v : versions) {
    if (v == "system") {
      const auto without = pythons_on_path(root, env.get(kPath).value_or(""), normal(shims));
      std::string skipped;
      if (auto p = first_interpreter(without, skipped)) {
        PythonChoice c;
        c.python = *p;
        c.kind = PythonKind::pyenv;
        c.basis = fmt::format(
            "pyenv version system (set by {}{}), python3 on PATH without {}: {}, {}", origin,
            missing.empty() ? std::string()
                            : fmt::format("; not installed: {}", fmt::join(missing, ", ")),
            shims, *p, via);
        return c;
      }
      continue;
    }
    const auto name = installed_version(root, join(pyenv_root, "versions"), v);
    const std::string python =
        name ? join(join(join(join(pyenv_root, "versions"), *name), "bin"), "python3") : "";
    if (!name || !root.exists(python)) {
      missing.push_back(v);
      continue;
    }
    PythonChoice c;
    c.python = python;
    c.kind = PythonKind::pyenv;
    c.basis =
        fmt::format("pyenv version {} (set by {}{}), {}",
                    *name == v ? v : fmt::format("{} ({})", *name, v), origin,
                    missing.empty() ? std::string()
                                    : fmt::format("; not installed: {}", fmt::join(missing, ", ")),
                    via);
    return c;
  }
  PythonChoice c;
  c.kind = PythonKind::none;
  c.basis = fmt::format("pyenv version {} (set by {}) is not installed and no system python3 is on "
                        "PATH, {}",
                        version, origin, via);
  return c;
}

} // namespace

const std::vector<std::string>& python_env_reads() {
  static const std::vector<std::string> names = declared_env_reads("framework_deep");
  return names;
}

PythonChoice resolve_python(const Root& root, const std::string& given) {
  PythonChoice c;
  if (!given.empty()) {
    c.kind = PythonKind::given;
    c.python = given.front() == '/' ? given
               : root.is_live()     ? std::filesystem::absolute(given).lexically_normal().string()
                                    : std::string();
    c.basis = "--python " + (c.python.empty() ? given : c.python);
    if (c.python.empty()) {
      c.kind = PythonKind::none;
      c.basis = fmt::format("--python {} is relative; under --root it names no file", given);
    }
    return c;
  }
  const Env env = read_env(root);
  if (!env.read_reason.empty()) {
    c.basis = fmt::format("{} could not be read: {}", env.source, env.read_reason);
    return c;
  }
  if (const std::string venv = env.abs(kVirtualEnv); !venv.empty()) {
    c.kind = PythonKind::virtual_env;
    c.prefix = venv;
    c.python = join(join(venv, "bin"), "python");
    c.basis = fmt::format("VIRTUAL_ENV={} ({})", venv, env.source);
    return c;
  }
  if (const std::string conda = env.abs(kCondaPrefix); !conda.empty()) {
    c.kind = PythonKind::conda;
    c.prefix = conda;
    c.python = join(join(conda, "bin"), "python");
    const auto name = env.get(kCondaDefaultEnv);
    c.basis = fmt::format("CONDA_PREFIX={}{} ({})", conda,
                          name && !name->empty() ? fmt::format(" (conda environment {})", *name)
                                                 : std::string(),
                          env.source);
    return c;
  }
  // No environment is active: a uv project (pyproject.toml and uv.lock upward from the working
  // directory, or from UV_PROJECT) with its environment is what `uv run python train.py` runs in,
  // without activating it (https://docs.astral.sh/uv/concepts/projects/run/: "uv run ... ensures
  // that the command is run in the project environment"). The python3 on PATH is named beside it.
  if (const auto uv = find_uv_project(root, env); uv && !uv->lock_dir.empty() && uv->venv_ok) {
    c.kind = PythonKind::uv_project;
    c.prefix = uv->venv;
    c.python = join(join(uv->venv, "bin"), "python");
    const auto on_path = pythons_on_path(root, env.get(kPath).value_or(""), "");
    c.basis = fmt::format(
        "the uv project environment {}: no VIRTUAL_ENV or CONDA_PREFIX, and `uv run` from {} runs "
        "in the project {} (pyproject.toml{}, uv.lock in {}){} without activating it{}",
        uv->venv, uv->via, uv->dir, uv->lock_dir == uv->dir ? "" : " of a workspace member",
        uv->lock_dir,
        env.get(kUvProjectEnvironment).value_or("").empty()
            ? std::string()
            : fmt::format(", UV_PROJECT_ENVIRONMENT={}", *env.get(kUvProjectEnvironment)),
        on_path.empty() ? std::string()
                        : fmt::format("; a plain python3 would be {}", on_path.front().path));
    return c;
  }
  const auto all = pythons_on_path(root, env.get(kPath).value_or(""), "");
  std::string skipped;
  for (const auto& p : all) {
    if (!p.script) {
      c.kind = PythonKind::path;
      c.python = p.path;
      c.basis = fmt::format("python3 on PATH, {}{}{}", p.path,
                            skipped.empty() ? std::string()
                                            : fmt::format(" (after the script {})", skipped),
                            uv_note(root, env, p.path));
      return c;
    }
    if (is_pyenv_shim(p)) {
      c = resolve_pyenv(root, env, p);
      c.basis += uv_note(root, env, c.python);
      return c;
    }
    if (skipped.empty()) skipped = p.path;
  }
  c.basis = skipped.empty()
                ? fmt::format("no VIRTUAL_ENV, CONDA_PREFIX or python3 on PATH in {}", env.source)
                : fmt::format("no VIRTUAL_ENV, CONDA_PREFIX or python3 interpreter on PATH in {} "
                              "(only the script {})",
                              env.source, skipped);
  c.basis += uv_note(root, env, "");
  return c;
}

} // namespace halo::probes
