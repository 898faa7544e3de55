// SPDX-License-Identifier: MIT
// sysfs/procfs value parsers and the kernel command line: any bytes, no crash, no exception; and
// the report escapers always produce valid UTF-8 without control characters.
#include "fuzz_common.hpp"
#include "gpus/gfx.hpp"
#include "kernel_args/cmdline.hpp"
#include "probe_util.hpp"

#include <halo/sanitize.hpp>

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  const std::string_view in = fuzz::text(data, size);
  (void)probes::parse_cmdline(in);
  // The kernel's and kmod's readings of the command line and module option strings.
  (void)probes::split_kernel_args(in, false);
  (void)probes::cmdline_init_args(in);
  const auto kmod = probes::parse_kmod_cmdline(in);
  for (const auto& o : kmod.options)
    (void)probes::split_kernel_args(o.option, true);
  (void)probes::kmod_underscores(in);
  (void)probes::kstrtoull(in);
  (void)probes::kstrtoll(in);
  (void)probes::kstrtoint(in);
  (void)probes::parse_kernel_release(in);
  (void)probes::gfx_from_override(std::string(in));
  (void)probes::parse_int(in);
  (void)probes::parse_hex(in);
  (void)probes::parse_key_value_lines(in);
  // The escapers' contract: the result is valid UTF-8 (dump_json's strict check) and, for the
  // terminal, holds no C0 control character other than newline and tab.
  const std::string term = terminal_safe(in);
  for (char c : term)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') std::abort();
  (void)nlohmann::json(term).dump(); // throws (and so fails) on invalid UTF-8
  (void)nlohmann::json(xml_safe(in)).dump();
  (void)nlohmann::json(escape_invalid_utf8(in)).dump();
  (void)dump_json(nlohmann::json{{std::string(in), std::string(in)}});
  return 0;
}
