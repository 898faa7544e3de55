// SPDX-License-Identifier: MIT
// Running untrusted library code (ROCr, libkmod) or a program (the user's Python) in a child with a
// time limit: whatever it does (hang, crash, abort), the doctor's own process only reads lines
// from a pipe and goes on. The probes' view of the core runner (include/halo/child.hpp).
#pragma once

#include <halo/child.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace halo::probes {

/// What a child run produced: the complete newline-terminated lines the child wrote to its pipe
/// and how it ended.
struct ChildRun {
  std::vector<std::string> lines; ///< complete lines, without the newline
  bool started = false;           ///< the child ran (fork, and execve for run_program, succeeded)
  std::string start_error;        ///< when !started: pipe/fork/execve failure, with strerror text
  bool timed_out = false;         ///< killed with SIGKILL after the time limit
  bool too_much_output = false;   ///< killed because it wrote more than the output cap
  bool exited = false;            ///< ended through exit/_exit
  int exit_code = 0;              ///< when exited
  int term_signal = 0;            ///< when killed by a signal (including our SIGKILL)
};

using child::executable;
using child::write_all;

/// Forks; the child runs `body(fd)` (which writes newline-terminated messages to fd) and ends
/// with _exit(0) (70 if body throws), through the core runner (child::run_function: its own
/// process group, default crash signals, killed with the doctor). The parent reads the pipe until
/// EOF or until `timeout_s` seconds have passed, then kills the child's group (SIGKILL) if it is
/// still running and reaps it. More than `max_bytes` of output kills it too (too_much_output).
ChildRun run_in_child(const std::function<void(int fd)>& body, double timeout_s,
                      std::size_t max_bytes = 8u << 20);

/// Runs the program `argv` (no shell; argv[0] a path) through the core runner (child::run) with
/// stdin and stderr on /dev/null and stdout read as lines, under the same limits and with the
/// same ending as run_in_child. A program that cannot be exec'd is !started, with the errno text.
ChildRun run_program(const std::vector<std::string>& argv, double timeout_s, std::size_t max_bytes);

/// How the child ended, in words: "killed after the 10 s time limit", "crashed with signal 11
/// (Segmentation fault)", "exited with status 1", "ended normally".
std::string describe_end(const ChildRun& run, double timeout_s);

/// The interpreter the training run uses and how it was chosen
/// (checks/framework/framework_deep.cpp): `given` (--python) when set, else
/// $VIRTUAL_ENV/bin/python, else $CONDA_PREFIX/bin/python, else python3 on PATH; {"", reason} when
/// there is none.
std::pair<std::string, std::string> choose_python(const std::string& given);

} // namespace halo::probes
