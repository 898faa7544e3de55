// SPDX-License-Identifier: MIT
// Root: every read of the system goes through one of these, so a fixture tree or a host
// mounted under /host is read exactly like the live system.
#pragma once

#include <halo/fact.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct stat;

namespace halo {

/// Owns one file descriptor and closes it (close(2)) when it goes out of scope: the one guard
/// for descriptors from Root::open_regular, open(2) and openat(2). -1 means "none". Movable, not
/// copyable; release() hands the descriptor back without closing it.
class UniqueFd {
public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  ~UniqueFd();
  /// The descriptor, or -1.
  int get() const { return fd_; }
  /// True when it holds a descriptor.
  explicit operator bool() const { return fd_ >= 0; }
  /// Gives up ownership: returns the descriptor (or -1), which the caller now closes.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

private:
  int fd_ = -1;
};

/// The outcome of a bounded read: `status` ok with `text`, or missing/denied/error with `reason`
/// (strerror text). `path` is the absolute path as seen on the target system (`/proc/cmdline`).
struct ReadResult {
  Status status = Status::ok;
  std::string text;
  std::string path;
  std::string reason;
  bool ok() const { return status == Status::ok; }
};

/// File type and ownership of a device node, as stat(2) or the fixture sidecar reports it.
struct NodeInfo {
  Status status = Status::ok;
  std::string reason;
  bool is_char_device = false;
  std::uint32_t mode = 0; ///< permission bits only (0666), not the file type
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
};

/// A view of a system's files rooted at a directory (default "/").
///
/// Device nodes cannot be stored in git, so a fixture root may hold a sidecar file
/// `ROOT/.halo/nodes.json` of the form
/// `{"/dev/kfd": {"type": "char", "mode": "0660", "uid": 0, "gid": 109}}`; when that file exists,
/// `node()` answers from it (paths not listed are missing) instead of stat(2).
class Root {
public:
  /// Default cap on one read: sysfs attributes are at most a page, /proc files a few KiB.
  static constexpr std::size_t kDefaultMaxBytes = std::size_t{64} * 1024;

  explicit Root(std::filesystem::path base = "/");

  /// True when this root is the live system ("/"): runtime probes (ROCr, libdrm) only run then.
  bool is_live() const { return live_; }
  const std::filesystem::path& base() const { return base_; }

  /// Maps an absolute target path ("/sys/x") to the host path under the root, with every symlink
  /// on the way resolved *inside* the root, as the target system would see it (the semantics of
  /// openat2(2) RESOLVE_IN_ROOT): an absolute link target starts again at the root and `..`
  /// never climbs above it, so `sys/.../device -> /etc/shadow` in a fixture, bundle or mounted
  /// host names ROOT/etc/shadow, never the host's. With `follow_last` false, a final symlink is
  /// left as it is (for link_name()). At most 40 links are followed (path_resolution(7)); a
  /// longer chain resolves to a path that does not exist. The live root ("/") maps to itself.
  std::filesystem::path resolve(std::string_view abs, bool follow_last = true) const;

  /// Reads at most `max_bytes` of a file. Missing: ENOENT/ENOTDIR/ENODEV/ENXIO; denied:
  /// EACCES/EPERM; error: anything else, and files longer than `max_bytes`. Under a root other
  /// than "/" the file is opened with openat2(2) RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS where
  /// the kernel has it (Linux 5.6), else through resolve()'s checked component walk; and only
  /// regular files are read there (a FIFO or device node in a fixture or bundle is an error).
  ReadResult read(std::string_view abs, std::size_t max_bytes = kDefaultMaxBytes) const;

  /// Like read(), with surrounding whitespace removed (sysfs values end with "\n").
  ReadResult read_trimmed(std::string_view abs) const;

  /// The most names list() returns: more than any sysfs, procfs or /dev directory the probes
  /// list holds on a real machine (CPUs, DRM nodes, modules), few enough to bound the memory
  /// a hostile root can make it take (65,536 names of at most 255 bytes each).
  static constexpr std::size_t kMaxListEntries = 65536;

  /// Sorted names in a directory; std::nullopt with `status_out` set if it cannot be listed, or
  /// `error` if it holds more than `max_entries` names (reading stops there: no partial list).
  std::optional<std::vector<std::string>> list(std::string_view abs_dir,
                                               Status* status_out = nullptr,
                                               std::size_t max_entries = kMaxListEntries) const;

  /// True if the path exists under the root (follows symlinks; dangling links count as absent).
  bool exists(std::string_view abs) const;
  /// True if the path is a directory under the root.
  bool is_dir(std::string_view abs) const;
  /// stat(2) of the path under the root, following symlinks: the path resolved as read()
  /// resolves it (openat2(2) RESOLVE_IN_ROOT, else resolve()'s walk), then fstat(2) of one
  /// O_PATH descriptor. True with `st` filled, or false with errno set.
  bool stat_path(std::string_view abs, struct stat& st) const;

  /// The final path component of a symlink target (`device/driver` -> "amdgpu"), or nullopt.
  std::optional<std::string> link_name(std::string_view abs) const;

  /// Ownership and mode of a device node, from the sidecar when present, else from stat(2).
  NodeInfo node(std::string_view abs) const;

  /// Opens a regular file for reading, confined to the root as read() is, for readers that
  /// stream a large file through a library (an initramfs image through libarchive). Returns the
  /// descriptor (O_RDONLY | O_CLOEXEC; the caller closes it), or -1 with errno set: EINVAL when
  /// the path is not a regular file.
  int open_regular(std::string_view abs) const;

private:
  /// Opens `abs` with `flags`, confined to the root (see read()); -1 with errno on failure.
  int open_in_root(std::string_view abs, int flags) const;

  std::filesystem::path base_;
  std::shared_ptr<const UniqueFd> base_fd_; ///< O_PATH descriptor of base_ (not for the live root)
  bool live_;
};

} // namespace halo
