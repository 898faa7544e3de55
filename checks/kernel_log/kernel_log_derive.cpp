// SPDX-License-Identifier: MIT
// What the amdgpu probe errors in the kernel log mean, and which failed firmware files are on disk
// now: a derivation (no files).
#include "derivation.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace halo::probes {
namespace {

/// The firmware files that failed to load at boot, split by whether the kernel would find them
/// now (kernel_log.firmware_on_disk, the kernel's firmware search path): present now means
/// installed after the boot, or on disk but not in the initramfs amdgpu loaded from; missing now
/// means the distribution's firmware package lacks them. Both keep the log's status when it
/// could not be read.
void derive_firmware_now(FactSet& facts) {
  const Fact* failed = facts.find(fact_keys::kernel_log::firmware_load_failures);
  const Fact* disk = facts.find(fact_keys::kernel_log::firmware_on_disk);
  const std::string_view present_key = fact_keys::kernel_log::firmware_present_now;
  const std::string_view missing_key = fact_keys::kernel_log::firmware_missing_now;
  for (const Fact* f : {failed, disk}) {
    if (f == nullptr || !f->ok()) {
      const Status st = f == nullptr ? Status::missing : f->status;
      const std::string why = f == nullptr ? "not collected" : f->reason;
      const std::string src = f == nullptr ? "derived" : f->source;
      facts.put_status(std::string(present_key), st, src, why);
      facts.put_status(std::string(missing_key), st, src, why);
      return;
    }
  }
  const auto found = std::get<std::vector<std::string>>(disk->value);
  std::vector<std::string> present;
  std::vector<std::string> missing;
  for (const auto& e : std::get<std::vector<std::string>>(failed->value)) {
    const std::string name = e.substr(0, e.rfind(": "));
    const bool there = std::any_of(found.begin(), found.end(), [&](const std::string& d) {
      return d.starts_with(name + ": ");
    });
    (there ? present : missing).push_back(name);
  }
  const std::string src = "derived: kernel_log.firmware_load_failures, kernel_log.firmware_on_disk";
  facts.put_ok(std::string(present_key), present, src);
  facts.put_ok(std::string(missing_key), missing, src);
}

/// The documented cause of each amdgpu probe failure in the kernel log, by error code.
/// -22 (EINVAL): amdgpu's IP discovery names blocks this kernel does not know (a kernel older
/// than the GPU; AMD's minimum kernels per family). -12 (ENOMEM): the VRAM BAR could not be
/// mapped: Above 4G Decoding / Resizable BAR off or CSM on (ROCm issue 2927). -110
/// (ETIMEDOUT): the GPU or its SMU did not answer during init. -2 (ENOENT): a firmware file is
/// missing (see kernel_log.firmware_load_failures). -19 (ENODEV): amdgpu declined the device.
std::string firmware_cause(const FactSet& facts) {
  const auto missing =
      facts.get<std::vector<std::string>>(fact_keys::kernel_log::firmware_missing_now);
  const auto present =
      facts.get<std::vector<std::string>>(fact_keys::kernel_log::firmware_present_now);
  if (missing && !missing->empty())
    return fmt::format("firmware still missing: {}: install the distribution's linux-firmware "
                       "(amdgpu firmware), rebuild the initramfs and reboot",
                       fmt::join(*missing, ", "));
  if (present && !present->empty())
    return fmt::format("firmware installed since boot: {} is on disk now but did not load: "
                       "rebuild the initramfs (update-initramfs -u, or dracut -f) and reboot",
                       fmt::join(*present, ", "));
  return "a firmware file is missing (see kernel_log.firmware_load_failures): install the "
         "distribution's linux-firmware and rebuild the initramfs";
}

void derive_probe_causes(FactSet& facts) {
  const Fact* f = facts.find(fact_keys::kernel_log::amdgpu_probe_errors);
  if (f == nullptr || !f->ok()) {
    if (f != nullptr) {
      Fact c = *f;
      c.key = fact_keys::kernel_log::amdgpu_probe_causes;
      facts.put(std::move(c));
    }
    return;
  }
  std::vector<std::string> out;
  for (const auto& e : std::get<std::vector<std::string>>(f->value)) {
    const auto colon = e.rfind(": ");
    const std::string code = colon == std::string::npos ? "" : e.substr(colon + 2);
    std::string why;
    if (code == "-22")
      why = "the kernel does not know this GPU's IP blocks: it is older than the GPU (see the "
            "kernel minimum rules)";
    else if (code == "-12")
      why = "the GPU's memory BAR could not be mapped: enable Above 4G Decoding and Resizable BAR "
            "and disable CSM in the firmware setup (ROCm issue 2927)";
    else if (code == "-110")
      why = "the GPU did not answer during initialisation (firmware or SMU timeout): update "
            "linux-firmware and the kernel, check power and the slot";
    else if (code == "-2")
      why = firmware_cause(facts);
    else if (code == "-19")
      why = "amdgpu declined the device (not supported by this driver build)";
    else
      why = "see the kernel log around this message";
    out.push_back(fmt::format("{} ({})", e, why));
  }
  facts.put_ok(std::string(fact_keys::kernel_log::amdgpu_probe_causes), out, f->source);
}

} // namespace

std::unique_ptr<Probe> make_kernel_log_derivation() {
  return std::make_unique<BasicDerivation>("kernel_log_causes",
                                           [](const DeriveContext& /*ctx*/, FactSet& facts) {
                                             derive_firmware_now(facts);
                                             derive_probe_causes(facts);
                                           });
}

} // namespace halo::probes
