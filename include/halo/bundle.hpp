// SPDX-License-Identifier: MIT
// Capture bundles: a .tar.gz holding exactly the files the probes read, device-node ownership,
// the runtime probes' facts and a manifest, so a machine's state can be attached to a bug report
// and replayed with `check --bundle FILE` (or `--root` on the extracted tree).
#pragma once

#include <halo/fact.hpp>
#include <halo/probe.hpp>
#include <halo/root.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo {

/// What `capture` writes and how. Secrets are never stored, whatever the options: of
/// /proc/self/environ only the variables some probe declares (Probe::env_reads) keep their
/// values (the others become `NAME=<dropped>`), URL credentials in those are masked
/// (mask_url_credentials), variables named like credentials (TOKEN, SECRET, PASSWORD, ...) are
/// masked, and files under container secret mounts (/run/secrets, /var/run/secrets) are stored
/// empty. docs/security.md lists it all with the tests that prove it.
struct CaptureOptions {
  /// Replace the host name, human user names (user1, user2, ...) and serial numbers/UUIDs (stable
  /// pseudonyms: the same value, the same pseudonym within a bundle) (`--no-redact` turns it
  /// off).
  bool redact = true;
  /// Largest file copied; longer files are listed in the manifest as skipped.
  std::size_t max_file_bytes = std::size_t{1024} * 1024;
  std::string tool_version;
};

/// What went into a bundle (also written as `.halo/manifest.json`).
struct CaptureManifest {
  std::vector<std::string> files;    ///< target paths stored as files or directories
  std::vector<std::string> links;    ///< target paths stored as symlinks (probes call link_name)
  std::vector<std::string> missing;  ///< declared paths that did not exist
  std::vector<std::string> denied;   ///< declared paths the capturing user could not read
  std::vector<std::string> skipped;  ///< too long or unreadable for another reason, with why
  std::vector<std::string> redacted; ///< what was redacted, one line each
};

/// Bundle layout: target paths under the archive root (`sys/...`, `proc/...`, `etc/...`), plus
/// `.halo/nodes.json` (device nodes, the Root sidecar format), `.halo/runtime-facts.json` (facts of
/// the runtime probes: hsa.*, libdrm.*; facts format) and `.halo/manifest.json`.
inline constexpr const char* kBundleRuntimeFacts = ".halo/runtime-facts.json";

/// Expands the probes' reads() patterns (absolute paths, `*` matching within one segment; text
/// after the first space is a comment) under `root` to the existing target paths, sorted. Paths
/// under /dev are left out (they go to nodes.json). A directory named without a glob stands for
/// its entries (the probe lists it); one matched by a glob is kept as an empty directory (the
/// probe tests its existence); `.../driver` symlinks are kept as links (Root::link_name).
std::vector<std::string> expand_probe_reads(const ProbeRegistry& reg, const Root& root);

/// `value` with the userinfo of every URL in it replaced: `https://user:pass@proxy:3128` ->
/// `https://<masked>@proxy:3128`. A URL starts at `://` and ends at white space or one of
/// `,;"'<>`; its userinfo is everything up to the last `@` in it (an unescaped `/` or `@` in a
/// password masks more, never less).
std::string mask_url_credentials(std::string_view value);

/// Writes a capture bundle of `root` to `out_path` (gzip-compressed tar, atomically). `facts` are
/// the facts probed from the same root; those of the runtime probes are stored for replay.
/// Throws InputError when the archive cannot be written.
CaptureManifest write_capture_bundle(const ProbeRegistry& reg, const Root& root,
                                     const FactSet& facts, const CaptureOptions& opt,
                                     const std::string& out_path);

/// Limits on a bundle being replayed (a bundle may come from anyone): members, bytes of one
/// member, bytes in all, and path depth. `capture` writes a few hundred members of at most
/// CaptureOptions::max_file_bytes (1 MiB) each.
inline constexpr std::size_t kMaxBundleMembers = 20000;
inline constexpr std::uint64_t kMaxBundleMemberBytes = std::uint64_t{16} * 1024 * 1024;
inline constexpr std::uint64_t kMaxBundleBytes = std::uint64_t{256} * 1024 * 1024;
inline constexpr std::size_t kMaxBundleDepth = 32;

/// A bundle extracted to a fresh private directory (mkdtemp(3), mode 0700), removed again on
/// destruction and, through a signal handler, on SIGTERM, SIGINT, SIGHUP, SIGQUIT and on the
/// crash signals (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL). Only SIGKILL can leave it behind.
class ExtractedBundle {
public:
  /// Extracts `archive`, which must be a regular file holding a tar archive, plain or compressed
  /// with gzip, xz, zstd or bzip2 (libarchive's built-in decoders; no external program ever
  /// runs). Throws InputError naming it for anything else, and for a member that is not a
  /// regular file, directory or symlink staying inside the bundle (judged once every member is
  /// extracted, through the other links, as the kernel resolves it: openat2(2)
  /// RESOLVE_BENEATH), that would land outside the directory, or that breaks the kMaxBundle*
  /// limits.
  explicit ExtractedBundle(const std::string& archive);
  ~ExtractedBundle();
  ExtractedBundle(const ExtractedBundle&) = delete;
  ExtractedBundle& operator=(const ExtractedBundle&) = delete;
  ExtractedBundle(ExtractedBundle&&) = delete;
  ExtractedBundle& operator=(ExtractedBundle&&) = delete;

  /// The directory to use as `--root`.
  const std::filesystem::path& root() const { return dir_; }
  /// The text of `.halo/runtime-facts.json` inside it (at most `max_bytes`), read through Root
  /// (openat2(2) RESOLVE_IN_ROOT: a symlink there resolves inside the bundle, never to a host
  /// file); std::nullopt if the bundle has none. Throws InputError naming the entry when it
  /// cannot be read (not a regular file, longer than `max_bytes`).
  std::optional<std::string> runtime_facts_text(std::size_t max_bytes) const;

private:
  std::filesystem::path dir_;
  int slot_ = -1; ///< its entry in the signal handler's table of live directories, -1 when none
};

} // namespace halo
