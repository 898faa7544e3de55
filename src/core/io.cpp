// SPDX-License-Identifier: MIT
// Bounded input reads and atomic, type-checked output writes (include/halo/io.hpp).
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/root.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>

namespace halo {
namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

/// Writes all of `text` to `fd`; returns 0 or the errno of the failed write(2).
int write_all(int fd, std::string_view text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

std::string type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISFIFO(mode)) return "a FIFO";
  return "not a regular file";
}

/// A name for the temporary file beside the output: ".NAME.XXXXXXXXXXXX.tmp", random.
std::string temp_name(const std::string& base) {
  static constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::array<unsigned char, 12> rnd{};
  if (::getrandom(rnd.data(), rnd.size(), 0) != static_cast<ssize_t>(rnd.size()))
    for (std::size_t i = 0; i < rnd.size(); ++i)
      rnd.at(i) = static_cast<unsigned char>((static_cast<unsigned>(::getpid()) >> (i % 16)) + i);
  std::string out = "." + base.substr(0, 200) + ".";
  for (unsigned char c : rnd)
    out += kAlphabet.at(c % kAlphabet.size());
  return out + ".tmp";
}

/// How long a FIFO may go without a reader before the write fails (fifo(7): opening one for
/// writing blocks until a reader opens it; O_NONBLOCK fails with ENXIO instead).
constexpr int kFifoReaderWaitMs = 10000;

/// Writes to a character device or FIFO in place (O_WRONLY, no O_CREAT, no O_TRUNC). A FIFO
/// without a reader is waited for at most kFifoReaderWaitMs, never forever.
void write_in_place(const std::string& path, std::string_view text) {
  int raw = -1;
  for (int waited = 0;; waited += 50) {
    raw = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (raw >= 0 || errno != ENXIO || waited >= kFifoReaderWaitMs) break;
    ::usleep(50 * 1000);
  }
  const UniqueFd fd(raw);
  if (fd.get() < 0)
    throw OutputError(fmt::format("{}: cannot be written: {}", path,
                                  errno == ENXIO ? std::string("no process reads this FIFO")
                                                 : errno_text(errno)));
  // Blocking writes from here on: a reader that is slow is waited for, as by any shell command.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  if (const int err = write_all(fd.get(), text); err != 0)
    throw OutputError(fmt::format("{}: cannot be written: {}", path, errno_text(err)));
}

/// The mode of every file write_output_file creates: 0644, less the umask (open(2) applies it;
/// it can only remove bits). Never the mode of the file it replaces: a planted 6777 `fix.sh`
/// would otherwise come back root-owned, set-user-ID and world-writable. Scripts are run with
/// `bash FILE`, so none needs an execute bit.
constexpr mode_t kOutputMode = 0644;

/// Replaces (or creates) the regular file `base` in the directory open as `dfd` atomically: a new
/// file (O_CREAT|O_EXCL|O_NOFOLLOW, kOutputMode), written, fsync(2)ed, rename(2)d over `base`.
void write_atomic(const std::string& path, int dfd, const std::string& base,
                  std::string_view text) {
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = temp_name(base);
    // O_EXCL|O_NOFOLLOW: a planted file or symlink of that name is never opened (open(2)).
    fd = ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  kOutputMode);
    if (fd < 0 && errno != EEXIST)
      throw OutputError(fmt::format("{}: cannot be written: {}", path, errno_text(errno)));
  }
  if (fd < 0) throw OutputError(fmt::format("{}: cannot create a temporary file", path));
  int err = write_all(fd, text);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::renameat(dfd, tmp.c_str(), dfd, base.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlinkat(dfd, tmp.c_str(), 0);
    throw OutputError(fmt::format("{}: cannot be written: {}", path, errno_text(err)));
  }
  ::fsync(dfd); // the rename itself reaches the disk (fsync(2) on the directory)
}

/// True when `dir` is a sticky directory others may write (S_ISVTX with the group or the world
/// write bit: /tmp, /var/tmp, /dev/shm) and `owner`, the owner of an entry in it, is neither
/// this process's effective user nor the directory's owner. The kernel refuses O_CREAT opens of
/// such regular files and FIFOs, and following such symlinks, when fs.protected_regular,
/// fs.protected_fifos (at level 2, group-writable directories too) and fs.protected_symlinks are
/// set (Documentation/admin-guide/sysctl/fs.rst): a file another user planted there is theirs,
/// and root writing "through" or "over" it is what those settings exist to stop. The doctor
/// applies the rule itself, at level 2, whatever the sysctls say, since rename(2) over a file is
/// not an O_CREAT open and the kernel's check would not see it.
bool foreign_in_shared_dir(const struct stat& dir, uid_t owner) {
  const bool shared = (dir.st_mode & S_ISVTX) != 0 && (dir.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  return shared && owner != ::geteuid() && owner != dir.st_uid;
}

/// The refusal of a foreign entry in a shared sticky directory (InputError: exit 2).
[[noreturn]] void refuse_foreign(const std::string& path, const std::string& what, uid_t owner) {
  throw InputError(fmt::format("{}: is {} owned by uid {} in a sticky directory others can "
                               "write; not replaced or followed (as the kernel's "
                               "fs.protected_regular/protected_symlinks do): remove it or name "
                               "another path",
                               path, what, owner));
}

/// The descriptor `path` names if it is /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N
/// and that descriptor is open for writing.
std::optional<int> own_descriptor(const std::string& path) {
  int fd = -1;
  if (path == "/dev/stdout") {
    fd = STDOUT_FILENO;
  } else if (path == "/dev/stderr") {
    fd = STDERR_FILENO;
  } else {
    std::string_view num;
    for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"})
      if (path.starts_with(prefix)) num = std::string_view(path).substr(prefix.size());
    if (num.empty() || num.size() > 6) return std::nullopt;
    const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), fd);
    if (ec != std::errc() || p != num.data() + num.size()) return std::nullopt;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) return std::nullopt;
  return fd;
}

} // namespace

std::string read_input_file(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer would block in open(2) itself (fifo(7)).
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0)
    throw InputError(fmt::format("{}: cannot be read: {}", path, errno_text(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw InputError(fmt::format("{}: cannot be read: {}", path, errno_text(errno)));
  if (!S_ISREG(st.st_mode))
    throw InputError(
        fmt::format("{}: cannot be read: {}, not a regular file", path, type_name(st.st_mode)));
  if (st.st_size < 0 || static_cast<std::uintmax_t>(st.st_size) > max_bytes)
    throw InputError(fmt::format("{}: cannot be read: longer than {} bytes", path, max_bytes));
  std::string out;
  std::array<char, 65536> buf{};
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: cannot be read: {}", path, errno_text(errno)));
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
    // The file may grow after fstat(2): the cap holds for what is read too.
    if (out.size() > max_bytes)
      throw InputError(fmt::format("{}: cannot be read: longer than {} bytes", path, max_bytes));
  }
  return out;
}

nlohmann::json parse_json_input(std::string_view text, std::string_view origin, bool comments,
                                std::size_t max_depth,
                                const nlohmann::json::parser_callback_t& callback) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw InputError(fmt::format("{}:{}: not valid JSON: nested deeper than {} levels", origin,
                                     line_of_offset(text, i), max_depth));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  try {
    return nlohmann::json::parse(text, callback, true, comments);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(
        fmt::format("{}:{}: not valid JSON: {}", origin, line_of_offset(text, e.byte), e.what()));
  } catch (const nlohmann::json::exception& e) {
    // out_of_range 406: a number beyond the range of a double ("1e400").
    throw InputError(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
}

void write_output_file(const std::string& path, std::string_view text) {
  if (path.empty()) throw InputError("an output path is empty");
  // The names of this process's own descriptors (proc(5) /proc/self/fd, /dev/fd, /dev/stdout):
  // written through the descriptor itself, so `-o junit:/dev/stdout > report.xml` works without
  // following the link to the file behind it.
  if (const auto fd = own_descriptor(path)) {
    if (const int err = write_all(*fd, text); err != 0)
      throw OutputError(fmt::format("{}: cannot be written: {}", path, errno_text(err)));
    return;
  }
  const std::filesystem::path p(path);
  const std::string base = p.filename().string();
  if (base.empty() || base == "." || base == "..")
    throw InputError(fmt::format("{}: is a directory; name a file", path));
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  // Everything below is judged relative to one open directory, so the checks and the rename see
  // the same directory even if a component of its path is replaced meanwhile.
  const UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() < 0)
    throw InputError(
        fmt::format("{}: cannot be written: directory {}: {}", path, dir, errno_text(errno)));
  struct stat dst {};
  if (::fstat(dfd.get(), &dst) != 0)
    throw InputError(
        fmt::format("{}: cannot be written: directory {}: {}", path, dir, errno_text(errno)));
  struct stat lst {};
  if (::fstatat(dfd.get(), base.c_str(), &lst, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT)
      throw InputError(fmt::format("{}: cannot be written: {}", path, errno_text(errno)));
    lst.st_mode = 0;
  }
  if (lst.st_mode != 0 && S_ISLNK(lst.st_mode)) {
    if (foreign_in_shared_dir(dst, lst.st_uid)) refuse_foreign(path, "a symbolic link", lst.st_uid);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      throw InputError(fmt::format("{}: is a dangling symbolic link; not written", path));
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return write_in_place(path, text);
    throw InputError(fmt::format("{}: is a symbolic link to {}; not followed (name the file "
                                 "itself, or use FORMAT:- for stdout)",
                                 path,
                                 S_ISREG(st.st_mode) ? "a regular file" : type_name(st.st_mode)));
  }
  if (lst.st_mode != 0) {
    if (S_ISFIFO(lst.st_mode) && foreign_in_shared_dir(dst, lst.st_uid))
      refuse_foreign(path, "a FIFO", lst.st_uid);
    if (S_ISCHR(lst.st_mode) || S_ISFIFO(lst.st_mode)) return write_in_place(path, text);
    if (!S_ISREG(lst.st_mode))
      throw InputError(fmt::format("{}: is {}; reports are written only to regular files, "
                                   "character devices and pipes",
                                   path, type_name(lst.st_mode)));
    if (foreign_in_shared_dir(dst, lst.st_uid)) refuse_foreign(path, "a file", lst.st_uid);
  }
  // Always a new file of mode kOutputMode: nothing of the replaced file (mode, owner, ACL, set-ID
  // bits, hard links) carries over.
  write_atomic(path, dfd.get(), base, text);
}

void write_stdout(std::string_view text) {
  if (const int err = write_all(STDOUT_FILENO, text); err != 0)
    throw OutputError(fmt::format("standard output cannot be written: {}", errno_text(err)));
}

void write_stdout_text(std::string_view text) {
  write_stdout(terminal_safe(text, /*keep_sgr=*/true));
}

void write_stderr_text(std::string_view text) {
  (void)write_all(STDERR_FILENO, terminal_safe(text));
}

} // namespace halo
