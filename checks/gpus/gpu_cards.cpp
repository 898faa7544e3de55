// SPDX-License-Identifier: MIT
// The facts of each GPU's DRM card under the GPU's own keys (`gpu.N.ras.*`, `gpu.N.pcie.*`,
// `gpu.N.xgmi.*`, `gpu.N.metrics.*`, its render node and MES firmware), and the comparisons
// across GPUs (firmware mismatch, the XGMI hive): a derivation (no files).
#include "derivation.hpp"
#include "gpus/gfx.hpp"
#include "gpus/gpus.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

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

/// gpu.N.ras.*: the RAS counters (checks/gpus/ras.cpp) of GPU N's DRM card.
void derive_ras_per_gpu(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = facts.get<std::string>(fmt::format("gpu.{}.card", i)).value_or("");
    alias_fields(facts, fmt::format("gpu.{}.ras", i), card.empty() ? std::string() : "ras." + card,
                 {"supported", "ue_count", "ce_count", "de_count", "ue_blocks", "bad_pages_retired",
                  "bad_pages_pending", "bad_pages_failed"},
                 "no amdgpu DRM card for this GPU, so no RAS counters");
  }
}

/// gpu.N.pcie.* and gpu.N.temp.*: the PCIe link and hwmon temperatures (checks/gpus/drm.cpp) of GPU
/// N's DRM card.
void derive_link_and_thermal_per_gpu(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = facts.get<std::string>(keys::gpu(i, "card")).value_or("");
    const std::string from = card.empty() ? std::string() : "drm." + card;
    alias_fields(facts, keys::gpu(i, "pcie"), card.empty() ? std::string() : from + ".pcie",
                 {"current_speed_gts", "max_speed_gts", "current_width", "max_width"},
                 "no amdgpu DRM card for this GPU, so no PCIe link facts");
    alias_fields(
        facts, keys::gpu(i, "temp"), card.empty() ? std::string() : from + ".temp",
        {"edge_mc", "edge_crit_mc", "junction_mc", "junction_crit_mc", "mem_mc", "mem_crit_mc"},
        "no amdgpu DRM card for this GPU, so no hwmon temperatures");
    alias_fields(facts, keys::gpu(i, "power"), card.empty() ? std::string() : from + ".power",
                 {"cap_uw", "cap_max_uw", "cap_default_uw", "now_uw"},
                 "no amdgpu DRM card for this GPU, so no hwmon power");
  }
}

/// XGMI per GPU (checks/gpus/xgmi.cpp) and for the host: xgmi.expected_members, the physical
/// MI300- and MI350-series GPUs here (an MI300X, MI325X or MI355X board joins its eight OAMs in one
/// hive), and xgmi.main_hive_id, the hive most of them are in.
void derive_xgmi(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  std::int64_t members = 0;
  std::map<std::string, std::int64_t> hives;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = facts.get<std::string>(keys::gpu(i, "card")).value_or("");
    alias_fields(facts, keys::gpu(i, "xgmi"), card.empty() ? std::string() : "xgmi." + card,
                 {"member", "hive_id", "hive_size", "far_peers", "physical_id"},
                 "no amdgpu DRM card for this GPU, so no XGMI facts");
    if (facts.get_int(keys::gpu(i, "partition_index")).value_or(0) != 0) continue;
    // MI300- and MI350-series boards alike join their eight OAMs in one fully connected hive (AMD's
    // system acceptance guides, docs/gpus/mi325x.md and mi355x.md: UBB 2.0, "fully-meshed Infinity
    // Fabric connectivity between accelerators").
    const auto series = facts.get<std::string>(keys::gpu(i, "instinct_series"));
    if (series == "MI300" || series == "MI350") ++members;
    if (auto h = facts.get<std::string>(keys::gpu(i, "xgmi.hive_id")); h && *h != "0") ++hives[*h];
  }
  facts.put_ok("xgmi.expected_members", members,
               "derived: physical MI300- and MI350-series GPUs (gpu.*.instinct_series)");
  if (hives.empty()) {
    facts.put_status("xgmi.main_hive_id", Status::missing, kDerived, "no GPU is in an XGMI hive");
    return;
  }
  const auto best = std::max_element(
      hives.begin(), hives.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  facts.put_ok("xgmi.main_hive_id", best->first, "derived: the hive most GPUs are in");
}

/// Firmware of the GPUs (checks/gpus/gpu_firmware.cpp) compared within each product (PCI device
/// id): gpu.firmware_mismatch lists each firmware whose version differs between GPUs of one product
/// ("mec (0x000080a5: GPU 2; 0x000080b1: GPUs 0, 1)"), gpu.firmware_compared the number of
/// GPUs of the largest product group whose firmware could be read. Partitions count once.
/// gpu.N.perf_level: the DPM performance level of GPU N's card; gpu.N.metrics.*: its gpu_metrics
/// table (checks/gpus/gpu_metrics.cpp).
void derive_gpu_firmware(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  std::map<std::int64_t, std::vector<std::int64_t>> by_product;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = facts.get<std::string>(keys::gpu(i, "card")).value_or("");
    alias(facts, keys::gpu(i, "perf_level"),
          card.empty() ? std::string() : "drm." + card + ".perf_level",
          "no power_dpm_force_performance_level for this GPU");
    alias_fields(facts, keys::gpu(i, "metrics"),
                 card.empty() ? std::string() : "gpu_metrics." + card,
                 {"version", "temperature_edge_c", "temperature_hotspot_c", "temperature_mem_c",
                  "socket_power_w", "throttle_power", "throttle_current", "throttle_thermal"},
                 "no amdgpu DRM card for this GPU, so no gpu_metrics");
    if (card.empty() || facts.get_int(keys::gpu(i, "partition_index")).value_or(0) != 0) continue;
    if (!facts.get<std::vector<std::string>>("fw." + card + ".names")) continue;
    if (auto id = facts.get_int(keys::gpu(i, "device_id"))) by_product[*id].push_back(i);
  }
  std::vector<std::string> mismatch;
  std::size_t compared = 0;
  for (const auto& [id, gpus] : by_product) {
    compared = std::max(compared, gpus.size());
    if (gpus.size() < 2) continue;
    std::set<std::string> names = {"vbios_version"};
    for (const auto i : gpus) {
      const std::string card = facts.get<std::string>(keys::gpu(i, "card")).value_or("");
      for (const auto& name : facts.get<std::vector<std::string>>("fw." + card + ".names")
                                  .value_or(std::vector<std::string>{}))
        names.insert(name);
    }
    for (const auto& name : names) {
      std::map<std::string, std::vector<std::int64_t>> by_value;
      for (const auto i : gpus) {
        const std::string card = facts.get<std::string>(keys::gpu(i, "card")).value_or("");
        const Fact* f = facts.find(fmt::format("fw.{}.{}", card, name));
        by_value[f == nullptr ? "absent"
                 : f->ok()    ? format_value(f->value)
                              : "unreadable"]
            .push_back(i);
      }
      if (by_value.size() < 2) continue;
      std::vector<std::string> parts;
      parts.reserve(by_value.size());
      for (const auto& [value, idx] : by_value)
        parts.push_back(fmt::format("{}: {}", value, gpu_list(idx)));
      mismatch.push_back(fmt::format("{} ({})", name, fmt::join(parts, "; ")));
    }
  }
  facts.put_ok("gpu.firmware_mismatch", mismatch,
               "derived: /sys/class/drm/card*/device/fw_version/*, vbios_version");
  facts.put_ok("gpu.firmware_compared", static_cast<std::int64_t>(compared),
               "derived: GPUs of one product whose fw_version/ could be read");
}

void derive_render_access(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  std::int64_t present = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string pre = fmt::format("gpu.{}.render", i);
    const auto minor = facts.get_int(fmt::format("gpu.{}.render_minor", i));
    const std::string found = minor ? member_with(facts, "access.render.*.path",
                                                  fmt::format("/dev/dri/renderD{}", *minor))
                                    : std::string();
    const std::string why =
        !minor ? "no render node is known for this GPU (no KFD drm_render_minor, no DRM card)"
        : found.empty() ? "the device access probe did not look at this GPU's render node"
                        : fmt::format("not recorded for /dev/dri/renderD{}", *minor);
    alias_fields(facts, pre, found, {"path", "exists", "rw", "gid", "group", "mode"}, why);
    if (facts.get<bool>(pre + ".exists") == true) ++present;
  }
  // How many GPUs' render nodes exist here: 0 in a container started without /dev/dri, fewer
  // than gpu.count where only some were passed in on purpose (--device=/dev/dri/renderD<N>).
  facts.put_ok("gpu.render_nodes_present", present, "derived: gpu.*.render.exists");
}

/// gpu.N.mes_fw_version{,_hex}, gpu.N.mes_feature_version: what libdrm_amdgpu read from the
/// device whose PCI bus id (drmGetDevices2) is GPU N's slot; libdrm's device order is its own.
void derive_libdrm_per_gpu(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto slot = facts.get<std::string>(fmt::format("gpu.{}.pci_slot", i));
    const std::string found = slot ? member_with(facts, "libdrm.dev.*.bus_id", *slot) : "";
    // Without a match, copy libdrm's own status (not probed, not installed) where it has one.
    const Fact* status = facts.find("libdrm.status");
    const std::string why =
        status != nullptr && !status->ok()
            ? status->reason
            : fmt::format("libdrm lists no device at {}", slot.value_or("an unknown PCI slot"));
    // Without libdrm's answer, the card's fw_version/mes_fw_version (sysfs, no root; the same
    // masked number: amdgpu_ucode.c FW_VERSION_ATTR(mes_fw_version, mes.sched_version &
    // AMDGPU_MES_VERSION_MASK)).
    const std::string card = facts.get<std::string>(keys::gpu(i, "card")).value_or("");
    const Fact* sysfs_mes = card.empty() ? nullptr : facts.find("fw." + card + ".mes");
    if ((found.empty() || !facts.get_int(found + ".mes_fw_version")) && sysfs_mes != nullptr &&
        sysfs_mes->ok()) {
      if (const auto v = parse_hex(format_value(sysfs_mes->value)); v && *v > 0) {
        facts.put_ok(keys::gpu(i, "mes_fw_version"), *v, sysfs_mes->source);
        facts.put_ok(keys::gpu(i, "mes_fw_version_hex"), fmt::format("0x{:08x}", *v),
                     sysfs_mes->source);
        facts.put_status(keys::gpu(i, "mes_feature_version"), Status::missing, sysfs_mes->source,
                         "sysfs gives the MES firmware version only");
        continue;
      }
    }
    for (const char* field : {"mes_fw_version", "mes_fw_version_hex", "mes_feature_version"}) {
      const std::string to = fmt::format("gpu.{}.{}", i, field);
      if (found.empty() && status != nullptr && !status->ok()) {
        Fact c = *status;
        c.key = to;
        c.value = {};
        facts.put(std::move(c));
      } else {
        alias(facts, to, found.empty() ? std::string() : found + "." + field, why);
      }
    }
  }
}

} // namespace

std::unique_ptr<Probe> make_gpu_cards_derivation() {
  return std::make_unique<BasicDerivation>("gpu_cards",
                                           [](const DeriveContext& /*ctx*/, FactSet& facts) {
                                             derive_ras_per_gpu(facts);
                                             derive_link_and_thermal_per_gpu(facts);
                                             derive_xgmi(facts);
                                             derive_gpu_firmware(facts);
                                             derive_render_access(facts);
                                             derive_libdrm_per_gpu(facts);
                                           });
}

} // namespace halo::probes
