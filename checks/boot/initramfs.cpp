// SPDX-License-Identifier: MIT
// Probe: whether the initramfs the machine boots holds the amdgpu firmware files the kernel log
// says failed to load ("Direct firmware load for amdgpu/X failed with error -2"). amdgpu is
// usually loaded from the initramfs, where the kernel's firmware loader looks in the image's
// /lib/firmware (drivers/base/firmware_loader/main.c fw_path[]: updates/UTS_RELEASE, updates,
// UTS_RELEASE, "" under /lib/firmware), so a file installed since the image was built is not seen
// until the image is rebuilt.
//
// The image, through the host root (its /boot): /boot/initrd.img-RELEASE (initramfs-tools),
// /boot/initramfs-RELEASE.img (dracut), /boot/initrd-RELEASE (SUSE), /boot/initramfs-linux.img
// (Arch mkinitcpio), /boot/initrd-RELEASE.img (Mageia's dracut). Its layout: one or more
// uncompressed cpio "newc" archives (CPU microcode, and since initramfs-tools 0.141 / dracut-ng PR
// 1433 the already-compressed firmware and modules), then one compressed cpio archive
// (init/initramfs.c unpack_to_rootfs: segments may follow each other, zero padding between them).
// Each segment is read with libarchive; firmware sits at usr/lib/firmware/amdgpu/NAME or
// lib/firmware/amdgpu/NAME, as NAME, NAME.xz or NAME.zst (initramfs-tools hook-functions
// add_firmware, dracut-install: the file is copied as it is).
//
// The compressions read are those the kernel can unpack an initramfs from (usr/Kconfig
// RD_GZIP, RD_BZIP2, RD_LZMA, RD_XZ, RD_LZ4, RD_ZSTD; lib/decompress.c), each with libarchive's
// built-in decoder (support_builtin_read_filters). RD_LZO is the one left out: Debian's libarchive
// has no liblzo2 and would run an external `lzop` on the image, and none of initramfs-tools, dracut
// and mkinitcpio makes LZO images by default (their defaults are zstd, gzip or lz4); such an image
// is an error fact, not a guess.
//
// The image is read only when the kernel log names such a failure: listing a 100 MB image costs
// a decompression, which a routine check does not pay. Bounded: the image size, the segments,
// the entries and the decompressed bytes are capped; a damaged image is an error fact.
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/archive_read.hpp>
#include <halo/fact_keys.hpp>

#include <fmt/format.h>

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

namespace halo::probes {
namespace {

constexpr std::int64_t kMaxImageBytes = std::int64_t{1} << 30;    // 1 GiB on disk
constexpr std::int64_t kMaxUnpackedBytes = std::int64_t{4} << 30; // 4 GiB decompressed
constexpr std::size_t kMaxEntries = 500000;                       // files in all segments
constexpr int kMaxSegments = 16;

/// The image's paths, normalised to "lib/firmware/..." (a leading "./", "/" or "usr/" dropped).
struct Listing {
  std::set<std::string> firmware;
  int segments = 0;
  std::string error; ///< empty when the image was read to its end
};

std::string normalise(std::string_view p) {
  while (p.starts_with("./"))
    p.remove_prefix(2);
  while (p.starts_with("/"))
    p.remove_prefix(1);
  if (p.starts_with("usr/")) p.remove_prefix(4);
  return std::string(p);
}

/// Reads every cpio segment of the image open on `fd` (size `size`).
Listing list_image(int fd, std::int64_t size) {
  Listing out;
  std::int64_t offset = 0;
  std::size_t entries = 0;
  std::int64_t unpacked = 0;
  while (offset < size && out.segments < kMaxSegments) {
    // Zero padding between segments, as the kernel skips it (init/initramfs.c do_start).
    std::array<char, 4096> buf{};
    bool data = false;
    while (offset < size && !data) {
      const ssize_t n = ::pread(fd, buf.data(), buf.size(), offset);
      if (n <= 0) break;
      const char* const read_begin = buf.data();
      const char* const read_end = read_begin + n;
      const char* const first = std::find_if(read_begin, read_end, [](char c) { return c != 0; });
      if (first != read_end) {
        offset += first - read_begin;
        data = true;
      } else {
        offset += n;
      }
    }
    if (!data) break;
    if (::lseek(fd, offset, SEEK_SET) != offset) {
      out.error = std::strerror(errno);
      break;
    }
    std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), archive_read_free);
    support_builtin_read_filters(
        a.get(), {archive_read_support_filter_gzip, archive_read_support_filter_bzip2,
                  archive_read_support_filter_lzma, archive_read_support_filter_xz,
                  archive_read_support_filter_lz4, archive_read_support_filter_zstd});
    archive_read_support_format_cpio(a.get());
    if (archive_read_open_fd(a.get(), fd, std::size_t{64} * 1024) != ARCHIVE_OK) {
      out.error = fmt::format("segment at byte {}: {}", offset, archive_error_string(a.get()));
      break;
    }
    ++out.segments;
    archive_entry* e = nullptr;
    int r = ARCHIVE_OK;
    while ((r = archive_read_next_header(a.get(), &e)) == ARCHIVE_OK) {
      if (++entries > kMaxEntries) {
        out.error = fmt::format("more than {} entries", kMaxEntries);
        return out;
      }
      if (const char* name = archive_entry_pathname(e)) {
        std::string n = normalise(name);
        if (n.starts_with("lib/firmware/")) out.firmware.insert(std::move(n));
      }
      if (archive_read_data_skip(a.get()) != ARCHIVE_OK) break;
      unpacked = archive_filter_bytes(a.get(), 0);
      if (unpacked > kMaxUnpackedBytes) {
        out.error = fmt::format("more than {} bytes unpacked", kMaxUnpackedBytes);
        return out;
      }
    }
    if (r != ARCHIVE_EOF) {
      out.error = fmt::format(
          "segment {} at byte {}: {}", out.segments, offset,
          archive_error_string(a.get()) != nullptr ? archive_error_string(a.get()) : "read error");
      break;
    }
    // An uncompressed segment ends where the cpio reader stopped; a compressed one is the
    // image's last (the kernel's layout: compressed main archive at the end).
    if (archive_filter_code(a.get(), 0) != ARCHIVE_FILTER_NONE) break;
    const std::int64_t used = archive_filter_bytes(a.get(), 0);
    if (used <= 0) break;
    offset += used;
  }
  return out;
}

/// True when `name` (amdgpu/x.bin) is in the listing under one of the kernel's firmware
/// directories, plain or compressed.
bool has_firmware(const std::set<std::string>& fw, const std::string& name,
                  const std::string& release) {
  for (const std::string& dir :
       {std::string("lib/firmware/updates/") + release + "/", std::string("lib/firmware/updates/"),
        std::string("lib/firmware/") + release + "/", std::string("lib/firmware/")})
    for (const char* ext : {"", ".xz", ".zst"})
      if (fw.contains(dir + name + ext)) return true;
  return false;
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  static const std::vector<std::string> kKeys = {
      std::string(fact_keys::initramfs::path), std::string(fact_keys::initramfs::segments),
      std::string(fact_keys::initramfs::firmware_failed_present),
      std::string(fact_keys::initramfs::firmware_failed_missing)};
  const auto failures =
      facts.get<std::vector<std::string>>(fact_keys::kernel_log::firmware_load_failures);
  std::vector<std::string> names;
  for (const auto& f : failures.value_or(std::vector<std::string>{}))
    names.push_back(f.substr(0, f.find(": ")));
  if (names.empty()) {
    for (const auto& k : kKeys)
      facts.put_status(k, Status::missing, "kernel log",
                       failures ? "no firmware load failure in the kernel log: not read"
                                : "the kernel log could not be read: not read");
    return;
  }
  const Root* host = ctx.host_config_root();
  if (host == nullptr) {
    for (const auto& k : kKeys)
      facts.put_status(k, Status::missing, "host root", ctx.host_basis());
    return;
  }
  const std::string release = facts.get<std::string>(fact_keys::kernel::release).value_or("");
  std::vector<std::string> candidates;
  if (!release.empty())
    candidates = {"/boot/initrd.img-" + release, "/boot/initramfs-" + release + ".img",
                  "/boot/initrd-" + release + ".img", "/boot/initrd-" + release};
  candidates.emplace_back("/boot/initramfs-linux.img");
  std::string path;
  int fd = -1;
  int open_errno = ENOENT;
  for (const auto& c : candidates) {
    fd = host->open_regular(c);
    if (fd >= 0) {
      path = c;
      break;
    }
    if (errno != ENOENT && errno != ENOTDIR) {
      open_errno = errno;
      path = c;
      break;
    }
  }
  if (fd < 0) {
    const Status st = open_errno == EACCES || open_errno == EPERM ? Status::denied
                      : path.empty()                              ? Status::missing
                                                                  : Status::error;
    const std::string why =
        st == Status::denied
            ? fmt::format("{} is readable by root only: list it with `sudo lsinitrd {}` "
                          "(dracut) or `sudo lsinitramfs {}` (initramfs-tools)",
                          path, path, path)
        : st == Status::missing
            ? std::string(kNotProbedPrefix) + "no initramfs image for kernel " + release +
                  " in /boot (a unified kernel image, no initramfs, or a capture without it)"
            : fmt::format("{}: {}", path, std::strerror(open_errno));
    for (const auto& k : kKeys)
      facts.put_status(k, st, path.empty() ? "/boot" : path, why);
    return;
  }
  const UniqueFd guard(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size > kMaxImageBytes) {
    for (const auto& k : kKeys)
      facts.put_status(k, Status::error, path,
                       fmt::format("larger than {} bytes: not read", kMaxImageBytes));
    return;
  }
  const Listing l = list_image(fd, st.st_size);
  facts.put_ok(std::string(fact_keys::initramfs::path), path, "/boot");
  if (!l.error.empty()) {
    for (const auto& k : {kKeys[1], kKeys[2], kKeys[3]})
      facts.put_status(k, Status::error, path, "could not read the image: " + l.error);
    return;
  }
  facts.put_ok(std::string(fact_keys::initramfs::segments), static_cast<std::int64_t>(l.segments),
               path);
  std::vector<std::string> present;
  std::vector<std::string> missing;
  for (const auto& n : names)
    (has_firmware(l.firmware, n, release) ? present : missing).push_back(n);
  const std::string src = path + " (cpio listing, lib/firmware and usr/lib/firmware)";
  facts.put_ok(std::string(fact_keys::initramfs::firmware_failed_present), present, src);
  facts.put_ok(std::string(fact_keys::initramfs::firmware_failed_missing), missing, src);
}

} // namespace

std::unique_ptr<Probe> make_initramfs_probe() {
  return std::make_unique<BasicProbe>("initramfs", collect);
}

} // namespace halo::probes
