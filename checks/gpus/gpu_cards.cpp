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

namespace gpu_keys = fact_keys::gpu;

/// The card GPU N is on (gpu.N.card), empty when it has none.
std::string card_of(const FactSet& facts, std::int64_t i) {
  return facts.get<std::string>(gpu_keys::card(i)).value_or("");
}

/// gpu.N.ras.*: the RAS counters (checks/gpus/ras.cpp) of GPU N's DRM card.
void derive_ras_per_gpu(FactSet& facts) {
  namespace ras = fact_keys::ras;
  const std::int64_t n = bounded_gpu_count(facts);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = card_of(facts, i);
    alias_each(facts, !card.empty(),
               {{gpu_keys::ras_supported(i), ras::supported(card)},
                {gpu_keys::ras_ue_count(i), ras::ue_count(card)},
                {gpu_keys::ras_ce_count(i), ras::ce_count(card)},
                {gpu_keys::ras_de_count(i), ras::de_count(card)},
                {gpu_keys::ras_ue_blocks(i), ras::ue_blocks(card)},
                {gpu_keys::ras_bad_pages_retired(i), ras::bad_pages_retired(card)},
                {gpu_keys::ras_bad_pages_pending(i), ras::bad_pages_pending(card)},
                {gpu_keys::ras_bad_pages_failed(i), ras::bad_pages_failed(card)}},
               "no amdgpu DRM card for this GPU, so no RAS counters");
  }
}

/// gpu.N.pcie.* and gpu.N.temp.*: the PCIe link and hwmon temperatures (checks/gpus/drm.cpp) of GPU
/// N's DRM card.
void derive_link_and_thermal_per_gpu(FactSet& facts) {
  namespace drm = fact_keys::drm;
  const std::int64_t n = bounded_gpu_count(facts);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = card_of(facts, i);
    alias_each(facts, !card.empty(),
               {{gpu_keys::pcie_current_speed_gts(i), drm::pcie_current_speed_gts(card)},
                {gpu_keys::pcie_max_speed_gts(i), drm::pcie_max_speed_gts(card)},
                {gpu_keys::pcie_current_width(i), drm::pcie_current_width(card)},
                {gpu_keys::pcie_max_width(i), drm::pcie_max_width(card)}},
               "no amdgpu DRM card for this GPU, so no PCIe link facts");
    alias_each(facts, !card.empty(),
               {{gpu_keys::temp_edge_mc(i), drm::temp_edge_mc(card)},
                {gpu_keys::temp_edge_crit_mc(i), drm::temp_edge_crit_mc(card)},
                {gpu_keys::temp_junction_mc(i), drm::temp_junction_mc(card)},
                {gpu_keys::temp_junction_crit_mc(i), drm::temp_junction_crit_mc(card)},
                {gpu_keys::temp_mem_mc(i), drm::temp_mem_mc(card)},
                {gpu_keys::temp_mem_crit_mc(i), drm::temp_mem_crit_mc(card)}},
               "no amdgpu DRM card for this GPU, so no hwmon temperatures");
    alias_each(facts, !card.empty(),
               {{gpu_keys::power_cap_uw(i), drm::power_cap_uw(card)},
                {gpu_keys::power_cap_max_uw(i), drm::power_cap_max_uw(card)},
                {gpu_keys::power_cap_default_uw(i), drm::power_cap_default_uw(card)},
                {gpu_keys::power_now_uw(i), drm::power_now_uw(card)}},
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
    const std::string card = card_of(facts, i);
    alias_each(facts, !card.empty(),
               {{gpu_keys::xgmi_member(i), fact_keys::xgmi::member(card)},
                {gpu_keys::xgmi_hive_id(i), fact_keys::xgmi::hive_id(card)},
                {gpu_keys::xgmi_hive_size(i), fact_keys::xgmi::hive_size(card)},
                {gpu_keys::xgmi_far_peers(i), fact_keys::xgmi::far_peers(card)},
                {gpu_keys::xgmi_physical_id(i), fact_keys::xgmi::physical_id(card)}},
               "no amdgpu DRM card for this GPU, so no XGMI facts");
    if (facts.get_int(gpu_keys::partition_index(i)).value_or(0) != 0) continue;
    // MI300- and MI350-series boards alike join their eight OAMs in one fully connected hive (AMD's
    // system acceptance guides, docs/gpus/mi325x.md and mi355x.md: UBB 2.0, "fully-meshed Infinity
    // Fabric connectivity between accelerators").
    const auto series = facts.get<std::string>(gpu_keys::instinct_series(i));
    if (series == "MI300" || series == "MI350") ++members;
    if (auto h = facts.get<std::string>(gpu_keys::xgmi_hive_id(i)); h && *h != "0") ++hives[*h];
  }
  facts.put_ok(std::string(fact_keys::xgmi::expected_members), members,
               fmt::format("derived: physical MI300- and MI350-series GPUs ({})",
                           gpu_keys::instinct_series("*")));
  if (hives.empty()) {
    facts.put_status(std::string(fact_keys::xgmi::main_hive_id), Status::missing, kDerived,
                     "no GPU is in an XGMI hive");
    return;
  }
  const auto best = std::max_element(
      hives.begin(), hives.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  facts.put_ok(std::string(fact_keys::xgmi::main_hive_id), best->first,
               "derived: the hive most GPUs are in");
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
    namespace gm = fact_keys::gpu_metrics;
    const std::string card = card_of(facts, i);
    alias_each(facts, !card.empty(), {{gpu_keys::perf_level(i), fact_keys::drm::perf_level(card)}},
               "no power_dpm_force_performance_level for this GPU");
    alias_each(facts, !card.empty(),
               {{gpu_keys::metrics_version(i), gm::version(card)},
                {gpu_keys::metrics_temperature_edge_c(i), gm::temperature_edge_c(card)},
                {gpu_keys::metrics_temperature_hotspot_c(i), gm::temperature_hotspot_c(card)},
                {gpu_keys::metrics_temperature_mem_c(i), gm::temperature_mem_c(card)},
                {gpu_keys::metrics_socket_power_w(i), gm::socket_power_w(card)},
                {gpu_keys::metrics_throttle_power(i), gm::throttle_power(card)},
                {gpu_keys::metrics_throttle_current(i), gm::throttle_current(card)},
                {gpu_keys::metrics_throttle_thermal(i), gm::throttle_thermal(card)}},
               "no amdgpu DRM card for this GPU, so no gpu_metrics");
    if (card.empty() || facts.get_int(gpu_keys::partition_index(i)).value_or(0) != 0) continue;
    if (!facts.get<std::vector<std::string>>(fact_keys::fw::names(card))) continue;
    if (auto id = facts.get_int(gpu_keys::device_id(i))) by_product[*id].push_back(i);
  }
  std::vector<std::string> mismatch;
  std::size_t compared = 0;
  for (const auto& [id, gpus] : by_product) {
    compared = std::max(compared, gpus.size());
    if (gpus.size() < 2) continue;
    // The firmware names of fw.CARD.names, and the VBIOS (fw.CARD.vbios_version).
    std::set<std::string> names = {"vbios_version"};
    for (const auto i : gpus) {
      const std::string card = card_of(facts, i);
      for (const auto& name : facts.get<std::vector<std::string>>(fact_keys::fw::names(card))
                                  .value_or(std::vector<std::string>{}))
        names.insert(name);
    }
    for (const auto& name : names) {
      std::map<std::string, std::vector<std::int64_t>> by_value;
      for (const auto i : gpus) {
        const Fact* f = facts.find(fact_keys::fw::key(card_of(facts, i), name));
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
  facts.put_ok(std::string(gpu_keys::firmware_mismatch), mismatch,
               "derived: /sys/class/drm/card*/device/fw_version/*, vbios_version");
  facts.put_ok(std::string(gpu_keys::firmware_compared), static_cast<std::int64_t>(compared),
               "derived: GPUs of one product whose fw_version/ could be read");
}

void derive_render_access(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  std::int64_t present = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    namespace access = fact_keys::access;
    const auto minor = facts.get_int(gpu_keys::render_minor(i));
    const auto found = minor ? member_with(facts, access::render_path("*"),
                                           fmt::format("/dev/dri/renderD{}", *minor))
                             : std::nullopt;
    const std::string why =
        !minor   ? "no render node is known for this GPU (no KFD drm_render_minor, no DRM card)"
        : !found ? "the device access probe did not look at this GPU's render node"
                 : fmt::format("not recorded for /dev/dri/renderD{}", *minor);
    const std::string m = found.value_or("");
    alias_each(facts, found.has_value(),
               {{gpu_keys::render_path(i), access::render_path(m)},
                {gpu_keys::render_exists(i), access::render_exists(m)},
                {gpu_keys::render_rw(i), access::render_rw(m)},
                {gpu_keys::render_gid(i), access::render_gid(m)},
                {gpu_keys::render_group(i), access::render_group(m)},
                {gpu_keys::render_mode(i), access::render_mode(m)}},
               why);
    if (facts.get<bool>(gpu_keys::render_exists(i)) == true) ++present;
  }
  // How many GPUs' render nodes exist here: 0 in a container started without /dev/dri, fewer
  // than gpu.count where only some were passed in on purpose (--device=/dev/dri/renderD<N>).
  facts.put_ok(std::string(gpu_keys::render_nodes_present), present,
               fmt::format("derived: {}", gpu_keys::render_exists("*")));
}

/// gpu.N.mes_fw_version{,_hex}, gpu.N.mes_feature_version: what libdrm_amdgpu read from the
/// device whose PCI bus id (drmGetDevices2) is GPU N's slot; libdrm's device order is its own.
void derive_libdrm_per_gpu(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  for (std::int64_t i = 0; i < n; ++i) {
    namespace libdrm = fact_keys::libdrm;
    const auto slot = facts.get<std::string>(gpu_keys::pci_slot(i));
    const auto found = slot ? member_with(facts, libdrm::dev_bus_id("*"), *slot) : std::nullopt;
    // Without a match, copy libdrm's own status (not probed, not installed) where it has one.
    const Fact* status = facts.find(libdrm::status);
    const std::string why =
        status != nullptr && !status->ok()
            ? status->reason
            : fmt::format("libdrm lists no device at {}", slot.value_or("an unknown PCI slot"));
    // Without libdrm's answer, the card's fw_version/mes_fw_version (sysfs, no root; the same
    // masked number: amdgpu_ucode.c FW_VERSION_ATTR(mes_fw_version, mes.sched_version &
    // AMDGPU_MES_VERSION_MASK)).
    const std::string card = card_of(facts, i);
    // fw.CARD.mes: the firmware amdgpu names "mes" (its file mes_fw_version).
    const Fact* sysfs_mes = card.empty() ? nullptr : facts.find(fact_keys::fw::key(card, "mes"));
    if ((!found || !facts.get_int(libdrm::dev_mes_fw_version(*found))) && sysfs_mes != nullptr &&
        sysfs_mes->ok()) {
      if (const auto v = parse_hex(format_value(sysfs_mes->value)); v && *v > 0) {
        facts.put_ok(gpu_keys::mes_fw_version(i), *v, sysfs_mes->source);
        facts.put_ok(gpu_keys::mes_fw_version_hex(i), fmt::format("0x{:08x}", *v),
                     sysfs_mes->source);
        facts.put_status(gpu_keys::mes_feature_version(i), Status::missing, sysfs_mes->source,
                         "sysfs gives the MES firmware version only");
        continue;
      }
    }
    const std::string m = found.value_or("");
    for (const auto& [to, from] :
         {std::pair{gpu_keys::mes_fw_version(i), libdrm::dev_mes_fw_version(m)},
          std::pair{gpu_keys::mes_fw_version_hex(i), libdrm::dev_mes_fw_version_hex(m)},
          std::pair{gpu_keys::mes_feature_version(i), libdrm::dev_mes_feature_version(m)}}) {
      if (!found && status != nullptr && !status->ok()) {
        Fact c = *status;
        c.key = to;
        c.value = {};
        facts.put(std::move(c));
      } else {
        alias(facts, to, found ? from : std::string(), why);
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
