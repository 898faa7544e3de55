// SPDX-License-Identifier: MIT
// Offload-bundle reader: see offload_bundle.hpp for the formats and their sources.
#include "offload_bundle.hpp"

#include <fmt/format.h>

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

} // namespace halo::probes
