// SPDX-License-Identifier: MIT
// Offload-bundle reader: see offload_bundle.hpp for the formats and their sources.
#include "offload_bundle.hpp"

#include <fmt/format.h>

#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace halo::probes {
namespace {

constexpr std::string_view kMagic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view kCompressedMagic = "CCOB";
/// The fixed part of an uncompressed bundle: magic and entry count.
constexpr std::size_t kBundleFixed = 32;
/// The fixed part of one entry: offset, size, id length.
constexpr std::size_t kEntryFixed = 24;
/// An entry id is a short target string; a longer one is not a bundle.
constexpr std::uint64_t kMaxIdBytes = 4096;
/// Compressed bytes read per step while decompressing a header.
constexpr std::size_t kInflateChunk = std::size_t{16} * 1024;
/// The first read of a header; grown up to FatbinLimits::max_header_bytes.
constexpr std::size_t kFirstHeaderRead = 4096;

std::uint64_t le(const std::byte* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i)
    v |= std::to_integer<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

bool starts_with(std::span<const std::byte> b, std::string_view magic) {
  return b.size() >= magic.size() && std::memcmp(b.data(), magic.data(), magic.size()) == 0;
}

std::vector<std::byte> read_bytes(const ReadAt& read, std::uint64_t offset, std::uint64_t n) {
  std::vector<std::byte> buf(static_cast<std::size_t>(n));
  std::size_t got = 0;
  // A reader may return short counts before the end; keep asking until it returns 0.
  while (got < buf.size()) {
    const std::size_t r = read(offset + got, std::span<std::byte>(buf).subspan(got));
    if (r == 0) break;
    got += r;
  }
  buf.resize(got);
  return buf;
}

enum class Parse { ok, need_more, bad };

struct Header {
  std::vector<std::string> ids;
  std::uint64_t end = 0; ///< bytes from the bundle's start past its header and last code object
};

Parse parse_header(std::span<const std::byte> b, const FatbinLimits& limits, Header& out,
                   std::string& why) {
  if (b.size() < kBundleFixed) return Parse::need_more;
  if (!starts_with(b, kMagic)) {
    why = "no __CLANG_OFFLOAD_BUNDLE__ magic";
    return Parse::bad;
  }
  const std::uint64_t n = le(b.data() + kMagic.size(), 8);
  if (n == 0 || n > limits.max_entries) {
    why = fmt::format("a bundle of {} entries (at most {} are read)", n, limits.max_entries);
    return Parse::bad;
  }
  out = Header{};
  std::size_t pos = kBundleFixed;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (b.size() - pos < kEntryFixed) return Parse::need_more;
    const std::uint64_t offset = le(b.data() + pos, 8);
    const std::uint64_t size = le(b.data() + pos + 8, 8);
    const std::uint64_t id_len = le(b.data() + pos + 16, 8);
    pos += kEntryFixed;
    if (id_len == 0 || id_len > kMaxIdBytes) {
      why = fmt::format("entry {} has an id of {} bytes", i, id_len);
      return Parse::bad;
    }
    if (b.size() - pos < id_len) return Parse::need_more;
    out.ids.emplace_back(reinterpret_cast<const char*>(b.data() + pos),
                         static_cast<std::size_t>(id_len));
    pos += static_cast<std::size_t>(id_len);
    if (offset > std::numeric_limits<std::uint64_t>::max() - size) {
      why = fmt::format("entry {} ends past 2^64 (offset {}, size {})", i, offset, size);
      return Parse::bad;
    }
    out.end = std::max(out.end, offset + size);
  }
  out.end = std::max<std::uint64_t>(out.end, pos);
  return Parse::ok;
}

/// The first `want` bytes of the compressed payload [in_off, in_end): zstd (method 1) or zlib
/// (method 0, RFC 1950 as llvm::compression::zlib writes it). std::nullopt with `why` on a
/// decoding error; fewer bytes than `want` when the payload ends first.
std::optional<std::vector<std::byte>> inflate_prefix(const ReadAt& read, std::uint64_t in_off,
                                                     std::uint64_t in_end, std::uint16_t method,
                                                     std::size_t want, std::string& why) {
  std::vector<std::byte> out(want);
  std::array<std::byte, kInflateChunk> in{};
  std::size_t produced = 0;
  std::uint64_t pos = in_off;
  if (method == 1) {
    // The library's default window limit (ZSTD_WINDOWLOG_LIMIT_DEFAULT, 128 MiB) bounds what a
    // hostile frame can make it allocate; every frame LLVM's ZSTD_compress writes is within it.
    std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!ctx) {
      why = "zstd: out of memory";
      return std::nullopt;
    }
    bool frame_done = false;
    while (produced < want && pos < in_end && !frame_done) {
      const std::size_t n = read(pos, std::span<std::byte>(in).first(static_cast<std::size_t>(
                                          std::min<std::uint64_t>(in.size(), in_end - pos))));
      if (n == 0) break;
      pos += n;
      ZSTD_inBuffer ib{in.data(), n, 0};
      ZSTD_outBuffer ob{out.data(), want, produced};
      while (ib.pos < ib.size && ob.pos < ob.size) {
        const std::size_t before_in = ib.pos;
        const std::size_t before_out = ob.pos;
        const std::size_t r = ZSTD_decompressStream(ctx.get(), &ob, &ib);
        if (ZSTD_isError(r) != 0U) {
          why = fmt::format("zstd: {}", ZSTD_getErrorName(r));
          return std::nullopt;
        }
        if (r == 0) {
          frame_done = true;
          break;
        }
        if (ib.pos == before_in && ob.pos == before_out) break;
      }
      produced = ob.pos;
    }
  } else {
    z_stream zs{};
    if (inflateInit(&zs) != Z_OK) {
      why = "zlib: cannot start inflate";
      return std::nullopt;
    }
    std::unique_ptr<z_stream, decltype(&inflateEnd)> guard(&zs, inflateEnd);
    bool stream_end = false;
    while (produced < want && pos < in_end && !stream_end) {
      const std::size_t n = read(pos, std::span<std::byte>(in).first(static_cast<std::size_t>(
                                          std::min<std::uint64_t>(in.size(), in_end - pos))));
      if (n == 0) break;
      pos += n;
      zs.next_in = reinterpret_cast<Bytef*>(in.data());
      zs.avail_in = static_cast<uInt>(n);
      while (zs.avail_in > 0 && produced < want) {
        zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
        zs.avail_out = static_cast<uInt>(std::min<std::size_t>(want - produced, 1U << 30U));
        const uInt before_out = zs.avail_out;
        const int r = inflate(&zs, Z_NO_FLUSH);
        produced += before_out - zs.avail_out;
        if (r == Z_STREAM_END) {
          stream_end = true;
          break;
        }
        if (r == Z_BUF_ERROR) break; // no progress possible with this input
        if (r != Z_OK) {
          why = fmt::format("zlib: {}", zs.msg != nullptr ? zs.msg : "inflate failed");
          return std::nullopt;
        }
      }
    }
  }
  out.resize(produced);
  return out;
}

/// Where the next bundle starts: the first magic in the window after `from`; nullopt at the
/// section's end or when the window holds none (`more` then says whether bytes were left).
std::optional<std::uint64_t> next_bundle(const ReadAt& read, std::uint64_t from, std::uint64_t size,
                                         std::uint64_t window, bool& more) {
  more = false;
  if (from >= size) return std::nullopt;
  const std::uint64_t n = std::min(window, size - from);
  const std::vector<std::byte> buf = read_bytes(read, from, n);
  const std::string_view text(reinterpret_cast<const char*>(buf.data()), buf.size());
  const std::size_t a = text.find(kMagic);
  const std::size_t b = text.find(kCompressedMagic);
  const std::size_t at = std::min(a, b);
  if (at != std::string_view::npos) return from + at;
  // Only padding (zero bytes) left before the section's end is a clean end.
  more = n < size - from ||
         std::any_of(buf.begin(), buf.end(), [](std::byte c) { return c != std::byte{0}; });
  return std::nullopt;
}

} // namespace

std::optional<std::string> gfx_from_bundle_id(std::string_view id) {
  // KIND-ARCH-VENDOR-OS-ENV-TARGETID: five dashes before the target id, whose own dashes
  // (gfx11-generic) belong to it.
  std::size_t pos = 0;
  std::array<std::string_view, 5> parts{};
  for (auto& part : parts) {
    const std::size_t dash = id.find('-', pos);
    if (dash == std::string_view::npos) return std::nullopt;
    part = id.substr(pos, dash - pos);
    pos = dash + 1;
  }
  if (parts[1] != "amdgcn") return std::nullopt;
  std::string_view target = id.substr(pos);
  target = target.substr(0, target.find(':')); // gfx90a:xnack+ -> gfx90a
  if (target.size() < 4 || target.size() > 32 || target.substr(0, 3) != "gfx") return std::nullopt;
  const bool clean = std::all_of(target.begin(), target.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-';
  });
  if (!clean) return std::nullopt;
  return std::string(target);
}

FatbinTargets scan_fatbin(const ReadAt& read, std::uint64_t size, const FatbinLimits& limits) {
  FatbinTargets t;
  std::uint64_t off = 0;
  auto stop = [&](const std::string& why) {
    if (t.bundles == 0)
      t.error = fmt::format("offset {}: {}", off, why);
    else
      t.truncated = true;
  };
  while (off < size) {
    if (t.bundles >= limits.max_bundles) {
      t.truncated = true;
      break;
    }
    const std::vector<std::byte> head =
        read_bytes(read, off, std::min<std::uint64_t>(32, size - off));
    Header h;
    std::string why;
    std::uint64_t bundle_len = 0;
    if (starts_with(head, kMagic)) {
      std::size_t want = kFirstHeaderRead;
      Parse p = Parse::need_more;
      for (;;) {
        const std::vector<std::byte> buf =
            read_bytes(read, off, std::min<std::uint64_t>(want, size - off));
        p = parse_header(buf, limits, h, why);
        if (p != Parse::need_more) break;
        if (buf.size() < want) {
          why = "the bundle header runs past the section's end";
          p = Parse::bad;
          break;
        }
        if (want >= limits.max_header_bytes) {
          why = fmt::format("a bundle header larger than {} bytes", limits.max_header_bytes);
          p = Parse::bad;
          break;
        }
        want = std::min(want * 4, limits.max_header_bytes);
      }
      if (p == Parse::bad) {
        stop(why);
        break;
      }
      if (h.end > size - off) {
        stop(fmt::format("a code object ends {} bytes past the section's end",
                         h.end - (size - off)));
        break;
      }
      bundle_len = h.end;
    } else if (starts_with(head, kCompressedMagic) && head.size() >= 8) {
      const auto version = static_cast<std::uint16_t>(le(head.data() + 4, 2));
      const auto method = static_cast<std::uint16_t>(le(head.data() + 6, 2));
      std::size_t header_len = 0;
      std::uint64_t total = 0;
      std::uint64_t uncompressed = 0;
      switch (version) {
      case 1:
        header_len = 20;
        if (head.size() >= header_len) uncompressed = le(head.data() + 8, 4);
        break;
      case 2:
        header_len = 24;
        if (head.size() >= header_len) {
          total = le(head.data() + 8, 4);
          uncompressed = le(head.data() + 12, 4);
        }
        break;
      case 3:
        header_len = 32;
        if (head.size() >= header_len) {
          total = le(head.data() + 8, 8);
          uncompressed = le(head.data() + 16, 8);
        }
        break;
      default:
        stop(fmt::format("a compressed bundle of format version {} (1 to 3 are known)", version));
        break;
      }
      if (header_len == 0) break;
      if (head.size() < header_len) {
        stop("the compressed bundle header runs past the section's end");
        break;
      }
      if (method > 1) {
        stop(fmt::format("compression method {} (0 zlib and 1 zstd are known)", method));
        break;
      }
      if (version > 1 && (total < header_len || total > size - off)) {
        stop(fmt::format("a compressed bundle of {} bytes where {} remain in the section", total,
                         size - off));
        break;
      }
      const std::uint64_t in_end = version > 1 ? off + total : size;
      const auto most =
          static_cast<std::size_t>(std::min<std::uint64_t>(limits.max_header_bytes, uncompressed));
      std::size_t want = std::min(kFirstHeaderRead, most);
      Parse p = Parse::need_more;
      for (;;) {
        auto buf = inflate_prefix(read, off + header_len, in_end, method, want, why);
        if (!buf) {
          p = Parse::bad;
          break;
        }
        p = parse_header(*buf, limits, h, why);
        if (p != Parse::need_more) break;
        if (buf->size() < want || want >= most) {
          why = "the decompressed bundle ends before its header does";
          p = Parse::bad;
          break;
        }
        want = std::min(want * 4, most);
      }
      if (p == Parse::bad) {
        stop(why);
        break;
      }
      ++t.compressed;
      t.methods.insert(method == 1 ? "zstd" : "zlib");
      bundle_len = total; // 0 for version 1: its length is not recorded, so the scan ends here
    } else {
      stop("no offload bundle magic (__CLANG_OFFLOAD_BUNDLE__ or CCOB)");
      break;
    }
    std::set<std::string> procs;
    for (const auto& id : h.ids)
      if (auto gfx = gfx_from_bundle_id(id)) procs.insert(*gfx);
    t.any.insert(procs.begin(), procs.end());
    if (t.bundles == 0) {
      t.common = procs;
    } else {
      std::set<std::string> both;
      std::set_intersection(t.common.begin(), t.common.end(), procs.begin(), procs.end(),
                            std::inserter(both, both.end()));
      t.common = std::move(both);
    }
    ++t.bundles;
    if (bundle_len == 0) {
      t.truncated = true; // a version 1 CCOB bundle: where the next one starts is not recorded
      break;
    }
    bool more = false;
    auto next = next_bundle(read, off + bundle_len, size, limits.search_window, more);
    if (!next) {
      t.truncated = more;
      break;
    }
    off = *next;
  }
  return t;
}

namespace {
/// An ELF file opened for reading with libelf, and the file's size in bytes.
struct OpenElf {
  std::unique_ptr<Elf, decltype(&elf_end)> elf{nullptr, elf_end};
  std::uint64_t size = 0;
};

/// Opens the ELF file on `fd` for find_elf_section() and read_elf_dynamic(); std::nullopt with
/// `why` set when libelf is unusable, the file cannot be stat(2)ed or is not ELF. ELF_C_READ reads
/// the headers and the sections asked for with pread(2): no mapping that a file truncated under
/// the doctor could turn into SIGBUS.
std::optional<OpenElf> open_elf(int fd, std::string& why) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    why = "libelf is too old for this ELF version";
    return std::nullopt;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    why = "cannot stat the file";
    return std::nullopt;
  }
  OpenElf out;
  out.size = static_cast<std::uint64_t>(st.st_size);
  out.elf.reset(elf_begin(fd, ELF_C_READ, nullptr));
  if (!out.elf || elf_kind(out.elf.get()) != ELF_K_ELF) {
    why = "not an ELF file";
    return std::nullopt;
  }
  return out;
}
} // namespace

std::optional<ElfSection> find_elf_section(int fd, std::string_view name, std::string& why) {
  auto file = open_elf(fd, why);
  if (!file) return std::nullopt;
  Elf* elf = file->elf.get();
  const std::uint64_t file_size = file->size;
  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
    why = fmt::format("no section name table ({})", elf_errmsg(-1));
    return std::nullopt;
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr{};
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* sname = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (sname == nullptr || name != sname) continue;
    if (shdr.sh_type == SHT_NOBITS) {
      why = fmt::format("section {} holds no bytes in the file", name);
      return std::nullopt;
    }
    if (shdr.sh_offset > file_size || shdr.sh_size > file_size - shdr.sh_offset) {
      why = fmt::format("section {} (offset {}, {} bytes) lies past the file's end ({} bytes)",
                        name, shdr.sh_offset, shdr.sh_size, file_size);
      return std::nullopt;
    }
    return ElfSection{shdr.sh_offset, shdr.sh_size};
  }
  why = fmt::format("no {} section", name);
  return std::nullopt;
}

namespace {
/// The NUL-terminated string at `offset` of a string table at [table, table + size) of the file,
/// read with pread(2); std::nullopt when it is outside the table, unterminated or longer than
/// `max_bytes`.
std::optional<std::string> read_elf_string(int fd, std::uint64_t table, std::uint64_t size,
                                           std::uint64_t offset, std::size_t max_bytes) {
  if (offset >= size) return std::nullopt;
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(max_bytes + 1, size - offset));
  std::string buf(n, '\0');
  const ssize_t r = ::pread(fd, buf.data(), n, static_cast<off_t>(table + offset));
  if (r <= 0) return std::nullopt;
  const auto end = buf.find('\0');
  if (end == std::string::npos || end >= static_cast<std::size_t>(r)) return std::nullopt;
  buf.resize(end);
  return buf;
}
} // namespace

std::optional<ElfDynamic> read_elf_dynamic(int fd, std::string& why,
                                           const ElfDynamicLimits& limits) {
  auto file = open_elf(fd, why);
  if (!file) return std::nullopt;
  Elf* elf = file->elf.get();
  const std::uint64_t file_size = file->size;
  auto in_file = [&](const GElf_Shdr& h) {
    return h.sh_type == SHT_NOBITS ||
           (h.sh_offset <= file_size && h.sh_size <= file_size - h.sh_offset);
  };
  Elf_Scn* scn = nullptr;
  GElf_Shdr shdr{};
  while ((scn = elf_nextscn(elf, scn)) != nullptr)
    if (gelf_getshdr(scn, &shdr) != nullptr && shdr.sh_type == SHT_DYNAMIC) break;
  if (scn == nullptr) {
    why = "no dynamic section (a static or stripped file)";
    return std::nullopt;
  }
  if (!in_file(shdr) || shdr.sh_type == SHT_NOBITS || shdr.sh_size > limits.max_section_bytes) {
    why = fmt::format("dynamic section (offset {}, {} bytes) lies past the file's end or is "
                      "larger than {} bytes",
                      shdr.sh_offset, shdr.sh_size, limits.max_section_bytes);
    return std::nullopt;
  }
  // The string table the dynamic entries' names point into (elf(5): sh_link of SHT_DYNAMIC).
  Elf_Scn* strscn = elf_getscn(elf, shdr.sh_link);
  GElf_Shdr strhdr{};
  if (strscn == nullptr || gelf_getshdr(strscn, &strhdr) == nullptr ||
      strhdr.sh_type != SHT_STRTAB || !in_file(strhdr)) {
    why = fmt::format("the dynamic section's string table (section {}) is missing or lies past "
                      "the file's end",
                      shdr.sh_link);
    return std::nullopt;
  }
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr) {
    why = fmt::format("dynamic section: {}", elf_errmsg(-1));
    return std::nullopt;
  }
  const std::size_t entry = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
  const std::size_t count = entry == 0 ? 0 : data->d_size / entry;
  ElfDynamic out;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Dyn dyn{};
    if (gelf_getdyn(data, static_cast<int>(i), &dyn) == nullptr || dyn.d_tag == DT_NULL) break;
    if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH &&
        dyn.d_tag != DT_SONAME)
      continue;
    // The string tags keep a string-table offset in d_val (elf(5)).
    const std::uint64_t offset = dyn.d_un.d_val; // NOLINT(*-pro-type-union-access): C API
    auto text =
        read_elf_string(fd, strhdr.sh_offset, strhdr.sh_size, offset, limits.max_string_bytes);
    if (!text) {
      why = fmt::format("dynamic entry {} (tag {}) names offset {} of a {}-byte string table: "
                        "outside it, unterminated or longer than {} bytes",
                        i, dyn.d_tag, offset, strhdr.sh_size, limits.max_string_bytes);
      return std::nullopt;
    }
    switch (dyn.d_tag) {
    case DT_NEEDED:
      out.needed.push_back(std::move(*text));
      break;
    case DT_RPATH:
      out.rpath = std::move(*text);
      break;
    case DT_RUNPATH:
      out.runpath = std::move(*text);
      break;
    default:
      out.soname = std::move(*text);
      break;
    }
  }
  return out;
}

} // namespace halo::probes
