#include <halo/root.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace halo {
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

} // namespace

Root::Root(std::filesystem::path base) : base_(std::move(base)) {
  std::error_code ec;
  auto canon = std::filesystem::weakly_canonical(base_, ec);
  live_ = !ec && canon == std::filesystem::path("/");
}

std::filesystem::path Root::resolve(std::string_view abs) const {
  std::filesystem::path p(abs);
  return live_ ? p : base_ / p.relative_path();
}

ReadResult Root::read(std::string_view abs, std::size_t max_bytes) const {
  ReadResult r;
  r.path = std::string(abs);
  const std::string host = resolve(abs).string();
  const int fd = ::open(host.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    r.status = status_of_errno(err);
    r.reason = std::strerror(err);
    return r;
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

std::optional<std::vector<std::string>> Root::list(std::string_view abs_dir,
                                                   Status* status_out) const {
  std::error_code ec;
  std::filesystem::directory_iterator it(resolve(abs_dir), ec);
  if (ec) {
    if (status_out != nullptr) *status_out = status_of_errno(ec.value());
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (const auto& e : it)
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  if (status_out != nullptr) *status_out = Status::ok;
  return names;
}

bool Root::exists(std::string_view abs) const {
  std::error_code ec;
  return std::filesystem::exists(resolve(abs), ec);
}

bool Root::is_dir(std::string_view abs) const {
  std::error_code ec;
  return std::filesystem::is_directory(resolve(abs), ec);
}

std::optional<std::string> Root::link_name(std::string_view abs) const {
  std::error_code ec;
  auto target = std::filesystem::read_symlink(resolve(abs), ec);
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
      n.uid = it->value("uid", 0U);
      n.gid = it->value("gid", 0U);
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
