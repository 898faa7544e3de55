// SPDX-License-Identifier: MIT
// Probe: the firmware each AMD GPU runs, without root or debugfs, from amdgpu's sysfs:
//   /sys/class/drm/<card>/device/fw_version/<name>_fw_version  "0x%08x\n" (amdgpu_ucode.c
//       FW_VERSION_ATTR, 0444: vce, uvd, mc, me, pfp, ce, rlc, rlc_srlc/g/s, mec, mec2, imu, sos,
//       asd, ta_ras, ta_xgmi, smc, sdma, sdma2, vcn, dmcu, dmcub, mes, mes_kiq, ...; the set
//       depends on the kernel and the GPU, so every file of the directory is read). mes_fw_version
//       is mes.sched_version & AMDGPU_MES_VERSION_MASK, the number debugfs amdgpu_firmware_info
//       prints as "MES feature version: N, firmware version: 0x000000NN".
//   /sys/class/drm/<card>/device/vbios_version                 the VBIOS part number (text)
// A fleet expects every GPU of one product in a node to run the same firmware (AMD's cluster
// validation suite compares `amd-smi firmware` of every GPU against one table).
#include "gpus.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

#include <fmt/format.h>

#include <re2/re2.h>

namespace halo::probes {
namespace {

constexpr std::size_t kMaxFirmwareFiles = 64; // 26 names in amdgpu_ucode.c today

void collect_card(const ProbeContext& ctx, FactSet& facts, const std::string& card) {
  const std::string dev = "/sys/class/drm/" + card + "/device";
  const std::string dir = dev + "/fw_version";
  if (ctx.root.exists(dev + "/vbios_version"))
    put_text(facts, ctx.root, fact_keys::fw::vbios_version(card), dev + "/vbios_version");
  else
    facts.put_status(fact_keys::fw::vbios_version(card), Status::missing, dev + "/vbios_version",
                     "no vbios_version (an APU, or a kernel without it)");
  Status st = Status::ok;
  const auto names = ctx.root.list(dir, &st);
  if (!names) {
    facts.put_status(fact_keys::fw::names(card), st, dir,
                     st == Status::missing ? "no fw_version directory (kernel before 5.1)"
                                           : "cannot list " + dir);
    return;
  }
  static const RE2 name_re("([a-z0-9_]+)_fw_version");
  static const RE2 value_re("0x[0-9a-fA-F]{1,16}");
  std::vector<std::string> found;
  for (const auto& file : *names) {
    std::string name;
    if (!RE2::FullMatch(file, name_re, &name)) continue;
    if (found.size() >= kMaxFirmwareFiles) break;
    const ReadResult r = ctx.root.read_trimmed(fmt::format("{}/{}", dir, file));
    const std::string key = fact_keys::fw::key(card, name);
    if (!r.ok())
      facts.put_status(key, r.status, r.path, r.reason);
    else if (!RE2::FullMatch(r.text, value_re))
      facts.put_status(key, Status::error, r.path, "not a 0x%08x version: '" + r.text + "'");
    else
      facts.put_ok(key, r.text, r.path);
    found.push_back(name);
  }
  facts.put_ok(fact_keys::fw::names(card), found, dir);
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  // The AMD DRM cards the drm probe found (an input: it runs after the drm probe).
  for_each_amd_card(facts, [&](const std::string& card) { collect_card(ctx, facts, card); });
}

} // namespace

std::unique_ptr<Probe> make_gpu_firmware_probe() {
  return std::make_unique<BasicProbe>("gpu_firmware", collect);
}

} // namespace halo::probes
