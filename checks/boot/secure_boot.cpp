// SPDX-License-Identifier: MIT
// Probe: Secure Boot and kernel lockdown, which decide whether an unsigned module (amdgpu-dkms
// without an enrolled MOK) may load.
//   /sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c: the UEFI global
//     variable (UEFI spec 3.3): 4 bytes of attributes, then 1 byte, 1 = enabled (efivarfs(5)).
//   /sys/kernel/security/lockdown: "[none] integrity confidentiality", the active mode in
//     brackets (security/lockdown/lockdown.c).
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

namespace halo::probes {
namespace {

constexpr const char* kSecureBootVar =
    "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";

void collect(const ProbeContext& ctx, FactSet& facts) {
  if (ReadResult r = ctx.root.read(kSecureBootVar, 64); r.ok()) {
    if (r.text.size() == 5)
      facts.put_ok(std::string(fact_keys::boot::secure_boot), r.text[4] == 1, r.path);
    else
      facts.put_status(std::string(fact_keys::boot::secure_boot), Status::error, r.path,
                       "not 4 attribute bytes and 1 value byte");
  } else if (r.status == Status::missing && !ctx.root.exists("/sys/firmware/efi")) {
    facts.put_ok(std::string(fact_keys::boot::secure_boot), false,
                 "/sys/firmware/efi (absent: legacy BIOS boot)");
  } else {
    facts.put_status(std::string(fact_keys::boot::secure_boot), r.status, r.path, r.reason);
  }
  if (ReadResult l = ctx.root.read_trimmed("/sys/kernel/security/lockdown"); l.ok()) {
    const auto open = l.text.find('[');
    const auto close = l.text.find(']', open == std::string::npos ? 0 : open);
    if (open != std::string::npos && close != std::string::npos)
      facts.put_ok(std::string(fact_keys::boot::lockdown),
                   l.text.substr(open + 1, close - open - 1), l.path);
    else
      facts.put_status(std::string(fact_keys::boot::lockdown), Status::error, l.path,
                       "no [active] mode");
  } else {
    facts.put_status(std::string(fact_keys::boot::lockdown), l.status, l.path, l.reason);
  }
}

} // namespace

std::unique_ptr<Probe> make_secure_boot_probe() {
  return std::make_unique<BasicProbe>("secure_boot", collect);
}

} // namespace halo::probes
