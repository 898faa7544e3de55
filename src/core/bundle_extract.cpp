// SPDX-License-Identifier: MIT
// Capture bundles with libarchive, the extraction part: an untrusted archive unpacked for replay
// into a private directory, member by member under limits, removed again on every way out (a
// fatal signal included).
#include "bundle_internal.hpp"

#include <halo/archive_read.hpp>
#include <halo/bundle.hpp>
#include <halo/error.hpp>

#include <fmt/format.h>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace halo {
namespace bundle_detail {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto pos = s.find(sep, start);
    out.emplace_back(
        s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

bool link_stays_inside(const std::string& rel, const std::string& target) {
  if (target.empty() || target[0] == '/') return false;
  auto segs = split(rel, '/');
  segs.pop_back(); // the link's own name
  long depth = 0;
  for (const auto& s : segs)
    if (!s.empty() && s != ".") ++depth;
  for (const auto& s : split(target, '/')) {
    if (s.empty() || s == ".") continue;
    depth += s == ".." ? -1 : 1;
    if (depth < 0) return false;
  }
  return true;
}

#ifndef SYS_openat2
#define SYS_openat2 437 // the same number on every architecture (asm-generic/unistd.h)
#endif

// The walk of path_resolution(7) below `dirfd`, reporting the first step that would leave it
// (`..` at the top, an absolute link target).
bool link_leaves_tree_walk(int dirfd, const std::string& rel) {
  std::vector<std::string> todo; // components still to visit, the next one last
  auto push_front = [&todo](std::string_view path) {
    auto parts = split(path, '/');
    std::reverse(parts.begin(), parts.end()); // the next component to visit goes last
    for (auto& part : parts)
      if (!part.empty()) todo.push_back(std::move(part));
  };
  push_front(rel);
  std::vector<std::string> done;
  int links = 0;
  while (!todo.empty()) {
    std::string comp = std::move(todo.back());
    todo.pop_back();
    if (comp == ".") continue;
    if (comp == "..") {
      if (done.empty()) return true;
      done.pop_back();
      continue;
    }
    done.push_back(std::move(comp));
    std::string path;
    for (const auto& d : done)
      path += (path.empty() ? "" : "/") + d;
    struct stat st {};
    if (::fstatat(dirfd, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false; // ENOENT
    if (!S_ISLNK(st.st_mode)) {
      if (!todo.empty() && !S_ISDIR(st.st_mode)) return false; // ENOTDIR
      continue;
    }
    if (++links > 40) return false; // ELOOP (path_resolution(7): at most 40 links)
    std::array<char, 4096> target{};
    const ssize_t n = ::readlinkat(dirfd, path.c_str(), target.data(), target.size());
    if (n <= 0 || static_cast<std::size_t>(n) >= target.size()) return false;
    done.pop_back();
    if (target[0] == '/') return true;
    push_front(std::string_view(target.data(), static_cast<std::size_t>(n)));
  }
  return false;
}

bool link_leaves_tree(int dirfd, const std::string& rel) {
  static std::atomic<bool> have_openat2{true};
  if (have_openat2.load(std::memory_order_relaxed)) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(O_PATH | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    // EAGAIN: a rename elsewhere on the system raced the lookup (openat2(2)); retry a few times.
    for (int tries = 0; tries < 32; ++tries) {
      const long fd = ::syscall(SYS_openat2, dirfd, rel.c_str(), &how, sizeof how);
      if (fd >= 0) {
        ::close(static_cast<int>(fd));
        return false;
      }
      if (errno == EAGAIN || errno == EINTR) continue;
      if (errno == EXDEV) return true; // openat2(2): "would leave dirfd" under RESOLVE_BENEATH
      if (errno != ENOSYS && errno != EPERM && errno != EINVAL && errno != E2BIG) return false;
      // No openat2 (before Linux 5.6) or a seccomp filter refusing it: the walk instead.
      if (errno == ENOSYS) have_openat2.store(false, std::memory_order_relaxed);
      break;
    }
  }
  return link_leaves_tree_walk(dirfd, rel);
}

} // namespace bundle_detail

namespace {

using bundle_detail::link_leaves_tree;
using bundle_detail::link_stays_inside;
using bundle_detail::split;

/// The extraction directories of the live ExtractedBundles, for the signal handler. `fleet
/// compare` extracts bundles on several worker threads at once, so each bundle claims a slot of
/// its own: free -> writing by compare-exchange, the path copied, then published as live (release
/// order). The handler removes the live slots' directories. The slot states are lock-free atomics,
/// which a signal handler may use ([support.signal]; checked below); the handler allocates nothing.
enum SlotState : int { kSlotFree = 0, kSlotWriting = 1, kSlotLive = 2 };
constexpr std::size_t kSlotPathBytes = 4096; ///< PATH_MAX, with the terminating NUL
struct DirSlot {
  std::atomic<int> state{kSlotFree};
  std::array<char, kSlotPathBytes> path{};
};
static_assert(std::atomic<int>::is_always_lock_free);
/// More than the worker threads fleet compare starts (one per core, include/halo/fleet.hpp); a
/// bundle that finds every slot taken is still removed on return and on exceptions, only not by a
/// signal.
constexpr std::size_t kDirSlots = 256;
std::array<DirSlot, kDirSlots> g_bundle_dirs;

/// Publishes `dir` for the signal handler; the slot's index, or -1 when every slot is taken (or
/// the path does not fit).
int claim_dir_slot(const std::string& dir) {
  if (dir.size() >= kSlotPathBytes) return -1;
  for (std::size_t i = 0; i < g_bundle_dirs.size(); ++i) {
    DirSlot& slot = g_bundle_dirs.at(i);
    int expected = kSlotFree;
    if (!slot.state.compare_exchange_strong(expected, kSlotWriting, std::memory_order_acquire))
      continue;
    std::memcpy(slot.path.data(), dir.c_str(), dir.size() + 1);
    slot.state.store(kSlotLive, std::memory_order_release);
    return static_cast<int>(i);
  }
  return -1;
}

/// Gives the slot back once its directory is gone (or going): the handler no longer removes it.
void release_dir_slot(int slot) {
  if (slot >= 0)
    g_bundle_dirs.at(static_cast<std::size_t>(slot))
        .state.store(kSlotFree, std::memory_order_release);
}

/// Removes everything under the directory `dfd` refers to, then closes it; only
/// async-signal-safe calls (signal-safety(7): openat, unlinkat, close; getdents64 is a plain
/// system call), no allocation. Depth is bounded by kMaxBundleDepth.
void remove_tree_at(int dfd, int depth) {
  alignas(8) std::array<char, 4096> buf{};
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dfd, buf.data(), buf.size());
    if (n <= 0) break;
    bool removed_any = false;
    for (long off = 0; off < n;) {
      struct Dirent64 {
        std::uint64_t d_ino;
        std::int64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[1]; // NOLINT(*-avoid-c-arrays): struct linux_dirent64, getdents64(2)
      };
      const auto* d = reinterpret_cast<const Dirent64*>(buf.data() + off);
      off += d->d_reclen;
      const char* name = d->d_name;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      if (::unlinkat(dfd, name, 0) == 0) {
        removed_any = true;
        continue;
      }
      if (depth < 64) {
        const int sub = ::openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) remove_tree_at(sub, depth + 1);
      }
      if (::unlinkat(dfd, name, AT_REMOVEDIR) == 0) removed_any = true;
    }
    if (removed_any) ::lseek(dfd, 0, SEEK_SET);
  }
  ::close(dfd);
}

/// On a fatal signal: remove the extraction directory, then die of the same signal (SIG_DFL and
/// re-raise, so the exit status still says which signal it was).
void bundle_signal_handler(int sig) {
  bundle_detail::remove_live_extraction_dirs();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

} // namespace

namespace bundle_detail {

void remove_live_extraction_dirs() noexcept {
  for (DirSlot& slot : g_bundle_dirs) {
    int expected = kSlotLive; // taken, so neither another thread's handler nor a reuse races it
    if (!slot.state.compare_exchange_strong(expected, kSlotWriting, std::memory_order_acquire))
      continue;
    const int dfd = ::open(slot.path.data(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd >= 0) remove_tree_at(dfd, 0);
    ::rmdir(slot.path.data());
    // Left taken: the owner's destructor gives it back (its remove_all finds nothing).
  }
}

std::vector<std::string> live_extraction_dirs() {
  std::vector<std::string> out;
  for (const DirSlot& slot : g_bundle_dirs)
    if (slot.state.load(std::memory_order_acquire) == kSlotLive) out.emplace_back(slot.path.data());
  return out;
}

} // namespace bundle_detail

namespace {

constexpr std::array<int, 9> kCleanupSignals = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT,
                                                SIGSEGV, SIGBUS, SIGFPE, SIGILL};

/// The fatal signals' handlers (process-wide), leaving ignored signals ignored.
void install_cleanup_actions() {
  for (int sig : kCleanupSignals) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue; // nohup and friends: leave ignored signals ignored
    struct sigaction sa {};
    sa.sa_handler = bundle_signal_handler;
    sa.sa_flags = static_cast<int>(SA_ONSTACK | SA_RESETHAND);
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

/// Installs bundle_signal_handler for the fatal signals, once per process (a thread-safe static:
/// `fleet compare` extracts bundles on worker threads). The handlers run on an alternate stack so a
/// stack overflow (SIGSEGV) can still clean up (sigaltstack(2)); an alternate stack is the calling
/// thread's own, so it is set only on the main thread, whose stack lives as long as the buffer
/// (a worker that exits would leave the kernel pointing at a stack no thread owns; AddressSanitizer
/// unmaps a thread's alternate stack when the thread ends). Elsewhere SA_ONSTACK falls back to
/// the thread's own stack.
void install_cleanup_handlers() {
  static const bool installed = [] {
    if (::gettid() == ::getpid()) {
      static std::array<char, std::size_t{64} * 1024> alt_stack{};
      stack_t ss{};
      ss.ss_sp = alt_stack.data();
      ss.ss_size = alt_stack.size();
      ::sigaltstack(&ss, nullptr);
    }
    install_cleanup_actions();
    return true;
  }();
  (void)installed;
}

/// A reader for gzip/xz/zstd/bzip2-compressed (or plain) tar archives using libarchive's
/// built-in decompressors only (support_builtin_read_filters): lrzip, lzop, grzip, lz4 via
/// program and the like are never offered (no support_filter_all).
archive* new_bundle_reader() {
  archive* in = archive_read_new();
  support_builtin_read_filters(
      in, {archive_read_support_filter_gzip, archive_read_support_filter_xz,
           archive_read_support_filter_zstd, archive_read_support_filter_bzip2});
  archive_read_support_format_tar(in);
  archive_read_support_format_gnutar(in);
  return in;
}

} // namespace

ExtractedBundle::ExtractedBundle(const std::string& archive_path) {
  // The archive itself: a regular file (a FIFO or /dev/zero would block or never end).
  {
    struct stat st {};
    if (::stat(archive_path.c_str(), &st) != 0)
      throw InputError(fmt::format("{}: cannot be read: {}", archive_path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
      throw InputError(fmt::format("{}: cannot be read: not a regular file", archive_path));
  }
  install_cleanup_handlers();
  std::string templ = (std::filesystem::temp_directory_path() / "halo-bundle-XXXXXX").string();
  if (templ.size() >= kSlotPathBytes || ::mkdtemp(templ.data()) == nullptr)
    throw InputError(fmt::format("{}: cannot create a directory to extract it", archive_path));
  dir_ = templ;
  slot_ = claim_dir_slot(templ);
  archive* in = new_bundle_reader();
  archive* out = archive_write_disk_new();
  // Entry names are checked below and made absolute under dir_; no owners, no special modes.
  archive_write_disk_set_options(out,
                                 ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS);
  auto cleanup = [&] {
    archive_read_free(in);
    archive_write_free(out);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    release_dir_slot(slot_);
    slot_ = -1;
  };
  auto refuse = [&](const std::string& what) {
    cleanup();
    throw InputError(fmt::format("{}: {}", archive_path, what));
  };
  auto fail = [&](archive* a) {
    const std::string msg =
        archive_error_string(a) != nullptr ? archive_error_string(a) : "unknown error";
    refuse("not a readable capture bundle: " + msg);
  };
  if (archive_read_open_filename(in, archive_path.c_str(), std::size_t{64} * 1024) != ARCHIVE_OK)
    fail(in);
  archive_entry* e = nullptr;
  int rc = ARCHIVE_OK;
  std::size_t members = 0;
  std::uint64_t total = 0;
  std::vector<std::string> links; // the symlink entries, judged again once all are extracted
  while ((rc = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
    const char* name = archive_entry_pathname(e);
    const std::string rel = name != nullptr ? name : "";
    const auto segs = split(rel, '/');
    if (rel.empty() || rel[0] == '/' || std::find(segs.begin(), segs.end(), "..") != segs.end() ||
        archive_entry_hardlink(e) != nullptr)
      refuse(fmt::format("entry '{}' would be extracted outside the bundle", rel));
    if (++members > kMaxBundleMembers)
      refuse(fmt::format("more than {} members; not a capture bundle", kMaxBundleMembers));
    if (segs.size() > kMaxBundleDepth)
      refuse(fmt::format("entry '{}' is nested deeper than {} levels", rel, kMaxBundleDepth));
    const auto type = archive_entry_filetype(e);
    if (type == AE_IFLNK) {
      const char* t = archive_entry_symlink(e);
      const std::string target = t != nullptr ? t : "";
      if (!link_stays_inside(rel, target))
        refuse(
            fmt::format("entry '{}' is a symbolic link to '{}', outside the bundle", rel, target));
      links.push_back(rel);
    } else if (type != AE_IFREG && type != AE_IFDIR) {
      refuse(fmt::format("entry '{}' is not a regular file, directory or symbolic link (device "
                         "nodes, FIFOs and sockets are never extracted)",
                         rel));
    }
    // Plain permissions only: no set-user-ID, set-group-ID or sticky bits, always readable and
    // writable by us so the directory can be removed again.
    const mode_t perm = archive_entry_perm(e);
    archive_entry_set_perm(
        e, static_cast<mode_t>((perm & 0755U) | (type == AE_IFDIR ? 0700U : 0600U)));
    archive_entry_set_uid(e, ::getuid());
    archive_entry_set_gid(e, ::getgid());
    const std::string dest = (dir_ / rel).string();
    archive_entry_set_pathname(e, dest.c_str());
    if (archive_write_header(out, e) != ARCHIVE_OK) fail(out);
    const void* buf = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    int r = ARCHIVE_OK;
    while ((r = archive_read_data_block(in, &buf, &size, &offset)) == ARCHIVE_OK) {
      // Offset + size, not size alone: a sparse entry could claim terabytes with a few bytes.
      const std::uint64_t end_at =
          static_cast<std::uint64_t>(std::max<la_int64_t>(offset, 0)) + size;
      if (end_at > kMaxBundleMemberBytes)
        refuse(fmt::format("entry '{}' is larger than {} bytes", rel, kMaxBundleMemberBytes));
      total += size;
      if (total > kMaxBundleBytes)
        refuse(fmt::format("expands to more than {} bytes; not a capture bundle", kMaxBundleBytes));
      if (archive_write_data_block(out, buf, size, offset) != ARCHIVE_OK) fail(out);
    }
    if (r != ARCHIVE_EOF) fail(in);
    if (archive_write_finish_entry(out) != ARCHIVE_OK) fail(out);
  }
  if (rc != ARCHIVE_EOF) fail(in);
  archive_read_free(in);
  archive_write_free(out);
  in = nullptr;
  out = nullptr;
  auto give_up = [&](const std::string& what) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    release_dir_slot(slot_);
    slot_ = -1;
    throw InputError(fmt::format("{}: {}", archive_path, what));
  };
  // Each link judged as the kernel resolves it, through the links extracted before and after it:
  // link_stays_inside counts one link's components, and a chain (`s -> ..`, `t -> s/..`,
  // `u -> t/..`, `f -> u/x`) passes that link by link while leading out (issue 44 item 3).
  {
    const int dfd = ::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) give_up("cannot open the directory it was extracted to");
    const UniqueFd guard(dfd);
    for (const auto& rel : links)
      if (link_leaves_tree(dfd, rel))
        give_up(fmt::format("entry '{}' is a symbolic link that leads outside the bundle (through "
                            "the links it names, as the kernel resolves them)",
                            rel));
  }
  // Every read of the tree from here on goes through Root (openat2(2) RESOLVE_IN_ROOT).
  struct stat st {};
  if (!Root(dir_).stat_path("/.halo/manifest.json", st) || !S_ISREG(st.st_mode))
    give_up("not a halo-doctor capture bundle (no .halo/manifest.json)");
}

ExtractedBundle::~ExtractedBundle() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  release_dir_slot(slot_);
}

std::optional<std::string> ExtractedBundle::runtime_facts_text(std::size_t max_bytes) const {
  // Confined to the bundle (openat2(2) RESOLVE_IN_ROOT, as every --root read): a link in the
  // bundle can never make this read a host file.
  const ReadResult r = Root(dir_).read(std::string("/") + kBundleRuntimeFacts, max_bytes);
  if (r.status == Status::missing) return std::nullopt;
  if (!r.ok())
    throw InputError(
        fmt::format("bundle entry '{}' cannot be read: {}", kBundleRuntimeFacts, r.reason));
  return r.text;
}

} // namespace halo
