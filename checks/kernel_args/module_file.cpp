// SPDX-License-Identifier: MIT
// Probe: the amdgpu module file modprobe would load for the running kernel, and its signature
// (issue 21: why amdgpu is not driving a GPU). Under Secure Boot the kernel refuses an unsigned
// module or one signed with a key it does not know (kernel/module/signing.c module_sig_check():
// "Loading of unsigned module is rejected"; modprobe prints "Key was rejected by service"), the
// case of amdgpu-dkms without an enrolled MOK (ROCm issue 4328).
//
// - Which file: libkmod (kmod-project/kmod), the library modprobe itself uses. A context for
//   ROOT/lib/modules/<kernel.release> and kmod_module_new_from_lookup("amdgpu") give the path
//   depmod's modules.dep.bin names, so a DKMS build in updates/dkms (Debian, Ubuntu, Arch) or
//   extra/ (Fedora, RHEL) wins over kernel/ as it does for modprobe (depmod's search order; DKMS
//   destinations from dkms.in override_dest_module_location, research-fw.md Q4.3).
// - What it holds: kmod_module_get_info(), the data of `modinfo`: the .modinfo strings
//   (`firmware=` once per MODULE_FIRMWARE name, `version=` for DKMS builds) and, when the
//   decompressed file ends with "~Module signature appended~\n" after a 12-byte struct
//   module_signature, the keys `sig_id` (PKCS#7), `signer` (the issuer's common name), `sig_key`
//   (the issuer serial, hex) and `sig_hashalgo` (libkmod/libkmod-module.c kmod_module_get_info,
//   libkmod/libkmod-signature.c; research-fw.md Q4.1, Q4.2). libkmod decompresses .ko.zst,
//   .ko.xz and .ko.gz itself (libkmod-file.c).
//
// The module file is untrusted input (a root copied from another machine; a decompression bomb
// in a .ko.zst), so the libkmod calls run in a forked child (child_run.hpp) with an address
// space limit and a time limit, and only on a regular file of at most kMaxModuleBytes found
// inside the root: every symbolic link on the way is followed inside the root (Root::resolve),
// never on this machine. The child writes tab-separated lines; the parent turns them into facts.
//
// libkmod is loaded in the child with dlopen("libkmod.so.2") (its soname since kmod 6), never
// linked, as libdrm and ROCr are: the doctor's only link-time dependency is glibc (the portable
// release build, scripts/release.sh), and a system without libkmod gets an `error` fact naming
// dlopen's reason. Only libkmod.h's declarations are used (libkmod-dev at build time).
#include "child_run.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>

#include <dlfcn.h>
#include <libkmod.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

namespace halo::probes {
namespace {

constexpr std::array<std::string_view, 9> kAllKeys = {
    fact_keys::amdgpu::module_path,          fact_keys::amdgpu::module_origin,
    fact_keys::amdgpu::module_signed,        fact_keys::amdgpu::module_signer,
    fact_keys::amdgpu::module_sig_key,       fact_keys::amdgpu::module_sig_hashalgo,
    fact_keys::amdgpu::module_version,       fact_keys::amdgpu::module_firmware,
    fact_keys::amdgpu::module_firmware_count};

/// The largest module file the child opens, compressed size in bytes. amdgpu.ko is about 30 MiB
/// uncompressed in 6.x kernels (about 5 MiB as .ko.zst); anything near this is not a module.
constexpr std::int64_t kMaxModuleBytes = std::int64_t{128} << 20;
/// The largest depmod index the child lets libkmod map, bytes (modules.alias.bin is ~1 MiB).
constexpr std::int64_t kMaxIndexBytes = std::int64_t{64} << 20;
/// Address space the child may add to what the doctor already maps, bytes: room for one
/// decompressed module (libkmod holds the whole image), not for a decompression bomb.
constexpr std::uint64_t kChildAddressSpaceBytes = std::uint64_t{1} << 30;
/// Time limit for the child, seconds: decompressing 30 MiB takes well under one.
constexpr double kChildTimeoutS = 10.0;

/// The depmod indexes kmod_module_new_from_lookup() may open (libkmod.c index_files[]).
constexpr std::array<const char*, 5> kIndexes = {"modules.dep.bin", "modules.alias.bin",
                                                 "modules.symbols.bin", "modules.builtin.bin",
                                                 "modules.builtin.alias.bin"};

/// A value on one protocol line: tabs and line breaks (possible in .modinfo strings) as spaces.
std::string one_line(std::string_view s) {
  std::string out(s.substr(0, 4096));
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

void emit(int fd, std::string_view tag, std::string_view a, std::string_view b = {}) {
  write_all(fd, fmt::format("{}\t{}\t{}\n", tag, one_line(a), one_line(b)));
}

// The libkmod entry points the child calls, resolved by load_libkmod(). Declared in this namespace
// with the names of libkmod.h's functions, so that the calls below (and kmod_list_foreach, which
// expands to kmod_list_next) find these pointers before the global declarations.
// NOLINTBEGIN(readability-identifier-naming,cppcoreguidelines-avoid-non-const-global-variables)
decltype(&::kmod_new) kmod_new = nullptr;
decltype(&::kmod_set_log_fn) kmod_set_log_fn = nullptr;
decltype(&::kmod_get_dirname) kmod_get_dirname = nullptr;
decltype(&::kmod_module_new_from_lookup) kmod_module_new_from_lookup = nullptr;
decltype(&::kmod_module_new_from_path) kmod_module_new_from_path = nullptr;
decltype(&::kmod_module_get_module) kmod_module_get_module = nullptr;
decltype(&::kmod_module_get_path) kmod_module_get_path = nullptr;
decltype(&::kmod_module_get_initstate) kmod_module_get_initstate = nullptr;
decltype(&::kmod_module_get_info) kmod_module_get_info = nullptr;
decltype(&::kmod_module_info_get_key) kmod_module_info_get_key = nullptr;
decltype(&::kmod_module_info_get_value) kmod_module_info_get_value = nullptr;
decltype(&::kmod_list_next) kmod_list_next = nullptr;
// NOLINTEND(readability-identifier-naming,cppcoreguidelines-avoid-non-const-global-variables)

template <typename F> bool resolve(void* lib, F& fn, const char* name, std::string& error) {
  fn = reinterpret_cast<F>(::dlsym(lib, name)); // NOLINT: dlsym returns an object pointer
  if (fn == nullptr && error.empty()) error = fmt::format("libkmod.so.2 has no {}", name);
  return fn != nullptr;
}

/// Loads libkmod.so.2 in the child and resolves the entry points above; the reason when it cannot.
std::string load_libkmod() {
  ::dlerror();
  void* lib = ::dlopen("libkmod.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = ::dlerror();
    return fmt::format("libkmod could not be loaded: {}", e != nullptr ? e : "dlopen failed");
  }
  std::string error;
  resolve(lib, kmod_new, "kmod_new", error);
  resolve(lib, kmod_set_log_fn, "kmod_set_log_fn", error);
  resolve(lib, kmod_get_dirname, "kmod_get_dirname", error);
  resolve(lib, kmod_module_new_from_lookup, "kmod_module_new_from_lookup", error);
  resolve(lib, kmod_module_new_from_path, "kmod_module_new_from_path", error);
  resolve(lib, kmod_module_get_module, "kmod_module_get_module", error);
  resolve(lib, kmod_module_get_path, "kmod_module_get_path", error);
  resolve(lib, kmod_module_get_initstate, "kmod_module_get_initstate", error);
  resolve(lib, kmod_module_get_info, "kmod_module_get_info", error);
  resolve(lib, kmod_module_info_get_key, "kmod_module_info_get_key", error);
  resolve(lib, kmod_module_info_get_value, "kmod_module_info_get_value", error);
  resolve(lib, kmod_list_next, "kmod_list_next", error);
  return error;
}

/// libkmod's last error message (it logs to stderr by default; the child keeps it as a reason).
std::string g_kmod_error; // NOLINT: the child's only global, set from libkmod's log callback

void keep_kmod_log(void* /*data*/, int priority, const char* /*file*/, int /*line*/,
                   const char* /*fn*/, const char* format, va_list args) {
  if (priority > 3) return; // LOG_ERR and worse
  std::array<char, 512> buf{};
  std::vsnprintf(buf.data(), buf.size(), format, args);
  g_kmod_error = buf.data();
  while (!g_kmod_error.empty() && g_kmod_error.back() == '\n')
    g_kmod_error.pop_back();
}

/// Limits the child: no core file, and at most kChildAddressSpaceBytes more address space than it
/// maps now (/proc/self/statm, first field in pages; a sanitizer build maps terabytes of shadow).
void limit_child() {
  rlimit core{0, 0};
  ::setrlimit(RLIMIT_CORE, &core);
  std::uint64_t pages = 0;
  std::ifstream statm("/proc/self/statm");
  statm >> pages;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  rlimit as{};
  as.rlim_cur = as.rlim_max = pages * page + kChildAddressSpaceBytes;
  ::setrlimit(RLIMIT_AS, &as);
}

/// Where a module under /lib/modules/<release>/ comes from, by its first directory: kernel/ is the
/// kernel's own build; updates/ (Debian, Ubuntu, Arch, SUSE), extra/ (Fedora, RHEL) and
/// weak-updates/ (RHEL kABI links to extra/) are where DKMS and vendor packages install
/// (dkms.in override_dest_module_location; depmod.d(5) "search updates extra built-in").
std::string origin_of(std::string_view rel) {
  if (rel.starts_with("kernel/")) return "inbox";
  for (std::string_view d : {"updates/", "extra/", "weak-updates/"})
    if (rel.starts_with(d)) return "dkms";
  return "other";
}

/// The child: looks amdgpu up as modprobe does and reports the file's .modinfo and signature.
/// Lines: `status<TAB>missing|error<TAB>reason`, `path<TAB>/lib/modules/.../amdgpu.ko.zst`,
/// `link<TAB>target`, `builtin`, `info<TAB>key<TAB>value`, and `end` when it got to the end.
void child_body(int fd, const Root& root, const std::string& moddir) {
  const std::string host_dir = root.resolve(moddir).string();
  bool have_dep = false;
  for (const char* idx : kIndexes) {
    const std::string p = host_dir + "/" + idx;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;
    // Outside the live root a link here would be followed by libkmod on this machine.
    if (!root.is_live() && S_ISLNK(st.st_mode)) {
      emit(fd, "status", "error",
           fmt::format("refused: {}/{} is a symbolic link (libkmod would follow it outside the "
                       "root)",
                       moddir, idx));
      return;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > kMaxIndexBytes) {
      emit(fd, "status", "error",
           fmt::format("refused: {}/{} is not a regular file of at most {} MiB", moddir, idx,
                       kMaxIndexBytes >> 20));
      return;
    }
    if (std::string_view(idx) == "modules.dep.bin") have_dep = true;
  }
  if (!have_dep) {
    emit(fd, "status", "missing",
         fmt::format("no {}/modules.dep.bin: depmod has not indexed this kernel's modules, so "
                     "modprobe finds none",
                     moddir));
    return;
  }
  limit_child();
  if (const std::string error = load_libkmod(); !error.empty()) {
    emit(fd, "status", "error", error);
    return;
  }
  // No configuration: modprobe.d aliases are not followed (an alias for amdgpu is not a case
  // the doctor knows of), and nothing outside the root is read for them.
  const std::array<const char*, 1> no_config = {nullptr};
  kmod_ctx* ctx = kmod_new(host_dir.c_str(), no_config.data());
  if (ctx == nullptr) {
    emit(fd, "status", "error", fmt::format("libkmod could not open {}", moddir));
    return;
  }
  kmod_set_log_fn(ctx, keep_kmod_log, nullptr);
  kmod_list* list = nullptr;
  const int err = kmod_module_new_from_lookup(ctx, "amdgpu", &list);
  if (err < 0 || list == nullptr) {
    emit(fd, "status", err < 0 ? "error" : "missing",
         err < 0 ? fmt::format("libkmod lookup failed: {}",
                               g_kmod_error.empty() ? std::strerror(-err) : g_kmod_error)
                 : fmt::format("modprobe finds no amdgpu module for this kernel (not in "
                               "{}/modules.dep.bin or modules.builtin.bin)",
                               moddir));
    return;
  }
  kmod_module* mod = kmod_module_get_module(list);
  const char* path = kmod_module_get_path(mod);
  if (path == nullptr) {
    // kmod_module_get_initstate() answers from modules.builtin before it reads any sysfs.
    if (kmod_module_get_initstate(mod) == KMOD_MODULE_BUILTIN)
      emit(fd, "builtin", "");
    else
      emit(fd, "status", "missing", "libkmod found amdgpu but no file for it");
    return;
  }
  // modules.dep names files relative to the directory (libkmod prefixes it); an absolute name
  // (old depmod) is a path on the target system. Both are resolved inside the root again.
  // libkmod keeps the directory as an absolute path (kmod_get_dirname), whatever --root was.
  const std::string p(path);
  const char* kdir = kmod_get_dirname(ctx);
  const std::string prefix = std::string(kdir != nullptr ? kdir : host_dir.c_str()) + "/";
  const std::string target = p.starts_with(prefix) ? moddir + "/" + p.substr(prefix.size()) : p;
  emit(fd, "path", target);
  const std::string unresolved = root.resolve(target, /*follow_last=*/false).string();
  struct stat lst {};
  std::string link;
  if (::lstat(unresolved.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    std::array<char, 4096> buf{};
    const ssize_t n = ::readlink(unresolved.c_str(), buf.data(), buf.size() - 1);
    if (n > 0) link.assign(buf.data(), static_cast<std::size_t>(n));
    emit(fd, "link", link);
  }
  const std::string host_file = root.resolve(target).string();
  struct stat st {};
  if (::stat(host_file.c_str(), &st) != 0) {
    const int e = errno;
    emit(fd, "status", e == EACCES ? "denied" : "missing",
         link.empty() ? fmt::format("{}: {}", target, std::strerror(e))
                      : fmt::format("{} is a symbolic link to {}, which is not there inside the "
                                    "root ({}): links are followed inside the root only",
                                    target, link, std::strerror(e)));
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    emit(fd, "status", "error", fmt::format("refused: {} is not a regular file", target));
    return;
  }
  if (st.st_size > kMaxModuleBytes) {
    emit(fd, "status", "error",
         fmt::format("refused: {} is {} bytes, over the {} MiB bound for a module file", target,
                     st.st_size, kMaxModuleBytes >> 20));
    return;
  }
  // A context of its own: the lookup's already holds "amdgpu" with the unresolved path, and
  // libkmod refuses a second path for one name (-EEXIST).
  kmod_ctx* file_ctx = kmod_new(host_dir.c_str(), no_config.data());
  kmod_module* file_mod = nullptr;
  if (file_ctx != nullptr) kmod_set_log_fn(file_ctx, keep_kmod_log, nullptr);
  if (file_ctx == nullptr ||
      kmod_module_new_from_path(file_ctx, host_file.c_str(), &file_mod) < 0 ||
      file_mod == nullptr) {
    emit(fd, "status", "error",
         fmt::format("libkmod could not open {}{}", target,
                     g_kmod_error.empty() ? "" : ": " + g_kmod_error));
    return;
  }
  kmod_list* info = nullptr;
  const int ierr = kmod_module_get_info(file_mod, &info);
  if (ierr < 0) {
    emit(fd, "status", "error",
         fmt::format("libkmod could not read {} as a module: {}", target,
                     g_kmod_error.empty() ? std::strerror(-ierr) : g_kmod_error));
    return;
  }
  kmod_list* it = nullptr;
  std::size_t n = 0;
  kmod_list_foreach(it, info) {
    if (++n > 20000) break;
    const char* k = kmod_module_info_get_key(it);
    const char* v = kmod_module_info_get_value(it);
    emit(fd, "info", k != nullptr ? k : "", v != nullptr ? v : "");
  }
  // No clean-up: the child ends with _exit, and the pipe is all that matters.
}

/// The child's whole work; `end` says it got through without crashing or being killed.
void child_main(int fd, const Root& root, const std::string& moddir) {
  child_body(fd, root, moddir);
  emit(fd, "end", "");
}

void put_all(FactSet& facts, Status s, const std::string& source, const std::string& reason) {
  for (std::string_view k : kAllKeys)
    facts.put_status(std::string(k), s, source, reason);
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  const std::string rel_key(keys::kernel_release);
  const Fact* rel = facts.find(rel_key);
  if (rel == nullptr || !rel->ok() || !std::holds_alternative<std::string>(rel->value)) {
    put_all(facts, rel != nullptr ? rel->status : Status::missing, "/proc/sys/kernel/osrelease",
            fmt::format("the kernel release is unknown ({})",
                        rel != nullptr && !rel->reason.empty() ? rel->reason : "not read"));
    return;
  }
  const auto& release = std::get<std::string>(rel->value);
  if (release.empty() || release.size() > 200 || release.find('/') != std::string::npos ||
      release == "." || release == "..") {
    put_all(facts, Status::error, rel->source,
            fmt::format("not a kernel release usable as a directory name: '{}'",
                        release.substr(0, 60)));
    return;
  }
  const std::string moddir = "/lib/modules/" + release;
  // The running kernel's modules are the host's: in toolbox or distrobox they are under the
  // host root (/run/host) when the image has none of its own (ProbeContext::host_config_root).
  const Root* where = &ctx.root;
  std::string source = moddir + "/modules.dep.bin (libkmod lookup, as modprobe)";
  if (!ctx.root.is_dir(moddir)) {
    const Root* host = ctx.host_config_root();
    if (host != nullptr && host != &ctx.root && host->is_dir(moddir)) {
      where = host;
      source += fmt::format(" in the host root ({})", ctx.host_basis());
    } else {
      // Not there to read (a container without the host's /lib/modules, a fixture or a
      // bundle): not probed, so rules that need it are skipped, not "could not be checked".
      put_all(facts, Status::missing, moddir,
              fmt::format("{}no {} in this root (a container without the host's /lib/modules, "
                          "or a fixture)",
                          kNotProbedPrefix, moddir));
      return;
    }
  }
  // Reading the module costs a fork and a decompression of ~30 MiB: paid only where the file
  // can matter, i.e. where the kernel checks module signatures (Secure Boot, or lockdown in
  // integrity/confidentiality mode: kernel/module/signing.c) or amdgpu is not live.
  const bool secure_boot = facts.get<bool>(fact_keys::boot::secure_boot) == true;
  const auto lockdown = facts.get<std::string>(fact_keys::boot::lockdown);
  const bool locked = lockdown && *lockdown != "none";
  const bool live = facts.get<std::string>(fact_keys::amdgpu::initstate) == std::string("live");
  if (!secure_boot && !locked && live) {
    put_all(facts, Status::missing, moddir,
            fmt::format("{}Secure Boot is off, the kernel is not locked down and amdgpu is "
                        "live: the module file was not read",
                        kNotProbedPrefix));
    return;
  }
  const child::Result run = run_in_child([&](int fd) { child_main(fd, *where, moddir); },
                                         kChildTimeoutS, std::size_t{4} << 20);
  const std::vector<std::string> lines = child::complete_lines(run.out);
  const bool ended = !lines.empty() && lines.back().starts_with("end\t");
  if (!ended) {
    put_all(facts, Status::error, source,
            fmt::format("reading the module with libkmod failed: the child process {}",
                        child::describe_end(run, kChildTimeoutS)));
    return;
  }
  std::string path;
  std::string link;
  bool builtin = false;
  Status status = Status::ok;
  std::string reason;
  std::multimap<std::string, std::string> info;
  for (const auto& line : lines) {
    std::vector<std::string> f;
    std::size_t start = 0;
    while (f.size() < 2) {
      const auto tab = line.find('\t', start);
      if (tab == std::string::npos) break;
      f.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    f.push_back(line.substr(start));
    if (f.size() < 3) continue;
    if (f[0] == "status") {
      status = parse_status(f[1]).value_or(Status::error);
      reason = f[2];
    } else if (f[0] == "path") {
      path = f[1];
    } else if (f[0] == "link") {
      link = f[1];
    } else if (f[0] == "builtin") {
      builtin = true;
    } else if (f[0] == "info") {
      info.emplace(f[1], f[2]);
    }
  }
  const std::string file_source =
      path.empty() ? source : (link.empty() ? path : fmt::format("{} -> {}", path, link));
  if (builtin) {
    facts.put_ok(std::string(fact_keys::amdgpu::module_origin), std::string("builtin"),
                 moddir + "/modules.builtin.bin");
    for (std::string_view k : kAllKeys)
      if (k != fact_keys::amdgpu::module_origin)
        facts.put_status(std::string(k), Status::missing, moddir + "/modules.builtin.bin",
                         "amdgpu is built into the kernel image: no module file");
    return;
  }
  if (!path.empty()) {
    facts.put_ok(std::string(fact_keys::amdgpu::module_path), path, source);
    const std::string rel_path =
        path.starts_with(moddir + "/") ? path.substr(moddir.size() + 1) : std::string();
    facts.put_ok(std::string(fact_keys::amdgpu::module_origin), origin_of(rel_path), source);
  }
  if (status != Status::ok) {
    for (std::string_view k : kAllKeys)
      if (path.empty() ||
          (k != fact_keys::amdgpu::module_path && k != fact_keys::amdgpu::module_origin))
        facts.put_status(std::string(k), status, file_source, reason);
    return;
  }
  auto value = [&](std::string_view k) -> const std::string* {
    auto i = info.find(std::string(k));
    return i == info.end() ? nullptr : &i->second;
  };
  const bool is_signed = value("sig_id") != nullptr;
  facts.put_ok(std::string(fact_keys::amdgpu::module_signed), is_signed,
               file_source + " (a signed module ends with \"~Module signature appended~\")");
  const std::array<std::pair<std::string_view, const char*>, 3> sig = {
      {{fact_keys::amdgpu::module_signer, "signer"},
       {fact_keys::amdgpu::module_sig_key, "sig_key"},
       {fact_keys::amdgpu::module_sig_hashalgo, "sig_hashalgo"}}};
  for (const auto& [key, field] : sig) {
    const std::string* v = value(field);
    if (v != nullptr && !v->empty())
      facts.put_ok(std::string(key), *v, file_source);
    else
      facts.put_status(std::string(key), Status::missing, file_source,
                       is_signed ? fmt::format("the signature names no {}", field)
                                 : "the module is not signed");
  }
  if (const std::string* v = value("version"))
    facts.put_ok(std::string(fact_keys::amdgpu::module_version), *v, file_source);
  else
    facts.put_status(std::string(fact_keys::amdgpu::module_version), Status::missing, file_source,
                     "the module declares no version (MODULE_VERSION; in-tree builds have none)");
  std::vector<std::string> fw;
  for (auto [i, end] = info.equal_range("firmware"); i != end; ++i)
    fw.push_back(i->second);
  facts.put_ok(std::string(fact_keys::amdgpu::module_firmware_count),
               static_cast<std::int64_t>(fw.size()), file_source);
  facts.put_ok(std::string(fact_keys::amdgpu::module_firmware), std::move(fw), file_source);
}

} // namespace

std::unique_ptr<Probe> make_module_file_probe() {
  return std::make_unique<BasicProbe>("module_file", collect);
}

} // namespace halo::probes
