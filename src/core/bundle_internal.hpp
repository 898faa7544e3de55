// SPDX-License-Identifier: MIT
// The capture bundle's three parts share this private header (include/halo/bundle.hpp is the
// public one): redaction (src/core/bundle_redact.cpp: the environment allow-list, URL and
// secret masking, serial-number pseudonyms), archive writing (src/core/bundle.cpp: what the
// probes read, as a gzip'd tar) and extraction (src/core/bundle_extract.cpp: safe unpacking of
// an untrusted archive).
#pragma once

#include <halo/fact.hpp>
#include <halo/probe.hpp>
#include <halo/redact.hpp>
#include <halo/root.hpp>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace halo::bundle_detail {

/// `s` cut at every `sep`: n separators give n + 1 fields (empty ones included).
std::vector<std::string> split(std::string_view s, char sep);

/// True when a symlink stored at `rel` with target `target` stays inside the bundle: relative,
/// and its `..` never climbs above the bundle's root counting from the link's directory.
/// (Reads of a replayed bundle are confined by Root as well; this refuses the obvious cases.)
/// The writer stores only such links; extraction refuses any other. Counting alone cannot see a
/// chain of links (`s -> ..`, `t -> s/..`): link_leaves_tree judges the extracted tree as the
/// kernel resolves it.
bool link_stays_inside(const std::string& rel, const std::string& target);

/// True when the path `rel` below the directory `dirfd`, followed through every symlink on the
/// way and at its end as the kernel resolves it (path_resolution(7)), leaves that directory: a
/// `..` above it or an absolute link target. This is openat2(2) with RESOLVE_BENEATH |
/// RESOLVE_NO_MAGICLINKS failing with EXDEV ("a path component would leave dirfd"; Linux 5.6);
/// where the kernel has no openat2 (ENOSYS), a component walk with lstat(2)/readlinkat(2) of the
/// same rules. A dangling link, a link loop (more than 40 links, ELOOP) or a component that is
/// not a directory ends resolution without leaving: false.
bool link_leaves_tree(int dirfd, const std::string& rel);

/// The extraction directories of the ExtractedBundles alive now, as the fatal-signal handler sees
/// them (one slot each, whatever thread made them: `fleet compare` extracts on worker threads).
std::vector<std::string> live_extraction_dirs();

/// What the fatal-signal handler does before it re-raises: removes every live extraction
/// directory (async-signal-safe: openat, getdents64, unlinkat, rmdir; no allocation).
void remove_live_extraction_dirs() noexcept;

/// link_leaves_tree's component walk alone (what it does without openat2), for the tests and the
/// fuzz target that hold the two answers against each other.
bool link_leaves_tree_walk(int dirfd, const std::string& rel);

/// The environment allow-list: every variable some probe declares it reads (Probe::env_reads),
/// sorted, each once.
std::vector<std::string> env_allow_list(const ProbeRegistry& reg);

/// Container secret mounts (Docker and Kubernetes: /run/secrets, the service-account token
/// under /var/run/secrets/kubernetes.io/serviceaccount), also under /run/host: a probe may test
/// that they exist, but their files are bearer tokens, so a bundle stores the directory and never
/// a file's bytes.
bool secret_mount(const std::string& abs);

/// Makes a bundle safe to post, file by file: secrets are never stored (the environment by
/// allow-list, URL credentials and secret-named variables masked, secret mounts empty), and unless
/// `--no-redact` the identities the shared Redactor (include/halo/redact.hpp) learnt are replaced
/// where each file's format holds them: the host name file, `/etc/passwd` and `/etc/group` field
/// by field, serial and UUID files and kfd `unique_id` lines by their pseudonyms in the
/// original's form, every other file and runtime fact by Redactor::in_file (identifiers,
/// machine-ids, command-line host names, home directories), so a replay parses what the
/// original held, and the pseudonyms are the ones the Markdown report of the machine uses.
class FileRedactor {
public:
  /// `identities`: the one learning step over the root and the facts (made with `identities =
  /// false` for `--no-redact`: secrets are masked either way); `env_allow`: env_allow_list().
  FileRedactor(Redactor& identities, std::vector<std::string> env_allow);

  /// First pass, over every stored file in path order: learns the secrets of the environment, and
  /// the identifiers, host names, machine-ids and home directories the shared step did not see,
  /// so the second pass can remove them wherever else they occur.
  void learn(const std::string& abs, const std::string& text);
  /// Second pass: the text of the file at target path `abs` as stored in the bundle.
  std::string apply(const std::string& abs, std::string text);
  /// Runtime facts: identifier values get pseudonyms, identities and learnt secrets are replaced
  /// in every string.
  void apply(FactSet& facts);
  /// What was redacted, one line each (the manifest's `redactions`).
  const std::vector<std::string>& notes() const { return notes_; }

private:
  std::string scrub(std::string text) const;
  std::string note_for(const std::string& abs) const;
  std::string user_or_self(const std::string& n) const;
  std::string colon_file(const std::string& abs, const std::string& text) const;
  /// /proc/self/environ as stored: a variable no probe declares keeps only its name
  /// (`NAME=<dropped>`); a kept one loses URL credentials (`scheme://<masked>@host`), and its
  /// value entirely when its name says it is a credential; with redaction on, user and host
  /// names as in a report (Redactor::operator()). An entry without `=` is not a variable.
  std::string environ(const std::string& text) const;
  std::string kfd_properties(const std::string& text);

  Redactor& ids_;
  std::vector<std::string> env_allow_;
  std::map<std::string, std::string> scrub_; ///< learnt secret -> replacement
  std::vector<std::string> notes_;
};

} // namespace halo::bundle_detail
