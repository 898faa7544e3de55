// SPDX-License-Identifier: MIT
// The ELF dynamic section and the dynamic linker's library search, read from files under a Root
// (issue 42 §3: one home for what checks/host/wsl.cpp and checks/framework/torch_libs.cpp each
// wrote). Nothing is loaded or run; every path is resolved inside the root and every read bounded.
//
// The order, ld.so(8) "a shared object dependency does not contain a slash ... the dynamic linker
// searches in the following order" (glibc elf/dl-load.c _dl_map_object):
//   1. the caller's DT_RPATH, only if it has no DT_RUNPATH (glibc goes on to the loader chain's
//      DT_RPATH up to the executable; only the caller's is modelled here);
//   2. LD_LIBRARY_PATH (ignored in secure-execution mode, a setuid/setgid program: not a case a
//      training job is, so not modelled);
//   3. the caller's DT_RUNPATH, which applies only to the caller's own DT_NEEDED entries and
//      dlopen(3) calls, not to its dependencies' (ld.so(8); dl-load.c looks at `loader`'s
//      l_runpath_dirs only);
//   4. /etc/ld.so.cache, built by ldconfig(8) from the directories of /etc/ld.so.conf (and its
//      `include` files) and the trusted directories; the binary cache itself is not parsed: its
//      directories stand for it, which is what the cache held when ldconfig last ran;
//   5. the trusted directories (glibc's system search path, elf/dl-load.c system_dirs from
//      elf/trusted-dirs.h), skipped for an object linked with -z nodeflib (not modelled).
// Not modelled: a library already loaded under the same name, glibc-hwcaps and legacy hwcap
// subdirectories, LD_PRELOAD, --inhibit-rpath.
#pragma once

#include <halo/fact.hpp>
#include <halo/root.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo::probes {

// ---- ELF -------------------------------------------------------------------------------------

/// Where a section lies in an ELF file.
struct ElfSection {
  std::uint64_t offset = 0; ///< bytes from the file's start
  std::uint64_t size = 0;   ///< bytes
};

/// Finds the section called `name` in the ELF file open on `fd` (libelf, ELF_C_READ: only the
/// headers and the section name table are read). std::nullopt with `why` set when the file is not
/// ELF, has no such section, or the section lies outside the file.
std::optional<ElfSection> find_elf_section(int fd, std::string_view name, std::string& why);

/// What a shared object's dynamic section tells the dynamic linker (elf(5), ld.so(8)).
struct ElfDynamic {
  std::vector<std::string> needed;    ///< DT_NEEDED names, in the file's order
  std::optional<std::string> rpath;   ///< DT_RPATH (searched before LD_LIBRARY_PATH)
  std::optional<std::string> runpath; ///< DT_RUNPATH (after LD_LIBRARY_PATH; disables DT_RPATH)
  std::string soname;                 ///< DT_SONAME; empty when absent
};

/// Bounds of read_elf_dynamic().
struct ElfDynamicLimits {
  std::uint64_t max_section_bytes = std::uint64_t{64} * 1024; ///< the .dynamic section (bytes)
  std::size_t max_string_bytes = 4096;                        ///< one name or path list (bytes)
};

/// Reads DT_NEEDED, DT_RPATH, DT_RUNPATH and DT_SONAME of the ELF file open on `fd` from its
/// SHT_DYNAMIC section (libelf, ELF_C_READ). Each string is read with pread(2) at its offset in
/// the linked string table (sh_link), so a string table of many MiB (libtorch's symbol names) is
/// never read whole. std::nullopt with `why` set for a file that is not ELF, has no dynamic
/// section, or whose section or strings lie outside the file or the limits. Never throws.
std::optional<ElfDynamic> read_elf_dynamic(int fd, std::string& why,
                                           const ElfDynamicLimits& limits = {});

/// read_dynamic()'s answer: the dynamic section, or why there is none.
struct DynamicRead {
  std::optional<ElfDynamic> dynamic; ///< set when read
  bool opened = false;               ///< false: the file could not be opened (see `status`)
  Status status = Status::ok;        ///< missing (ENOENT), denied (EACCES), error otherwise
  std::string why;                   ///< why `dynamic` is unset (no path in it); empty when set
};

/// The dynamic section of the regular file `path` under `root` (Root::open_regular: resolved
/// inside the root, never following a link out of it), read as read_elf_dynamic() reads it.
DynamicRead read_dynamic(const Root& root, std::string_view path,
                         const ElfDynamicLimits& limits = {});

// ---- Search path lists ---------------------------------------------------------------------

/// How a list is split: DT_RPATH and DT_RUNPATH at ':' (glibc dl-load.c decompose_rpath),
/// LD_LIBRARY_PATH at ':' or ';' (ld.so(8): "separated by either colons or semicolons, and there
/// is no support for escaping either separator"; _dl_init_paths).
enum class ListKind { dt_path, ld_library_path };

/// At most this many entries of one list are read (kept or skipped); more are dropped.
inline constexpr std::size_t kMaxSearchEntries = 64;

/// A search path list split into the directories the doctor can follow.
struct SearchList {
  /// Absolute directories after token expansion, lexically normalised, without a trailing '/',
  /// each once (fillin_rpath adds a directory already in the list only once), in list order.
  std::vector<std::string> dirs;
  /// Entries that ld.so would search but the doctor cannot place, as written: an empty entry
  /// ("(empty: the working directory)": ld.so(8) "a zero-length directory name indicates the
  /// current working directory"; fillin_rpath keeps "" for DT_RPATH/DT_RUNPATH too), a relative
  /// one (the working directory is the process's), one with $ORIGIN whose origin is unknown, or
  /// one with $LIB or $PLATFORM.
  std::vector<std::string> skipped;
};

/// One entry of a search list with its dynamic string tokens expanded (ld.so(8) "Dynamic string
/// tokens"; glibc dl-load.c _dl_dst_substitute and is_dst):
/// - `$ORIGIN` and `${ORIGIN}` become `origin` (the directory of the object whose DT_RPATH or
///   DT_RUNPATH it is; for LD_LIBRARY_PATH, the main program's directory). `$ORIGIN` followed by
///   a letter, digit or '_' is no token. With `origin` unknown (std::nullopt) the entry is not
///   followed, as glibc drops an element whose token it cannot replace.
/// - `$LIB`/`${LIB}` and `$PLATFORM`/`${PLATFORM}` are not followed: their values are the
///   loader's build (Debian's $LIB is lib/x86_64-linux-gnu, upstream x86-64's lib64) and the CPU
///   (AT_PLATFORM), which a root does not say.
/// - Any other `$` is kept as a character (glibc: "No DST we recognize").
/// Returns the absolute, lexically normalised directory without a trailing '/', or std::nullopt
/// for an entry not followed (empty, relative, or a token above), with `why` said.
std::optional<std::string> expand_search_entry(std::string_view entry,
                                               const std::optional<std::string>& origin,
                                               std::string* why = nullptr);

/// Splits `list` as ld.so does for `kind`, expanding each entry with expand_search_entry(). An
/// empty list is no list (glibc ignores an empty LD_LIBRARY_PATH and an empty DT_RUNPATH).
SearchList split_search_list(std::string_view list, ListKind kind,
                             const std::optional<std::string>& origin);

// ---- /etc/ld.so.conf -------------------------------------------------------------------------

/// The directories ldconfig(8) builds ld.so.cache from, as read from a configuration file.
struct LdSoConf {
  std::vector<std::string> dirs;  ///< absolute directories, in file order, each once
  std::vector<std::string> files; ///< the files read, the named one first, then each include
};

/// At most this many configuration files are read (the named one and its includes).
inline constexpr std::size_t kMaxLdSoConfFiles = 256;

/// Reads `path` (default /etc/ld.so.conf) under `root` as glibc's ldconfig parse_conf does:
/// text after '#' is a comment; blank lines are skipped; `include PATTERN...` (the word followed
/// by a blank) reads every file each whitespace-separated glob(3) pattern matches, in sorted
/// order, a relative pattern taken from the including file's directory (parse_conf_include), and
/// included files may include further (at most 8 levels deep, kMaxLdSoConfFiles files); `hwcap`
/// lines are skipped; any other line is a directory, blanks and trailing '/' stripped and an
/// old-style `=TYPE` suffix dropped (add_dir_1). Relative directories are left out (ldconfig
/// warns "relative path used to build cache"). Wildcards are matched per path component with
/// fnmatch(3) (a leading '.' only by a pattern that starts with '.'), listing directories
/// through `root`. A file that cannot be read adds nothing; no error is raised.
LdSoConf read_ld_so_conf(const Root& root, std::string_view path = "/etc/ld.so.conf");

// ---- The search order ----------------------------------------------------------------------

/// The trusted directories, searched last (and put in ld.so.cache by ldconfig): glibc's
/// elf/dl-load.c system_dirs (SYSTEM_DIRS, elf/gen-trusted-dirs from slibdir and libdir).
/// Debian's x86-64 glibc searches /lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu, /lib,
/// /usr/lib (`ld.so --help`, "Shared library search path"); Fedora's and upstream x86-64's slibdir
/// and libdir are /lib64 and /usr/lib64. The list is the union, multiarch first, then lib64, then
/// /lib and /usr/lib, so a library in any of them on either family of distributions is found.
const std::vector<std::string>& system_dirs();

/// A step of the search order (see the file's header).
enum class SearchStep { rpath, ld_library_path, runpath, ld_so_cache, system_dirs };

/// "DT_RPATH", "LD_LIBRARY_PATH", "DT_RUNPATH", "ld.so.cache", "system directories".
std::string_view step_name(SearchStep step);

/// The caller's own search path: DT_RUNPATH if it has one, else DT_RPATH (ld.so(8): DT_RPATH is
/// used "if present and DT_RUNPATH attribute does not exist"; an empty DT_RUNPATH still disables
/// DT_RPATH, glibc testing the tag's presence).
struct OwnSearchPath {
  std::optional<SearchStep> step; ///< rpath or runpath; std::nullopt when it has neither tag
  std::string text;               ///< the tag's value as written
  SearchList list;                ///< split at ':', $ORIGIN the caller's directory
};

/// The own search path of an object whose dynamic section is `dyn`, living in `origin` (the
/// directory $ORIGIN stands for).
OwnSearchPath own_search_path(const ElfDynamic& dyn, const std::optional<std::string>& origin);

/// One directory of the order, and the step that puts it there.
struct SearchDir {
  std::string dir;
  SearchStep step = SearchStep::system_dirs;
};

/// The directories ld.so searches, in order, for a name without a slash that the caller
/// (`own`; nullptr when its dynamic section is unknown, which leaves steps 1 and 3 out) needs or
/// dlopen()s: its DT_RPATH (without DT_RUNPATH), `ld_library_path` (split with
/// ListKind::ld_library_path), its DT_RUNPATH, `conf`'s directories (nullptr: none) standing for
/// ld.so.cache, then system_dirs(). A directory may appear under several steps, as in glibc.
std::vector<SearchDir> search_order(const OwnSearchPath* own, const SearchList& ld_library_path,
                                    const LdSoConf* conf);

/// The first directory of `order` holding a file `name` under `root` (Root::exists: followed
/// inside the root), only among `step`'s directories when given; std::nullopt when none does.
/// `name` with a '/' is not searched (ld.so opens such a name as a path): std::nullopt.
std::optional<SearchDir> find_library(const Root& root, const std::vector<SearchDir>& order,
                                      std::string_view name,
                                      std::optional<SearchStep> step = std::nullopt);

} // namespace halo::probes
