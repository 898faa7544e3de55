// SPDX-License-Identifier: MIT
// The one redactor of every output meant to be shared: the capture bundle
// (src/core/bundle_redact.cpp applies it file by file) and the Markdown report (`check --format
// markdown`). One learning step, one set of pseudonyms: `user2` in a pasted report is the person
// `user2` is in the bundle of the same machine (docs/security.md guarantee 11).
#pragma once

#include <halo/fact.hpp>
#include <halo/root.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace halo {

struct Result;
struct ReportContext;

/// How an identifier is written, so its pseudonym is written the same way and the same GPU gets
/// the same pseudonym in every form (kfd `unique_id` decimal, amdgpu `unique_id` %016llx, ROCr's
/// `GPU-<hex>`).
enum class IdForm { decimal, hex, text };

/// What identifies the machine or its people, learnt once, and its pseudonyms.
///
/// The learning step (the constructor), in this order so that the same machine gives the same
/// numbers in every output:
/// 1. host names: `/proc/sys/kernel/hostname` and fact host.name become `redacted-host`; a
///    different name the kernel command line gives the host (`ip=<client-ip>:<server-ip>:<gw-ip>:
///    <netmask>:<hostname>:...`, the kernel's Documentation/admin-guide/nfs/nfsroot.rst; the last
///    component of `nfsroot=[<server-ip>:]<root-dir>`, which diskless setups name after the
///    client; `hostname=` and `systemd.hostname=`, systemd(1)) becomes `redacted-host-2`, ...;
///    read from `/proc/cmdline`, `/etc/kernel/cmdline`, the loader entries' `options` and every
///    string fact;
/// 2. user names: `/etc/passwd` entries with uid 1000..59999 (useradd's UID_MIN..UID_MAX
///    range), then, for users from LDAP/SSSD that no passwd file lists, `USER`, `LOGNAME`,
///    `SUDO_USER` and the last component of `HOME` in `/proc/self/environ`, the `/home/NAME` or
///    `/var/home/NAME` of `HOME`, `VIRTUAL_ENV` and `CONDA_PREFIX`, facts user.name and
///    env.sudo_user, and every `/home/NAME` in a string fact; `user1`, `user2`, ... in that order
///    (root is never learnt);
/// 3. serial numbers and UUIDs: DMI (drivers/firmware/dmi-id.c), NVMe `serial`
///    (drivers/nvme/host/sysfs.c), PCI/amdgpu `serial_number` and `unique_id`, kfd topology
///    `unique_id` lines, then facts whose key names a serial, uuid or unique_id, then ROCr's
///    `GPU-<hex>` (the agent UUID is "GPU-" and the 64-bit unique_id in hex, ROCr
///    amd_gpu_agent.cpp) in the environment and in string facts;
/// 4. the systemd machine-id (machine-id(5): "should be considered confidential"):
///    `/etc/machine-id`, the `<machine-id>-<version>.conf` names of Boot Loader Specification
///    entries (uapi-group.org/specifications/specs/boot_loader_specification) and their
///    `machine-id` key, `initrd=/<machine-id>/...` (systemd-boot, kernel-install(8)) on a command
///    line, in files and facts; it becomes 32 hex digits ending in its number, so a loader entry
///    keeps its form.
///
/// A redactor made with `identities = false` (`capture --no-redact`) learns nothing.
class Redactor {
public:
  /// Learns from `root` (nullptr: from the facts alone, as for `check --facts`) and `facts`.
  Redactor(const Root* root, const FactSet& facts, bool identities = true);

  /// Report text (Markdown): URL credentials masked (mask_url_credentials), identifiers and
  /// machine-ids replaced wherever they occur, host names in command-line parameters and as
  /// words, user names as words and as `/home/NAME` (a name inside another path component stays:
  /// `/dev/kfd` keeps its `dev` when a user is called dev).
  std::string operator()(std::string_view text) const;

  /// Text of a stored file or fact: identifiers, machine-ids, command-line host names and home
  /// directories replaced, nothing by word (so a replayed bundle parses as the original did).
  std::string in_file(std::string_view text) const;
  /// A stored path (a tar member, a manifest entry): machine-ids and home directories replaced.
  std::string path(std::string_view abs) const;

  /// The pseudonym of a learnt user name ("user1"); empty when the name was not learnt.
  std::string user(std::string_view name) const;
  /// The learnt user names.
  std::size_t user_count() const { return users_.size(); }
  /// Learns `name` as a user (plausible names only; root and known names are ignored).
  void learn_user(std::string_view name);
  /// Learns the NAME of every `/home/NAME` and `/var/home/NAME` in `text`.
  void learn_homes(std::string_view text);
  /// Learns host names, machine-ids and GPU UUIDs that `text` (a command line, a loader entry,
  /// any file) names.
  void learn_text(std::string_view text);

  /// The pseudonym of identifier `v`, learnt on first sight: `decimal` and `hex` values are one
  /// number (the same GPU in kfd's decimal and amdgpu's hex), written as N or N in hex with the
  /// original's width; UUID-shaped text as a UUID ending in N; other text as `redacted-serial-N`.
  /// A value that identifies nothing (redact_rules::identifies_nothing) is returned as it is.
  std::string identifier(const std::string& v, IdForm form);
  /// A fact value naming an identifier: ROCr's `GPU-<hex>` keeps its form, anything else is text.
  std::string identifier_value(const std::string& v);

  /// Whether identities are replaced at all.
  bool on() const { return on_; }

private:
  void learn_host(std::string_view name);
  void learn_machine_id(std::string_view id);
  void learn_root(const Root& root);
  void learn_facts(const FactSet& facts);
  std::string cmdline_hosts(std::string text) const;
  std::string identifiers(std::string text) const;
  std::string homes(std::string text) const;

  bool on_ = true;
  std::map<std::string, std::string, std::less<>> hosts_;       ///< name -> redacted-host[-N]
  std::map<std::string, std::string, std::less<>> users_;       ///< name -> userN
  std::map<std::string, std::size_t, std::less<>> ids_;         ///< identifier key -> N
  std::map<std::string, std::string, std::less<>> replace_;     ///< identifier text -> pseudonym
  std::map<std::string, std::string, std::less<>> machine_ids_; ///< machine-id -> pseudonym
};

/// The Markdown report (include/halo/report.hpp markdown_report) redacted by `redactor`: `check`
/// learns it from the root and the facts as `capture` does, so the report and a bundle of the same
/// machine use the same pseudonyms (src/report/markdown.cpp).
std::string markdown_report(const std::vector<Result>& results, const ReportContext& ctx,
                            const FactSet& facts, const Redactor& redactor);

} // namespace halo
