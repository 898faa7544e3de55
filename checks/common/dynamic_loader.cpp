// SPDX-License-Identifier: MIT
// The ELF dynamic section and ld.so's search order under a Root: see dynamic_loader.hpp for the
// order and its sources.
#include "dynamic_loader.hpp"

#include "probe_util.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

namespace halo::probes {

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

DynamicRead read_dynamic(const Root& root, std::string_view path, const ElfDynamicLimits& limits) {
  DynamicRead out;
  const int fd = root.open_regular(path);
  if (fd < 0) {
    const int err = errno;
    out.status = err == ENOENT ? Status::missing : err == EACCES ? Status::denied : Status::error;
    out.why = fmt::format("cannot open: {}", std::strerror(err));
    return out;
  }
  out.opened = true;
  out.dynamic = read_elf_dynamic(fd, out.why, limits);
  ::close(fd);
  if (!out.dynamic) out.status = Status::error;
  return out;
}

namespace {

/// glibc dl-load.c is_dst: the length of the token `ref` at `in` (just after the '$'), counting
/// the braces of `{REF}`; 0 when `in` does not start with that token. A bare `$REF` followed by
/// an identifier character is another name, not the token.
std::size_t dst_length(std::string_view in, std::string_view ref) {
  if (in.starts_with('{'))
    return in.substr(1).starts_with(ref) && in.size() > ref.size() + 1 && in[ref.size() + 1] == '}'
               ? ref.size() + 2
               : 0;
  if (!in.starts_with(ref)) return 0;
  if (in.size() > ref.size()) {
    const auto c = static_cast<unsigned char>(in[ref.size()]);
    if (std::isalnum(c) != 0 || c == '_') return 0;
  }
  return ref.size();
}

/// Lexically normalised, without a trailing '/' (except "/" itself: fillin_rpath).
std::string normal_dir(const std::string& dir) {
  std::string out = std::filesystem::path(dir).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/')
    out.pop_back();
  return out;
}

void push_unique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

} // namespace

std::optional<std::string> expand_search_entry(std::string_view entry,
                                               const std::optional<std::string>& origin,
                                               std::string* why) {
  auto refuse = [&](std::string reason) -> std::optional<std::string> {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  if (entry.empty()) return refuse("empty: the working directory");
  std::string out;
  for (std::size_t i = 0; i < entry.size();) {
    if (entry[i] != '$') {
      out += entry[i++];
      continue;
    }
    const std::string_view rest = entry.substr(i + 1);
    if (const std::size_t n = dst_length(rest, "ORIGIN"); n != 0) {
      if (!origin) return refuse("$ORIGIN: the object's directory is unknown");
      out += *origin;
      i += 1 + n;
    } else if (dst_length(rest, "LIB") != 0 || dst_length(rest, "PLATFORM") != 0) {
      return refuse("$LIB and $PLATFORM depend on the loader's build and the CPU");
    } else {
      out += entry[i++]; // no token glibc knows: the '$' stays
    }
  }
  if (out.empty() || out.front() != '/') return refuse("relative to the working directory");
  return normal_dir(out);
}

SearchList split_search_list(std::string_view list, ListKind kind,
                             const std::optional<std::string>& origin) {
  SearchList out;
  if (list.empty()) return out;
  const std::string_view seps = kind == ListKind::ld_library_path ? ":;" : ":";
  std::size_t start = 0;
  std::size_t seen = 0;
  while (start <= list.size() && seen++ < kMaxSearchEntries) {
    const std::size_t end = std::min(list.find_first_of(seps, start), list.size());
    const std::string_view entry = list.substr(start, end - start);
    if (auto dir = expand_search_entry(entry, origin))
      push_unique(out.dirs, std::move(*dir));
    else
      out.skipped.emplace_back(entry.empty() ? "(empty: the working directory)" : entry);
    start = end + 1;
  }
  return out;
}

namespace {

constexpr int kMaxIncludeDepth = 8;

bool has_wildcard(std::string_view s) {
  return s.find_first_of("*?[") != std::string_view::npos;
}

/// The paths under `root` that the absolute glob pattern `pattern` matches, sorted (glob(3)
/// without flags: sorted, a leading '.' matched only explicitly, no match -> nothing).
std::vector<std::string> glob_in_root(const Root& root, const std::string& pattern,
                                      std::size_t max_paths) {
  std::vector<std::string> parts;
  for (std::size_t s = 1; s <= pattern.size();) {
    const std::size_t e = std::min(pattern.find('/', s), pattern.size());
    if (e > s) parts.emplace_back(pattern.substr(s, e - s));
    s = e + 1;
  }
  std::vector<std::string> current{"/"};
  for (std::size_t i = 0; i < parts.size() && !current.empty(); ++i) {
    std::vector<std::string> next;
    for (const auto& base : current) {
      if (!has_wildcard(parts[i])) {
        next.push_back(join_path(base, parts[i]));
        continue;
      }
      auto names = root.list(base, nullptr, 4096);
      if (!names) continue;
      for (const auto& n : *names)
        if (next.size() < max_paths &&
            ::fnmatch(parts[i].c_str(), n.c_str(), FNM_PATHNAME | FNM_PERIOD) == 0)
          next.push_back(join_path(base, n));
    }
    current = std::move(next);
  }
  std::vector<std::string> out;
  for (auto& p : current)
    if (p != "/" && root.exists(p)) out.push_back(std::move(p));
  std::sort(out.begin(), out.end());
  return out;
}

void parse_ld_so_conf(const Root& root, const std::string& path, int depth, LdSoConf& conf) {
  if (conf.files.size() >= kMaxLdSoConfFiles) return;
  ReadResult r = root.read(path);
  if (!r.ok()) return;
  conf.files.push_back(path);
  for (const auto& raw : split_lines(r.text)) {
    std::string_view line(raw);
    line = line.substr(0, line.find('#'));
    const std::size_t b = line.find_first_not_of(" \t\r\f\v");
    if (b == std::string_view::npos) continue;
    line.remove_prefix(b);
    if (line.starts_with("include") && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
      if (depth >= kMaxIncludeDepth) continue;
      std::string_view rest = line.substr(8);
      while (!rest.empty()) {
        const std::size_t e = std::min(rest.find_first_of(" \t"), rest.size());
        const std::string pat(rest.substr(0, e));
        rest.remove_prefix(std::min(e + 1, rest.size()));
        if (pat.empty()) continue;
        const std::string abs =
            std::filesystem::path(pat.front() == '/' ? pat : join_path(parent_dir(path), pat))
                .lexically_normal()
                .string();
        for (const auto& f : glob_in_root(root, abs, kMaxLdSoConfFiles))
          parse_ld_so_conf(root, f, depth + 1, conf);
      }
      continue;
    }
    if (line.starts_with("hwcap") && line.size() > 5 && (line[5] == ' ' || line[5] == '\t'))
      continue;
    std::string dir(line.substr(0, line.find('=')));
    while (!dir.empty() && std::isspace(static_cast<unsigned char>(dir.back())) != 0)
      dir.pop_back();
    if (dir.empty() || dir.front() != '/') continue;
    push_unique(conf.dirs, normal_dir(dir));
  }
}

} // namespace

LdSoConf read_ld_so_conf(const Root& root, std::string_view path) {
  LdSoConf conf;
  parse_ld_so_conf(root, std::string(path), 0, conf);
  return conf;
}

const std::vector<std::string>& system_dirs() {
  static const std::vector<std::string> dirs{"/lib/x86_64-linux-gnu",
                                             "/usr/lib/x86_64-linux-gnu",
                                             "/lib64",
                                             "/usr/lib64",
                                             "/lib",
                                             "/usr/lib"};
  return dirs;
}

std::string_view step_name(SearchStep step) {
  switch (step) {
  case SearchStep::rpath:
    return "DT_RPATH";
  case SearchStep::ld_library_path:
    return "LD_LIBRARY_PATH";
  case SearchStep::runpath:
    return "DT_RUNPATH";
  case SearchStep::ld_so_cache:
    return "ld.so.cache";
  case SearchStep::system_dirs:
    break;
  }
  return "system directories";
}

OwnSearchPath own_search_path(const ElfDynamic& dyn, const std::optional<std::string>& origin) {
  OwnSearchPath own;
  if (dyn.runpath) {
    own.step = SearchStep::runpath;
    own.text = *dyn.runpath;
  } else if (dyn.rpath) {
    own.step = SearchStep::rpath;
    own.text = *dyn.rpath;
  } else {
    return own;
  }
  own.list = split_search_list(own.text, ListKind::dt_path, origin);
  return own;
}

std::vector<SearchDir> search_order(const OwnSearchPath* own, const SearchList& ld_library_path,
                                    const LdSoConf* conf) {
  std::vector<SearchDir> order;
  auto add = [&](const std::vector<std::string>& dirs, SearchStep step) {
    for (const auto& d : dirs)
      order.push_back(SearchDir{d, step});
  };
  if (own != nullptr && own->step == SearchStep::rpath) add(own->list.dirs, SearchStep::rpath);
  add(ld_library_path.dirs, SearchStep::ld_library_path);
  if (own != nullptr && own->step == SearchStep::runpath) add(own->list.dirs, SearchStep::runpath);
  if (conf != nullptr) add(conf->dirs, SearchStep::ld_so_cache);
  add(system_dirs(), SearchStep::system_dirs);
  return order;
}

std::optional<SearchDir> find_library(const Root& root, const std::vector<SearchDir>& order,
                                      std::string_view name, std::optional<SearchStep> step) {
  if (name.empty() || name.find('/') != std::string_view::npos) return std::nullopt;
  for (const auto& d : order)
    if ((!step || d.step == *step) && root.exists(join_path(d.dir, name))) return d;
  return std::nullopt;
}

} // namespace halo::probes
