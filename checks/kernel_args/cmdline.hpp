// SPDX-License-Identifier: MIT
// Parsing the kernel command line and module option strings the way the kernel and kmod do.
// Kernel side: kernel/params.c (parse_args, next_arg, parameq), lib/kstrtox.c, lib/ctype.c.
// kmod side: libkmod/libkmod-config.c (kmod_config_parse_kcmdline, kcmdline_parse_result).
// ../shared/reference/parsing-facts.md has the facts, checked against both sources.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo::probes {

/// One kernel argument. `name` is normalised as the kernel compares names (parameq): '-' and
/// '_' are the same (`amd-ttm.pages_limit` == `amd_ttm.pages_limit`). `value` is std::nullopt
/// for a flag (`nomodeset`); surrounding double quotes are removed as next_arg() does.
struct KernelArg {
  std::string raw_name;
  std::string name;
  std::optional<std::string> value;
  std::size_t offset = 0; ///< byte offset of the argument in the parsed string
};

/// The kernel's isspace() (lib/ctype.c): space, \t, \n, \v, \f, \r and also byte 0xA0, which
/// the kernel's Latin-1 table marks as a space. kmod does not count 0xA0.
bool kernel_isspace(unsigned char c);

/// Splits an argument string as parse_args()/next_arg() in kernel/params.c do. With
/// `stop_at_dashes`, a bare `--` ends the arguments (the rest goes to init on the boot command
/// line, and is ignored in a module's option string); `rest` then receives the text after it.
std::vector<KernelArg> split_kernel_args(std::string_view s, bool stop_at_dashes = true,
                                         std::string* rest = nullptr);

/// The boot command line as the kernel itself parses it (built-in code and core parameters):
/// split_kernel_args(cmdline) up to a bare `--`.
std::vector<KernelArg> parse_cmdline(std::string_view cmdline);

/// The words after a bare `--`: init's arguments (init/main.c), split as the kernel does.
std::vector<std::string> cmdline_init_args(std::string_view cmdline);

/// One option kmod takes from /proc/cmdline for a loadable module, as
/// kmod_config_parse_kcmdline() produces it: `module` with '-' turned to '_' (underscores()),
/// `option` the text after `module.` (`pages_limit=31457280`), re-quoted when the whole token
/// was quoted. kmod reads the whole line: it has no `--` rule, so options after `--` count.
struct KmodCmdlineOption {
  std::string module;
  std::string option;
};

/// kmod's reading of /proc/cmdline: module options and `modprobe.blacklist=` names (every
/// occurrence, the value split on commas, names taken verbatim). kmod reads at most 4095 bytes
/// (KCMD_LINE_SIZE 4096 in libkmod-internal.h); `truncated` says the line was longer.
struct KmodCmdline {
  std::vector<KmodCmdlineOption> options;
  std::vector<std::string> blacklist;
  bool truncated = false;
};
KmodCmdline parse_kmod_cmdline(std::string_view cmdline);

/// kmod's underscores() (shared/util.c): '-' becomes '_' outside [...] groups; an unbalanced
/// ']' or '[' makes the name invalid (std::nullopt).
std::optional<std::string> kmod_underscores(std::string_view name);

/// The kernel's kstrtoull(s, 0) (lib/kstrtox.c): optional '+', base from the prefix ("0x" with
/// a hex digit after it is 16, a leading "0" is 8, else 10), at least one digit, one trailing
/// '\n' allowed, nothing else; std::nullopt for anything the kernel rejects (-EINVAL, -ERANGE).
std::optional<std::uint64_t> kstrtoull(std::string_view s);

/// kstrtoll(s, 0): a '-' sign then kstrtoull's digits, range-checked to int64.
std::optional<std::int64_t> kstrtoll(std::string_view s);

/// kstrtoint(s, 0): kstrtoll range-checked to int32 (module_param type `int`).
std::optional<std::int32_t> kstrtoint(std::string_view s);

/// Kernel and Ubuntu-style release parts: "6.14.0-1018-oem" -> version "6.14.0", abi 1018,
/// flavor "oem"; "6.17.4-200.fc42.x86_64" -> version "6.17.4", no abi; an Ubuntu mainline
/// build "6.17.5-061705-generic" -> version "6.17.5", no abi (it has no Ubuntu patches).
struct KernelRelease {
  std::string version;
  std::optional<long long> ubuntu_abi;
  std::string ubuntu_flavor;
};

/// Parses /proc/sys/kernel/osrelease text; std::nullopt if it does not start with N.N.
std::optional<KernelRelease> parse_kernel_release(std::string_view release);

} // namespace halo::probes
