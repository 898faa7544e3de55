// SPDX-License-Identifier: MIT
// The one child-process runner (include/halo/child.hpp): fork, then execve or a body of the
// doctor's own; one poll loop that feeds stdin, reads the captured pipes up to their caps and
// watches the time limit; one kill of the process group; one reaping. Modelled on ccache's one
// process runner (src/ccache/execute.cpp): everything the child needs is built before fork(2),
// after it only async-signal-safe calls run (signal-safety(7)) until execve(2) or the body.
#include <halo/child.hpp>
#include <halo/root.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

// environ (environ(7), the process environment) is declared by <unistd.h> under _GNU_SOURCE.

namespace halo::child {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// The exit status of a child whose body threw, or that found its parent gone (EX_SOFTWARE).
constexpr int kChildFailed = 70;
/// The exit status of a child whose execve failed (the shell's "command not found" status).
constexpr int kExecFailed = 127;
/// How often the runner looks whether a child that closed its pipes has exited, milliseconds.
constexpr int kReapPollMs = 5;

/// The step of a run()'s child that failed before the program ran, reported with its errno.
enum class StartStep : int { execve, chdir, setgroups, setgid, setuid, no_new_privs };

/// Milliseconds left until `deadline` (0 when it has passed), at most an hour for one poll(2).
int remaining_ms(Clock::time_point deadline) {
  // Rounded up: poll(2) would otherwise wake up to a millisecond early, and the child would be
  // stopped before its whole time limit had passed.
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return static_cast<int>(std::min<long long>(left.count(), 1000LL * 60 * 60));
}

/// Moves `fd` above the standard streams (fcntl(2) F_DUPFD_CLOEXEC): when the doctor runs with
/// stdin, stdout or stderr closed, a new pipe can get descriptor 0, 1 or 2, and the child's
/// dup2(2) onto those numbers would then clobber it or leave it close-on-exec.
int above_stdio(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  ::close(fd);
  return moved;
}

/// A close-on-exec pipe, both ends above the standard streams; errno set when it failed.
bool make_pipe(UniqueFd& read_end, UniqueFd& write_end) {
  std::array<int, 2> fds = {-1, -1};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) return false;
  read_end = UniqueFd(above_stdio(fds[0]));
  write_end = UniqueFd(above_stdio(fds[1]));
  return read_end.get() >= 0 && write_end.get() >= 0;
}

/// The child's first steps in both variants (async-signal-safe calls only).
void child_prelude(pid_t parent) {
  // Tied to the parent: killed when it dies (prctl(2) PR_SET_PDEATHSIG, kept across execve for
  // a program that is not set-user-ID), and exiting at once if the parent died before the prctl
  // took effect (then getppid() is no longer the parent).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(kChildFailed);
  // Its own process group, so the runner can kill it with everything it started (kill(2) with a
  // negative pid) and a terminal's Ctrl-C reaches only the doctor, which then kills it.
  ::setpgid(0, 0);
  // The parent's handlers (a test framework's, a sanitizer's, the bundle clean-up's) must not
  // run in the child: a crash there is to end the child with its signal, which the runner
  // reports, and a termination signal simply ends it. execve(2) resets handled signals itself,
  // but not ignored ones nor the mask.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  for (const int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, SIGTERM, SIGINT,
                        SIGHUP, SIGQUIT, SIGPIPE})
    ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

/// dup2(2) that also works when `fd` already is `target` (then only clears close-on-exec).
void move_to(int fd, int target) {
  if (fd == target)
    ::fcntl(fd, F_SETFD, 0);
  else
    ::dup2(fd, target);
}

/// write(2) to a pipe whose reader may be gone, without the SIGPIPE that would end the doctor:
/// the signal is blocked for this thread during the write and a SIGPIPE the write raised is
/// taken back with sigtimedwait(2) (pthread_sigmask(3); the approach of git's and curl's
/// writers to a child).
ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_set;
  ::sigemptyset(&pipe_set);
  ::sigaddset(&pipe_set, SIGPIPE);
  sigset_t pending;
  ::sigemptyset(&pending);
  ::sigpending(&pending);
  const bool was_pending = ::sigismember(&pending, SIGPIPE) == 1;
  sigset_t old;
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  const ssize_t n = ::write(fd, data, size);
  const int err = errno;
  if (n < 0 && err == EPIPE && !was_pending) {
    const timespec zero{};
    while (::sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return n;
}

/// One pipe the runner reads.
struct Stream {
  UniqueFd fd;
  std::string* sink = nullptr;
  bool* truncated = nullptr; ///< null: the stream has no mark (the exec-error pipe)
  std::size_t cap = 0;
  bool kill_on_overflow = false;
  /// Options::on_line for stdout: each complete line of `sink` past `scanned` as it arrives.
  const std::function<void(std::string_view)>* on_line = nullptr;
  std::size_t scanned = 0; ///< where the next line of `sink` starts
};

/// Passes the complete lines of `s.sink` not yet passed to `s.on_line`.
void deliver_lines(Stream& s) {
  if (s.on_line == nullptr || !*s.on_line) return;
  const std::string_view text(*s.sink);
  for (auto nl = text.find('\n', s.scanned); nl != std::string_view::npos;
       nl = text.find('\n', s.scanned)) {
    (*s.on_line)(text.substr(s.scanned, nl - s.scanned));
    s.scanned = nl + 1;
  }
}

/// The child of one run: killed (its whole group) and reaped on every way out of the runner.
class Child {
public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&&) = delete;
  Child& operator=(Child&&) = delete;
  ~Child() {
    if (!reaped_) kill_and_reap(std::chrono::milliseconds(0));
  }

  /// waitpid(2) WNOHANG: true once the child has exited and is reaped.
  bool try_reap() {
    const pid_t w = ::waitpid(pid_, &status_, WNOHANG);
    if (w == pid_) reaped_ = true;
    // ECHILD: not our child any more (reaped elsewhere, SIGCHLD ignored): its pid may already
    // name another process, so it is never signalled again; its status is unknown (0).
    if (w < 0 && errno != EINTR) reaped_ = true;
    return reaped_;
  }

  /// Ends the child's process group: SIGTERM and up to `grace` for the child to end, then
  /// SIGKILL; then reaps the child. The child is waited for with WNOWAIT during the grace, so
  /// its pid stays a zombie, and the negative-pid kill cannot reach a process group that reused
  /// the number.
  void kill_and_reap(std::chrono::milliseconds grace) {
    if (grace.count() > 0) {
      ::kill(-pid_, SIGTERM);
      ::kill(pid_, SIGTERM);
      const Clock::time_point until = Clock::now() + grace;
      while (Clock::now() < until) {
        siginfo_t info{};
        if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == pid_)
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(kReapPollMs));
      }
    }
    ::kill(-pid_, SIGKILL); // the process group: what the child started goes too
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }

  int status() const { return status_; }

private:
  pid_t pid_;
  int status_ = 0;
  bool reaped_ = false;
};

/// The one supervision loop: feeds `stdin_text` to `stdin_fd` (closing it when done), reads every
/// stream until all are at end of file or the limits are passed, then waits for the child to exit
/// within the time limit and kills its group otherwise. Fills end, exit_code, signal.
void supervise(Child& child, std::vector<Stream>& streams, UniqueFd stdin_fd,
               std::string_view stdin_text, const Limits& limits, Clock::time_point deadline,
               Result& res) {
  bool timed_out = false;
  bool overflow = false;
  std::size_t fed = 0;
  std::array<char, 8192> chunk{};
  std::vector<pollfd> polled;
  std::vector<std::size_t> which; // index into streams, or streams.size() for stdin
  while (!overflow) {
    polled.clear();
    which.clear();
    for (std::size_t i = 0; i < streams.size(); ++i)
      if (streams[i].fd.get() >= 0) {
        polled.push_back({streams[i].fd.get(), POLLIN, 0});
        which.push_back(i);
      }
    if (polled.empty()) break; // every stream at end of file: the child closed its ends
    if (stdin_fd.get() >= 0) {
      polled.push_back({stdin_fd.get(), POLLOUT, 0});
      which.push_back(streams.size());
    }
    const int wait_ms = remaining_ms(deadline);
    if (wait_ms == 0) {
      timed_out = true;
      break;
    }
    const int r = ::poll(polled.data(), polled.size(), wait_ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (r == 0) continue; // the deadline is checked at the top of the loop
    for (std::size_t k = 0; k < polled.size() && !overflow; ++k) {
      if (polled[k].revents == 0) continue;
      if (which[k] == streams.size()) {
        const std::string_view left = stdin_text.substr(fed);
        const ssize_t n = write_without_sigpipe(stdin_fd.get(), left.data(), left.size());
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) {
          stdin_fd = UniqueFd(); // the child closed its stdin (EPIPE): it reads no more
          continue;
        }
        fed += static_cast<std::size_t>(n);
        if (fed == stdin_text.size()) stdin_fd = UniqueFd(); // end of file for the child
        continue;
      }
      Stream& s = streams[which[k]];
      const ssize_t n = ::read(s.fd.get(), chunk.data(), chunk.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        s.fd = UniqueFd(); // end of file (or a read error: nothing more will come)
        continue;
      }
      const auto got = static_cast<std::size_t>(n);
      const std::size_t room = s.cap - std::min(s.cap, s.sink->size());
      s.sink->append(chunk.data(), std::min(got, room));
      deliver_lines(s);
      if (got > room) {
        if (s.truncated != nullptr) *s.truncated = true;
        if (s.kill_on_overflow) overflow = true;
      }
    }
  }
  // A child past its limit is killed while its pipes are still open: closing them first would
  // let it die of SIGPIPE on its next write instead, and the result would name that signal.
  bool reaped = false;
  if (timed_out || overflow) {
    child.kill_and_reap(limits.term_grace);
    reaped = true;
  }
  stdin_fd = UniqueFd();
  for (auto& s : streams)
    s.fd = UniqueFd();

  if (!reaped) {
    // The pipes are closed; the child has the rest of the time limit to exit.
    while (!(reaped = child.try_reap())) {
      if (remaining_ms(deadline) == 0) {
        timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(kReapPollMs));
    }
  }
  if (!reaped) child.kill_and_reap(limits.term_grace);
  const int status = child.status();
  if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) res.signal = WTERMSIG(status);
  if (timed_out)
    res.end = End::timed_out;
  else if (overflow)
    res.end = End::output_overflow;
  else
    res.end = WIFSIGNALED(status) ? End::signalled : End::exited;
}

Result not_started(int err, std::string what) {
  Result res;
  res.start_errno = err;
  res.start_error = std::move(what);
  return res;
}

Result system_error(const char* call) {
  const int err = errno;
  return not_started(err, fmt::format("{}: {}", call, std::strerror(err)));
}

} // namespace

Result run(const std::vector<std::string>& argv, const Options& options) {
  if (argv.empty()) return not_started(EINVAL, "no command");
  const std::string program =
      options.search_path ? find_program(argv[0]) : (executable(argv[0]) ? argv[0] : std::string());
  if (program.empty())
    return not_started(ENOENT, fmt::format("{}: not found or not executable", argv[0]));
  const Clock::time_point deadline = Clock::now() + options.limits.time_limit;

  // Everything the child needs is built before fork: after fork only async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos && options.env_set.contains(std::string(kv.substr(0, eq))))
      continue;
    env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : options.env_set)
    env_strings.push_back(fmt::format("{}={}", k, v));
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& s : env_strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  cargv.reserve(args.size() + 1);
  for (auto& a : args)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);

  UniqueFd out_r;
  UniqueFd out_w;
  UniqueFd err_r;
  UniqueFd err_w;
  UniqueFd in_r;
  UniqueFd in_w;
  UniqueFd exec_r;
  UniqueFd exec_w;
  if (!make_pipe(out_r, out_w)) return system_error("pipe2");
  if (options.stderr_to == Stderr::capture && !make_pipe(err_r, err_w))
    return system_error("pipe2");
  if (options.stdin_text && !make_pipe(in_r, in_w)) return system_error("pipe2");
  // The exec failure pipe: the child writes errno here; a good execve closes it (O_CLOEXEC).
  if (!make_pipe(exec_r, exec_w)) return system_error("pipe2");
  const UniqueFd devnull(above_stdio(::open("/dev/null", O_RDWR | O_CLOEXEC)));
  if (in_w.get() >= 0) ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);

  const std::string cwd = options.cwd;
  std::vector<gid_t> groups;
  if (options.run_as) {
    groups = options.run_as->groups;
    if (groups.empty()) groups.push_back(options.run_as->gid);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return system_error("fork");
  if (pid == 0) {
    child_prelude(parent);
    const int in = in_r.get() >= 0 ? in_r.get() : devnull.get();
    if (in >= 0) move_to(in, STDIN_FILENO);
    move_to(out_w.get(), STDOUT_FILENO);
    if (options.stderr_to == Stderr::capture)
      move_to(err_w.get(), STDERR_FILENO);
    else if (options.stderr_to == Stderr::merge)
      move_to(out_w.get(), STDERR_FILENO);
    else if (devnull.get() >= 0)
      move_to(devnull.get(), STDERR_FILENO);
    // Each step that fails reports {step, errno} and ends the child before execve.
    const auto fail_step = [&exec_w](StartStep step) {
      const std::array<int, 2> report = {static_cast<int>(step), errno};
      [[maybe_unused]] const ssize_t n = ::write(exec_w.get(), report.data(), sizeof report);
      ::_exit(kExecFailed);
    };
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) fail_step(StartStep::chdir);
    if (options.run_as) {
      if (::setgroups(groups.size(), groups.data()) != 0) fail_step(StartStep::setgroups);
      if (::setgid(options.run_as->gid) != 0) fail_step(StartStep::setgid);
      if (::setuid(options.run_as->uid) != 0) fail_step(StartStep::setuid);
      // prctl(2): PR_SET_PDEATHSIG is cleared when the effective user or group ID changes.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(kChildFailed);
    }
    if (options.no_new_privs && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
      fail_step(StartStep::no_new_privs);
    ::execve(program.c_str(), cargv.data(), envp.data());
    fail_step(StartStep::execve);
  }
  Child child(pid);
  ::setpgid(pid, pid); // both sides set it, so a kill cannot race the child's own call
  out_w = UniqueFd();
  err_w = UniqueFd();
  in_r = UniqueFd();
  exec_w = UniqueFd();

  Result res;
  std::string exec_errno_bytes;
  std::vector<Stream> streams;
  const bool kill_over = options.limits.on_overflow == Overflow::kill;
  streams.push_back({std::move(out_r), &res.out, &res.out_truncated,
                     options.limits.max_output_bytes, kill_over, &options.on_line});
  if (err_r.get() >= 0)
    streams.push_back({std::move(err_r), &res.err, &res.err_truncated,
                       options.limits.max_output_bytes, kill_over});
  streams.push_back({std::move(exec_r), &exec_errno_bytes, nullptr, 2 * sizeof(int), false});
  supervise(child, streams, std::move(in_w), options.stdin_text.value_or(std::string()),
            options.limits, deadline, res);
  if (exec_errno_bytes.size() == 2 * sizeof(int)) {
    std::array<int, 2> report{};
    std::memcpy(report.data(), exec_errno_bytes.data(), sizeof report);
    const int e = report[1];
    std::string step;
    switch (static_cast<StartStep>(report[0])) {
    case StartStep::chdir:
      step = fmt::format("chdir {}: ", cwd);
      break;
    case StartStep::setgroups:
      step = "setgroups: ";
      break;
    case StartStep::setgid:
      step = fmt::format("setgid {}: ", options.run_as ? options.run_as->gid : 0);
      break;
    case StartStep::setuid:
      step = fmt::format("setuid {}: ", options.run_as ? options.run_as->uid : 0);
      break;
    case StartStep::no_new_privs:
      step = "PR_SET_NO_NEW_PRIVS: ";
      break;
    case StartStep::execve:
      break;
    }
    return not_started(e, fmt::format("{}: cannot be run: {}{}", program, step, std::strerror(e)));
  }
  return res;
}

Result run_function(const std::function<void(int fd)>& body, const Limits& limits) {
  const Clock::time_point deadline = Clock::now() + limits.time_limit;
  UniqueFd out_r;
  UniqueFd out_w;
  if (!make_pipe(out_r, out_w)) return system_error("pipe2");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return system_error("fork");
  if (pid == 0) {
    child_prelude(parent);
    out_r = UniqueFd();
    try {
      body(out_w.get());
    } catch (...) {
      ::_exit(kChildFailed);
    }
    ::_exit(0);
  }
  Child child(pid);
  ::setpgid(pid, pid); // also here: whichever of the two runs first makes the group
  out_w = UniqueFd();
  Result res;
  std::vector<Stream> streams;
  streams.push_back({std::move(out_r), &res.out, &res.out_truncated, limits.max_output_bytes,
                     limits.on_overflow == Overflow::kill});
  supervise(child, streams, UniqueFd(), {}, limits, deadline, res);
  return res;
}

std::string describe_end(const Result& r, double time_limit_s) {
  switch (r.end) {
  case End::not_started:
    return fmt::format("could not start the child process ({})", r.start_error);
  case End::timed_out:
    return fmt::format("hung: no answer within the {:g} s time limit (killed)", time_limit_s);
  case End::output_overflow:
    return "wrote more output than expected (killed)";
  case End::signalled: {
    const char* name = ::strsignal(r.signal);
    return fmt::format("crashed with signal {} ({})", r.signal,
                       name != nullptr ? name : "unknown signal");
  }
  case End::exited:
    if (r.exit_code != 0)
      return fmt::format("crashed: the process exited with status {}", r.exit_code);
    break;
  }
  return "ended normally";
}

std::vector<std::string> complete_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl = text.find('\n'); nl != std::string_view::npos;
       nl = text.find('\n', start)) {
    lines.emplace_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

bool executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return executable(name) ? name : std::string();
  const char* path = std::getenv("PATH");
  const std::string dirs = (path != nullptr && *path != '\0') ? path : kDefaultPath;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    const std::string dir = colon == start ? std::string(".") : dirs.substr(start, colon - start);
    std::string candidate = fmt::format("{}/{}", dir, name);
    if (executable(candidate)) return candidate;
    start = colon + 1;
  }
  return {};
}

bool write_all(int fd, std::string_view text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EIO; // write(2) of a non-empty buffer that wrote nothing: no progress possible
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

} // namespace halo::child
