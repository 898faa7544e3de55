// SPDX-License-Identifier: MIT
// The offload-bundle reader (checks/framework/offload_bundle.cpp): the gfx targets of a .hip_fatbin
// section, compressed bundles through the real zstd and zlib libraries, and hostile sections that
// must end in an error or a stop, never a crash or an unbounded read. The byte layout itself is
// checked against Debian's clang-offload-bundler-19 and clang++-19 by tests/cli/offload_bundle.sh.
#include "framework/offload_bundle.hpp"

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <string>
#include <vector>

using namespace halo::probes;

namespace {

using Bytes = std::vector<std::byte>;

void put64(Bytes& b, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    b.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xffU));
}
void put32(Bytes& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xffU));
}
void put16(Bytes& b, std::uint16_t v) {
  b.push_back(static_cast<std::byte>(v & 0xffU));
  b.push_back(static_cast<std::byte>(v >> 8U));
}
void put(Bytes& b, std::string_view s) {
  for (char c : s)
    b.push_back(static_cast<std::byte>(c));
}

/// An uncompressed bundle: host entry and one 64-byte code object per target, right after the
/// header (clang aligns them to 4096; the reader must not depend on it).
Bytes bundle(const std::vector<std::string>& targets) {
  std::vector<std::string> ids{"host-x86_64-unknown-linux-gnu-"};
  for (const auto& t : targets)
    ids.push_back("hipv4-amdgcn-amd-amdhsa--" + t);
  std::size_t header = 32;
  for (const auto& id : ids)
    header += 24 + id.size();
  Bytes b;
  put(b, "__CLANG_OFFLOAD_BUNDLE__");
  put64(b, ids.size());
  std::uint64_t offset = header;
  for (const auto& id : ids) {
    const std::uint64_t size = id.rfind("host-", 0) == 0 ? 0 : 64;
    put64(b, offset);
    put64(b, size);
    put64(b, id.size());
    put(b, id);
    offset += size;
  }
  b.resize(offset, std::byte{0x5a});
  return b;
}

Bytes ccob(const Bytes& plain, std::uint16_t version, std::uint16_t method) {
  Bytes payload;
  if (method == 1) {
    payload.resize(ZSTD_compressBound(plain.size()));
    const std::size_t n =
        ZSTD_compress(payload.data(), payload.size(), plain.data(), plain.size(), 3);
    REQUIRE(ZSTD_isError(n) == 0U);
    payload.resize(n);
  } else {
    uLongf n = compressBound(static_cast<uLong>(plain.size()));
    payload.resize(n);
    REQUIRE(compress2(reinterpret_cast<Bytef*>(payload.data()), &n,
                      reinterpret_cast<const Bytef*>(plain.data()),
                      static_cast<uLong>(plain.size()), 6) == Z_OK);
    payload.resize(n);
  }
  Bytes b;
  put(b, "CCOB");
  put16(b, version);
  put16(b, method);
  const std::size_t header = version == 1 ? 20 : version == 2 ? 24 : 32;
  if (version == 1) {
    put32(b, static_cast<std::uint32_t>(plain.size()));
  } else if (version == 2) {
    put32(b, static_cast<std::uint32_t>(header + payload.size()));
    put32(b, static_cast<std::uint32_t>(plain.size()));
  } else {
    put64(b, header + payload.size());
    put64(b, plain.size());
  }
  put64(b, 0x1234);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

/// Bundles one after another, each padded to 4096 bytes as the linker aligns input sections.
Bytes section(const std::vector<Bytes>& bundles) {
  Bytes s;
  for (const auto& b : bundles) {
    s.insert(s.end(), b.begin(), b.end());
    s.resize((s.size() + 4095) / 4096 * 4096, std::byte{0});
  }
  return s;
}

FatbinTargets scan(const Bytes& s, const FatbinLimits& limits = {}) {
  const ReadAt read = [&](std::uint64_t off, std::span<std::byte> out) -> std::size_t {
    if (off >= s.size()) return 0;
    const std::size_t n = std::min<std::size_t>(out.size(), s.size() - off);
    std::memcpy(out.data(), s.data() + off, n);
    return n;
  };
  return scan_fatbin(read, s.size(), limits);
}

using Set = std::set<std::string>;

} // namespace

TEST_CASE("offload bundle ids: the gfx processor, features and host entries dropped",
          "[offload_bundle]") {
  CHECK(gfx_from_bundle_id("hipv4-amdgcn-amd-amdhsa--gfx1151") == "gfx1151");
  CHECK(gfx_from_bundle_id("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+") == "gfx90a");
  CHECK(gfx_from_bundle_id("hip-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-") == "gfx942");
  CHECK(gfx_from_bundle_id("hipv4-amdgcn-amd-amdhsa--gfx11-generic") == "gfx11-generic");
  CHECK(gfx_from_bundle_id("openmp-amdgcn-amd-amdhsa--gfx90a") == "gfx90a");
  CHECK_FALSE(gfx_from_bundle_id("host-x86_64-unknown-linux-gnu-"));
  CHECK_FALSE(gfx_from_bundle_id("cuda-nvptx64-nvidia-cuda--sm_90"));
  CHECK_FALSE(gfx_from_bundle_id("hipv4-amdgcn-amd-amdhsa--"));
  CHECK_FALSE(gfx_from_bundle_id("hipv4-amdgcn-amd-amdhsa--gfx$(rm -rf)"));
  CHECK_FALSE(gfx_from_bundle_id("hipv4-amdgcn"));
}

TEST_CASE("offload bundles: every bundle of a section, targets common to all of them",
          "[offload_bundle]") {
  const auto t = scan(section({bundle({"gfx90a:xnack-", "gfx90a:xnack+", "gfx942", "gfx1100"}),
                               bundle({"gfx942", "gfx1100"}), bundle({"gfx942", "gfx1100"})}));
  CHECK(t.error.empty());
  CHECK(t.bundles == 3);
  CHECK(t.compressed == 0);
  CHECK_FALSE(t.truncated);
  CHECK(t.common == Set{"gfx1100", "gfx942"});
  CHECK(t.any == Set{"gfx1100", "gfx90a", "gfx942"});
}

TEST_CASE("offload bundles: CCOB zstd and zlib, format versions 2 and 3", "[offload_bundle]") {
  const Bytes plain = bundle({"gfx1151", "gfx1201"});
  const auto t = scan(section({ccob(plain, 2, 1), ccob(plain, 3, 0), plain}));
  CHECK(t.error.empty());
  CHECK(t.bundles == 3);
  CHECK(t.compressed == 2);
  CHECK(t.methods == Set{"zlib", "zstd"});
  CHECK(t.common == Set{"gfx1151", "gfx1201"});
  CHECK_FALSE(t.truncated);
}

TEST_CASE("offload bundles: a version 1 CCOB bundle has no length, so the scan ends there",
          "[offload_bundle]") {
  const auto t = scan(section({ccob(bundle({"gfx942"}), 1, 1), bundle({"gfx90a"})}));
  CHECK(t.error.empty());
  CHECK(t.bundles == 1);
  CHECK(t.common == Set{"gfx942"});
  CHECK(t.truncated);
}

TEST_CASE("offload bundles: a header longer than the first read is read whole",
          "[offload_bundle]") {
  std::vector<std::string> many;
  for (int i = 0; i < 150; ++i) // 150 ids of ~40 bytes: past the first 4096-byte read
    many.push_back(i % 2 == 0 ? "gfx942:xnack-" : "gfx942:xnack+");
  many.emplace_back("gfx1151");
  const auto plain = scan(section({bundle(many)}));
  CHECK(plain.error.empty());
  CHECK(plain.common == Set{"gfx1151", "gfx942"});
  const auto zstd = scan(section({ccob(bundle(many), 2, 1)}));
  CHECK(zstd.error.empty());
  CHECK(zstd.common == Set{"gfx1151", "gfx942"});
}

TEST_CASE("offload bundles: limits stop the scan and say so", "[offload_bundle]") {
  std::vector<Bytes> bundles(10, bundle({"gfx942"}));
  FatbinLimits limits;
  limits.max_bundles = 4;
  const auto t = scan(section(bundles), limits);
  CHECK(t.bundles == 4);
  CHECK(t.truncated);
  // More padding than the search window before the next bundle: a stop, not a silent end.
  Bytes far = section({bundle({"gfx942"})});
  far.resize(far.size() + 128 * 1024, std::byte{0});
  const Bytes second = bundle({"gfx90a"});
  far.insert(far.end(), second.begin(), second.end());
  const auto f = scan(far);
  CHECK(f.bundles == 1);
  CHECK(f.truncated);
}

TEST_CASE("offload bundles: hostile sections end in an error naming the offset",
          "[offload_bundle]") {
  SECTION("empty or foreign bytes") {
    CHECK(scan(Bytes{}).error.empty()); // nothing to read: no bundles, no error
    CHECK(scan(Bytes{}).bundles == 0);
    Bytes junk(64, std::byte{0x41});
    CHECK(scan(junk).error ==
          "offset 0: no offload bundle magic (__CLANG_OFFLOAD_BUNDLE__ or CCOB)");
  }
  SECTION("an entry count past the limit") {
    Bytes b;
    put(b, "__CLANG_OFFLOAD_BUNDLE__");
    put64(b, ~std::uint64_t{0});
    b.resize(4096, std::byte{0});
    CHECK(scan(b).error.find("entries (at most 1024 are read)") != std::string::npos);
  }
  SECTION("an entry id of 2^63 bytes") {
    Bytes b;
    put(b, "__CLANG_OFFLOAD_BUNDLE__");
    put64(b, 1);
    put64(b, 0);
    put64(b, 0);
    put64(b, std::uint64_t{1} << 63U);
    CHECK(scan(b).error == "offset 0: entry 0 has an id of 9223372036854775808 bytes");
  }
  SECTION("offset plus size past 2^64") {
    Bytes b;
    put(b, "__CLANG_OFFLOAD_BUNDLE__");
    put64(b, 1);
    put64(b, ~std::uint64_t{0});
    put64(b, 2);
    put64(b, 5);
    put(b, "gfx90");
    CHECK(scan(b).error.find("ends past 2^64") != std::string::npos);
  }
  SECTION("a code object past the section's end") {
    Bytes b = bundle({"gfx942"});
    b.resize(b.size() - 10);
    CHECK(scan(b).error.find("bytes past the section's end") != std::string::npos);
  }
  SECTION("a header cut short") {
    Bytes b = bundle({"gfx942"});
    b.resize(60);
    CHECK(scan(b).error == "offset 0: the bundle header runs past the section's end");
  }
  SECTION("a compressed bundle claiming more bytes than the section holds") {
    Bytes b = ccob(bundle({"gfx942"}), 3, 1);
    b[8] = std::byte{0xff};
    b[15] = std::byte{0x7f};
    CHECK(scan(b).error.find("a compressed bundle of") != std::string::npos);
  }
  SECTION("an unknown CCOB version or method") {
    Bytes v = ccob(bundle({"gfx942"}), 2, 1);
    v[4] = std::byte{9};
    CHECK(scan(v).error == "offset 0: a compressed bundle of format version 9 (1 to 3 are known)");
    Bytes m = ccob(bundle({"gfx942"}), 2, 1);
    m[6] = std::byte{7};
    CHECK(scan(m).error == "offset 0: compression method 7 (0 zlib and 1 zstd are known)");
  }
  SECTION("a corrupt zstd or zlib payload") {
    for (std::uint16_t method : {std::uint16_t{0}, std::uint16_t{1}}) {
      Bytes b = ccob(bundle({"gfx942"}), 2, method);
      for (std::size_t i = 24; i < 40 && i < b.size(); ++i)
        b[i] = std::byte{0xee};
      const auto t = scan(b);
      CHECK(t.bundles == 0);
      CHECK(t.error.find(method == 1 ? "zstd: " : "zlib: ") != std::string::npos);
    }
  }
  SECTION("a payload that decompresses to something that is not a bundle") {
    Bytes not_bundle(100, std::byte{0x33});
    CHECK(scan(ccob(not_bundle, 2, 1)).error == "offset 0: no __CLANG_OFFLOAD_BUNDLE__ magic");
  }
  SECTION("a bad bundle after good ones keeps them and marks the stop") {
    Bytes s = section({bundle({"gfx942"})});
    Bytes bad;
    put(bad, "__CLANG_OFFLOAD_BUNDLE__");
    put64(bad, 0);
    s.insert(s.end(), bad.begin(), bad.end());
    const auto t = scan(s);
    CHECK(t.error.empty());
    CHECK(t.bundles == 1);
    CHECK(t.truncated);
    CHECK(t.common == Set{"gfx942"});
  }
}

namespace {

/// A 64-bit little-endian ELF shared object with a .dynstr and a .dynamic section (elf(5)), in a
/// memfd: `entries` are (tag, value) pairs written as they are, so a value may point anywhere.
/// `dynstr_type` and `dynamic_size` let a test break the file.
struct ElfFile {
  int fd = -1;
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ElfFile(ElfFile&&) = delete;
  ElfFile& operator=(ElfFile&&) = delete;
  ElfFile(const std::string& dynstr,
          const std::vector<std::pair<std::int64_t, std::uint64_t>>& entries,
          std::uint32_t dynstr_type = 3, std::uint64_t dynamic_size = 0) {
    fd = ::memfd_create("elf", MFD_CLOEXEC);
    std::string dyn;
    // Little-endian, at most 8 bytes (a wider shift would be undefined).
    auto put = [](std::string& out, std::uint64_t v, int bytes) {
      for (int i = 0; i < bytes; ++i)
        out += static_cast<char>((v >> (8 * i)) & 0xff);
    };
    for (const auto& [tag, val] : entries) {
      put(dyn, static_cast<std::uint64_t>(tag), 8);
      put(dyn, val, 8);
    }
    put(dyn, 0, 8); // DT_NULL: tag 0
    put(dyn, 0, 8); // and value 0
    const std::string shstrtab = std::string("\0.shstrtab\0.dynstr\0.dynamic\0", 28);
    const std::uint64_t dynstr_off = 64;
    const std::uint64_t dynamic_off = (dynstr_off + dynstr.size() + 7) / 8 * 8;
    const std::uint64_t shstr_off = dynamic_off + dyn.size();
    const std::uint64_t sh_off = (shstr_off + shstrtab.size() + 7) / 8 * 8;
    std::string file("\x7f"
                     "ELF\x02\x01\x01",
                     7);
    file.resize(16, '\0');
    put(file, 3, 2);  // e_type ET_DYN
    put(file, 62, 2); // e_machine x86-64
    put(file, 1, 4);
    put(file, 0, 8);
    put(file, 0, 8);
    put(file, sh_off, 8);
    put(file, 0, 4);
    put(file, 64, 2);
    put(file, 56, 2);
    put(file, 0, 2);
    put(file, 64, 2);
    put(file, 4, 2); // e_shnum
    put(file, 1, 2); // e_shstrndx
    file += dynstr;
    file.resize(dynamic_off, '\0');
    file += dyn;
    file += shstrtab;
    file.resize(sh_off, '\0');
    auto shdr = [&](std::uint32_t name, std::uint32_t type, std::uint64_t off, std::uint64_t size,
                    std::uint32_t link, std::uint64_t entsize) {
      put(file, name, 4);
      put(file, type, 4);
      put(file, 2, 8);
      put(file, 0, 8);
      put(file, off, 8);
      put(file, size, 8);
      put(file, link, 4);
      put(file, 0, 4);
      put(file, 8, 8);
      put(file, entsize, 8);
    };
    file.append(64, '\0');
    shdr(1, 3, shstr_off, shstrtab.size(), 0, 0);
    shdr(11, dynstr_type, dynstr_off, dynstr.size(), 0, 0);
    shdr(19, 6, dynamic_off, dynamic_size != 0 ? dynamic_size : dyn.size(), 2, 16);
    REQUIRE(::write(fd, file.data(), file.size()) == static_cast<ssize_t>(file.size()));
  }
  ~ElfFile() { ::close(fd); }
};

constexpr std::int64_t kNeeded = 1, kSoname = 14, kRpath = 15, kRunpath = 29;

} // namespace

TEST_CASE("ELF dynamic section: DT_NEEDED, DT_SONAME, DT_RPATH and DT_RUNPATH as ld.so reads them",
          "[offload_bundle][elf]") {
  const std::string strings("\0libamdhip64.so.7\0libtorch_hip.so\0$ORIGIN\0/opt/rocm/lib\0", 56);
  const ElfFile f(strings,
                  {{kNeeded, 1}, {kSoname, 18}, {kRunpath, 34}, {kRpath, 42}, {kNeeded, 18}});
  std::string why;
  const auto d = read_elf_dynamic(f.fd, why);
  REQUIRE(d);
  CHECK(d->needed == std::vector<std::string>{"libamdhip64.so.7", "libtorch_hip.so"});
  CHECK(d->soname == "libtorch_hip.so");
  CHECK(d->runpath == "$ORIGIN");
  CHECK(d->rpath == "/opt/rocm/lib");
}

TEST_CASE("ELF dynamic section: hostile files end in an error, never a read outside them",
          "[offload_bundle][elf]") {
  const std::string strings("\0libamdhip64.so.7\0", 18);
  std::string why;
  SECTION("a name offset past the string table") {
    const ElfFile f(strings, {{kNeeded, 1}, {kNeeded, 1U << 31}});
    CHECK_FALSE(read_elf_dynamic(f.fd, why));
    CHECK_THAT(why, Catch::Contains("offset 2147483648 of a 18-byte string table"));
  }
  SECTION("a name offset of 2^64 - 1") {
    const ElfFile f(strings, {{kRunpath, ~std::uint64_t{0}}});
    CHECK_FALSE(read_elf_dynamic(f.fd, why));
    CHECK_THAT(why, Catch::Contains("outside it"));
  }
  SECTION("a string table whose last name has no NUL") {
    const ElfFile f(std::string("\0libamdhip64", 12), {{kNeeded, 1}});
    CHECK_FALSE(read_elf_dynamic(f.fd, why));
    CHECK_THAT(why, Catch::Contains("unterminated"));
  }
  SECTION("a name longer than the limit") {
    const ElfFile f(std::string(1, '\0') + std::string(5000, 'a') + std::string(1, '\0'),
                    {{kNeeded, 1}});
    CHECK_FALSE(read_elf_dynamic(f.fd, why));
    CHECK_THAT(why, Catch::Contains("longer than 4096 bytes"));
  }
  SECTION("the dynamic section's link is not a string table") {
    const ElfFile f(strings, {{kNeeded, 1}}, /*dynstr_type=*/1);
    CHECK_FALSE(read_elf_dynamic(f.fd, why));
    CHECK_THAT(why, Catch::Contains("string table"));
  }
  SECTION("a dynamic section claiming more bytes than the file has") {
    const ElfFile f(strings, {{kNeeded, 1}}, 3, std::uint64_t{1} << 40);
    CHECK_FALSE(read_elf_dynamic(f.fd, why));
    CHECK_THAT(why, Catch::Contains("past the file's end"));
  }
  SECTION("not ELF") {
    const int fd = ::memfd_create("text", MFD_CLOEXEC);
    REQUIRE(::write(fd, "#!/bin/sh\n", 10) == 10);
    CHECK_FALSE(read_elf_dynamic(fd, why));
    CHECK(why == "not an ELF file");
    ::close(fd);
  }
}
