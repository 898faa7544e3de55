// SPDX-License-Identifier: MIT
// Running untrusted library code (ROCr, libkmod) or a program (the user's Python) in a child with a
// time limit: whatever it does (hang, crash, abort), the doctor's own process only reads lines
// from a pipe and goes on. The probes' view of the core runner (include/halo/child.hpp).
#pragma once

#include <halo/child.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace halo::probes {

using child::executable;
using child::write_all;

/// The runs below return the core runner's child::Result (include/halo/child.hpp): how the child
/// ended (`end`, `exit_code`, `signal`, `start_error`) and its output `out`, whose complete lines
/// child::complete_lines gives; child::describe_end says the ending in words.

/// Forks; the child runs `body(fd)` (which writes newline-terminated messages to fd) and ends
/// with _exit(0) (70 if body throws), through the core runner (child::run_function: its own
/// process group, default crash signals, killed with the doctor). The parent reads the pipe until
/// EOF or until `timeout_s` seconds have passed, then kills the child's group (SIGKILL) if it is
/// still running and reaps it. More than `max_bytes` of output kills it too
/// (child::End::output_overflow).
child::Result run_in_child(const std::function<void(int fd)>& body, double timeout_s,
                           std::size_t max_bytes = 8u << 20);

/// Runs the program `argv` (no shell; argv[0] a path) through the core runner (child::run) with
/// stdin and stderr on /dev/null and stdout read as lines, under the same limits and with the
/// same ending as run_in_child. A program that cannot be exec'd is child::End::not_started, with
/// the errno text in start_error.
child::Result run_program(const std::vector<std::string>& argv, double timeout_s,
                          std::size_t max_bytes);

/// A file put into run_python's private directory before the interpreter starts.
struct PrivateFile {
  std::string name;    ///< a plain file name (no '/'), e.g. "config.json"
  std::string content; ///< written with mode 0644
};

/// What run_python ran and how.
struct PythonRun {
  child::Result run; ///< how the interpreter ended and what it printed (stdout)
  /// How it was confined, for a fact's source or a report line: "-P, PYTHONSAFEPATH=1, a
  /// private empty directory, no new privileges, as uid 1000 gid 1000 (SUDO_UID/SUDO_GID),
  /// HOME=/home/u; kept PYTHONPATH=/opt/lib".
  std::string how;
};

/// Runs the user's interpreter `python` on `script` (`python -P -c SCRIPT ARGS...`) so that
/// nothing in the caller's working directory can be imported, as the user who invoked sudo:
/// - the safe path: `-P` and PYTHONSAFEPATH=1 (Python 3.11+: sys.path gets no '' or script
///   directory; https://docs.python.org/3/using/cmdline.html#cmdoption-P). An interpreter that
///   rejects -P (before 3.11: "Unknown option: -P", exit 2, nothing on stdout) is run once more
///   without it; for that case the script's first line removes the '' that `-c` puts first on
///   sys.path, and the working directory is empty anyway;
/// - the working directory is a fresh private directory (mkdtemp(3) under $TMPDIR or /tmp)
///   holding only `files`, removed again on every return and exception, and by a handler when
///   SIGTERM, SIGINT, SIGHUP, SIGQUIT or a crash signal ends the doctor (only SIGKILL leaves it);
/// - PR_SET_NO_NEW_PRIVS; HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1 (nothing is downloaded);
///   PYTHONDONTWRITEBYTECODE=1 (nothing is written beside a module);
/// - when the doctor's effective uid is 0 and SUDO_UID (and SUDO_GID) name another user, as
///   that user: their supplementary groups (getgrouplist(3)), gid, uid, and HOME from their
///   passwd entry, so their user site (~/.local) is the one judged; judging an environment
///   never needs root. PYTHONPATH, PYTHONUSERBASE and PYTHONNOUSERSITE are kept as they are.
/// stdin and stderr are /dev/null; stdout is read as lines, under the limits of run_program.
/// `on_line`, when set, also gets each complete stdout line as the child writes it
/// (child::Options::on_line: a progress line of a run that takes minutes); the lines are untrusted
/// text. An error making the directory or its files is child::End::not_started with the reason.
PythonRun run_python(const std::string& python, const std::string& script,
                     const std::vector<std::string>& args, double timeout_s, std::size_t max_bytes,
                     const std::vector<PrivateFile>& files = {},
                     const std::function<void(std::string_view)>& on_line = {});

/// The interpreter the training run uses and how it was chosen
/// (checks/framework/framework_deep.cpp): `given` (--python) when set, else
/// $VIRTUAL_ENV/bin/python, else $CONDA_PREFIX/bin/python, else python3 on PATH; {"", reason} when
/// there is none.
std::pair<std::string, std::string> choose_python(const std::string& given);

} // namespace halo::probes
