// SPDX-License-Identifier: MIT
// Fork-and-pipe runner for the ROCr queries (checks/hsa.cpp, checks/hsa_child.cpp).
#include "child_run.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

namespace halo::probes {

bool write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return static_cast<int>(std::min<long long>(left.count(), 1000LL * 60 * 60));
}

void split_lines_into(std::string& buffer, std::vector<std::string>& lines) {
  std::size_t start = 0;
  for (std::size_t nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n', start)) {
    lines.push_back(buffer.substr(start, nl - start));
    start = nl + 1;
  }
  buffer.erase(0, start);
}

} // namespace

ChildRun run_in_child(const std::function<void(int fd)>& body, double timeout_s,
                      std::size_t max_bytes) {
  ChildRun run;
  std::array<int, 2> fds = {-1, -1};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
    run.start_error = fmt::format("pipe2: {}", std::strerror(errno));
    return run;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    run.start_error = fmt::format("fork: {}", std::strerror(errno));
    ::close(fds[0]);
    ::close(fds[1]);
    return run;
  }
  if (pid == 0) {
    // Tied to the parent: killed when it dies (prctl(2) PR_SET_PDEATHSIG), and exiting at once
    // if the parent died before the prctl took effect (then getppid() is no longer the parent).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(70);
    // Its own process group, so the parent can kill it with everything it started (kill(2) with
    // a negative pid) and a terminal's Ctrl-C reaches only the doctor, which then kills it.
    ::setpgid(0, 0);
    // The parent's handlers (a test framework's, a sanitizer's, the bundle clean-up's) must not
    // run in the child: a crash there is to end the child with its signal, which the parent
    // reports, and a termination signal simply ends it.
    for (const int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, SIGTERM,
                          SIGINT, SIGHUP, SIGQUIT})
      ::signal(sig, SIG_DFL);
    ::close(fds[0]);
    try {
      body(fds[1]);
    } catch (...) {
      ::_exit(70);
    }
    ::_exit(0);
  }
  run.started = true;
  ::setpgid(pid, pid); // also here: whichever of the two runs first makes the group
  ::close(fds[1]);
  // Killed and reaped on every way out of this function, an exception (bad_alloc) included.
  struct Reaper {
    pid_t pid;
    bool done = false;
    explicit Reaper(pid_t p) : pid(p) {}
    Reaper(const Reaper&) = delete;
    Reaper(Reaper&&) = delete;
    Reaper& operator=(const Reaper&) = delete;
    Reaper& operator=(Reaper&&) = delete;
    ~Reaper() {
      if (done) return;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      int st = 0;
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
    }
  } reaper{pid};
  const auto limit = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(timeout_s > 0 ? timeout_s : 0.0));
  const Clock::time_point deadline = Clock::now() + limit;

  std::string buffer;
  std::size_t total = 0;
  std::array<char, 8192> chunk{};
  while (true) {
    const int wait_ms = remaining_ms(deadline);
    if (wait_ms == 0) {
      run.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, wait_ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (r == 0) continue; // deadline check at the top of the loop
    const ssize_t n = ::read(fds[0], chunk.data(), chunk.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (n == 0) break; // end of file: the child closed its end
    total += static_cast<std::size_t>(n);
    if (total > max_bytes) {
      run.too_much_output = true;
      break;
    }
    buffer.append(chunk.data(), static_cast<std::size_t>(n));
    split_lines_into(buffer, run.lines);
  }
  ::close(fds[0]);

  int status = 0;
  bool reaped = false;
  if (!run.timed_out && !run.too_much_output) {
    // The pipe is closed; give the child the rest of the time limit to exit.
    while (true) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        reaped = true;
        break;
      }
      if (w < 0 && errno != EINTR) break;
      if (remaining_ms(deadline) == 0) {
        run.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (!reaped) {
    ::kill(-pid, SIGKILL); // the process group: what the child started goes too
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  reaper.done = true;
  if (WIFEXITED(status)) {
    run.exited = true;
    run.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    run.term_signal = WTERMSIG(status);
  }
  return run;
}

std::string describe_end(const ChildRun& run, double timeout_s) {
  if (!run.started) return fmt::format("could not start the child process ({})", run.start_error);
  if (run.timed_out)
    return fmt::format("hung: no answer within the {:g} s time limit (killed)", timeout_s);
  if (run.too_much_output) return "wrote more output than expected (killed)";
  if (run.term_signal != 0) {
    const char* name = ::strsignal(run.term_signal);
    return fmt::format("crashed with signal {} ({})", run.term_signal,
                       name != nullptr ? name : "unknown signal");
  }
  if (run.exited && run.exit_code != 0)
    return fmt::format("crashed: the process exited with status {}", run.exit_code);
  return "ended normally";
}

} // namespace halo::probes
