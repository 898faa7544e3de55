// Capture bundles: a .tar.gz holding exactly the files the probes read, device-node ownership,
// the runtime probes' facts and a manifest, so a machine's state can be attached to a bug report
// and replayed with `check --bundle FILE` (or `--root` on the extracted tree).
#pragma once

#include <halo/fact.hpp>
#include <halo/probe.hpp>
#include <halo/root.hpp>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace halo {

/// What `capture` writes and how.
struct CaptureOptions {
  /// Replace host name, human user names and serial numbers/UUIDs (`--no-redact` turns it off).
  bool redact = true;
  /// Largest file copied; longer files are listed in the manifest as skipped.
  std::size_t max_file_bytes = 1024 * 1024;
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

/// Writes a capture bundle of `root` to `out_path` (gzip-compressed tar, atomically). `facts` are
/// the facts probed from the same root; those of the runtime probes are stored for replay.
/// Throws InputError when the archive cannot be written.
CaptureManifest write_capture_bundle(const ProbeRegistry& reg, const Root& root,
                                     const FactSet& facts, const CaptureOptions& opt,
                                     const std::string& out_path);

/// A bundle extracted to a fresh temporary directory, removed again on destruction.
class ExtractedBundle {
public:
  /// Extracts `archive` (InputError naming it if it is not a readable tar archive or holds
  /// paths that would leave the directory).
  explicit ExtractedBundle(const std::string& archive);
  ~ExtractedBundle();
  ExtractedBundle(const ExtractedBundle&) = delete;
  ExtractedBundle& operator=(const ExtractedBundle&) = delete;

  /// The directory to use as `--root`.
  const std::filesystem::path& root() const { return dir_; }
  /// `.halo/runtime-facts.json` inside it, or empty if the bundle has none.
  std::string runtime_facts_file() const;

private:
  std::filesystem::path dir_;
};

} // namespace halo
