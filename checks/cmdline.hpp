// Parsing /proc/cmdline the way the kernel does (kernel/params.c: next_arg, parameq).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo::probes {

/// One kernel argument. `name` is normalised as the kernel compares names: '-' and '_' are the
/// same (`amd-ttm.pages_limit` == `amd_ttm.pages_limit`). `value` is std::nullopt for a flag
/// (`nomodeset`); surrounding double quotes are removed as next_arg() does.
struct KernelArg {
  std::string raw_name;
  std::string name;
  std::optional<std::string> value;
};

/// Splits a command line into arguments. Spaces inside double quotes do not split; the
/// arguments after a bare `--` belong to init and are not returned.
std::vector<KernelArg> parse_cmdline(std::string_view cmdline);

/// Kernel and Ubuntu-style release parts: "6.14.0-1018-oem" -> version "6.14.0", abi 1018,
/// flavor "oem"; "6.17.4-200.fc42.x86_64" -> version "6.17.4", no abi.
struct KernelRelease {
  std::string version;
  std::optional<long long> ubuntu_abi;
  std::string ubuntu_flavor;
};

/// Parses /proc/sys/kernel/osrelease text; std::nullopt if it does not start with N.N.
std::optional<KernelRelease> parse_kernel_release(std::string_view release);

} // namespace halo::probes
