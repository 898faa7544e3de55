// SPDX-License-Identifier: MIT
// Probe: amdgpu's DRM view of each AMD card. Reads /sys/class/drm/cardN/device/{vendor,device,
// uevent,driver,mem_info_vram_total,mem_info_vis_vram_total,mem_info_gtt_total,
// mem_info_vram_used,mem_info_gtt_used,current_compute_partition,current_memory_partition,
// uma/carveout} and the render node under device/drm/. mem_info_* are bytes (amdgpu_vram_mgr.c,
// amdgpu_gtt_mgr.c). On an APU, vram_total is the BIOS carve-out.
// Also the PCIe link of the GPU's PCI function (current_/max_link_speed and _width, PCI sysfs since
// v4.13, commit 56c1af46: "8.0 GT/s PCIe", "32.0 GT/s PCIe", "Unknown") and the hwmon temperatures
// amdgpu exposes (Documentation/gpu/amdgpu/thermal.rst: temp[1-3]_input and temp[1-3]_crit in
// millidegrees Celsius, temp[1-3]_label edge, junction, mem).
#include "gpus.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

#include <fmt/format.h>

#include <re2/re2.h>

#include <charconv>

namespace halo::probes {
namespace {

/// The PCIe link of the card's PCI function: speeds in GT/s (the leading number of
/// "32.0 GT/s PCIe"), widths in lanes. "Unknown" (a link the kernel cannot decode) is an error.
void collect_pcie_link(const Root& root, const std::string& dev, const std::string& card,
                       FactSet& facts) {
  static const RE2 speed_re(R"(([0-9]+(?:\.[0-9]+)?) GT/s(?: PCIe)?)");
  struct Link {
    const char* which;
    std::string speed_key;
    std::string width_key;
  };
  for (const Link& link : {Link{"current", fact_keys::drm::pcie_current_speed_gts(card),
                                fact_keys::drm::pcie_current_width(card)},
                           Link{"max", fact_keys::drm::pcie_max_speed_gts(card),
                                fact_keys::drm::pcie_max_width(card)}}) {
    const char* which = link.which;
    const std::string speed_path = fmt::format("{}/{}_link_speed", dev, which);
    const std::string& key = link.speed_key;
    ReadResult r = root.read_trimmed(speed_path);
    std::string num;
    double gts = 0;
    if (!r.ok())
      facts.put_status(key, r.status, r.path, r.reason);
    else if (!RE2::FullMatch(r.text, speed_re, &num) || num.size() > 8 ||
             std::from_chars(num.data(), num.data() + num.size(), gts).ec != std::errc())
      facts.put_status(key, Status::error, r.path, "not 'N GT/s PCIe': '" + r.text + "'");
    else
      facts.put_ok(key, gts, r.path);
    put_int(facts, root, link.width_key, fmt::format("{}/{}_link_width", dev, which));
  }
}

/// The card's hwmon temperatures by label (edge, junction, mem), current and critical.
void collect_temperatures(const Root& root, const std::string& dev, const std::string& card,
                          FactSet& facts) {
  static const RE2 hwmon_re("hwmon[0-9]+");
  std::string hw;
  if (auto names = root.list(dev + "/hwmon"))
    for (const auto& n : *names)
      if (RE2::FullMatch(n, hwmon_re)) {
        hw = fmt::format("{}/hwmon/{}", dev, n);
        break;
      }
  if (hw.empty()) return; // no hwmon: no temperature facts (absent, not an error)
  for (int i = 1; i <= 3; ++i) {
    ReadResult label = root.read_trimmed(fmt::format("{}/temp{}_label", hw, i));
    if (!label.ok()) continue;
    const std::string& l = label.text;
    std::string key;
    std::string crit_key;
    if (l == "edge") {
      key = fact_keys::drm::temp_edge_mc(card);
      crit_key = fact_keys::drm::temp_edge_crit_mc(card);
    } else if (l == "junction") {
      key = fact_keys::drm::temp_junction_mc(card);
      crit_key = fact_keys::drm::temp_junction_crit_mc(card);
    } else if (l == "mem") {
      key = fact_keys::drm::temp_mem_mc(card);
      crit_key = fact_keys::drm::temp_mem_crit_mc(card);
    } else {
      continue;
    }
    put_int(facts, root, key, fmt::format("{}/temp{}_input", hw, i));
    put_int(facts, root, crit_key, fmt::format("{}/temp{}_crit", hw, i));
  }
  // Power in microwatts (Documentation/gpu/amdgpu/thermal.rst): the cap the SMU holds the GPU to
  // (power1_cap) and its range, and the last reading (power1_input where the GPU has it,
  // MI300-class and newer; else power1_average, which on an APU includes the CPU).
  for (const auto& [f, key] :
       {std::pair{"power1_cap", fact_keys::drm::power_cap_uw(card)},
        std::pair{"power1_cap_max", fact_keys::drm::power_cap_max_uw(card)},
        std::pair{"power1_cap_default", fact_keys::drm::power_cap_default_uw(card)}})
    if (root.exists(hw + "/" + f)) put_int(facts, root, key, hw + "/" + f);
  for (const char* f : {"power1_input", "power1_average"})
    if (root.exists(hw + "/" + f)) {
      put_int(facts, root, fact_keys::drm::power_now_uw(card), hw + "/" + f);
      break;
    }
}

/// Compute and memory partition modes (MI300-class; amdgpu_gfx.c, amdgpu_gmc.c): the current
/// mode ("SPX", "DPX", "TPX", "QPX", "CPX"; "NPS1", "NPS2", "NPS4", "NPS8", "UNKNOWN") and the
/// modes this GPU offers ("SPX, DPX, QPX, CPX"). The files exist only on GPUs with partitions. A
/// read refused with EPERM is a GPU in reset: amdgpu rejects partition queries during a reset
/// (commit 75f138db48c5, "Disallow partition query during reset"); the files are world-readable.
void collect_partitions(const Root& root, const std::string& dev, const std::string& card,
                        FactSet& facts) {
  for (const auto& [p, key] :
       {std::pair{"current_compute_partition", fact_keys::drm::current_compute_partition(card)},
        std::pair{"current_memory_partition", fact_keys::drm::current_memory_partition(card)}}) {
    const std::string path = dev + "/" + p;
    if (!root.exists(path)) continue;
    ReadResult r = root.read_trimmed(path);
    if (r.ok())
      facts.put_ok(key, r.text, r.path);
    else if (r.status == Status::denied)
      facts.put_status(key, Status::error, r.path,
                       "the kernel refused the read: the GPU is being reset (amdgpu answers "
                       "EPERM to partition queries during a reset)");
    else
      facts.put_status(key, r.status, r.path, r.reason);
  }
  for (const auto& [p, key] :
       {std::pair{"available_compute_partition", fact_keys::drm::available_compute_partition(card)},
        std::pair{"available_memory_partition",
                  fact_keys::drm::available_memory_partition(card)}}) {
    const std::string path = dev + "/" + p;
    if (!root.exists(path)) continue;
    ReadResult r = root.read_trimmed(path);
    if (!r.ok()) {
      facts.put_status(key, r.status, r.path, r.reason);
      continue;
    }
    facts.put_ok(key, split_list(r.text, ',', 16), r.path);
  }
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  const std::string base = "/sys/class/drm";
  Status st = Status::ok;
  auto entries = ctx.root.list(base, &st);
  std::vector<std::string> cards;
  if (!entries) {
    facts.put_status(std::string(kAmdCards), st, base, "cannot list DRM devices");
    return;
  }
  static const RE2 card_re("card[0-9]+");
  for (const auto& e : *entries) {
    if (!RE2::FullMatch(e, card_re)) continue;
    const std::string dev = fmt::format("{}/{}/device", base, e);
    ReadResult vendor = ctx.root.read_trimmed(dev + "/vendor");
    if (!vendor.ok() || parse_hex(vendor.text) != 0x1002) continue;
    cards.push_back(e);
    ReadResult did = ctx.root.read_trimmed(dev + "/device");
    if (auto d = did.ok() ? parse_hex(did.text) : std::nullopt)
      facts.put_ok(fact_keys::drm::device_id(e), *d, did.path);
    else
      facts.put_status(fact_keys::drm::device_id(e), did.ok() ? Status::error : did.status,
                       did.path, did.reason);
    auto drv = ctx.root.link_name(dev + "/driver");
    facts.put_ok(fact_keys::drm::driver(e), drv.value_or(""), dev + "/driver");
    ReadResult ue = ctx.root.read(dev + "/uevent");
    if (ue.ok()) {
      for (const auto& line : split_lines(ue.text))
        if (line.rfind("PCI_SLOT_NAME=", 0) == 0)
          facts.put_ok(fact_keys::drm::pci_slot(e), line.substr(14), ue.path);
    }
    for (const auto& [m, key] :
         {std::pair{"vram_total", fact_keys::drm::vram_total_bytes(e)},
          std::pair{"vis_vram_total", fact_keys::drm::vis_vram_total_bytes(e)},
          std::pair{"gtt_total", fact_keys::drm::gtt_total_bytes(e)},
          std::pair{"vram_used", fact_keys::drm::vram_used_bytes(e)},
          std::pair{"gtt_used", fact_keys::drm::gtt_used_bytes(e)}})
      put_int(facts, ctx.root, key, dev + "/mem_info_" + m);
    collect_partitions(ctx.root, dev, e, facts);
    // power_dpm_force_performance_level (amdgpu_pm.c, 0644): auto (the default), low, high,
    // manual, profile_standard, profile_min_sclk, profile_min_mclk, profile_peak,
    // perf_determinism. Absent where the GPU has no DPM (a GPU without power management).
    if (ctx.root.exists(dev + "/power_dpm_force_performance_level"))
      put_text(facts, ctx.root, fact_keys::drm::perf_level(e),
               dev + "/power_dpm_force_performance_level");
    if (ctx.root.exists(dev + "/uma/carveout"))
      put_text(facts, ctx.root, fact_keys::drm::uma_carveout(e), dev + "/uma/carveout");
    // uma/carveout_options (amdgpu_acpi.c, kernel 7.0+, only where the firmware's ATCS function
    // 0xA is supported): lines "INDEX: NAME (SIZE MB|GB)"; the sizes this machine can boot with.
    if (ReadResult o = ctx.root.read(dev + "/uma/carveout_options"); o.ok()) {
      static const RE2 option_re(R"((\d+):.*\((\d+) (MB|GB)\)\s*)");
      std::vector<std::string> options;
      std::optional<std::int64_t> min_bytes;
      for (const auto& line : split_lines(o.text)) {
        std::string index;
        std::string size;
        std::string unit;
        if (!RE2::FullMatch(line, option_re, &index, &size, &unit)) continue;
        auto n = parse_int(size);
        if (!n || *n > (std::int64_t{1} << 30)) continue;
        const std::int64_t bytes =
            *n * (unit == "GB" ? std::int64_t{1} << 30 : std::int64_t{1} << 20);
        options.push_back(line);
        if (!min_bytes || bytes < *min_bytes) min_bytes = bytes;
      }
      facts.put_ok(fact_keys::drm::uma_carveout_options(e), options, o.path);
      if (min_bytes) facts.put_ok(fact_keys::drm::uma_carveout_min_bytes(e), *min_bytes, o.path);
    }
    collect_pcie_link(ctx.root, dev, e, facts);
    collect_temperatures(ctx.root, dev, e, facts);
    if (auto nodes = ctx.root.list(dev + "/drm")) {
      for (const auto& n : *nodes) {
        if (n.rfind("renderD", 0) == 0)
          if (auto minor = parse_int(n.substr(7)))
            facts.put_ok(fact_keys::drm::render_minor(e), *minor, fmt::format("{}/drm/{}", dev, n));
      }
    }
  }
  facts.put_ok(std::string(kAmdCards), cards, base);
}

} // namespace

std::unique_ptr<Probe> make_drm_probe() {
  return std::make_unique<BasicProbe>("drm", collect);
}

} // namespace halo::probes
