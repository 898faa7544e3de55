// SPDX-License-Identifier: MIT
// Which Python interpreter a training run started from this environment gets: one resolution
// for the static framework probe (checks/framework/framework.cpp, reads files) and the deep one
// (checks/framework/framework_deep.cpp, runs the interpreter) and `plan --measure`, so that all of
// them judge the same interpreter (issue 35 §3).
#pragma once

#include <halo/root.hpp>

#include <string>
#include <vector>

namespace halo::probes {

/// How the interpreter was chosen.
enum class PythonKind {
  given,       ///< `--python PATH`
  virtual_env, ///< $VIRTUAL_ENV/bin/python (an activated venv, uv's included)
  conda,       ///< $CONDA_PREFIX/bin/python (an activated conda environment)
  uv_project,  ///< no environment active: the uv project environment `uv run` uses (its .venv)
  pyenv,       ///< a pyenv shim on PATH, resolved to $PYENV_ROOT/versions/V/bin/python3
  path,        ///< the first python3 on PATH that is an interpreter (pyenv's `system` included)
  none,        ///< no interpreter found (`basis` says where the doctor looked)
};

/// The interpreter and why it is the one.
struct PythonChoice {
  /// Absolute path of the interpreter, as the target system names it (resolve it through the
  /// Root to read it); empty for PythonKind::none. For virtual_env and conda the path is named
  /// even when that file is absent (the environment, not the file, decides).
  std::string python;
  PythonKind kind = PythonKind::none;
  /// The environment directory for virtual_env ($VIRTUAL_ENV), conda ($CONDA_PREFIX) and
  /// uv_project (the project environment).
  std::string prefix;
  /// A sentence for a fact's source: "pyenv version 3.11.7 (set by /home/u/proj/.python-version),
  /// through the shim /home/u/.pyenv/shims/python3".
  std::string basis;
};

/// The environment variables the resolution reads (a probe's env_reads): VIRTUAL_ENV,
/// CONDA_PREFIX, CONDA_DEFAULT_ENV, PATH, PYENV_VERSION, PYENV_ROOT, PYENV_DIR, PWD, HOME,
/// UV_PROJECT_ENVIRONMENT, UV_PROJECT, UV_NO_PROJECT: the `env` of the framework_deep probe's
/// entry in checks/framework/facts.json, which the framework probe's `env` includes (both
/// resolve the interpreter; tests/unit/test_fact_declarations.cpp holds it).
const std::vector<std::string>& python_env_reads();

/// Resolves the interpreter of the environment training will see, from `/proc/self/environ`
/// read through `root` (the live process's own environment, or the one recorded in a fixture
/// or bundle) and files read through `root`; nothing is run. In order:
/// 1. `given` (--python; an absolute path inside the root);
/// 2. VIRTUAL_ENV: `$VIRTUAL_ENV/bin/python` (venv(7): activate sets VIRTUAL_ENV and puts its
///    bin/ first on PATH; https://docs.python.org/3/library/venv.html);
/// 3. CONDA_PREFIX: `$CONDA_PREFIX/bin/python` ("CONDA_PREFIX: the path of the active
///    environment", CONDA_DEFAULT_ENV its name: https://docs.conda.io/projects/conda/en/latest/
///    user-guide/tasks/manage-environments.html#activating-an-environment);
/// 4. uv_project: with neither, a uv project found from $PWD (or UV_PROJECT) up, whose
///    pyproject.toml has a uv.lock beside it or in a workspace root above, and whose environment
///    (the `.venv` there, or UV_PROJECT_ENVIRONMENT) holds a pyvenv.cfg: `uv run python train.py`
///    runs that environment's python without activating it
///    (https://docs.astral.sh/uv/concepts/projects/run/); UV_NO_PROJECT turns this off. A project
///    without uv.lock (uv never managed it) is named in `basis` ("not judged: ...") instead;
/// 5. the first `python3` on PATH (execvp(3)). A pyenv shim there (a `#!` script that execs
///    `pyenv exec`, pyenv's libexec/pyenv-rehash) is resolved as pyenv does: the version from
///    PYENV_VERSION, else the first `.python-version` from $PYENV_DIR (else $PWD) up to /
///    (libexec/pyenv-version-file), else `$PYENV_ROOT/version`, else `system`; each file's
///    first word per line, joined by ':' (libexec/pyenv-version-file-read); each version V of the
///    ':'-list in turn, `$PYENV_ROOT/versions/V` (also without a `python-` prefix, or the newest
///    installed `V.*` as pyenv-latest does) whose bin/python3 exists wins, and `system` (always
///    tried last) is python3 on PATH without `$PYENV_ROOT/shims` (libexec/pyenv-which,
///    pyenv-version-name). PYENV_ROOT: the one the shim exports, else the shim directory's
///    parent, else $PYENV_ROOT, else $HOME/.pyenv. Another `#!` script (an asdf shim) is passed
///    over and named in `basis`.
/// PWD under --root is the recorded process's, resolved inside the root.
PythonChoice resolve_python(const Root& root, const std::string& given);

} // namespace halo::probes
