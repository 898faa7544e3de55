// SPDX-License-Identifier: MIT
// The one child-process runner (include/halo/child.hpp) against real programs, named by absolute
// path (Debian's /bin/sh is dash, /bin/sleep and /bin/cat are coreutils'): how a child ends, the
// time limit with the kill of its whole process group, the output caps, stdin, environment, and
// a program that cannot start.
#include <halo/child.hpp>

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace halo;
using namespace std::chrono_literals;

namespace {

child::Options with_limit(std::chrono::milliseconds limit) {
  child::Options o;
  o.limits.time_limit = limit;
  return o;
}

/// True when `pid` no longer runs: gone from /proc, or a zombie waiting for init to reap it.
bool process_dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  return paren == std::string::npos || line.substr(paren + 2, 1) == "Z";
}

} // namespace

TEST_CASE("child runner: a program's exit status, output and standard error", "[child]") {
  auto r = child::run({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, with_limit(10s));
  CHECK(r.end == child::End::exited);
  CHECK(r.started());
  CHECK(r.exit_code == 3);
  CHECK(r.signal == 0);
  CHECK_FALSE(r.ok());
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");

  auto o = with_limit(10s);
  o.stderr_to = child::Stderr::merge;
  r = child::run({"/bin/sh", "-c", "echo out; echo err >&2; echo out2"}, o);
  CHECK(r.ok());
  CHECK(r.out == "out\nerr\nout2\n");
  CHECK(r.err.empty());

  o.stderr_to = child::Stderr::discard;
  r = child::run({"/bin/sh", "-c", "echo out; echo err >&2"}, o);
  CHECK(r.out == "out\n");
  CHECK(r.err.empty());

  // Arguments are passed as they are: no shell splits or expands them.
  r = child::run({"/usr/bin/printf", "%s|", "a b", "x\"y", "$HOME"}, with_limit(10s));
  CHECK(r.ok());
  CHECK(r.out == "a b|x\"y|$HOME|");
}

TEST_CASE("child runner: a child killed by a signal is signalled, not exited", "[child]") {
  const auto r = child::run({"/bin/sh", "-c", "kill -s TERM $$"}, with_limit(10s));
  CHECK(r.end == child::End::signalled);
  CHECK(r.signal == SIGTERM);
  CHECK(r.exit_code == -1);
}

TEST_CASE("child runner: a hang is killed at the limit with its whole process group", "[child]") {
  const auto t0 = std::chrono::steady_clock::now();
  // The shell starts a grandchild in the background, says its pid, then hangs itself.
  const auto r =
      child::run({"/bin/sh", "-c", "/bin/sleep 30 & echo $!; /bin/sleep 30"}, with_limit(300ms));
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.end == child::End::timed_out);
  CHECK(r.signal == SIGKILL);
  CHECK_FALSE(r.ok());
  CHECK(took >= 300ms);
  CHECK(took < 5s);
  const auto lines = child::complete_lines(r.out);
  REQUIRE(lines.size() == 1);
  const pid_t grandchild = std::stoi(lines[0]);
  REQUIRE(grandchild > 1);
  bool dead = false;
  for (int i = 0; i < 200 && !dead; ++i) {
    dead = process_dead(grandchild);
    if (!dead) std::this_thread::sleep_for(10ms);
  }
  CHECK(dead);
}

TEST_CASE("child runner: a grandchild holding the pipe keeps the run open until the limit",
          "[child]") {
  // The shell exits at once; the background sleep still holds stdout, so the output is not at
  // its end: the run is timed out and the sleep killed with the group.
  const auto r = child::run({"/bin/sh", "-c", "/bin/sleep 30 &"}, with_limit(300ms));
  CHECK(r.end == child::End::timed_out);
}

TEST_CASE("child runner: SIGTERM first, SIGKILL after the grace", "[child]") {
  auto o = with_limit(200ms);
  o.limits.term_grace = 5s;
  auto t0 = std::chrono::steady_clock::now();
  auto r = child::run({"/bin/sleep", "30"}, o);
  CHECK(r.end == child::End::timed_out);
  CHECK(r.signal == SIGTERM); // sleep ends on SIGTERM at once: the grace is not waited out
  CHECK(std::chrono::steady_clock::now() - t0 < 4s);

  // A child that ignores SIGTERM (ignored signals stay ignored across execve) gets SIGKILL.
  o.limits.term_grace = 300ms;
  t0 = std::chrono::steady_clock::now();
  r = child::run({"/bin/sh", "-c", "trap '' TERM; /bin/sleep 30"}, o);
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.end == child::End::timed_out);
  CHECK(r.signal == SIGKILL);
  CHECK(took >= 500ms);
  CHECK(took < 5s);
}

TEST_CASE("child runner: output over the cap is truncated and marked, or kills", "[child]") {
  // 41 bytes a line, 2,000 lines: 82,000 bytes.
  const std::string script = "i=0; while [ $i -lt 2000 ]; do "
                             "echo 0123456789012345678901234567890123456789; i=$((i+1)); done; "
                             "echo done >&2";
  auto o = with_limit(10s);
  o.limits.max_output_bytes = 1000;
  auto r = child::run({"/bin/sh", "-c", script}, o);
  CHECK(r.end == child::End::exited); // read to the end, the rest dropped
  CHECK(r.exit_code == 0);
  CHECK(r.out.size() == 1000);
  CHECK(r.out_truncated);
  CHECK(r.out.substr(0, 41) == "0123456789012345678901234567890123456789\n");
  CHECK(r.err == "done\n");
  CHECK_FALSE(r.err_truncated);

  o.limits.on_overflow = child::Overflow::kill;
  r = child::run({"/bin/sh", "-c", script + "; /bin/sleep 30"}, o);
  CHECK(r.end == child::End::output_overflow);
  CHECK(r.out.size() == 1000);
  CHECK(r.out_truncated);
  CHECK(r.signal == SIGKILL);
}

TEST_CASE("child runner: a program that cannot start says why", "[child]") {
  auto r = child::run({"/nonexistent/halo-no-such-program"}, with_limit(10s));
  CHECK(r.end == child::End::not_started);
  CHECK_FALSE(r.started());
  CHECK(r.start_errno == ENOENT);
  CHECK(r.start_error == "/nonexistent/halo-no-such-program: not found or not executable");

  r = child::run({}, with_limit(10s));
  CHECK(r.end == child::End::not_started);

  // Executable but neither ELF nor a script: execve fails with ENOEXEC, reported from the child.
  const auto dir =
      std::filesystem::temp_directory_path() / ("halo-child-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto garbage = dir / "garbage";
  std::ofstream(garbage) << "\x7f\x01\x02\x03 not a program";
  std::filesystem::permissions(garbage, std::filesystem::perms::owner_all);
  r = child::run({garbage.string()}, with_limit(10s));
  std::filesystem::remove_all(dir);
  CHECK(r.end == child::End::not_started);
  CHECK(r.start_errno == ENOEXEC);
  CHECK(r.start_error.find("cannot be run: Exec format error") != std::string::npos);
}

TEST_CASE("child runner: stdin text, environment and PATH lookup", "[child]") {
  auto o = with_limit(10s);
  o.stdin_text = "hello\nworld\n";
  auto r = child::run({"/bin/cat"}, o);
  CHECK(r.ok());
  CHECK(r.out == "hello\nworld\n");

  // More stdin than a pipe holds, to a child that never reads it: no SIGPIPE ends the doctor.
  o.stdin_text = std::string(std::size_t{1} << 20, 'x');
  r = child::run({"/bin/sh", "-c", "exit 0"}, o);
  CHECK(r.ok());
  r = child::run({"/bin/sh", "-c", "exec 0<&-; /bin/sleep 0.1; exit 4"}, o);
  CHECK(r.exit_code == 4);

  // Without stdin_text, stdin is /dev/null: cat ends at once.
  r = child::run({"/bin/cat"}, with_limit(10s));
  CHECK(r.ok());
  CHECK(r.out.empty());

  o = with_limit(10s);
  o.env_set = {{"HALO_CHILD_TEST", "a value"}, {"PATH", "/bin"}};
  r = child::run({"/bin/sh", "-c", "printf '%s|%s' \"$HALO_CHILD_TEST\" \"$PATH\""}, o);
  CHECK(r.out == "a value|/bin");

  const char* old_path = std::getenv("PATH");
  const std::string saved = old_path != nullptr ? old_path : "";
  ::setenv("PATH", "/nonexistent/halo:/bin", 1);
  CHECK(child::find_program("sh") == "/bin/sh");
  CHECK(child::find_program("halo-no-such-program").empty());
  r = child::run({"sh", "-c", "exit 5"}, with_limit(10s));
  CHECK(r.exit_code == 5);
  o = with_limit(10s);
  o.search_path = false; // "sh" is then a file in the working directory
  r = child::run({"sh", "-c", "exit 5"}, o);
  CHECK(r.end == child::End::not_started);
  ::setenv("PATH", saved.c_str(), 1);
  CHECK(child::find_program("/bin/sh") == "/bin/sh");
  CHECK(child::executable("/bin/sh"));
  CHECK_FALSE(child::executable("/etc/passwd"));
  CHECK_FALSE(child::executable("/bin"));
}

TEST_CASE("child runner: working directory, identity and no new privileges", "[child]") {
  // The program runs in Options::cwd, with NoNewPrivs set (proc(5) /proc/PID/status).
  auto o = with_limit(10s);
  o.cwd = "/usr";
  o.no_new_privs = true;
  auto r = child::run({"/bin/sh", "-c", "pwd; /bin/grep '^NoNewPrivs:' /proc/self/status"}, o);
  CHECK(r.ok());
  CHECK(r.out == "/usr\nNoNewPrivs:\t1\n");
  // Without it, the doctor's own working directory and no flag (unless the test runs under one).
  r = child::run({"/bin/sh", "-c", "pwd"}, with_limit(10s));
  CHECK(r.out == std::filesystem::current_path().string() + "\n");

  // A step that fails before execve is End::not_started naming the step; the program never runs.
  o = with_limit(10s);
  o.cwd = "/nonexistent/halo-no-such-dir";
  r = child::run({"/bin/sh", "-c", "echo ran"}, o);
  CHECK(r.end == child::End::not_started);
  CHECK(r.start_errno == ENOENT);
  CHECK(r.start_error == "/bin/sh: cannot be run: chdir /nonexistent/halo-no-such-dir: No such "
                         "file or directory");
  CHECK(r.out.empty());

  if (::geteuid() != 0) {
    // Not root: setgroups(2) needs CAP_SETGID, so taking another identity fails before execve.
    o = with_limit(10s);
    o.run_as = child::Identity{65534, 65534, {65534}};
    r = child::run({"/bin/sh", "-c", "echo ran"}, o);
    CHECK(r.end == child::End::not_started);
    CHECK(r.start_error.find("setgroups") != std::string::npos);
    return;
  }
  o = with_limit(10s);
  o.run_as = child::Identity{65534, 65534, {65534, 44}};
  r = child::run(
      {"/bin/sh", "-c",
       "/usr/bin/id -u; /usr/bin/id -g; /usr/bin/id -G; /bin/grep '^Uid:' /proc/self/status"},
      o);
  CHECK(r.ok());
  CHECK(r.out == "65534\n65534\n65534 44\nUid:\t65534\t65534\t65534\t65534\n");
  // An empty group list is the primary group alone: root's supplementary groups never stay.
  o.run_as = child::Identity{65534, 65534, {}};
  r = child::run({"/usr/bin/id", "-G"}, o);
  CHECK(r.out == "65534\n");
  // The parent-death signal survives the change of identity: prctl(2) clears it when the
  // effective uid changes, and the runner sets it again (PR_GET_PDEATHSIG is 2; SIGKILL is 9).
  if (child::executable("/usr/bin/python3")) {
    r = child::run({"/usr/bin/python3", "-I", "-c",
                    "import ctypes; v = ctypes.c_int(); "
                    "ctypes.CDLL(None).prctl(2, ctypes.byref(v)); print(v.value)"},
                   o);
    CHECK(r.out == "9\n");
  }
}

TEST_CASE("child runner: a body of the doctor's own in a forked child", "[child]") {
  child::Limits limits;
  limits.time_limit = 10s;
  auto r = child::run_function(
      [](int fd) {
        child::write_all(fd, "one\ntwo\n");
        ::_exit(3);
      },
      limits);
  CHECK(r.end == child::End::exited);
  CHECK(r.exit_code == 3);
  CHECK(child::complete_lines(r.out) == std::vector<std::string>{"one", "two"});

  r = child::run_function([](int) { throw std::runtime_error("in the child"); }, limits);
  CHECK(r.exit_code == 70);

  // A crash in the body ends the child with its signal, whatever handler the doctor (here
  // Catch2) installed for it; no core file is written.
  r = child::run_function(
      [](int) {
        const rlimit no_core{0, 0};
        ::setrlimit(RLIMIT_CORE, &no_core);
        std::raise(SIGSEGV);
      },
      limits);
  CHECK(r.end == child::End::signalled);
  CHECK(r.signal == SIGSEGV);

  limits.time_limit = 200ms;
  r = child::run_function(
      [](int fd) {
        child::write_all(fd, "started\n");
        for (;;)
          ::pause();
      },
      limits);
  CHECK(r.end == child::End::timed_out);
  CHECK(r.signal == SIGKILL);
  CHECK(r.out == "started\n");
}

TEST_CASE("child runner: complete lines only", "[child]") {
  CHECK(child::complete_lines("").empty());
  CHECK(child::complete_lines("no newline").empty());
  CHECK(child::complete_lines("a\n\nb\nc") == std::vector<std::string>{"a", "", "b"});
}

TEST_CASE("child runner: each stdout line is handed on as it arrives, while the child runs",
          "[child]") {
  // Two lines 1.5 s apart, a line on stderr, and a last line without a newline. The callback
  // stamps each line; the second comes 1.5 s after the first, so the first was handed
  // on while the child slept, not when it ended.
  using Clock = std::chrono::steady_clock;
  std::vector<std::pair<std::string, Clock::time_point>> got;
  auto o = with_limit(10s);
  o.on_line = [&got](std::string_view line) { got.emplace_back(line, Clock::now()); };
  const auto r = child::run(
      {"/bin/sh", "-c", "echo one; echo err >&2; /bin/sleep 1.5; printf 'two\\n\\nthree'"}, o);
  CHECK(r.ok());
  CHECK(r.out == "one\ntwo\n\nthree");
  REQUIRE(got.size() == 3); // "three" has no newline; stderr is not stdout
  CHECK(got[0].first == "one");
  CHECK(got[1].first == "two");
  CHECK(got[2].first.empty());
  CHECK(got[1].second - got[0].second > 700ms);

  // Only what fits under the cap is handed on: a line cut by it is no line.
  got.clear();
  o.limits.max_output_bytes = 6;
  const auto c = child::run({"/bin/sh", "-c", "echo abc; echo defgh; echo ijk"}, o);
  CHECK(c.out == "abc\nde");
  REQUIRE(got.size() == 1);
  CHECK(got[0].first == "abc");
}
