// SPDX-License-Identifier: MIT
// The probes' line-oriented view of the core child runner (src/core/child.cpp): the ROCr queries
// (checks/runtime/hsa.cpp), the module reading (checks/kernel_args/module_file.cpp), the user's
// Python (checks/framework/framework_deep.cpp, checks/plan/plan_measure.cpp).
#include "child_run.hpp"

#include <halo/root.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

namespace halo::probes {
namespace {

/// A time limit in seconds as the runner's milliseconds: negative or NaN is 0, and at most a day.
std::chrono::milliseconds limit_of(double timeout_s) {
  const double s = timeout_s > 0 ? std::min(timeout_s, 86400.0) : 0.0;
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(s));
}

child::Limits limits_of(double timeout_s, std::size_t max_bytes) {
  child::Limits limits;
  limits.time_limit = limit_of(timeout_s);
  limits.max_output_bytes = max_bytes;
  limits.on_overflow = child::Overflow::kill;
  return limits;
}

/// What a signal handler needs to remove the private directory of the run in progress: its path
/// and the paths of the files put in it, in fixed buffers (a handler may make only
/// async-signal-safe calls: unlink(2), rmdir(2), sigaction(2), raise(3); signal-safety(7)).
constexpr std::size_t kMaxPrivatePath = 4096;
constexpr std::size_t kMaxPrivateFiles = 4;
std::array<char, kMaxPrivatePath> g_private_dir{};
std::array<std::array<char, kMaxPrivatePath>, kMaxPrivateFiles> g_private_files{};
volatile std::sig_atomic_t g_private_set = 0;
/// The signals that end the doctor and the actions they had before run_python's.
constexpr std::array<int, 9> kEndSignals = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT,
                                            SIGSEGV, SIGBUS, SIGFPE, SIGILL};
std::array<struct sigaction, kEndSignals.size()> g_old_actions{};

/// Removes the private directory, then gives the signal to the action it had before (the bundle
/// clean-up's handler, or the default: the doctor ends with the same signal).
void private_dir_signal_handler(int sig) {
  if (g_private_set != 0) {
    g_private_set = 0;
    for (const auto& f : g_private_files)
      if (f[0] != '\0') ::unlink(f.data());
    ::rmdir(g_private_dir.data());
  }
  for (std::size_t i = 0; i < kEndSignals.size(); ++i)
    if (kEndSignals.at(i) == sig) ::sigaction(sig, &g_old_actions.at(i), nullptr);
  ::raise(sig); // pending until this handler returns (the signal is blocked while it runs)
}

/// A fresh private directory (mkdtemp(3): mode 0700, a random name, never an existing one),
/// removed with what it holds when the object goes (return or exception) and, through
/// private_dir_signal_handler, when a signal ends the doctor meanwhile. Only SIGKILL leaves it.
class PrivateDir {
public:
  PrivateDir() {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string templ = (base / "halo-python-XXXXXX").string();
    if (templ.size() >= kMaxPrivatePath - 256) {
      error_ = fmt::format("{}: the temporary directory's path is too long", templ);
      return;
    }
    if (::mkdtemp(templ.data()) == nullptr) {
      error_ = fmt::format("mkdtemp {}: {}", templ, std::strerror(errno));
      return;
    }
    path_ = templ;
    g_private_files = {};
    std::memcpy(g_private_dir.data(), path_.c_str(), path_.size() + 1);
    g_private_set = 1;
    for (std::size_t i = 0; i < kEndSignals.size(); ++i) {
      struct sigaction sa {};
      sa.sa_handler = private_dir_signal_handler;
      ::sigemptyset(&sa.sa_mask);
      ::sigaction(kEndSignals.at(i), nullptr, &g_old_actions.at(i));
      if (g_old_actions.at(i).sa_handler == SIG_IGN) continue; // nohup: ignored stays ignored
      ::sigaction(kEndSignals.at(i), &sa, nullptr);
      installed_.at(i) = true;
    }
  }
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  PrivateDir(PrivateDir&&) = delete;
  PrivateDir& operator=(PrivateDir&&) = delete;
  ~PrivateDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    g_private_set = 0;
    for (std::size_t i = 0; i < kEndSignals.size(); ++i)
      if (installed_.at(i)) ::sigaction(kEndSignals.at(i), &g_old_actions.at(i), nullptr);
  }
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

  /// Writes `f` into the directory (O_CREAT|O_EXCL|O_NOFOLLOW, 0644); "" or the reason.
  std::string add(const PrivateFile& f) {
    if (f.name.empty() || f.name.find('/') != std::string::npos || f.name == "." ||
        f.name == ".." || f.name.size() > 200)
      return fmt::format("{}: not a plain file name", f.name);
    if (files_ == kMaxPrivateFiles) return fmt::format("{}: too many files", f.name);
    const std::string file = path_ + "/" + f.name;
    std::memcpy(g_private_files.at(files_).data(), file.c_str(), file.size() + 1);
    ++files_;
    const UniqueFd fd(
        ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd.get() < 0 || !child::write_all(fd.get(), f.content) || ::fchmod(fd.get(), 0644) != 0)
      return fmt::format("{}: {}", file, std::strerror(errno));
    return {};
  }

private:
  std::string path_;
  std::string error_;
  std::size_t files_ = 0;
  std::array<bool, kEndSignals.size()> installed_{};
};

/// A decimal uid/gid from the environment, or nullopt.
std::optional<std::uint32_t> id_from_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  const std::string_view s(v);
  std::uint32_t out = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || p != s.data() + s.size() || out == static_cast<std::uint32_t>(-1))
    return std::nullopt;
  return out;
}

/// The user who ran `sudo halo-doctor`: sudo(8) sets SUDO_UID and SUDO_GID to the invoking
/// user's uid and gid. Only when this process is root (otherwise there is no one to become) and
/// that user is not root. `home` gets their passwd home directory ("" when there is none).
std::optional<child::Identity> invoking_user(std::string& home) {
  if (::geteuid() != 0) return std::nullopt;
  const auto uid = id_from_env("SUDO_UID");
  if (!uid || *uid == 0) return std::nullopt;
  child::Identity who;
  who.uid = *uid;
  passwd pw{};
  passwd* found = nullptr;
  std::array<char, 16384> buf{};
  const bool known =
      ::getpwuid_r(who.uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr;
  const auto gid = id_from_env("SUDO_GID");
  who.gid = gid ? *gid : (known ? pw.pw_gid : who.uid);
  if (known) {
    home = pw.pw_dir != nullptr ? pw.pw_dir : "";
    // getgrouplist(3): the user's groups as a login would set them (render/video for /dev/kfd).
    int n = 64;
    std::vector<gid_t> groups(static_cast<std::size_t>(n));
    if (::getgrouplist(pw.pw_name, who.gid, groups.data(), &n) < 0 && n > 64 && n <= 65536) {
      groups.resize(static_cast<std::size_t>(n));
      if (::getgrouplist(pw.pw_name, who.gid, groups.data(), &n) < 0) n = 0;
    }
    groups.resize(static_cast<std::size_t>(std::clamp(n, 0, static_cast<int>(groups.size()))));
    who.groups = std::move(groups);
  }
  if (who.groups.empty()) who.groups.push_back(who.gid);
  return who;
}

} // namespace

PythonRun run_python(const std::string& python, const std::string& script,
                     const std::vector<std::string>& args, double timeout_s, std::size_t max_bytes,
                     const std::vector<PrivateFile>& files,
                     const std::function<void(std::string_view)>& on_line) {
  PythonRun out;
  PrivateDir dir;
  if (dir.path().empty()) {
    out.run.start_error = "cannot make a private directory: " + dir.error();
    return out;
  }
  for (const auto& f : files)
    if (std::string err = dir.add(f); !err.empty()) {
      out.run.start_error = "cannot fill the private directory: " + err;
      return out;
    }
  child::Options options;
  options.limits = limits_of(timeout_s, max_bytes);
  options.stderr_to = child::Stderr::discard;
  options.search_path = false;
  options.cwd = dir.path();
  options.no_new_privs = true;
  options.on_line = on_line;
  options.env_set = {{"PYTHONSAFEPATH", "1"},
                     {"PYTHONDONTWRITEBYTECODE", "1"},
                     {"HF_HUB_OFFLINE", "1"},
                     {"TRANSFORMERS_OFFLINE", "1"}};
  std::string names;
  for (const auto& f : files)
    names += (names.empty() ? "" : ", ") + f.name;
  std::vector<std::string> parts = {"-P",
                                    "PYTHONSAFEPATH=1",
                                    files.empty() ? std::string("a private empty directory")
                                                  : "a private directory holding only " + names,
                                    "no new privileges",
                                    "HF_HUB_OFFLINE=1",
                                    "TRANSFORMERS_OFFLINE=1"};
  std::string home;
  options.run_as = invoking_user(home);
  if (options.run_as) {
    // The directory stays the doctor's: the user may enter it and read its files, not change them.
    if (::chmod(dir.path().c_str(), 0711) != 0) {
      out.run.start_error = fmt::format("chmod {}: {}", dir.path(), std::strerror(errno));
      return out;
    }
    if (!home.empty()) options.env_set["HOME"] = home;
    parts.push_back(fmt::format("as uid {} gid {} (SUDO_UID/SUDO_GID){}", options.run_as->uid,
                                options.run_as->gid,
                                home.empty() ? std::string() : ", HOME=" + home));
  }
  std::vector<std::string> kept;
  for (const char* name : {"PYTHONPATH", "PYTHONUSERBASE", "PYTHONNOUSERSITE", "PYTHONHOME"})
    if (const char* v = std::getenv(name); v != nullptr)
      kept.push_back(fmt::format("{}={}", name, std::string_view(v).substr(0, 200)));
  std::vector<std::string> argv = {python, "-P", "-c", script};
  argv.insert(argv.end(), args.begin(), args.end());
  out.run = child::run(argv, options);
  // Before Python 3.11 -P is a usage error: "Unknown option: -P", status 2, nothing on stdout.
  if (out.run.end == child::End::exited && out.run.exit_code == 2 &&
      child::complete_lines(out.run.out).empty()) {
    argv.erase(argv.begin() + 1);
    parts.front() = "no -P (the interpreter rejects it: '' removed by the script)";
    out.run = child::run(argv, options);
  }
  out.how = fmt::format("{}", fmt::join(parts, ", "));
  if (!kept.empty()) out.how += fmt::format("; kept {}", fmt::join(kept, ", "));
  return out;
}

child::Result run_in_child(const std::function<void(int fd)>& body, double timeout_s,
                           std::size_t max_bytes) {
  return child::run_function(body, limits_of(timeout_s, max_bytes));
}

child::Result run_program(const std::vector<std::string>& argv, double timeout_s,
                          std::size_t max_bytes) {
  child::Options options;
  options.limits = limits_of(timeout_s, max_bytes);
  options.stderr_to = child::Stderr::discard;
  options.search_path = false;
  return child::run(argv, options);
}

} // namespace halo::probes
