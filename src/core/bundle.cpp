// SPDX-License-Identifier: MIT
// Capture bundles with libarchive, the writing part: what the probes read, redacted
// (src/core/bundle_redact.cpp), written as a gzip'd tar with the device nodes, the runtime facts
// and a manifest. Extraction for replay is src/core/bundle_extract.cpp.
#include "bundle_internal.hpp"

#include <halo/bundle.hpp>
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/sanitize.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <archive.h>
#include <archive_entry.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <ctime>
#include <set>

namespace halo {
namespace {

using bundle_detail::env_allow_list;
using bundle_detail::FileRedactor;
using bundle_detail::link_stays_inside;
using bundle_detail::secret_mount;
using bundle_detail::split;

bool is_link(const Root& root, const std::string& abs) {
  std::error_code ec;
  return std::filesystem::is_symlink(root.resolve(abs, /*follow_last=*/false), ec);
}

/// Paths whose symlink target is the fact (probes call Root::link_name on them).
bool read_as_link(const std::string& abs) {
  return abs.size() > 7 && abs.ends_with("/driver");
}

void expand(const Root& root, const std::vector<std::string>& segs, std::size_t i,
            const std::string& prefix, std::set<std::string>& out) {
  if (i == segs.size()) {
    if (root.exists(prefix) || (read_as_link(prefix) && is_link(root, prefix))) out.insert(prefix);
    return;
  }
  const std::string& seg = segs[i];
  if (seg.find_first_of("*?[") == std::string::npos) {
    expand(root, segs, i + 1, prefix + "/" + seg, out);
    return;
  }
  const auto names = root.list(prefix.empty() ? "/" : prefix);
  if (!names) return;
  for (const auto& n : *names)
    if (::fnmatch(seg.c_str(), n.c_str(), 0) == 0)
      expand(root, segs, i + 1, fmt::format("{}/{}", prefix, n), out);
}

/// Declared patterns, comments removed, without /dev. Inside toolbox or distrobox the host's
/// configuration is read through /run/host (detect_host_root): the same files are captured
/// there too, so a bundle replays with the host's configuration.
std::vector<std::string> patterns(const ProbeRegistry& reg, const Root& root) {
  std::set<std::string> pats;
  const bool host_tree = root.is_dir("/run/host/etc");
  for (const auto& p : reg.probes())
    for (auto r : p->reads()) {
      r = r.substr(0, r.find(' '));
      if (r.empty() || r[0] != '/' || r.starts_with("/dev/") || r == "/dev") continue;
      pats.insert(r);
      const bool kernel_state = r.starts_with("/proc/") || r.starts_with("/sys/");
      const bool literal = r.find_first_of("*?[") == std::string::npos;
      if (host_tree && !kernel_state && (!literal || root.exists("/run/host" + r)))
        pats.insert("/run/host" + r);
    }
  return {pats.begin(), pats.end()};
}

/// Owns a libarchive writer that builds the archive in memory (the caller writes it with
/// write_output_file, atomically); every failure becomes an InputError naming the file.
class TarWriter {
public:
  explicit TarWriter(std::string origin) : a_(archive_write_new()), origin_(std::move(origin)) {

    if (archive_write_add_filter_gzip(a_) != ARCHIVE_OK ||
        archive_write_set_format_pax_restricted(a_) != ARCHIVE_OK ||
        archive_write_open(a_, &data_, nullptr, &TarWriter::append, nullptr) != ARCHIVE_OK)
      fail();
    mtime_ = std::time(nullptr);
  }
  ~TarWriter() {
    if (a_ != nullptr) archive_write_free(a_);
  }
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;
  TarWriter(TarWriter&&) = delete;
  TarWriter& operator=(TarWriter&&) = delete;

  void dir(const std::string& rel) { header(rel, AE_IFDIR, 0755, 0, nullptr); }
  void file(const std::string& rel, const std::string& data, int perm = 0644) {
    header(rel, AE_IFREG, perm, data.size(), nullptr);
    if (!data.empty() && archive_write_data(a_, data.data(), data.size()) < 0) fail();
  }
  void link(const std::string& rel, const std::string& target) {
    header(rel, AE_IFLNK, 0777, 0, target.c_str());
  }
  void close() {
    if (archive_write_close(a_) != ARCHIVE_OK) fail();
  }
  /// The compressed archive (complete after close()).
  const std::string& data() const { return data_; }

private:
  static la_ssize_t append(archive* /*a*/, void* client, const void* buf, std::size_t n) {
    static_cast<std::string*>(client)->append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
  }
  void header(const std::string& rel, unsigned type, int perm, std::size_t size,
              const char* target) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, rel.c_str());
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, static_cast<mode_t>(perm));
    archive_entry_set_size(e, static_cast<la_int64_t>(size));
    archive_entry_set_mtime(e, mtime_, 0);
    if (target != nullptr) archive_entry_set_symlink(e, target);
    const int rc = archive_write_header(a_, e);
    archive_entry_free(e);
    if (rc != ARCHIVE_OK) fail();
  }
  [[noreturn]] void fail() const {
    throw InputError(fmt::format("{}: cannot write the bundle: {}", origin_,
                                 archive_error_string(a_) != nullptr ? archive_error_string(a_)
                                                                     : "unknown error"));
  }
  archive* a_ = nullptr;
  std::string data_;
  std::string origin_;
  std::time_t mtime_ = 0;
};

std::string node_sidecar(const Root& root) {
  if (!root.is_live()) {
    const ReadResult side = root.read("/.halo/nodes.json", std::size_t{256} * 1024);
    if (side.ok()) return side.text;
  }
  nlohmann::json j = nlohmann::json::object();
  std::vector<std::string> paths{"/dev/kfd", "/dev/dxg"}; // dxg: WSL2 (checks/host/wsl.cpp)
  if (auto names = root.list("/dev/dri"))
    for (const auto& n : *names)
      paths.push_back("/dev/dri/" + n);
  for (const auto& p : paths) {
    const NodeInfo n = root.node(p);
    if (n.status != Status::ok) continue;
    j[p] = {{"type", n.is_char_device ? "char" : "other"},
            {"mode", fmt::format("{:04o}", n.mode)},
            {"uid", n.uid},
            {"gid", n.gid}};
  }
  return dump_json(j, 2) + "\n";
}

/// Facts no file in the bundle holds: those of the runtime probes (ROCr, libdrm), and the
/// framework probe's (checks/framework/framework.cpp), which reads a Python environment named by
/// VIRTUAL_ENV/CONDA_PREFIX and the file names of kernel libraries of hundreds of MB; the
/// amdgpu module file's (checks/kernel_args/module_file.cpp: a binary of megabytes, never stored)
/// and which firmware files that failed at boot are on disk now (checks/kernel_log/kernel_log.cpp:
/// /lib/firmware is not stored either); and the wsl probe's (checks/host/wsl.cpp: librocdxg, DXCore
/// and ROCr are binaries, looked up by name and never stored).
/// The rocm_install probe (checks/runtime/rocm_install.cpp): TheRock's rocm-sdk-core release is
/// read in the Python environment the framework probe finds, whose files a bundle does not keep
/// (the framework's facts are kept instead), so on replay the probe would find no environment.
constexpr std::string_view kRocmInstallProbe = "rocm_install";

FactSet runtime_facts(const FactSet& facts) {
  FactSet out;
  for (const auto& [k, f] : facts.all())
    // A probe that did not run (--no-runtime, no --framework-deep) has nothing to keep: on
    // replay under --root it is not run either.
    if ((k.starts_with(keys::hsa_prefix) || k.starts_with(keys::libdrm_prefix) ||
         k.starts_with(keys::framework_prefix) || k.starts_with(keys::amdgpu_module_prefix) ||
         k.starts_with(keys::wsl_prefix) || k == keys::kernel_log_firmware_on_disk ||
         f.probe == kRocmInstallProbe) &&
        !f.not_probed())
      out.put(f);
  return out;
}

std::string utc_now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

} // namespace

std::vector<std::string> expand_probe_reads(const ProbeRegistry& reg, const Root& root) {
  std::set<std::string> out;
  for (const auto& pat : patterns(reg, root)) {
    expand(root, split(pat.substr(1), '/'), 0, "", out);
    if (pat.find_first_of("*?[") == std::string::npos && root.is_dir(pat))
      if (auto names = root.list(pat))
        for (const auto& n : *names)
          out.insert(fmt::format("{}/{}", pat, n));
  }
  return {out.begin(), out.end()};
}

CaptureManifest write_capture_bundle(const ProbeRegistry& reg, const Root& root,
                                     const FactSet& facts, const CaptureOptions& opt,
                                     const std::string& out_path) {
  CaptureManifest m;
  // The one learning step the Markdown report of this machine takes too (include/halo/redact.hpp),
  // so a pasted report and this bundle call a person, a host and a GPU by the same pseudonyms.
  Redactor identities(&root, facts, opt.redact);
  FileRedactor red(identities, env_allow_list(reg));
  // A member's name says who and which machine too (a loader entry is named by the machine-id, a
  // venv lies under /home/NAME): stored as the redacted path, as the manifest lists it.
  auto member = [&](std::string_view rel) {
    return identities.path("/" + std::string(rel)).substr(1);
  };
  struct Pending {
    std::string abs;
    std::string text;
    int perm;
  };
  std::vector<Pending> pending; // files, redacted once all are read
  std::string archive_bytes;
  {
    TarWriter tar(out_path);
    std::set<std::string> dirs;
    auto parents = [&](const std::string& abs) {
      std::string acc;
      const auto segs = split(abs.substr(1), '/');
      for (std::size_t i = 0; i + 1 < segs.size(); ++i) {
        acc += (acc.empty() ? "" : "/") + segs[i];
        if (dirs.insert(acc).second) tar.dir(member(acc));
      }
    };
    std::set<std::string> matched;
    for (const auto& pat : patterns(reg, root)) {
      std::set<std::string> hits;
      expand(root, split(pat.substr(1), '/'), 0, "", hits);
      const bool literal = pat.find_first_of("*?[") == std::string::npos;
      if (hits.empty() && literal) m.missing.push_back(pat);
      matched.insert(hits.begin(), hits.end());
      // A directory named without a glob is read by listing it: its entries go in too.
      if (literal && root.is_dir(pat))
        if (auto names = root.list(pat))
          for (const auto& n : *names)
            matched.insert(fmt::format("{}/{}", pat, n));
    }
    // A home directory a probe read names a person before any member is written under it.
    for (const auto& abs : matched)
      identities.learn_homes(abs);
    for (const auto& abs : matched) {
      const std::string rel = abs.substr(1);
      if (read_as_link(abs) && is_link(root, abs)) {
        std::error_code ec;
        const auto target =
            std::filesystem::read_symlink(root.resolve(abs, /*follow_last=*/false), ec);
        if (ec) {
          m.skipped.push_back(fmt::format("{}: {}", abs, ec.message()));
          continue;
        }
        // A bundle keeps only links that stay inside it (replay refuses the others).
        if (!link_stays_inside(rel, target.string())) {
          m.skipped.push_back(fmt::format("{}: symbolic link to {} leaves the root; not stored",
                                          abs, target.string()));
          continue;
        }
        parents(abs);
        tar.link(member(rel), identities.path(target.string()));
        m.links.push_back(abs);
        continue;
      }
      if (root.is_dir(abs)) {
        parents(abs);
        if (dirs.insert(rel).second) tar.dir(member(rel));
        m.files.push_back(abs);
        continue;
      }
      if (secret_mount(abs)) {
        parents(abs);
        tar.file(member(rel), "", 0644);
        m.files.push_back(abs);
        m.skipped.push_back(abs + ": a container secret mount, stored empty");
        continue;
      }
      // Executables (boot tools) matter by their presence and mode only: stored empty, with
      // their execute bits, so a bundle never ships binaries.
      struct stat st {};
      const bool have_stat = ::stat(root.resolve(abs).c_str(), &st) == 0;
      const int perm = have_stat ? static_cast<int>((st.st_mode & 0755U) | 0444U) : 0644;
      if (have_stat && S_ISREG(st.st_mode) && (st.st_mode & 0111U) != 0) {
        parents(abs);
        tar.file(member(rel), "", perm);
        m.files.push_back(abs);
        m.skipped.push_back(abs + ": executable, stored empty with its mode");
        continue;
      }
      const ReadResult r = root.read(abs, opt.max_file_bytes);
      if (r.status == Status::missing)
        m.missing.push_back(abs);
      else if (r.status == Status::denied)
        m.denied.push_back(abs);
      else if (!r.ok())
        m.skipped.push_back(fmt::format("{}: {}", abs, r.reason));
      if (!r.ok()) continue;
      parents(abs);
      pending.push_back({abs, r.text, perm});
      m.files.push_back(abs);
    }
    // Two passes: identifiers and secrets are learnt from every file first, so that the same
    // value is replaced wherever else it occurs (a serial in the kernel log, a token pasted into
    // a second variable, ROCr's GPU-<hex> of a kfd unique_id).
    for (const auto& p : pending)
      red.learn(p.abs, p.text);
    for (auto& p : pending)
      tar.file(member(p.abs.substr(1)), red.apply(p.abs, std::move(p.text)), p.perm);

    if (dirs.insert(".halo").second) tar.dir(".halo");
    tar.file(".halo/nodes.json", node_sidecar(root));
    // The kernel log's lines about amdgpu, firmware and module signing
    // (checks/kernel_log/kernel_log.cpp keeps only those), so a replay reaches the same verdicts;
    // `--root` reads them back.
    if (const Fact* k = facts.find(keys::kernel_log_lines); k != nullptr && k->ok()) {
      std::string text;
      for (const auto& l : std::get<std::vector<std::string>>(k->value))
        text += l + "\n";
      tar.file(".halo/dmesg.txt", red.apply("/.halo/dmesg.txt", text));
    }
    FactSet rt = runtime_facts(facts);
    red.apply(rt);
    if (rt.size() > 0)
      tar.file(kBundleRuntimeFacts,
               dump_json(facts_to_json(rt, "halo-doctor", opt.tool_version), 2) + "\n");
    m.redacted = red.notes();
    for (auto* list : {&m.files, &m.links, &m.missing, &m.denied, &m.skipped})
      for (auto& e : *list)
        e = identities.path(e);
    nlohmann::json man = {
        {"bundle_version", 1},
        {"tool", {{"name", "halo-doctor"}, {"version", opt.tool_version}}},
        {"created", utc_now()},
        {"root",
         opt.redact && root.base() != "/" ? std::string("(redacted)") : root.base().string()},
        {"redacted", opt.redact},
        // What /proc/self/environ keeps (Probe::env_reads of every probe; docs/security.md).
        {"environment_kept", env_allow_list(reg)},
        {"redactions", m.redacted},
        {"files", m.files},
        {"links", m.links},
        {"missing", m.missing},
        {"denied", m.denied},
        {"skipped", m.skipped},
        {"runtime_facts", rt.size()},
    };
    tar.file(".halo/manifest.json", dump_json(man, 2) + "\n");
    tar.close();
    archive_bytes = tar.data();
  }
  write_output_file(out_path, archive_bytes);
  return m;
}

} // namespace halo
