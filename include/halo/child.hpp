// SPDX-License-Identifier: MIT
// The one child-process runner: every program or in-process body the doctor runs in a child (the
// ROCr queries, libkmod's module reading, `--framework-deep`, `plan --measure`, Slurm's scontrol,
// the bounded `slurm` check) goes through run() or run_function(), so the fork, the time limit,
// the kill of the process group, the bounded capture and the reaping exist once.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo::child {

/// What happens when a captured stream passes Limits::max_output_bytes.
enum class Overflow {
  truncate, ///< keep the first max_output_bytes, read and drop the rest, mark the stream truncated
  kill,     ///< stop reading, kill the process group, end with End::output_overflow
};

/// The bounds of one run.
struct Limits {
  /// Wall-clock limit from the fork, milliseconds. When it passes, the child's process group is
  /// killed: SIGTERM first when term_grace > 0, then SIGKILL (kill(2) with a negative pid).
  std::chrono::milliseconds time_limit{10'000};
  /// How long a timed-out child may take to end after SIGTERM before the group gets SIGKILL,
  /// milliseconds; 0 sends SIGKILL at once.
  std::chrono::milliseconds term_grace{0};
  /// The most bytes kept of each captured stream (stdout and stderr each; the pipe of
  /// run_function()).
  std::size_t max_output_bytes = std::size_t{1} << 20;
  Overflow on_overflow = Overflow::truncate;
};

/// Where an exec'd program's standard error goes.
enum class Stderr {
  capture, ///< into Result::err
  merge,   ///< into the stdout pipe (Result::out), in the order written, as `2>&1`
  discard, ///< /dev/null
};

/// The user a program is started as (Options::run_as): the credentials the child takes before
/// execve(2), in the order setgroups(2), setgid(2), setuid(2), so no root group or user is kept.
struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups; ///< the supplementary groups (getgrouplist(3) of the user)
};

/// How run() starts a program.
struct Options {
  Limits limits;
  /// Written to the program's stdin, which is then closed; nullopt: stdin is /dev/null.
  std::optional<std::string> stdin_text;
  Stderr stderr_to = Stderr::capture;
  /// Variables set (or replaced) in the program's environment, which is otherwise the doctor's.
  std::map<std::string, std::string> env_set;
  /// Look a slash-less argv[0] up in $PATH (find_program); false: argv[0] is the path itself
  /// (relative to the working directory), as execv(3) takes it.
  bool search_path = true;
  /// The program's working directory (chdir(2) in the child before execve); empty: the doctor's.
  std::string cwd;
  /// When set, the child takes this identity before execve (root only: setgroups(2) needs
  /// CAP_SETGID, setuid(2) CAP_SETUID); the parent-death signal is set again afterwards, since
  /// prctl(2) clears it when the effective user or group changes. A failed step is
  /// End::not_started naming it, and the program never runs with the doctor's identity.
  std::optional<Identity> run_as;
  /// prctl(PR_SET_NO_NEW_PRIVS, 1) in the child: execve(2) then grants no privilege (set-user-ID,
  /// set-group-ID and file capabilities are ignored; Documentation/userspace-api/no_new_privs.rst).
  bool no_new_privs = false;
  /// Called in the doctor's process for each complete newline-terminated line of the program's
  /// stdout (without the newline) as soon as it has been read, in order, while the program still
  /// runs (a progress line of a long child); the same lines are in Result::out at the end. Only
  /// what fits under Limits::max_output_bytes is passed on. Not called for stderr, not for a last
  /// line without a newline. It runs inside the supervision loop: it must return quickly and not
  /// throw (an exception ends the run: the child's group is killed and reaped, and it propagates).
  std::function<void(std::string_view)> on_line;
};

/// How a run ended.
enum class End {
  not_started,     ///< the program was not found or could not be exec'd, or pipe/fork failed
  exited,          ///< exit(3)/_exit(2): Result::exit_code
  signalled,       ///< killed by a signal it did not get from the runner: Result::signal
  timed_out,       ///< past Limits::time_limit; the runner killed the process group
  output_overflow, ///< wrote more than Limits::max_output_bytes with Overflow::kill; killed
};

/// What a run produced. out/err hold at most Limits::max_output_bytes each.
struct Result {
  End end = End::not_started;
  int exit_code = -1;      ///< the exit status when the child exited (End::exited; may also be
                           ///< set for timed_out/output_overflow when it exited before the kill)
  int signal = 0;          ///< the signal that ended it (SIGKILL/SIGTERM from the runner included)
  int start_errno = 0;     ///< errno of the failed step when End::not_started
  std::string start_error; ///< when End::not_started: "pipe2: ...", "fork: ...",
                           ///< "PROG: not found or not executable", "PROG: cannot be run: ..."
  std::string out;         ///< stdout (the pipe for run_function)
  std::string err;         ///< stderr when Stderr::capture
  bool out_truncated = false; ///< out passed the cap (Overflow::truncate dropped the rest)
  bool err_truncated = false; ///< err passed the cap

  bool started() const { return end != End::not_started; }
  /// Exited with status 0 within the limits.
  bool ok() const { return end == End::exited && exit_code == 0; }
};

/// Runs `argv` with fork and execve: no shell. argv[0] is a path, or a name looked up in $PATH as
/// execvp(3) does (find_program, unless Options::search_path is false) before the fork, so "not
/// found" is a clear End::not_started. The
/// child has its own process group (setpgid(2)), the default action for every signal the doctor
/// handles, an empty signal mask, and is killed when the doctor dies (prctl(2)
/// PR_SET_PDEATHSIG). An exec failure comes back through a close-on-exec pipe as
/// End::not_started with its errno. Never throws for the program's failures; reaps it on every
/// way out (an exception such as bad_alloc included).
Result run(const std::vector<std::string>& argv, const Options& options);

/// Forks and runs `body(fd)` in the child: code of the doctor's own (ROCr, libkmod) that may hang
/// or crash. `fd` is the write end of the pipe captured as Result::out; the child's standard
/// streams are the doctor's. The child gets the same process group, signal defaults and death
/// signal as in run(), and ends with _exit(0) after body returns (70 when it throws), so no
/// destructors or atexit handlers of the parent run twice.
Result run_function(const std::function<void(int fd)>& body, const Limits& limits);

/// How the run ended, in words, for a message that names what ran ("the check {}"): "could not
/// start the child process (fork: ...)", "hung: no answer within the 10 s time limit (killed)",
/// "wrote more output than expected (killed)", "crashed with signal 11 (Segmentation fault)",
/// "crashed: the process exited with status 70", "ended normally". `time_limit_s` is the limit
/// the run had, in seconds.
std::string describe_end(const Result& r, double time_limit_s);

/// The complete newline-terminated lines of `text`, without their newlines; a last line without
/// a newline (cut by a crash or by the cap) is left out.
std::vector<std::string> complete_lines(std::string_view text);

/// True when `path` is a regular file this process may execute (stat(2), access(2) X_OK).
bool executable(const std::string& path);

/// execvp(3)'s search: `name` itself when it has a slash, else the first executable `DIR/name` in
/// $PATH (an empty entry is the current directory), or in
/// /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin when PATH is unset or empty.
/// "" when there is none.
std::string find_program(const std::string& name);

/// Writes all of `text` to `fd`, retrying on EINTR and short writes; false on error, with errno
/// set (EIO when write(2) made no progress).
bool write_all(int fd, std::string_view text);

} // namespace halo::child
