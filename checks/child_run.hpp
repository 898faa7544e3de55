// SPDX-License-Identifier: MIT
// Running untrusted library code (ROCr) in a forked child with a time limit: whatever it does
// (hang, crash, abort), the doctor's own process only reads lines from a pipe and goes on.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace halo::probes {

/// What a child run produced: the complete newline-terminated lines the child wrote to its pipe
/// and how it ended.
struct ChildRun {
  std::vector<std::string> lines; ///< complete lines, without the newline
  bool started = false;           ///< fork succeeded
  std::string start_error;        ///< pipe/fork failure (strerror text) when !started
  bool timed_out = false;         ///< killed with SIGKILL after the time limit
  bool too_much_output = false;   ///< killed because it wrote more than the output cap
  bool exited = false;            ///< ended through exit/_exit
  int exit_code = 0;              ///< when exited
  int term_signal = 0;            ///< when killed by a signal (including our SIGKILL)
};

/// Writes all of `text` to `fd`, retrying on EINTR and short writes; false on error.
bool write_all(int fd, const std::string& text);

/// Forks; the child resets the crash signals (SIGSEGV, SIGABRT, ...) to their default action, runs
/// `body(fd)` (which writes newline-terminated messages to fd) and ends with _exit(0) (70 if body
/// throws), so no destructors or atexit handlers of the parent run twice. The parent reads
/// the pipe until EOF or until `timeout_s` seconds have passed, then kills the child (SIGKILL)
/// if it is still running and reaps it. At most `max_bytes` of output are kept.
ChildRun run_in_child(const std::function<void(int fd)>& body, double timeout_s,
                      std::size_t max_bytes = 8u << 20);

/// How the child ended, in words: "killed after the 10 s time limit", "crashed with signal 11
/// (Segmentation fault)", "exited with status 1", "ended normally".
std::string describe_end(const ChildRun& run, double timeout_s);

/// True when `path` is a regular file this process may execute.
bool executable(const std::string& path);

/// The interpreter the training run uses and how it was chosen, on the live system:
/// resolve_python(Root("/"), given) (checks/python_env.hpp) as {path, basis}; {"", reason} when
/// there is none.
std::pair<std::string, std::string> choose_python(const std::string& given);

} // namespace halo::probes
