// SPDX-License-Identifier: MIT
// The fix generator: the failing rules' structured fixes, merged into one plan, rendered as a
// bash script (or a Nix snippet on NixOS) for this machine's boot stack. Pure functions: the doctor
// never runs the script; a person reads it and runs it (docs/fix.md).
#pragma once

#include <halo/fact.hpp>
#include <halo/result.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo::fix {

/// The tool that owns the kernel command line (reference/doctor-conventions.md section 5.1).
enum class Stack {
  grubby,       ///< Fedora/RHEL GRUB2 + BLS: grubby --update-kernel=ALL
  grub_debian,  ///< Debian/Ubuntu GRUB: a drop-in in /etc/default/grub.d, then update-grub
  grub_arch,    ///< plain GRUB: a managed block in /etc/default/grub, then grub-mkconfig
  rpm_ostree,   ///< Fedora Atomic / Bazzite: rpm-ostree kargs
  kernelstub,   ///< Pop!_OS: kernelstub -a / -d
  systemd_boot, ///< /etc/kernel/cmdline, then kernel-install add per installed kernel
  nixos,        ///< a Nix snippet for configuration.nix instead of a script
};

/// The command-line spelling ("grub-debian", "rpm-ostree", "systemd-boot", ...).
std::string_view to_string(Stack s);
/// Parses the command-line spelling; std::nullopt for anything else.
std::optional<Stack> parse_stack(std::string_view s);
/// Every spelling, in the order of `--stack` help.
std::vector<std::string> stack_names();
/// The initramfs builder a stack's distributions use when detection found none: dracut,
/// update-initramfs, mkinitcpio, or "" (rpm-ostree and NixOS have their own).
std::string default_initramfs_tool(Stack s);

/// One modprobe.d file: `options MODULE k=v ...` in /etc/modprobe.d/FILE.
struct ModprobeFile {
  std::string file;
  std::string module;
  std::vector<std::pair<std::string, std::string>> options; ///< in the order first proposed
  std::vector<std::string> rules;                           ///< rule ids that asked for it
  /// When not empty: the user's file under /etc/modprobe.d that already sets these options
  /// (absolute path on the fixed system, e.g. /etc/modprobe.d/ttm.conf, what `amd-ttm --set`
  /// writes): the script edits its `options MODULE` line in place instead of writing `file`, so
  /// no second file competes with it (modprobe.d(5): every file applies, the last value read wins).
  std::string edit_path;
};

/// A step for a person (BIOS setup, kernel or firmware upgrade), with the rule that needs it.
struct ManualStep {
  std::string rule;
  std::string text;
};

/// The merged fix for every selected failing rule. Kernel argument keys are `module.param` (or a
/// plain name such as `iommu`); values are validated (no whitespace, quotes or shell characters).
struct Plan {
  std::vector<std::pair<std::string, std::string>> kargs_set; ///< key, value (first-proposed order)
  std::vector<std::string> kargs_remove;                      ///< keys to drop
  std::vector<ModprobeFile> modprobe;
  bool initramfs = false;
  std::vector<std::pair<std::string, std::string>> sysctl; ///< key, value
  std::vector<std::string> groups;                         ///< supplementary groups for the user
  std::vector<std::string> udev;                           ///< udev rule lines
  std::vector<std::string> env_unset;
  std::vector<std::pair<std::string, std::string>> env_set;
  bool reboot = false;
  std::vector<std::string> covered; ///< rules with at least one automated step
  /// rule id, its fix's one-line summary, for each covered rule (the script's "Why").
  std::vector<std::pair<std::string, std::string>> summaries;
  std::vector<ManualStep> manual; ///< steps for a person
  std::vector<std::string> notes; ///< decisions the merge made (conflicts resolved)
  std::map<std::string, std::vector<std::string>, std::less<>> step_rules; ///< step -> rule ids
};

/// Merges the `fix` objects of failing results (status fail, fix not null). When rules disagree on
/// a kernel argument or modprobe option value, the value of ttm-limit-low / ttm-limit-overcommit
/// wins (else the first proposal) and a note says so. Throws InputError for a value that is not a
/// safe kernel argument, module option, group name, udev line or variable name.
Plan merge_fixes(const std::vector<Result>& results);

/// Replaces every `<module>.pages_limit` / `<module>.page_pool_size` kernel argument and modprobe
/// option with `gib` x 262144 pages (4 KiB pages). When no failing rule proposed a TTM limit, adds
/// both on `ttm_module` (fact ttm.module: ttm | amdttm | amd_ttm). Checks `gib` > 0 and, when
/// `max_limit_bytes` (derived fact ttm.max_limit_bytes: MemTotal minus units::kTtmOsHeadroomBytes,
/// the bound ttm-limit-overcommit judges against) is known, `gib` GiB <= it; throws InputError
/// otherwise.
void apply_ttm_limit(Plan& plan, std::int64_t gib, std::optional<std::int64_t> max_limit_bytes,
                     const std::string& ttm_module);

/// What the renderer needs besides the plan.
struct ScriptOptions {
  Stack stack = Stack::grubby;
  std::string initramfs_tool; ///< dracut | update-initramfs | mkinitcpio ("" = stack default)
  std::string user;           ///< who gets the groups ("" or "root": no usermod step)
  std::string host;           ///< hostname, for the header
  std::string os;             ///< PRETTY_NAME, for the header
  std::string tool_version;   ///< halo-doctor version, for the header
  std::vector<std::string> evidence;     ///< how the stack was chosen, for the header
  std::vector<std::string> grub_d_files; ///< existing drop-ins (later ones are warned about)
  /// NixOS: configuration lines that define module kernel arguments, "PATH:LINE: TEXT" (fact
  /// boot.nixos_kernel_param_lines); the snippet names those its values replace.
  std::vector<std::string> nixos_param_lines;
  /// What binds the script to the machine it was written for (docs/fix.md, "Only for this
  /// machine"): floor(MemTotal / GiB), the RAM the TTM limit was sized from (0: unknown, not
  /// checked), and machine_tag(/etc/machine-id) ("": none, not checked).
  std::int64_t mem_gib = 0;
  std::string machine_tag;
};

/// The first 16 hex digits of SHA-256("halo-doctor fix:" + the machine-id's first line): names
/// the machine in a script without writing its machine-id, which machine-id(5) asks to keep
/// confidential (the way sd_id128_get_machine_app_specific derives an id per application). The
/// script recomputes it with `sha256sum` from the same text.
std::string machine_tag(std::string_view machine_id);

/// The file the GRUB drop-in (grub-debian) is written to, under /etc/default/grub.d.
inline constexpr std::string_view kGrubDropIn = "90-halo-doctor.cfg";

/// Renders the plan as a bash script (every stack but nixos): set -euo pipefail, a header per
/// step, refuses non-root, `--dry-run`, idempotent, backs files up, paths under ${HALO_FIX_ROOT}.
std::string render_script(const Plan& plan, const ScriptOptions& opt);

/// Renders the plan as a NixOS configuration snippet (boot.kernelParams with lib.mkAfter,
/// boot.extraModprobeConfig, users.users.NAME.extraGroups, services.udev.extraRules,
/// boot.kernel.sysctl), naming the configuration lines whose arguments it replaces.
std::string render_nix(const Plan& plan, const ScriptOptions& opt);

/// Quotes a string as one bash word: single quotes ('a'\''b') when it holds only valid UTF-8
/// text and newlines, else bash's ANSI-C quoting $'...' with every control character, byte
/// that is not UTF-8 and bidirectional formatting character as \xNN (bash manual, "Quoting"), so
/// a script never carries a raw control byte (issue 32). The word's value is `s` either way.
std::string shell_quote(std::string_view s);

/// shell_quote for a word that must stay on its line (an array element, a value inside a file
/// the script writes): a newline, too, makes it $'...' with \n.
std::string shell_word(std::string_view s);

/// A user name the fix may pass to usermod or name in a Nix attribute: shadow-utils' default
/// NAME_REGEX for useradd(8), `[a-z_][a-z0-9_-]*[$]?`, at most 32 characters. A name from a fact
/// (SUDO_USER, the user table of a bundle) that is not one is never written into a script.
bool valid_user_name(std::string_view name);

} // namespace halo::fix
