// SPDX-License-Identifier: MIT
// The GPU list (`gpu.N.*` in KFD node order, joined with DRM cards and PCI devices), the
// partitions of MI300-class GPUs, and the AMD GPUs amdgpu does not drive: derivations (no files).
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
#include <utility>
#include <vector>

namespace halo::probes {
namespace {

// A fact's source names what it was read from and the documented table it follows, never a file
// of this repository (Fact::source): the probe is named by Fact::probe.
constexpr std::string_view kPciIdTable =
    "the PCI id table: pci.ids names, LLVM AMDGPUUsage targets";

namespace gpu_keys = fact_keys::gpu;
namespace drm = fact_keys::drm;
namespace kfd_keys = fact_keys::kfd;
namespace pci = fact_keys::pci;

/// The heap_type key of the bank whose size_bytes key is `key`: kfd.node.NODE.mem_bank.BANK.
/// size_bytes -> kfd.node.NODE.mem_bank.BANK.heap_type, NODE and BANK as the key spells them.
std::string heap_type_of(std::string_view key) {
  key.remove_suffix(key.size() - key.rfind('.')); // kfd.node.NODE.mem_bank.BANK
  const std::string bank(key.substr(key.rfind('.') + 1));
  key.remove_suffix(key.size() - key.rfind('.')); // kfd.node.NODE.mem_bank
  key.remove_suffix(key.size() - key.rfind('.')); // kfd.node.NODE
  for (int segment = 0; segment < 2; ++segment)
    key.remove_prefix(key.find('.') + 1); // NODE
  return kfd_keys::node_mem_bank_heap_type(key, bank);
}

void derive_gpus(FactSet& facts) {
  const auto kfd =
      facts.get<std::vector<std::string>>(kfd_keys::gpu_nodes).value_or(std::vector<std::string>{});
  const auto cards =
      facts.get<std::vector<std::string>>(kAmdCards).value_or(std::vector<std::string>{});
  const auto pci_count = facts.get_int(pci::amd_gpu_count).value_or(0);
  // A replayed facts file or bundle may say anything: a count or list beyond what hardware can
  // have is that node's error, never a loop (issue 44 item 4; the bounds: checks/gpus/gpus.hpp).
  std::string beyond;
  if (pci_count < 0 || pci_count > kMaxPciGpuFunctions)
    beyond = fmt::format("{} is {}, beyond the {} functions of a PCI segment", pci::amd_gpu_count,
                         pci_count, kMaxPciGpuFunctions);
  else if (std::cmp_greater(kfd.size(), kMaxGpuNodes))
    beyond = fmt::format("{} lists {} nodes, beyond the {} GPUs a machine can have",
                         kfd_keys::gpu_nodes, kfd.size(), kMaxGpuNodes);
  else if (std::cmp_greater(cards.size(), kMaxGpuNodes))
    beyond = fmt::format("{} lists {} cards, beyond the {} GPUs a machine can have", kAmdCards,
                         cards.size(), kMaxGpuNodes);
  if (!beyond.empty()) {
    for (const auto k : {fact_keys::amd::gpu_present, gpu_keys::count})
      facts.put_status(std::string(k), Status::error, kDerived, beyond);
    return;
  }
  const bool present = !kfd.empty() || !cards.empty() || pci_count > 0;
  facts.put_ok(std::string(fact_keys::amd::gpu_present), present, "derived: PCI, DRM and KFD");

  auto card_for_minor = [&](std::int64_t minor) -> std::string {
    for (const auto& c : cards)
      if (facts.get_int(drm::render_minor(c)) == minor) return c;
    return {};
  };
  auto put_gpu = [&](std::int64_t i, const std::optional<std::string>& gfx,
                     std::optional<std::int64_t> device_id, const std::string& card,
                     const std::string& basis, bool bound, const std::string& bound_src,
                     std::string slot = {}) {
    std::string slot_src = "/sys/bus/pci/devices";
    if (slot.empty() && !card.empty()) {
      slot = facts.get<std::string>(drm::pci_slot(card)).value_or("");
      slot_src = "/sys/class/drm/" + card + "/device";
    }
    facts.put_ok(gpu_keys::amdgpu_bound(i), bound, bound_src);
    const auto from_pci = device_id ? gfx_from_pci_id(*device_id) : std::nullopt;
    if (gfx)
      facts.put_ok(gpu_keys::gfx_target(i), *gfx, basis);
    else if (from_pci)
      // A GPU that never reached KFD (too-old kernel, amdgpu not bound) still has its PCI id.
      facts.put_ok(
          gpu_keys::gfx_target(i), from_pci->gfx,
          fmt::format("PCI device id 0x{:04x}: {} ({})", *device_id, from_pci->name, kPciIdTable));
    else
      facts.put_status(gpu_keys::gfx_target(i), Status::missing, basis,
                       "no KFD topology node for this GPU and its PCI id is not in the table");
    if (device_id)
      facts.put_ok(gpu_keys::device_id(i), *device_id, basis);
    else
      facts.put_status(gpu_keys::device_id(i), Status::missing, basis, "device id unknown");
    const std::string why = card.empty() ? "no amdgpu DRM card for this GPU" : "";
    facts.put_ok(gpu_keys::card(i), card, basis);
    if (from_pci)
      facts.put_ok(gpu_keys::name(i), from_pci->name,
                   fmt::format("PCI device id 0x{:04x} ({})", *device_id, kPciIdTable));
    else
      facts.put_status(gpu_keys::name(i), Status::missing, basis, "PCI device id not in the table");
    if (!slot.empty())
      facts.put_ok(gpu_keys::pci_slot(i), slot, slot_src);
    else
      facts.put_status(gpu_keys::pci_slot(i), Status::missing, basis,
                       "no DRM card or PCI device for this GPU");
    alias_each(facts, !card.empty(),
               {{gpu_keys::vram_total_bytes(i), drm::vram_total_bytes(card)},
                {gpu_keys::vis_vram_total_bytes(i), drm::vis_vram_total_bytes(card)},
                {gpu_keys::gtt_total_bytes(i), drm::gtt_total_bytes(card)}},
               why);
    auto apu = apu_basis(gfx, device_id);
    facts.put_ok(gpu_keys::apu(i), apu.has_value(),
                 "derived: " + apu.value_or("not in the APU table (LLVM AMDGPUUsage, pci.ids)"));
    facts.put_ok(
        gpu_keys::instinct(i), is_instinct(gfx, device_id),
        "derived: the gfx target and PCI id in the Instinct table (LLVM AMDGPUUsage, pci.ids)");
    facts.put_ok(gpu_keys::mi300_series(i), is_mi300_series(gfx, device_id),
                 "derived: the gfx target and PCI id in the MI300-series table (LLVM AMDGPUUsage, "
                 "pci.ids)");
    facts.put_ok(gpu_keys::instinct_series(i), instinct_series(gfx, device_id),
                 "derived: the gfx target, else the PCI id, in the Instinct series table (LLVM "
                 "AMDGPUUsage, pci.ids, AMD's system acceptance guides)");
  };

  // A partition of an MI300-class GPU (DPX..CPX) is a KFD node of its own whose render node
  // belongs to a partition device, not to the PCI card; KFD's location_id and domain are the PCI
  // function's (kfd_topology.c: location_id = pci_dev_id(pdev) = bus << 8 | devfn) for every
  // partition, so they find the card.
  auto card_for_location = [&](const std::string& node) -> std::string {
    const auto loc = facts.get_int(kfd_keys::node_location_id(node));
    const auto dom = facts.get_int(kfd_keys::node_domain(node));
    if (!loc || !dom || *loc <= 0 || *loc > 0xffff || *dom < 0 || *dom > 0xffffffff) return {};
    const std::string slot = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", *dom, (*loc >> 8) & 0xff,
                                         (*loc >> 3) & 0x1f, *loc & 0x7);
    for (const auto& c : cards)
      if (facts.get<std::string>(drm::pci_slot(c)) == slot) return c;
    return {};
  };

  std::int64_t n = 0;
  if (!kfd.empty()) {
    for (const auto& node : kfd) {
      auto gfx = facts.get<std::string>(kfd_keys::node_gfx_target(node));
      auto dev = facts.get_int(kfd_keys::node_device_id(node));
      auto minor = facts.get_int(kfd_keys::node_drm_render_minor(node));
      std::string card = minor ? card_for_minor(*minor) : std::string();
      if (card.empty()) card = card_for_location(node);
      put_gpu(n, gfx, dev, card, "/sys/class/kfd/kfd/topology/nodes/" + node + "/properties", true,
              "KFD lists it: amdgpu drives it");
      facts.put_ok(gpu_keys::kfd_node(n), node, kDerived);
      if (minor)
        facts.put_ok(gpu_keys::render_minor(n), *minor,
                     "/sys/class/kfd/kfd/topology/nodes/" + node + "/properties");
      ++n;
    }
  } else if (!cards.empty()) {
    for (const auto& c : cards) {
      if (auto minor = facts.get_int(drm::render_minor(c)))
        facts.put_ok(gpu_keys::render_minor(n), *minor, "/sys/class/drm/" + c);
      put_gpu(n++, std::nullopt, facts.get_int(drm::device_id(c)), c, "/sys/class/drm/" + c,
              facts.get<std::string>(drm::driver(c)) == std::string("amdgpu"),
              "/sys/class/drm/" + c + "/device/driver");
    }
  } else {
    for (std::int64_t i = 0; i < pci_count; ++i)
      put_gpu(n++, std::nullopt, facts.get_int(pci::gpu_device_id(i)), "", "/sys/bus/pci/devices",
              facts.get<std::string>(pci::gpu_driver(i)) == std::string("amdgpu"),
              "/sys/bus/pci/devices/" + facts.get<std::string>(pci::gpu_slot(i)).value_or("?") +
                  "/driver",
              facts.get<std::string>(pci::gpu_slot(i)).value_or(""));
  }
  facts.put_ok(std::string(gpu_keys::count), n, "derived: KFD GPU nodes, else DRM cards, else PCI");
}

/// Partitions of MI300-class GPUs (amdgpu_gfx.c / amdgpu_gmc.c; AMD's "GPU partitioning" docs):
/// each compute partition is a KFD node, so one physical GPU is 1 (SPX), 2 (DPX), 3 (TPX),
/// 4 (QPX) or one per XCC (CPX) logical GPUs, all on the same PCI card.
///   gpu.N.partition_index          N's place among the logical GPUs of its card (0 = the first)
///   gpu.N.partition_nodes          how many KFD nodes (logical GPUs) its card has
///   gpu.N.partition_xcc            the XCCs of those nodes together (KFD num_xcc, summed)
///   gpu.N.{compute,memory}_partition, gpu.N.partition_mode ("CPX/NPS4")
///   gpu.N.partition_expected_nodes what the compute mode promises (CPX: one per XCC)
///   gpu.N.vram_total_bytes         for a partition, its KFD frame-buffer bank, not the card's
///                                  whole HBM (rocm-smi's mistake, ROCm/ROCm#4750)
/// and for the host gpu.partition_modes (distinct modes), gpu.partition_mode_count and
/// gpu.partition_summary ("SPX/NPS1 on GPUs 0, 1; CPX/NPS4 on GPU 2").
void derive_partitions(FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  std::map<std::string, std::vector<std::int64_t>> by_card;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = facts.get<std::string>(gpu_keys::card(i)).value_or("");
    if (!card.empty()) by_card[card].push_back(i);
  }
  std::map<std::string, std::vector<std::int64_t>> physical_by_mode;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = facts.get<std::string>(gpu_keys::card(i)).value_or("");
    const std::string no_files = "this GPU has no partition modes (no current_compute_partition)";
    alias_each(facts, !card.empty(),
               {{gpu_keys::compute_partition(i), drm::current_compute_partition(card)},
                {gpu_keys::memory_partition(i), drm::current_memory_partition(card)}},
               no_files);
    if (card.empty()) {
      facts.put_ok(gpu_keys::partition_index(i), std::int64_t{0},
                   "derived: no DRM card, one logical GPU");
      facts.put_ok(gpu_keys::partition_nodes(i), std::int64_t{1},
                   "derived: no DRM card, one logical GPU");
      for (const auto& k : {gpu_keys::partition_xcc(i), gpu_keys::partition_mode(i),
                            gpu_keys::partition_expected_nodes(i)})
        facts.put_status(k, Status::missing, kDerived, "no amdgpu DRM card");
      continue;
    }
    const auto& siblings = by_card[card];
    const auto pos = std::find(siblings.begin(), siblings.end(), i) - siblings.begin();
    const std::string src = fmt::format("derived: KFD nodes on {} (location_id)", card);
    facts.put_ok(gpu_keys::partition_index(i), static_cast<std::int64_t>(pos), src);
    facts.put_ok(gpu_keys::partition_nodes(i), static_cast<std::int64_t>(siblings.size()), src);
    std::int64_t xcc_sum = 0;
    bool xcc = true;
    for (const auto j : siblings) {
      const auto node = facts.get<std::string>(gpu_keys::kfd_node(j));
      const auto x = node ? facts.get_int(kfd_keys::node_num_xcc(*node)) : std::nullopt;
      xcc = xcc && x && *x > 0 && *x <= 64;
      if (xcc) xcc_sum += *x;
    }
    if (xcc)
      facts.put_ok(gpu_keys::partition_xcc(i), xcc_sum, "derived: KFD num_xcc of " + card);
    else
      facts.put_status(gpu_keys::partition_xcc(i), Status::missing, kDerived,
                       "KFD lists no num_xcc for a node of this GPU (kernel before 6.5)");
    if (siblings.size() > 1) {
      const auto node = facts.get<std::string>(gpu_keys::kfd_node(i)).value_or("");
      for (const Fact* b : facts.match(kfd_keys::node_mem_bank_size_bytes(node, "*")))
        if (b->ok() && facts.get_int(heap_type_of(b->key)) != 0) {
          Fact c = *b;
          c.key = gpu_keys::vram_total_bytes(i);
          facts.put(std::move(c));
          break;
        }
    }
    const auto compute = facts.get<std::string>(gpu_keys::compute_partition(i));
    const auto memory = facts.get<std::string>(gpu_keys::memory_partition(i));
    if (!compute || !memory) {
      const Fact* bad =
          facts.find(compute ? gpu_keys::memory_partition(i) : gpu_keys::compute_partition(i));
      for (const auto& k : {gpu_keys::partition_mode(i), gpu_keys::partition_expected_nodes(i)}) {
        Fact c = bad != nullptr ? *bad : Fact{};
        c.key = k;
        c.value = {};
        if (bad == nullptr) c.status = Status::missing;
        facts.put(std::move(c));
      }
      continue;
    }
    const std::string mode = *compute + "/" + *memory;
    facts.put_ok(gpu_keys::partition_mode(i), mode,
                 fmt::format("derived: drm.{}.current_*_partition", card));
    if (pos == 0) physical_by_mode[mode].push_back(i);
    static const std::map<std::string, std::int64_t, std::less<>> kPartitions = {
        {"SPX", 1}, {"DPX", 2}, {"TPX", 3}, {"QPX", 4}};
    if (const auto it = kPartitions.find(*compute); it != kPartitions.end())
      facts.put_ok(gpu_keys::partition_expected_nodes(i), it->second,
                   "derived: " + *compute + " is " + std::to_string(it->second) +
                       " partition(s) per GPU");
    else if (*compute == "CPX" && xcc)
      facts.put_ok(gpu_keys::partition_expected_nodes(i), xcc_sum,
                   "derived: CPX is one partition per XCC (KFD num_xcc)");
    else
      facts.put_status(gpu_keys::partition_expected_nodes(i), Status::missing, kDerived,
                       "compute partition '" + *compute + "' has no known partition count");
  }
  std::vector<std::string> modes;
  std::vector<std::string> summary;
  for (const auto& [mode, idx] : physical_by_mode) {
    modes.push_back(mode);
    summary.push_back(fmt::format("{} on {}", mode, gpu_list(idx)));
  }
  const std::string src = fmt::format("derived: {}", gpu_keys::partition_mode("*"));
  facts.put_ok(std::string(gpu_keys::partition_modes), modes, src);
  facts.put_ok(std::string(gpu_keys::partition_mode_count), static_cast<std::int64_t>(modes.size()),
               src);
  facts.put_ok(std::string(gpu_keys::partition_summary),
               fmt::format("{}", fmt::join(summary, "; ")), src);
}

/// GPUs on the PCI bus that amdgpu is not driving: the driver link of each
/// (/sys/bus/pci/devices/BDF/driver). "Loaded" is not "bound": amdgpu can be loaded while its
/// probe of this GPU failed (dmesg "amdgpu BDF: probe ... failed with error -22": usually a
/// kernel too old for the GPU's IP versions), or the GPU is held by vfio-pci for a VM.
/// amd.gpus_unbound: no driver, or a driver other than amdgpu/vfio-pci/pci-stub;
/// amd.gpus_passthrough: reserved for a virtual machine (vfio-pci, pci-stub).
void derive_binding(FactSet& facts) {
  const auto n = facts.get_int(pci::amd_gpu_count);
  const auto both = {fact_keys::amd::gpus_unbound, fact_keys::amd::gpus_passthrough};
  if (!n) {
    for (const auto k : both)
      facts.put_status(std::string(k), Status::missing, kDerived,
                       "the PCI bus could not be listed");
    return;
  }
  if (*n < 0 || *n > kMaxPciGpuFunctions) {
    for (const auto k : both)
      facts.put_status(std::string(k), Status::error, kDerived,
                       fmt::format("{} is {}, beyond the {} functions of a PCI "
                                   "segment (checks/gpus/gpus.hpp)",
                                   pci::amd_gpu_count, *n, kMaxPciGpuFunctions));
    return;
  }
  std::vector<std::string> unbound;
  std::vector<std::string> passthrough;
  for (std::int64_t i = 0; i < *n; ++i) {
    const auto driver = facts.get<std::string>(pci::gpu_driver(i));
    if (!driver || *driver == "amdgpu") continue;
    const auto slot = facts.get<std::string>(pci::gpu_slot(i)).value_or("?");
    const auto id = facts.get_int(pci::gpu_device_id(i));
    std::string what = id ? fmt::format("device 0x{:04x}", *id) : std::string("unknown device");
    if (auto g = id ? gfx_from_pci_id(*id) : std::nullopt)
      what = fmt::format("{}, {}", g->name, g->gfx);
    if (driver->empty())
      unbound.push_back(fmt::format(
          "{} ({}): no driver is bound (amdgpu is not loaded, is blocked, or its probe of this GPU "
          "failed: look for \"amdgpu {}: probe ... failed with error\" in the kernel log; -22 "
          "usually means the kernel is too old for this GPU)",
          slot, what, slot));
    else if (*driver == "vfio-pci" || *driver == "pci-stub")
      passthrough.push_back(
          fmt::format("{} ({}): bound to {}, reserved for a virtual machine", slot, what, *driver));
    else
      unbound.push_back(fmt::format("{} ({}): bound to {}, not amdgpu", slot, what, *driver));
  }
  facts.put_ok(std::string(fact_keys::amd::gpus_unbound), unbound,
               "derived: /sys/bus/pci/devices/*/driver");
  facts.put_ok(std::string(fact_keys::amd::gpus_passthrough), passthrough,
               "derived: /sys/bus/pci/devices/*/driver");
}

} // namespace

std::unique_ptr<Probe> make_gpu_list_derivation() {
  return std::make_unique<BasicDerivation>("gpu_list",
                                           [](const DeriveContext& /*ctx*/, FactSet& facts) {
                                             derive_gpus(facts);
                                             derive_partitions(facts);
                                           });
}

std::unique_ptr<Probe> make_gpu_binding_derivation() {
  return std::make_unique<BasicDerivation>(
      "gpu_binding", [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_binding(facts); });
}

} // namespace halo::probes
