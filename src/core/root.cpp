// SPDX-License-Identifier: MIT
#include <halo/root.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

namespace halo {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

Status status_of_errno(int err) {
  switch (err) {
  case ENOENT:
  case ENOTDIR:
  case ENODEV:
  case ENXIO:
    return Status::missing;
  case EACCES:
  case EPERM:
    return Status::denied;
  default:
    return Status::error;
  }
}

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return std::isspace(c) == 0; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

#ifndef SYS_openat2
#define SYS_openat2 437 // the same number on every architecture (asm-generic/unistd.h)
#endif

/// openat2(2) with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS below `dirfd`; -1 with errno ENOSYS
/// where the kernel (before 5.6) or a seccomp filter does not offer it.
int openat2_in_root(int dirfd, const std::string& rel, int flags) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, rel.c_str(), &how, sizeof how));
}

} // namespace

int Root::open_in_root(std::string_view abs, int flags) const {
  if (live_) return ::open(std::string(abs).c_str(), flags);
  static std::atomic<bool> have_openat2{true};
  if (have_openat2.load(std::memory_order_relaxed) && base_fd_ && *base_fd_) {
    std::string rel(abs);
    while (!rel.empty() && rel.front() == '/')
      rel.erase(0, 1);
    if (rel.empty()) rel = ".";
    // openat2(2): with RESOLVE_IN_ROOT, EAGAIN means a mount or rename elsewhere on the system
    // raced with resolving ".." (sysfs links are full of it) and "the caller may choose to
    // retry"; a busy machine (containers starting, mount namespaces) does this often. Retry,
    // then take the component walk for this one path.
    int fd = -1;
    for (int attempt = 0; attempt < 32; ++attempt) {
      fd = openat2_in_root(base_fd_->get(), rel, flags);
      if (fd >= 0 || (errno != EAGAIN && errno != EINTR)) break;
    }
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != EAGAIN && errno != EINTR))
      return fd;
    if (errno == ENOSYS || errno == EPERM)
      have_openat2.store(false, std::memory_order_relaxed); // fall back to the component walk
  }
  return ::open(resolve(abs).c_str(), flags);
}

int Root::open_regular(std::string_view abs) const {
  // O_NONBLOCK: a FIFO planted in a fixture or bundle must not block the open.
  const int fd = open_in_root(abs, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

Root::Root(std::filesystem::path base) : base_(std::move(base)) {
  std::error_code ec;
  auto canon = std::filesystem::weakly_canonical(base_, ec);
  live_ = !ec && canon == std::filesystem::path("/");
  if (!live_) {
    // One O_PATH descriptor of the base for every openat2(2) below it; shared by copies.
    const int fd = ::open(base_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      base_fd_ = std::make_shared<const UniqueFd>(fd);
    }
  }
}

std::filesystem::path Root::resolve(std::string_view abs, bool follow_last) const {
  std::filesystem::path p(abs);
  if (live_) return p;
  // A component walk with the semantics of RESOLVE_IN_ROOT: `todo` holds the components still to
  // visit (front last), `done` the resolved ones below base_, none of them a symlink.
  std::vector<std::string> todo;
  auto push_front = [&todo](std::string_view path) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= path.size()) {
      const std::size_t slash = std::min(path.find('/', start), path.size());
      if (slash > start) parts.emplace_back(path.substr(start, slash - start));
      start = slash + 1;
    }
    todo.insert(todo.end(), parts.rbegin(), parts.rend());
  };
  push_front(abs);
  std::vector<std::string> done;
  std::string host = base_.string();
  auto host_of = [&](const std::vector<std::string>& parts) {
    std::string out = host;
    for (const auto& part : parts)
      out += "/" + part;
    return out;
  };
  int links = 0;
  while (!todo.empty()) {
    std::string comp = std::move(todo.back());
    todo.pop_back();
    if (comp == ".") continue;
    if (comp == "..") {
      if (!done.empty()) done.pop_back(); // never above the root
      continue;
    }
    done.push_back(std::move(comp));
    if (todo.empty() && !follow_last) break;
    const std::string candidate = host_of(done);
    struct stat st {};
    if (::lstat(candidate.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) continue;
    std::array<char, 4096> target{};
    const ssize_t n = ::readlink(candidate.c_str(), target.data(), target.size());
    if (n <= 0 || static_cast<std::size_t>(n) >= target.size() || ++links > 40) {
      // Unreadable link or a loop: a name under the root that does not exist.
      return base_ / ".halo-unresolvable-link";
    }
    done.pop_back();
    const std::string_view t(target.data(), static_cast<std::size_t>(n));
    if (t.front() == '/') done.clear(); // an absolute target starts again at the root
    push_front(t);
  }
  return host_of(done);
}

ReadResult Root::read(std::string_view abs, std::size_t max_bytes) const {
  ReadResult r;
  r.path = std::string(abs);
  const int fd = open_in_root(abs, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    r.status = status_of_errno(err);
    r.reason = std::strerror(err);
    return r;
  }
  if (!live_) {
    // Only regular files (and directories, which fail below with EISDIR as before) under a root
    // that is not the live system: a FIFO or device node there is untrusted input.
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
      ::close(fd);
      r.status = Status::error;
      r.reason = "not a regular file; not read";
      return r;
    }
  }
  // Read in page-sized chunks: sysfs files are small, and a 64 KiB buffer per read would cost
  // more than the reads themselves.
  std::string buf;
  std::size_t used = 0;
  std::array<char, 4096> chunk{};
  while (used <= max_bytes) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      r.status = err == EISDIR ? Status::error : status_of_errno(err);
      r.reason = std::strerror(err);
      return r;
    }
    if (n == 0) break;
    buf.append(chunk.data(), static_cast<std::size_t>(n));
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (used > max_bytes) {
    r.status = Status::error;
    r.reason = fmt::format("longer than {} bytes; not read", max_bytes);
    return r;
  }
  r.text = std::move(buf);
  return r;
}

ReadResult Root::read_trimmed(std::string_view abs) const {
  ReadResult r = read(abs);
  if (r.ok()) r.text = trim(std::move(r.text));
  return r;
}

std::optional<std::vector<std::string>> Root::list(std::string_view abs_dir, Status* status_out,
                                                   std::size_t max_entries) const {
  const int fd = open_in_root(abs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (d == nullptr) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    if (status_out != nullptr) *status_out = status_of_errno(err);
    return std::nullopt;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n(e->d_name);
    if (n == "." || n == "..") continue;
    if (names.size() >= max_entries) {
      ::closedir(d);
      if (status_out != nullptr) *status_out = Status::error;
      return std::nullopt;
    }
    names.emplace_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  if (status_out != nullptr) *status_out = Status::ok;
  return names;
}

bool Root::exists(std::string_view abs) const {
  const int fd = open_in_root(abs, O_PATH | O_CLOEXEC);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

bool Root::stat_path(std::string_view abs, struct stat& st) const {
  const int fd = open_in_root(abs, O_PATH | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fstat(fd, &st) == 0;
  const int err = errno;
  ::close(fd);
  errno = err;
  return ok;
}

bool Root::is_dir(std::string_view abs) const {
  const int fd = open_in_root(abs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

std::optional<std::string> Root::link_name(std::string_view abs) const {
  std::error_code ec;
  auto target = std::filesystem::read_symlink(resolve(abs, /*follow_last=*/false), ec);
  if (ec) return std::nullopt;
  return target.filename().string();
}

NodeInfo Root::node(std::string_view abs) const {
  NodeInfo n;
  const ReadResult sidecar = live_ ? ReadResult{Status::missing, {}, {}, {}}
                                   : read("/.halo/nodes.json", std::size_t{256} * 1024);
  if (sidecar.ok()) {
    nlohmann::json j = nlohmann::json::parse(sidecar.text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      n.status = Status::error;
      n.reason = "fixture sidecar /.halo/nodes.json is not a JSON object";
      return n;
    }
    auto it = j.find(std::string(abs));
    if (it == j.end()) {
      n.status = Status::missing;
      n.reason = "No such file or directory";
      return n;
    }
    try {
      n.is_char_device = it->value("type", std::string("char")) == "char";
      n.mode =
          static_cast<std::uint32_t>(std::stoul(it->value("mode", std::string("0")), nullptr, 8));
      // Checked: a bundle's sidecar is untrusted, and value<unsigned>() of a floating-point or
      // negative number would convert out of range.
      for (const auto& [field, out] : {std::pair{"uid", &n.uid}, std::pair{"gid", &n.gid}}) {
        const auto v = it->find(field);
        if (v == it->end()) continue;
        if (!v->is_number_unsigned() || v->get<std::uint64_t>() > UINT32_MAX)
          throw std::invalid_argument(
              fmt::format("{} is not a number from 0 to 4294967295", field));
        *out = static_cast<std::uint32_t>(v->get<std::uint64_t>());
      }
    } catch (const std::exception& e) {
      n.status = Status::error;
      n.reason = fmt::format("fixture sidecar entry for {} is malformed: {}", abs, e.what());
    }
    return n;
  }
  struct stat st {};
  const std::string host = resolve(abs).string();
  if (::stat(host.c_str(), &st) != 0) {
    const int err = errno;
    n.status = status_of_errno(err);
    n.reason = std::strerror(err);
    return n;
  }
  n.is_char_device = S_ISCHR(st.st_mode);
  n.mode = st.st_mode & 07777U;
  n.uid = st.st_uid;
  n.gid = st.st_gid;
  return n;
}

} // namespace halo
