// SPDX-License-Identifier: MIT
// A bounded child process for scontrol: fork and execve (no shell), a time limit, output capped.
#include <halo/slurm.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
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

// environ (environ(7), the process environment) is declared by <unistd.h> under _GNU_SOURCE.

namespace halo::slurm {
namespace {

constexpr std::size_t kMaxOutput = 1u << 20;
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

bool executable(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

/// execvp's search, done before fork so "not found" is a clear error.
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

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 3600000));
}

} // namespace

CommandResult run_bounded(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env_overrides,
                          std::chrono::milliseconds timeout) {
  CommandResult res;
  if (argv.empty()) {
    res.error = "no command";
    return res;
  }
  const std::string program = find_program(argv[0]);
  if (program.empty()) {
    res.error = fmt::format("{}: not found or not executable", argv[0]);
    return res;
  }
  // Everything the child needs is built before fork: after fork only async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos && env_overrides.contains(std::string(kv.substr(0, eq))))
      continue;
    env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : env_overrides)
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

  std::array<int, 2> out = {-1, -1};
  std::array<int, 2> err = {
      -1, -1}; // exec failure: the child writes errno here (closed on a good exec)
  if (::pipe2(out.data(), O_CLOEXEC) != 0 || ::pipe2(err.data(), O_CLOEXEC) != 0) {
    res.error = fmt::format("pipe2: {}", std::strerror(errno));
    for (int fd : {out[0], out[1], err[0], err[1]})
      if (fd >= 0) ::close(fd);
    return res;
  }
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid < 0) {
    res.error = fmt::format("fork: {}", std::strerror(errno));
    for (int fd : {out[0], out[1], err[0], err[1], devnull})
      if (fd >= 0) ::close(fd);
    return res;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::execve(program.c_str(), cargv.data(), envp.data());
    const int e = errno;
    [[maybe_unused]] const ssize_t n = ::write(err[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid); // both sides set it, so the kill below cannot race the child's own call
  ::close(out[1]);
  ::close(err[1]);
  if (devnull >= 0) ::close(devnull);

  const Clock::time_point deadline = Clock::now() + timeout;
  std::array<char, 8192> buf{};
  while (true) {
    const int wait_ms = remaining_ms(deadline);
    if (wait_ms == 0) {
      res.timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    const int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = ::read(out[0], buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break; // EOF: the command (and anything it started) closed its output
    if (res.output.size() < kMaxOutput)
      res.output.append(buf.data(),
                        std::min(static_cast<std::size_t>(n), kMaxOutput - res.output.size()));
  }
  ::close(out[0]);

  int status = 0;
  bool reaped = false;
  while (!res.timed_out) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      reaped = true;
      break;
    }
    if (w < 0 && errno != EINTR) break;
    if (remaining_ms(deadline) == 0) {
      res.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!reaped) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  int exec_errno = 0;
  const bool exec_failed = ::read(err[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(err[0]);
  if (exec_failed) {
    res.error = fmt::format("{}: cannot be run: {}", program, std::strerror(exec_errno));
    return res;
  }
  res.started = true;
  if (res.timed_out) {
    res.error = fmt::format("{} timed out after {:.1f} s (killed)", argv[0],
                            static_cast<double>(timeout.count()) / 1000.0);
    res.signal = SIGKILL;
    return res;
  }
  if (WIFEXITED(status)) {
    res.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res.signal = WTERMSIG(status);
  }
  return res;
}

} // namespace halo::slurm
