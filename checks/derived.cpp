// SPDX-License-Identifier: MIT
// Derived facts: joins and decisions computed from the other probes' facts, never from files.
// This is where the hardware knowledge that needs several facts lives: which GPUs there are
// and whether each is an APU; which TTM limit is configured for the module amdgpu really uses;
// the recommended limit for --reserve; amdgpu.gttsize; suspicious kernel arguments.
// It runs last, and again on facts replayed with --facts (so --reserve still applies).
#include "alloc_conf.hpp"
#include "cmdline.hpp"
#include "gfx.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/units.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <map>
#include <set>

namespace halo::probes {
namespace {

constexpr const char* kDerived = "derived";

/// Copies a fact under a new key, keeping its status, source and reason; `from` empty or absent:
/// `to` is missing with `why`.
void alias(FactSet& facts, const std::string& to, const std::string& from, const std::string& why) {
  if (const Fact* f = from.empty() ? nullptr : facts.find(from)) {
    Fact c = *f;
    c.key = to;
    facts.put(std::move(c));
  } else {
    facts.put_status(to, Status::missing, kDerived, why);
  }
}

void derive_gpus(FactSet& facts) {
  const auto kfd =
      facts.get<std::vector<std::string>>("kfd.gpu_nodes").value_or(std::vector<std::string>{});
  const auto cards =
      facts.get<std::vector<std::string>>("drm.amd_cards").value_or(std::vector<std::string>{});
  const auto pci_count = facts.get_int("pci.amd_gpu_count").value_or(0);
  const bool present = !kfd.empty() || !cards.empty() || pci_count > 0;
  facts.put_ok("amd.gpu_present", present, "derived: PCI, DRM and KFD");

  auto card_for_minor = [&](std::int64_t minor) -> std::string {
    for (const auto& c : cards)
      if (facts.get_int("drm." + c + ".render_minor") == minor) return c;
    return {};
  };
  auto put_gpu = [&](std::int64_t i, const std::optional<std::string>& gfx,
                     std::optional<std::int64_t> device_id, const std::string& card,
                     const std::string& basis, bool bound, const std::string& bound_src,
                     std::string slot = {}) {
    std::string slot_src = "/sys/bus/pci/devices";
    if (slot.empty() && !card.empty()) {
      slot = facts.get<std::string>("drm." + card + ".pci_slot").value_or("");
      slot_src = "/sys/class/drm/" + card + "/device";
    }
    const std::string pre = fmt::format("gpu.{}", i);
    facts.put_ok(pre + ".amdgpu_bound", bound, bound_src);
    const auto from_pci = device_id ? gfx_from_pci_id(*device_id) : std::nullopt;
    if (gfx)
      facts.put_ok(pre + ".gfx_target", *gfx, basis);
    else if (from_pci)
      // A GPU that never reached KFD (too-old kernel, amdgpu not bound) still has its PCI id.
      facts.put_ok(pre + ".gfx_target", from_pci->gfx,
                   fmt::format("PCI device id 0x{:04x}: {} (table in checks/gfx.cpp)", *device_id,
                               from_pci->name));
    else
      facts.put_status(pre + ".gfx_target", Status::missing, basis,
                       "no KFD topology node for this GPU and its PCI id is not in the table");
    if (device_id)
      facts.put_ok(pre + ".device_id", *device_id, basis);
    else
      facts.put_status(pre + ".device_id", Status::missing, basis, "device id unknown");
    const std::string why = card.empty() ? "no amdgpu DRM card for this GPU" : "";
    facts.put_ok(pre + ".card", card, basis);
    if (from_pci)
      facts.put_ok(pre + ".name", from_pci->name,
                   fmt::format("PCI device id 0x{:04x} (table in checks/gfx.cpp)", *device_id));
    else
      facts.put_status(pre + ".name", Status::missing, basis, "PCI device id not in the table");
    if (!slot.empty())
      facts.put_ok(pre + ".pci_slot", slot, slot_src);
    else
      facts.put_status(pre + ".pci_slot", Status::missing, basis,
                       "no DRM card or PCI device for this GPU");
    for (const char* m : {"vram_total_bytes", "vis_vram_total_bytes", "gtt_total_bytes"})
      alias(facts, pre + "." + m, card.empty() ? std::string() : "drm." + card + "." + m, why);
    auto apu = apu_basis(gfx, device_id);
    facts.put_ok(pre + ".apu", apu.has_value(),
                 "derived: " + apu.value_or("not in the APU table (checks/gfx.cpp)"));
    facts.put_ok(pre + ".instinct", is_instinct(gfx, device_id), "derived: checks/gfx.cpp");
    facts.put_ok(pre + ".mi300_series", is_mi300_series(gfx, device_id), "derived: checks/gfx.cpp");
  };

  // A partition of an MI300-class GPU (DPX..CPX) is a KFD node of its own whose render node
  // belongs to a partition device, not to the PCI card; KFD's location_id and domain are the PCI
  // function's (kfd_topology.c: location_id = pci_dev_id(pdev) = bus << 8 | devfn) for every
  // partition, so they find the card.
  auto card_for_location = [&](const std::string& kpre) -> std::string {
    const auto loc = facts.get_int(kpre + ".location_id");
    const auto dom = facts.get_int(kpre + ".domain");
    if (!loc || !dom || *loc <= 0 || *loc > 0xffff || *dom < 0 || *dom > 0xffffffff) return {};
    const std::string slot = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", *dom, (*loc >> 8) & 0xff,
                                         (*loc >> 3) & 0x1f, *loc & 0x7);
    for (const auto& c : cards)
      if (facts.get<std::string>("drm." + c + ".pci_slot") == slot) return c;
    return {};
  };

  std::int64_t n = 0;
  if (!kfd.empty()) {
    for (const auto& node : kfd) {
      const std::string kpre = "kfd.node." + node;
      auto gfx = facts.get<std::string>(kpre + ".gfx_target");
      auto dev = facts.get_int(kpre + ".device_id");
      auto minor = facts.get_int(kpre + ".drm_render_minor");
      std::string card = minor ? card_for_minor(*minor) : std::string();
      if (card.empty()) card = card_for_location(kpre);
      put_gpu(n, gfx, dev, card, "/sys/class/kfd/kfd/topology/nodes/" + node + "/properties", true,
              "KFD lists it: amdgpu drives it");
      facts.put_ok(fmt::format("gpu.{}.kfd_node", n), node, kDerived);
      if (minor)
        facts.put_ok(fmt::format("gpu.{}.render_minor", n), *minor,
                     "/sys/class/kfd/kfd/topology/nodes/" + node + "/properties");
      ++n;
    }
  } else if (!cards.empty()) {
    for (const auto& c : cards) {
      if (auto minor = facts.get_int("drm." + c + ".render_minor"))
        facts.put_ok(fmt::format("gpu.{}.render_minor", n), *minor, "/sys/class/drm/" + c);
      put_gpu(n++, std::nullopt, facts.get_int("drm." + c + ".device_id"), c, "/sys/class/drm/" + c,
              facts.get<std::string>("drm." + c + ".driver") == std::string("amdgpu"),
              "/sys/class/drm/" + c + "/device/driver");
    }
  } else {
    for (std::int64_t i = 0; i < pci_count; ++i)
      put_gpu(n++, std::nullopt, facts.get_int(fmt::format("pci.gpu.{}.device_id", i)), "",
              "/sys/bus/pci/devices",
              facts.get<std::string>(fmt::format("pci.gpu.{}.driver", i)) == std::string("amdgpu"),
              "/sys/bus/pci/devices/" +
                  facts.get<std::string>(fmt::format("pci.gpu.{}.slot", i)).value_or("?") +
                  "/driver",
              facts.get<std::string>(fmt::format("pci.gpu.{}.slot", i)).value_or(""));
  }
  facts.put_ok("gpu.count", n, "derived: KFD GPU nodes, else DRM cards, else PCI");
}

/// The modprobe.d facts when no host root was reachable (inside a container without the host's
/// / mounted): facts derived from modprobe.d copy its "not probed" status, so rules that need
/// the host's configuration are skipped with the reason, never judged as "not configured".
const Fact* hidden_host_config(const FactSet& facts) {
  const Fact* f = facts.find("modprobe.files");
  return f != nullptr && f->not_probed() ? f : nullptr;
}

void put_hidden(FactSet& facts, const std::string& key, const Fact& why) {
  facts.put_status(key, Status::missing, why.source, why.reason);
}

/// One parameter as a loadable module receives it when it loads.
struct ModuleOption {
  std::optional<std::string> value; ///< std::nullopt: given without '=' (a flag)
  std::string source;
};

/// The options a loadable module receives: modprobe.d's options lines (files are parsed before
/// the command line, kmod_config_new), then those kmod takes from /proc/cmdline, joined with ' '
/// (kmod_module_get_options) and split by the kernel's next_arg() when the module loads
/// (parse_args in kernel/params.c): the last value of a parameter wins, names compare with '-'
/// equal to '_' (parameq), and a bare `--` ends the list. With `cmdline_only`, the command
/// line's options alone.
std::map<std::string, ModuleOption> module_options(const FactSet& facts, const std::string& m,
                                                   bool cmdline_only = false) {
  std::string joined;
  std::vector<std::pair<std::size_t, std::string>> starts;
  auto add = [&](const std::string& key) {
    const Fact* f = facts.find(key);
    auto texts = facts.get<std::vector<std::string>>(key);
    if (f == nullptr || !texts) return;
    for (const auto& t : *texts) {
      if (!joined.empty()) joined += ' ';
      starts.emplace_back(joined.size(), f->source);
      joined += t;
    }
  };
  if (!cmdline_only) add("modprobe.options_text." + m);
  add("kernel.cmdline.module_options." + m);
  std::map<std::string, ModuleOption> out;
  for (const KernelArg& a : split_kernel_args(joined, true)) {
    std::string src;
    for (const auto& [off, where] : starts)
      if (off <= a.offset) src = where;
    // modprobe.d facts name the line; point to it rather than the module's first line.
    if (const Fact* line = facts.find("modprobe.options." + m + "." + a.name);
        line != nullptr && src.find("/proc/cmdline") == std::string::npos)
      src = line->source;
    out[a.name] = ModuleOption{a.value, src};
  }
  return out;
}

/// The integer parameters the doctor judges, with the kernel's conversion for their type
/// (module_param type ulong: kstrtoul; int: kstrtoint). Sources: drivers/gpu/drm/ttm/ttm_device.c
/// and ttm_pool.c (pages_limit, page_pool_size: ulong), amdgpu_drv.c (gttsize, modeset: int).
struct IntParam {
  const char* module;
  const char* param;
  bool is_unsigned;
};
constexpr std::array<IntParam, 8> kIntParams = {{{"ttm", "pages_limit", true},
                                                 {"ttm", "page_pool_size", true},
                                                 {"amdttm", "pages_limit", true},
                                                 {"amdttm", "page_pool_size", true},
                                                 {"amd_ttm", "pages_limit", true},
                                                 {"amd_ttm", "page_pool_size", true},
                                                 {"amdgpu", "gttsize", false},
                                                 {"amdgpu", "modeset", false}}};

/// The value as the kernel converts it; std::nullopt when the kernel rejects it.
std::optional<std::int64_t> kernel_int(const IntParam& p, const std::optional<std::string>& v) {
  if (!v) return std::nullopt; // "`' invalid for parameter": an integer needs a value
  if (p.is_unsigned) {
    auto u = kstrtoull(*v);
    if (!u) return std::nullopt;
    // Valid for the kernel up to 2^64-1; held here saturated at 2^63-1.
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    return static_cast<std::int64_t>(std::min(*u, kMax));
  }
  auto i = kstrtoint(*v);
  if (!i) return std::nullopt;
  return *i;
}

const IntParam* int_param(const std::string& m, const std::string& p) {
  for (const auto& ip : kIntParams)
    if (m == ip.module && p == ip.param) return &ip;
  return nullptr;
}

/// Values the kernel will reject when the module loads. For a loadable module the load fails
/// (load_module returns -EINVAL: "ttm: `abc' invalid for parameter `pages_limit'"), and
/// amdgpu, which needs ttm, fails with it.
void derive_invalid_options(FactSet& facts) {
  std::vector<std::string> invalid;
  std::vector<std::string> modules;
  for (const char* m : {"ttm", "amdttm", "amd_ttm", "amdgpu"}) {
    for (const auto& [name, opt] : module_options(facts, m)) {
      const IntParam* ip = int_param(m, name);
      if (ip == nullptr || kernel_int(*ip, opt.value)) continue;
      invalid.push_back(fmt::format("{}.{}{} ({}): not a valid {} for the kernel ({})", m, name,
                                    opt.value ? "=" + *opt.value : std::string(" without a value"),
                                    opt.source, ip->is_unsigned ? "unsigned integer" : "integer",
                                    ip->is_unsigned ? "kstrtoul" : "kstrtoint"));
      if (std::find(modules.begin(), modules.end(), m) == modules.end()) modules.emplace_back(m);
    }
  }
  if (const Fact* hidden = hidden_host_config(facts); hidden != nullptr && invalid.empty()) {
    put_hidden(facts, "modparam.invalid", *hidden);
    put_hidden(facts, "modparam.invalid_modules", *hidden);
    return;
  }
  facts.put_ok("modparam.invalid", invalid,
               "derived: modprobe.d and /proc/cmdline as kmod and kernel/params.c read them");
  facts.put_ok("modparam.invalid_modules", modules,
               "derived: modprobe.d and /proc/cmdline as kmod and kernel/params.c read them");
}

/// GPUs on the PCI bus that amdgpu is not driving: the driver link of each
/// (/sys/bus/pci/devices/BDF/driver). "Loaded" is not "bound": amdgpu can be loaded while its
/// probe of this GPU failed (dmesg "amdgpu BDF: probe ... failed with error -22": usually a
/// kernel too old for the GPU's IP versions), or the GPU is held by vfio-pci for a VM.
/// amd.gpus_unbound: no driver, or a driver other than amdgpu/vfio-pci/pci-stub;
/// amd.gpus_passthrough: reserved for a virtual machine (vfio-pci, pci-stub).
void derive_binding(FactSet& facts) {
  const auto n = facts.get_int("pci.amd_gpu_count");
  if (!n) {
    for (const char* k : {"amd.gpus_unbound", "amd.gpus_passthrough"})
      facts.put_status(k, Status::missing, kDerived, "the PCI bus could not be listed");
    return;
  }
  std::vector<std::string> unbound;
  std::vector<std::string> passthrough;
  for (std::int64_t i = 0; i < *n; ++i) {
    const std::string pre = fmt::format("pci.gpu.{}", i);
    const auto driver = facts.get<std::string>(pre + ".driver");
    if (!driver || *driver == "amdgpu") continue;
    const auto slot = facts.get<std::string>(pre + ".slot").value_or("?");
    const auto id = facts.get_int(pre + ".device_id");
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
  facts.put_ok("amd.gpus_unbound", unbound, "derived: /sys/bus/pci/devices/*/driver");
  facts.put_ok("amd.gpus_passthrough", passthrough, "derived: /sys/bus/pci/devices/*/driver");
}

/// A device list as ROCr (ROCR_VISIBLE_DEVICES) and HIP (HIP_VISIBLE_DEVICES, else
/// CUDA_VISIBLE_DEVICES) read it: comma-separated indices into the devices the layer below
/// left; the list stops at the first entry that is not a valid, unused index (HIP's
/// env_variables reference: "HIP_VISIBLE_DEVICES=0,1,-1,2" exposes devices 0 and 1); an empty
/// value or -1 hides every device. UUID entries (GPU-...) are not resolved here: `uuid` is set.
std::vector<std::int64_t> visible_list(std::string_view value, std::int64_t count, bool& uuid) {
  std::vector<std::int64_t> out;
  while (true) {
    const auto comma = value.find(',');
    std::string token(value.substr(0, comma));
    while (!token.empty() && token.front() == ' ')
      token.erase(token.begin());
    while (!token.empty() && token.back() == ' ')
      token.pop_back();
    if (token.rfind("GPU-", 0) == 0) {
      uuid = true;
      break;
    }
    std::int64_t v = -1;
    const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    if (ec != std::errc() || ptr != token.data() + token.size() || v < 0 || v >= count ||
        std::find(out.begin(), out.end(), v) != out.end())
      break;
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

/// Which GPUs training sees, in HIP's order (device 0 first), and the APU wherever it is.
/// GPUs are numbered in KFD node order (numerically), which is ROCr's enumeration order.
/// ROCR_VISIBLE_DEVICES filters and reorders first; HIP_VISIBLE_DEVICES (or
/// CUDA_VISIBLE_DEVICES) then indexes into what ROCr left (ROCm/pytorch#1895; HIP
/// env_variables reference). GPU_DEVICE_ORDINAL is not modelled.
void derive_visibility(FactSet& facts) {
  const std::int64_t n = facts.get_int("gpu.count").value_or(0);
  std::vector<std::int64_t> rocr(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    rocr[static_cast<std::size_t>(i)] = i;
  std::vector<std::string> basis;
  bool uuid = false;
  if (auto v = facts.get<std::string>("env.rocr_visible_devices")) {
    std::vector<std::int64_t> picked;
    for (auto k : visible_list(*v, n, uuid))
      picked.push_back(rocr[static_cast<std::size_t>(k)]);
    rocr = picked;
    basis.push_back("ROCR_VISIBLE_DEVICES=" + *v);
  }
  std::vector<std::int64_t> hip = rocr;
  for (const auto& [var, key] : {std::pair{"HIP_VISIBLE_DEVICES", "env.hip_visible_devices"},
                                 std::pair{"CUDA_VISIBLE_DEVICES", "env.cuda_visible_devices"}}) {
    if (auto v = facts.get<std::string>(key)) {
      std::vector<std::int64_t> picked;
      for (auto k : visible_list(*v, static_cast<std::int64_t>(rocr.size()), uuid))
        picked.push_back(rocr[static_cast<std::size_t>(k)]);
      hip = picked;
      basis.push_back(fmt::format("{}={}", var, *v));
      break; // HIP reads CUDA_VISIBLE_DEVICES only when HIP_VISIBLE_DEVICES is unset
    }
  }
  const std::string src = basis.empty()
                              ? std::string("derived: every GPU (no *_VISIBLE_DEVICES set)")
                              : fmt::format("derived: {}", fmt::join(basis, ", "));
  // gpu.N.hip_device: the number HIP gives GPU N here, missing when it is not visible.
  for (std::int64_t i = 0; i < n; ++i) {
    const auto pos = std::find(hip.begin(), hip.end(), i);
    if (uuid)
      facts.put_status(fmt::format("gpu.{}.hip_device", i), Status::missing, src,
                       "a GPU-<uuid> entry in a *_VISIBLE_DEVICES list is not resolved");
    else if (pos == hip.end())
      facts.put_status(fmt::format("gpu.{}.hip_device", i), Status::missing, src,
                       "not visible to HIP here");
    else
      facts.put_ok(fmt::format("gpu.{}.hip_device", i),
                   static_cast<std::int64_t>(pos - hip.begin()), src);
  }
  if (uuid) {
    for (const char* k : {"gpu.visible", "gpu.device0", "gpu.device0_gfx_target",
                          "gpu.visible_gfx_targets", "gpu.visible_gfx_target_count"})
      facts.put_status(k, Status::missing, src,
                       "a GPU-<uuid> entry in a *_VISIBLE_DEVICES list is not resolved");
  } else {
    std::vector<std::string> names;
    names.reserve(hip.size());
    for (auto i : hip)
      names.push_back(fmt::format(
          "gpu.{} ({})", i,
          facts.get<std::string>(fmt::format("gpu.{}.gfx_target", i)).value_or("unknown target")));
    facts.put_ok("gpu.visible", names, src);
    // How many kinds of GPU HIP sees: an APU beside a discrete GPU (ROCm issue 5696) gives two.
    std::vector<std::string> targets;
    for (auto i : hip) {
      const auto g = facts.get<std::string>(fmt::format("gpu.{}.gfx_target", i));
      const std::string t = g.value_or("unknown target");
      if (std::find(targets.begin(), targets.end(), t) == targets.end()) targets.push_back(t);
    }
    facts.put_ok("gpu.visible_gfx_targets", targets, src);
    facts.put_ok("gpu.visible_gfx_target_count", static_cast<std::int64_t>(targets.size()), src);
    if (hip.empty()) {
      facts.put_status("gpu.device0", Status::missing, src, "no GPU is visible to HIP");
      facts.put_status("gpu.device0_gfx_target", Status::missing, src, "no GPU is visible to HIP");
    } else {
      facts.put_ok("gpu.device0", hip.front(), src);
      alias(facts, "gpu.device0_gfx_target", fmt::format("gpu.{}.gfx_target", hip.front()),
            "the device 0 GPU has no known target");
    }
  }
  // The gfx version ROCr reports for each GPU node: libhsakmt's topology_sysfs_get_node_props()
  // (libhsakmt/src/topology.c) reads HSA_OVERRIDE_GFX_VERSION_<node> for the node first, then
  // HSA_OVERRIDE_GFX_VERSION. <node> is libhsakmt's node number: the CPU nodes and the GPU nodes
  // it supports, in KFD sysfs order, which is the KFD node number (gpu.N.kfd_node) when it
  // supports every node. A value that is not MAJOR.MINOR.STEPPING (sscanf "%u.%u.%u%c" != 3, or
  // major > 63, minor or stepping > 255) makes the node's read fail (HSAKMT_STATUS_ERROR), and
  // with it ROCr's topology.
  std::vector<std::string> mismatch;
  std::vector<std::string> per_gpu;
  std::vector<std::string> invalid;
  const auto global = facts.get<std::string>("env.hsa_override_gfx_version");
  bool any = global.has_value();
  for (std::int64_t i = 0; i < n; ++i) {
    const auto node = facts.get<std::string>(keys::gpu(i, "kfd_node"));
    std::optional<std::string> value;
    std::string var = "HSA_OVERRIDE_GFX_VERSION";
    if (node) {
      value = facts.get<std::string>("env.hsa_override_gfx_version_" + *node);
      if (value) var += "_" + *node;
    }
    if (!value) value = global;
    if (!value) continue;
    any = true;
    const auto target = gfx_from_override(*value);
    const std::string setting = fmt::format("{}={}", var, *value);
    if (!target) {
      if (std::find(invalid.begin(), invalid.end(), setting) == invalid.end())
        invalid.push_back(setting);
      continue;
    }
    const auto g = facts.get<std::string>(fmt::format("gpu.{}.gfx_target", i));
    per_gpu.push_back(
        fmt::format("gpu.{} ({}): {} ({})", i, g.value_or("unknown target"), setting, *target));
    const bool seen = std::find(rocr.begin(), rocr.end(), i) != rocr.end();
    if (seen && g && *g != *target)
      mismatch.push_back(fmt::format("gpu.{} ({}) runs {} code ({})", i, *g, *target, setting));
  }
  // Per-node variables of nodes that are no GPU here are still read by nobody: not listed.
  if (auto names = facts.get<std::vector<std::string>>("env.names"))
    for (const auto& name : *names)
      if (name.starts_with("HSA_OVERRIDE_GFX_VERSION_")) any = true;
  facts.put_ok("env.hsa_override_set", any, "derived: /proc/self/environ");
  if (any) {
    facts.put_ok("env.hsa_override_mismatch", mismatch, src);
    facts.put_ok("env.hsa_override_per_gpu", per_gpu, src);
    facts.put_ok("env.hsa_override_invalid", invalid, src);
  } else {
    for (const char* k :
         {"env.hsa_override_mismatch", "env.hsa_override_per_gpu", "env.hsa_override_invalid"})
      facts.put_status(
          k, Status::missing, kDerived,
          "neither HSA_OVERRIDE_GFX_VERSION nor HSA_OVERRIDE_GFX_VERSION_<node> is set");
  }

  // The APU, wherever KFD lists it (a Strix Halo with a discrete GPU that enumerates first).
  std::optional<std::int64_t> apu;
  for (std::int64_t i = 0; i < n && !apu; ++i)
    if (facts.get<bool>(fmt::format("gpu.{}.apu", i)) == true) apu = i;
  facts.put_ok("apu.present", apu.has_value(), "derived: gpu.*.apu");
  const std::string why = "no APU among the AMD GPUs";
  if (apu)
    facts.put_ok("apu.index", *apu, "derived: gpu.*.apu");
  else
    facts.put_status("apu.index", Status::missing, kDerived, why);
  for (const char* m :
       {"gfx_target", "vram_total_bytes", "gtt_total_bytes", "amdgpu_bound", "card"})
    alias(facts, std::string("apu.") + m, apu ? fmt::format("gpu.{}.{}", *apu, m) : std::string(),
          why);
  // The smallest carve-out this machine's firmware offers (uma/carveout_options), where the
  // kernel lists them: a laptop whose minimum is large cannot go lower.
  const std::string card =
      apu ? facts.get<std::string>(fmt::format("gpu.{}.card", *apu)).value_or("") : std::string();
  alias(
      facts, "apu.carveout_min_bytes",
      card.empty() ? std::string() : "drm." + card + ".uma_carveout_min_bytes",
      "the firmware lists no carve-out options (uma/carveout_options: kernel 7.0+, some machines)");
  // gpu.N.hsa_coarse_pool_bytes: ROCr's GPU agents are the ROCR-visible GPUs in order, so GPU N's
  // agent is its position in that list.
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string key = keys::gpu(i, "hsa_coarse_pool_bytes");
    const auto at = std::find(rocr.begin(), rocr.end(), i);
    const Fact* hs = facts.find("hsa.status");
    if (at == rocr.end())
      facts.put_status(key, Status::missing, kDerived, "ROCR_VISIBLE_DEVICES hides this GPU");
    else if (hs != nullptr && hs->not_probed())
      facts.put_status(key, Status::missing, hs->source, hs->reason);
    else
      alias(facts, key, fmt::format("hsa.gpu.{}.coarse_pool_bytes", at - rocr.begin()),
            "the runtime probe did not report this GPU agent");
  }
  // ROCr's GPU agents are the ROCR-visible GPUs in order: the APU's agent is its position there.
  const auto pos = apu ? std::find(rocr.begin(), rocr.end(), *apu) : rocr.end();
  const Fact* hsa_status = facts.find("hsa.status");
  if (pos != rocr.end() && hsa_status != nullptr && hsa_status->not_probed())
    facts.put_status("apu.hsa_coarse_pool_bytes", Status::missing, hsa_status->source,
                     hsa_status->reason);
  else if (pos != rocr.end())
    alias(facts, "apu.hsa_coarse_pool_bytes",
          fmt::format("hsa.gpu.{}.coarse_pool_bytes", pos - rocr.begin()),
          "the runtime probe did not report this GPU agent");
  else
    facts.put_status("apu.hsa_coarse_pool_bytes", Status::missing, kDerived,
                     apu ? "ROCR_VISIBLE_DEVICES hides the APU" : why);
}

/// A Python package version "2.5.1+rocm6.2" split into its release ("2.5.1") and its local
/// version label ("rocm6.2"; PEP 440: after '+'; "" without one).
std::pair<std::string, std::string> split_local(const std::string& v) {
  const auto plus = v.find('+');
  return {v.substr(0, plus), plus == std::string::npos ? std::string() : v.substr(plus + 1)};
}

/// The first two numbers of a release ("2.5.1" -> {2, 5}); nullopt for anything else.
std::optional<std::pair<int, int>> major_minor(const std::string& release) {
  int major = 0;
  int minor = 0;
  const char* b = release.data();
  const char* e = b + release.size();
  auto r = std::from_chars(b, e, major);
  if (r.ec != std::errc() || r.ptr == e || *r.ptr != '.') return std::nullopt;
  r = std::from_chars(r.ptr + 1, e, minor);
  if (r.ec != std::errc() || major < 0 || major > 99 || minor < 0 || minor > 999)
    return std::nullopt;
  return std::make_pair(major, minor);
}

/// framework.deep.device0_expected_bytes: what HIP device 0 could give one process (an APU: its
/// carve-out or the TTM limit `halo-doctor fix` sets, whichever is larger; a discrete GPU: its
/// VRAM); framework.deep.device0_seen_ratio: PyTorch's total_memory of device 0 over that.
void derive_framework_deep(FactSet& facts) {
  const auto total = facts.get_int("framework.deep.device0.total_bytes");
  const auto dev0 = facts.get_int("gpu.device0");
  if (!total || !dev0) {
    // Not asked (no --framework-deep): not probed either, with the deep probe's reason.
    const Fact* deep = facts.find("framework.deep.status");
    const std::string why = deep != nullptr && deep->not_probed()
                                ? deep->reason
                                : "PyTorch's device 0 or HIP device 0 is unknown";
    for (const char* k :
         {"framework.deep.device0_expected_bytes", "framework.deep.device0_seen_ratio"})
      facts.put_status(k, Status::missing, kDerived, why);
    return;
  }
  const auto vram = facts.get_int(keys::gpu(*dev0, "vram_total_bytes"));
  const auto rec = facts.get_int("ttm.recommended_bytes");
  std::optional<std::int64_t> expected;
  if (facts.get<bool>(keys::gpu(*dev0, "apu")) == true && vram && rec)
    expected = std::max(*vram, *rec);
  else if (facts.get<bool>(keys::gpu(*dev0, "apu")) == false && vram)
    expected = *vram;
  if (!expected || *expected <= 0) {
    for (const char* k :
         {"framework.deep.device0_expected_bytes", "framework.deep.device0_seen_ratio"})
      facts.put_status(k, Status::missing, kDerived, "HIP device 0's memory is unknown");
    return;
  }
  facts.put_ok("framework.deep.device0_expected_bytes", *expected,
               "derived: an APU's max(carve-out, ttm.recommended_bytes), a dGPU's VRAM");
  facts.put_ok(
      "framework.deep.device0_seen_ratio",
      static_cast<double>(*total) / static_cast<double>(*expected),
      "derived: framework.deep.device0.total_bytes / framework.deep.device0_expected_bytes");
}

/// framework.companion_problems: torchvision and torchaudio that do not belong to the torch
/// beside them. Each release is built against one torch release (torchvision's README table:
/// torch 2.N pairs with torchvision 0.(N+15), torch 1.N with 0.(N+1); torchaudio 2.N with torch
/// 2.N, torch 1.N with torchaudio 0.N) and one build of it (the same local version label:
/// "+rocm6.2" with "+rocm6.2"; a PyPI wheel without a label is the CUDA build on Linux x86-64).
/// Their compiled operators are loaded into torch's process: a mismatch fails at import or at the
/// first call ("operator torchvision::nms does not exist", undefined symbols).
void derive_framework_companions(FactSet& facts) {
  const auto torch = facts.get<std::string>("framework.torch.version");
  if (!torch) {
    facts.put_status("framework.companion_problems", Status::missing, kDerived,
                     "no torch found (framework.torch.version)");
    return;
  }
  const auto [torch_release, torch_local] = split_local(*torch);
  const auto tmm = major_minor(torch_release);
  std::vector<std::string> problems;
  for (const char* pkg : {"torchvision", "torchaudio"}) {
    const auto v = facts.get<std::string>(fmt::format("framework.{}.version", pkg));
    if (!v) continue;
    const auto [release, local] = split_local(*v);
    const auto mm = major_minor(release);
    if (tmm && mm) {
      const bool vision = std::string_view(pkg) == "torchvision";
      std::pair<int, int> want{0, 0};
      if (tmm->first == 1)
        want = vision ? std::make_pair(0, tmm->second + 1) : std::make_pair(0, tmm->second);
      else
        want = vision ? std::make_pair(0, tmm->second + 15) : *tmm;
      if (*mm != want)
        problems.push_back(fmt::format("{} {} pairs with another torch than {} (it wants {} {}.{})",
                                       pkg, *v, *torch, pkg, want.first, want.second));
    }
    // The build its compiled operators are linked against (framework.<pkg>.build, from
    // DT_NEEDED) decides over the label: an unlabelled source build can be ROCm, and a
    // labelled wheel that needs libc10_cuda.so is CUDA.
    const auto build = facts.get<std::string>(fmt::format("framework.{}.build", pkg));
    const auto torch_build = facts.get<std::string>("framework.torch.build");
    if (build && torch_build) {
      if (*build != *torch_build)
        problems.push_back(fmt::format(
            "{} {} is a {} build ({}) but torch {} is a {} build: its operators cannot run on "
            "this torch's GPU",
            pkg, *v, *build, facts.find(fmt::format("framework.{}.build", pkg))->source, *torch,
            *torch_build));
      continue;
    }
    if (local != torch_local)
      problems.push_back(fmt::format(
          "{} {} {} but torch {} {}", pkg, *v,
          local.empty() ? std::string("has no build label (a PyPI wheel without one is the CUDA "
                                      "build on Linux)")
                        : "is the " + local + " build",
          *torch,
          torch_local.empty() ? std::string("has none") : "is the " + torch_local + " build"));
  }
  facts.put_ok("framework.companion_problems", problems,
               "derived: framework.torch.version, framework.torchvision.version, "
               "framework.torchaudio.version");
}

/// The processors each AMDGPU generic target runs on: LLVM's AMDGPUUsage "Generic Processor
/// Versions" table (https://llvm.org/docs/AMDGPUUsage.html#generic-processor-versions). A code
/// object built for gfx11-generic loads on gfx1151 (ROCm 6.4+ runtimes load generic code objects).
const std::map<std::string, std::vector<std::string>, std::less<>>& generic_targets() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> table = {
      {"gfx9-generic", {"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"}},
      {"gfx9-4-generic", {"gfx940", "gfx941", "gfx942", "gfx950"}},
      {"gfx10-1-generic", {"gfx1010", "gfx1011", "gfx1012", "gfx1013"}},
      {"gfx10-3-generic",
       {"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}},
      {"gfx11-generic",
       {"gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"}},
      {"gfx12-generic", {"gfx1200", "gfx1201"}},
  };
  return table;
}

/// framework.torch.kernel_targets: the gfx processors a ROCm PyTorch has GPU code for, both its own
/// (libtorch_hip.so's offload bundles: framework.torch.offload_targets) and its BLAS kernels
/// (rocBLAS/hipBLASLt file names: framework.torch.gfx_targets); a GPU needs both, so it is the
/// intersection of those that could be read, generic targets expanded to their processors.
void derive_framework_kernel_targets(FactSet& facts) {
  constexpr std::string_view kKey = "framework.torch.kernel_targets";
  std::optional<std::set<std::string>> targets;
  std::vector<std::string> used;
  std::vector<std::string> reasons;
  for (const char* key : {"framework.torch.offload_targets", "framework.torch.gfx_targets"}) {
    const Fact* f = facts.find(key);
    const auto list = facts.get<std::vector<std::string>>(key);
    if (f == nullptr || f->status != Status::ok || !list) {
      reasons.push_back(fmt::format("{}: {}", key,
                                    f == nullptr        ? std::string("not probed")
                                    : f->reason.empty() ? std::string(to_string(f->status))
                                                        : f->reason));
      continue;
    }
    std::set<std::string> expanded;
    for (const auto& t : *list) {
      expanded.insert(t);
      if (auto g = generic_targets().find(t); g != generic_targets().end())
        expanded.insert(g->second.begin(), g->second.end());
    }
    if (targets) {
      std::set<std::string> both;
      std::set_intersection(targets->begin(), targets->end(), expanded.begin(), expanded.end(),
                            std::inserter(both, both.end()));
      targets = std::move(both);
    } else {
      targets = std::move(expanded);
    }
    used.emplace_back(key);
  }
  if (!targets) {
    facts.put_status(std::string(kKey), Status::missing, kDerived,
                     fmt::format("{}", fmt::join(reasons, "; ")));
    return;
  }
  facts.put_ok(std::string(kKey), std::vector<std::string>(targets->begin(), targets->end()),
               fmt::format("derived: {}{}", fmt::join(used, " and "),
                           used.size() == 2 ? " (both needed: the intersection)" : ""));
}

/// True when AOTriton's image architecture `arch` (the <arch> of aotriton.images/amd-<arch>: a
/// chip such as gfx942, or an ISA family with `x` for any character after "gfx": gfx11xx,
/// gfx115x, gfx120x) covers the gfx processor `target`.
bool aotriton_image_covers(std::string_view arch, std::string_view target) {
  if (arch.size() != target.size() || !arch.starts_with("gfx") || !target.starts_with("gfx"))
    return false;
  for (std::size_t i = 3; i < arch.size(); ++i)
    if (arch[i] != 'x' && arch[i] != target[i]) return false;
  return true;
}

/// gpu.N.aotriton_images: the AOTriton images of the wheel (framework.torch.aotriton_images) that
/// cover GPU N's gfx target; an empty list means SDPA's flash and memory-efficient backends have
/// no kernels for it. Missing when either side is unknown.
void derive_aotriton_per_gpu(FactSet& facts) {
  constexpr std::string_view kImages = "framework.torch.aotriton_images";
  const std::int64_t n = facts.get_int(keys::gpu_count).value_or(0);
  const Fact* images_fact = facts.find(kImages);
  const auto images = facts.get<std::vector<std::string>>(kImages);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string key = keys::gpu(i, "aotriton_images");
    const auto target = facts.get<std::string>(keys::gpu(i, "gfx_target"));
    if (!images || !target) {
      facts.put_status(key, Status::missing, kDerived,
                       !target                  ? std::string("the GPU's gfx target is unknown")
                       : images_fact == nullptr ? std::string("the framework probe did not run")
                       : images_fact->reason.empty()
                           ? fmt::format("{}: {}", kImages, to_string(images_fact->status))
                           : images_fact->reason);
      continue;
    }
    std::vector<std::string> covering;
    for (const auto& arch : *images)
      if (aotriton_image_covers(arch, *target)) covering.push_back(arch);
    facts.put_ok(
        key, covering,
        fmt::format("derived: the {} of {} that cover {}", images->size(), kImages, *target));
  }
}

/// framework.torch.rocm_version: the ROCm release (MAJOR.MINOR) a ROCm wheel was built on and
/// bundles (pytorch.org wheels copy libamdhip64 and libhsa-runtime64 into torch/lib; TheRock's
/// keep them in _rocm_sdk_core): torch.version.hip is HIP's version, whose major and minor are the
/// ROCm release's ("6.2.41133-dd7f95766" is ROCm 6.2.0, "7.1.25424" ROCm 7.1). Its third field
/// is a build number, not the ROCm patch release, so only MAJOR.MINOR is derived.
void derive_framework_rocm_version(FactSet& facts) {
  constexpr std::string_view kKey = "framework.torch.rocm_version";
  const auto hip = facts.get<std::string>("framework.torch.hip_version");
  if (!hip) {
    const Fact* f = facts.find("framework.torch.hip_version");
    facts.put_status(std::string(kKey), Status::missing, kDerived,
                     f == nullptr || f->reason.empty() ? std::string("no ROCm build of torch found")
                                                       : f->reason);
    return;
  }
  static const RE2 kMajorMinor(R"(([0-9]{1,3})\.([0-9]{1,3})(?:[.+-].*)?)");
  std::string major;
  std::string minor;
  if (!RE2::FullMatch(*hip, kMajorMinor, &major, &minor)) {
    facts.put_status(std::string(kKey), Status::error, kDerived,
                     fmt::format("torch.version.hip '{}' is not MAJOR.MINOR[.BUILD]", *hip));
    return;
  }
  facts.put_ok(std::string(kKey), fmt::format("{}.{}", major, minor),
               "derived: framework.torch.hip_version (HIP's major.minor is the ROCm release's)");
}

/// env.debug_settings: debugging switches of HIP, ROCr and PyTorch left in the environment
/// training will see, each as "NAME=VALUE (what it costs)". AMD_SERIALIZE_KERNEL and
/// AMD_SERIALIZE_COPY (1, 2 or 3) make every kernel or copy wait (HIP's environment variables
/// reference); PYTORCH_NO_CUDA_MEMORY_CACHING / PYTORCH_NO_HIP_MEMORY_CACHING=1 turn PyTorch's
/// caching allocator off (docs/source/notes/cuda.rst and hip.rst); HSA_ENABLE_SDMA=0 moves copies
/// from the DMA engines to shader blits (a hang-diagnosis toggle: reference/amd-gpu-facts.md 2.5);
/// AMD_LOG_LEVEL of 3 or more logs every API call.
void derive_debug_settings(FactSet& facts) {
  struct Switch {
    const char* key;
    const char* name;
    bool (*on)(std::string_view);
    const char* cost;
  };
  static const std::array<Switch, 6> kSwitches{{
      {"env.amd_serialize_kernel", "AMD_SERIALIZE_KERNEL",
       [](std::string_view v) { return v == "1" || v == "2" || v == "3"; },
       "every kernel launch waits for the GPU"},
      {"env.amd_serialize_copy", "AMD_SERIALIZE_COPY",
       [](std::string_view v) { return v == "1" || v == "2" || v == "3"; },
       "every copy waits for the GPU"},
      {"env.pytorch_no_cuda_memory_caching", "PYTORCH_NO_CUDA_MEMORY_CACHING",
       [](std::string_view v) { return v == "1"; },
       "PyTorch's caching allocator is off: every tensor is a hipMalloc and hipFree"},
      {"env.pytorch_no_hip_memory_caching", "PYTORCH_NO_HIP_MEMORY_CACHING",
       [](std::string_view v) { return v == "1"; },
       "PyTorch's caching allocator is off: every tensor is a hipMalloc and hipFree"},
      {"env.hsa_enable_sdma", "HSA_ENABLE_SDMA", [](std::string_view v) { return v == "0"; },
       "copies run as shader blits instead of on the DMA engines"},
      {"env.amd_log_level", "AMD_LOG_LEVEL",
       [](std::string_view v) { return v.size() == 1 && v[0] >= '3' && v[0] <= '9'; },
       "HIP logs every API call"},
  }};
  // Without the environment (env.names not ok: /proc/self/environ unreadable), nothing is known.
  if (const Fact* names = facts.find("env.names"); names == nullptr || !names->ok()) {
    facts.put_status("env.debug_settings", Status::missing, kDerived,
                     names == nullptr || names->reason.empty()
                         ? std::string("the environment was not read")
                         : "the environment was not read: " + names->reason);
    return;
  }
  std::vector<std::string> on;
  for (const auto& sw : kSwitches)
    if (auto v = facts.get<std::string>(sw.key); v && sw.on(*v))
      on.push_back(fmt::format("{}={} ({})", sw.name, *v, sw.cost));
  facts.put_ok("env.debug_settings", on,
               "derived: AMD_SERIALIZE_KERNEL, AMD_SERIALIZE_COPY, PYTORCH_NO_{CUDA,HIP}_MEMORY_"
               "CACHING, HSA_ENABLE_SDMA, AMD_LOG_LEVEL of the environment");
}

/// PyTorch's allocator settings: each of PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF and
/// PYTORCH_HIP_ALLOC_CONF that is set, checked as c10 parses it (checks/alloc_conf.hpp), and
/// whether the HIP name is shadowed: c10/cuda/CUDAAllocatorConfig.h reads
/// PYTORCH_CUDA_ALLOC_CONF and only when it is unset PYTORCH_HIP_ALLOC_CONF.
void derive_alloc_conf(FactSet& facts) {
  const Fact* names = facts.find("env.names");
  if (names == nullptr || names->status != Status::ok) {
    for (const char* k : {"framework.alloc_conf.vars", "framework.alloc_conf.problems",
                          "framework.alloc_conf.shadowed"})
      facts.put_status(k, Status::missing, "derived", "the environment could not be read");
    return;
  }
  std::vector<std::string> vars;
  std::vector<std::string> problems;
  for (const auto& [var, key] :
       {std::pair{"PYTORCH_ALLOC_CONF", "env.pytorch_alloc_conf"},
        std::pair{"PYTORCH_CUDA_ALLOC_CONF", "env.pytorch_cuda_alloc_conf"},
        std::pair{"PYTORCH_HIP_ALLOC_CONF", "env.pytorch_hip_alloc_conf"}}) {
    const auto v = facts.get<std::string>(key);
    if (!v) continue;
    vars.emplace_back(var);
    for (const auto& p : alloc_conf_problems(*v))
      problems.push_back(fmt::format("{}={}: {}", var, v->substr(0, 200), p));
  }
  const std::string src = "derived: c10/core/AllocatorConfig.cpp parseArgs";
  facts.put_ok("framework.alloc_conf.vars", vars, src);
  facts.put_ok("framework.alloc_conf.problems", problems, src);
  const auto cuda = facts.get<std::string>("env.pytorch_cuda_alloc_conf");
  const auto hip = facts.get<std::string>("env.pytorch_hip_alloc_conf");
  facts.put_ok("framework.alloc_conf.shadowed", cuda && hip && *cuda != *hip,
               "derived: c10/cuda/CUDAAllocatorConfig.h (the CUDA name first, HIP only if unset)");
}

/// Where the doctor runs (checks/runenv.cpp lists the markers and their sources). A container
/// also shows when PCI lists no AMD GPU while /dev/kfd exists (the device was passed in).
/// Whether the machine is a virtual machine, as systemd-detect-virt decides it from DMI (systemd
/// src/basic/virt.c detect_vm_dmi_vendor(): the first of product_name, sys_vendor, board_vendor,
/// bios_vendor, product_version that starts with a known vendor), else from the CPU's hypervisor
/// flag ("vm-other"); "none" when neither says so; not probed when nothing could be read.
void derive_virtualization(FactSet& facts) {
  static constexpr auto kVendors = std::to_array<std::pair<std::string_view, std::string_view>>(
      {{"KVM", "kvm"},
       {"OpenStack", "kvm"},
       {"KubeVirt", "kvm"},
       {"Amazon EC2", "amazon"},
       {"QEMU", "qemu"},
       {"VMware", "vmware"},
       {"VMW", "vmware"},
       {"innotek GmbH", "oracle"},
       {"VirtualBox", "oracle"},
       {"Xen", "xen"},
       {"Bochs", "bochs"},
       {"Parallels", "parallels"},
       {"BHYVE", "bhyve"},
       {"Hyper-V", "microsoft"},
       {"Apple Virtualization", "apple"}});
  bool any = false;
  for (const char* f :
       {"product_name", "sys_vendor", "board_vendor", "bios_vendor", "product_version"}) {
    const std::string key = std::string("runenv.dmi.") + f;
    const auto v = facts.get<std::string>(key);
    if (!v) continue;
    any = true;
    for (const auto& [prefix, kind] : kVendors) {
      if (v->rfind(prefix, 0) != 0) continue;
      facts.put_ok("host.virtualization", std::string(kind),
                   fmt::format("derived: {} is \"{}\" (systemd-detect-virt's DMI table)", key, *v));
      return;
    }
  }
  if (const auto hv = facts.get<bool>("runenv.cpu_hypervisor_flag")) {
    facts.put_ok("host.virtualization", std::string(*hv ? "vm-other" : "none"),
                 *hv ? "derived: the CPU's hypervisor flag (/proc/cpuinfo)"
                     : "derived: no VM vendor in DMI, no hypervisor flag");
    return;
  }
  if (any)
    facts.put_ok("host.virtualization", std::string("none"),
                 "derived: no VM vendor in DMI (no CPU flags to read)");
  else
    facts.put_status("host.virtualization", Status::missing, "derived",
                     "neither /sys/class/dmi/id nor /proc/cpuinfo could be read");
}

void derive_runenv(FactSet& facts) {
  std::string kind;
  std::vector<std::string> evidence;
  auto yes = [&](const char* k) { return facts.get<bool>(k) == true; };
  if (yes("runenv.toolboxenv")) {
    kind = "toolbox";
    evidence.emplace_back("/run/.toolboxenv");
  } else if (facts.get<std::string>("env.container_id")) {
    kind = "distrobox";
    evidence.emplace_back("CONTAINER_ID in the environment");
  } else if (yes("runenv.kubernetes")) {
    kind = "kubernetes";
    evidence.emplace_back("/var/run/secrets/kubernetes.io/serviceaccount");
  } else if (yes("runenv.containerenv")) {
    kind = "podman";
    evidence.emplace_back("/run/.containerenv");
  } else if (yes("runenv.dockerenv")) {
    kind = "docker";
    evidence.emplace_back("/.dockerenv");
  } else if (auto c = facts.get<std::string>("runenv.systemd_container")) {
    kind = *c;
    evidence.push_back("/run/systemd/container: " + *c);
  } else if (auto e = facts.get<std::string>("runenv.cgroup_engine"); e && !e->empty()) {
    kind = *e == "kubepods" ? "kubernetes" : *e == "libpod" ? "podman" : *e;
    evidence.push_back("/proc/1/cgroup names " + *e);
  } else if (facts.get_int("pci.amd_gpu_count") == std::int64_t{0} &&
             facts.get<bool>("access.kfd.exists") == true) {
    kind = "container";
    evidence.emplace_back("/dev/kfd exists but /sys/bus/pci lists no AMD GPU");
  }
  facts.put_ok("host.container", !kind.empty(), "derived: container markers");
  // The two halves of the kernel/ROCm matrix: /proc, /sys and /dev show the running kernel, the
  // host's, while ROCm and PyTorch are the image's (issue 19; ROCm's Docker how-to: "Docker
  // containers share the kernel with the host OS"). Appended to the matrix rules' messages.
  facts.put_ok("host.stack_origin",
               kind.empty() ? std::string()
                            : fmt::format(" (ROCm user space from this {} container's image; the "
                                          "kernel, amdgpu and KFD are the host's)",
                                          kind),
               "derived: host.runs_in");
  // WSL2 (checks/wsl.cpp) is its own place, not a container: the distro runs on Microsoft's
  // kernel with the Windows driver's GPU. A container inside WSL2 stays that container.
  const bool wsl2 = kind.empty() && facts.get<bool>("wsl.wsl2") == true;
  if (wsl2) evidence.emplace_back("wsl.wsl2");
  facts.put_ok("host.runs_in",
               wsl2           ? std::string("wsl2")
               : kind.empty() ? std::string("host")
                              : kind,
               evidence.empty() ? std::string("derived: no container marker")
                                : fmt::format("derived: {}", fmt::join(evidence, ", ")));
}

/// The firmware files that failed to load at boot, split by whether the kernel would find them
/// now (kernel_log.firmware_on_disk, the kernel's firmware search path): present now means
/// installed after the boot, or on disk but not in the initramfs amdgpu loaded from; missing now
/// means the distribution's firmware package lacks them. Both keep the log's status when it
/// could not be read.
void derive_firmware_now(FactSet& facts) {
  const Fact* failed = facts.find("kernel_log.firmware_load_failures");
  const Fact* disk = facts.find("kernel_log.firmware_on_disk");
  const char* present_key = "kernel_log.firmware_present_now";
  const char* missing_key = "kernel_log.firmware_missing_now";
  for (const Fact* f : {failed, disk}) {
    if (f == nullptr || !f->ok()) {
      const Status st = f == nullptr ? Status::missing : f->status;
      const std::string why = f == nullptr ? "not collected" : f->reason;
      const std::string src = f == nullptr ? "derived" : f->source;
      facts.put_status(present_key, st, src, why);
      facts.put_status(missing_key, st, src, why);
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
  facts.put_ok(present_key, present, src);
  facts.put_ok(missing_key, missing, src);
}

/// The documented cause of each amdgpu probe failure in the kernel log, by error code.
/// -22 (EINVAL): amdgpu's IP discovery names blocks this kernel does not know (a kernel older
/// than the GPU; AMD's minimum kernels per family). -12 (ENOMEM): the VRAM BAR could not be
/// mapped: Above 4G Decoding / Resizable BAR off or CSM on (ROCm issue 2927). -110
/// (ETIMEDOUT): the GPU or its SMU did not answer during init. -2 (ENOENT): a firmware file is
/// missing (see kernel_log.firmware_load_failures). -19 (ENODEV): amdgpu declined the device.
std::string firmware_cause(const FactSet& facts) {
  const auto missing = facts.get<std::vector<std::string>>("kernel_log.firmware_missing_now");
  const auto present = facts.get<std::vector<std::string>>("kernel_log.firmware_present_now");
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
  const Fact* f = facts.find("kernel_log.amdgpu_probe_errors");
  if (f == nullptr || !f->ok()) {
    if (f != nullptr) {
      Fact c = *f;
      c.key = "kernel_log.amdgpu_probe_causes";
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
  facts.put_ok("kernel_log.amdgpu_probe_causes", out, f->source);
}

/// modprobe.d install lines as they act on amdgpu when kmod loads it (udev's coldplug by PCI
/// alias and `modprobe amdgpu` both call kmod_module_probe_insert_module, libkmod-module.c):
/// kmod runs amdgpu's own line instead of inserting it, and, for each dependency on the probe
/// list (the TTM module), that module's line too; the dependency's list is built by
/// __kmod_module_fill_softdep(), which ignores install lines only for modules with softdeps, so
/// even `modprobe --ignore-install amdgpu` runs ttm's. A dependency's command that fails stops
/// kmod before amdgpu ("else if (err < 0) break" for a required module); one that exits 0 without
/// loading it leaves amdgpu's symbols unresolved and its insertion fails. Built into the kernel,
/// amdgpu and its dependencies need no kmod at all (kmod_module_get_initstate: builtin).
/// Checked against kmod 30's `modprobe -n -v` by tests/cli/kmod_diff.py.
void derive_install_lines(FactSet& facts, std::vector<std::string>& blocked) {
  static constexpr std::array<const char*, 3> kStops = {
      "modprobe.install_stops_amdgpu", "modprobe.install_unjudged", "modprobe.install_no_effect"};
  if (const Fact* hidden = hidden_host_config(facts)) {
    for (const char* k : kStops)
      put_hidden(facts, k, *hidden);
    return;
  }
  std::vector<std::string> stops;
  std::vector<std::string> unjudged;
  std::vector<std::string> no_effect;
  auto line = [&](const std::string& m) {
    const Fact* f = facts.find("modprobe.install." + m);
    const auto pattern = facts.get<std::string>("modprobe.install_pattern." + m).value_or(m);
    return fmt::format("install {} {} ({}{})", pattern,
                       *facts.get<std::string>("modprobe.install." + m), f->source,
                       pattern == m ? std::string() : ", which matches " + m);
  };
  auto why = [&](const std::string& m) {
    return facts.get<std::string>("modprobe.install_why." + m).value_or("");
  };
  const bool builtin = facts.get<bool>("amdgpu.builtin") == true;
  if (!builtin && facts.find("modprobe.install.amdgpu") != nullptr) {
    const auto e = facts.get<std::string>("modprobe.install_effect.amdgpu").value_or("");
    if (e == "blocks")
      stops.push_back(fmt::format("{}: kmod runs it instead of loading amdgpu, and {}",
                                  line("amdgpu"), why("amdgpu")));
    else if (e == "unknown")
      unjudged.push_back(fmt::format("{}: kmod runs it instead of loading amdgpu ({})",
                                     line("amdgpu"), why("amdgpu")));
  }
  // The TTM module amdgpu needs: the one it holds now, else the in-kernel driver's ttm or a DKMS
  // build's amdttm/amd_ttm (ttm.cpp), else any of them.
  // The next load's amdgpu is the module file modprobe would pick (amdgpu.module.origin, read
  // when amdgpu is not live); a live one tells by its version file.
  std::vector<std::string> ttms;
  if (auto used = facts.get<std::string>("ttm.module")) {
    ttms.push_back(*used);
  } else if (auto origin = facts.get<std::string>("amdgpu.module.origin")) {
    if (*origin == "dkms")
      ttms = {"amdttm", "amd_ttm"};
    else if (*origin != "builtin")
      ttms = {"ttm"};
  } else if (facts.get<bool>("amdgpu.loaded") == true) {
    if (facts.get<bool>("amdgpu.dkms") == true)
      ttms = {"amdttm", "amd_ttm"};
    else
      ttms = {"ttm"};
  } else {
    ttms = {"ttm", "amdttm", "amd_ttm"};
  }
  for (const auto& m : ttms) {
    if (builtin || facts.find("modprobe.install." + m) == nullptr) continue;
    const auto e =
        facts.get<std::string>("modprobe.install_effect_as_dependency." + m).value_or("");
    if (e == "blocks")
      stops.push_back(fmt::format(
          "{}: amdgpu needs {}, and kmod runs this line instead of loading it whenever it loads "
          "amdgpu (--ignore-install amdgpu included): {}",
          line(m), m, why(m)));
    else if (e == "unknown")
      unjudged.push_back(fmt::format(
          "{}: kmod runs it instead of loading {}, which amdgpu needs ({})", line(m), m, why(m)));
  }
  // amdkfd has been part of amdgpu.ko since Linux 4.20 (drivers/gpu/drm/amd/amdkfd is built by
  // amdgpu's Makefile): nothing loads a module of that name, so its install line does nothing.
  if (facts.find("modprobe.install.amdkfd") != nullptr)
    no_effect.push_back(fmt::format("{}: amdkfd is part of amdgpu since Linux 4.20, so no module "
                                    "of that name is ever loaded and this line never runs",
                                    line("amdkfd")));
  for (const auto& s : stops)
    blocked.push_back(s);
  facts.put_ok("modprobe.install_stops_amdgpu", stops, "derived: modprobe.d install lines");
  facts.put_ok("modprobe.install_unjudged", unjudged, "derived: modprobe.d install lines");
  facts.put_ok("modprobe.install_no_effect", no_effect, "derived: modprobe.d install lines");
}

void derive_driver(FactSet& facts) {
  // amdgpu is live when its initstate says so, or when it is built in and bound to a card.
  bool live = facts.get<std::string>("amdgpu.initstate") == std::string("live");
  if (!live && facts.get<bool>("amdgpu.builtin") == true) {
    for (const auto& c :
         facts.get<std::vector<std::string>>("drm.amd_cards").value_or(std::vector<std::string>{}))
      if (facts.get<std::string>("drm." + c + ".driver") == std::string("amdgpu")) live = true;
  }
  facts.put_ok("amdgpu.live", live, "derived: /sys/module/amdgpu/initstate, DRM driver links");

  std::vector<std::string> blocked;
  // amdgpu_init() (amdgpu_drv.c): `nomodeset` stops amdgpu only while amdgpu.modeset is the
  // default -1 (drm_firmware_drivers_only()); amdgpu.modeset=0 stops it on any command line;
  // nomodeset amdgpu.modeset=1 loads it. modeset reaches amdgpu from modprobe.d or the command
  // line.
  const auto amdgpu_opts = module_options(facts, "amdgpu");
  std::optional<std::int64_t> modeset = -1;
  std::string modeset_src;
  if (auto it = amdgpu_opts.find("modeset"); it != amdgpu_opts.end()) {
    modeset = kernel_int(kIntParams[7], it->second.value);
    modeset_src = it->second.source;
  }
  if (modeset == std::int64_t{0})
    blocked.push_back(fmt::format("amdgpu.modeset=0 ({})", modeset_src));
  // With amdgpu live, nomodeset did not stop it on this kernel (amdgpu.modeset=1, or a kernel that
  // applies nomodeset to display-class devices only): it is not a blocker then.
  if (!live && facts.find("kernel.cmdline.param.nomodeset") != nullptr &&
      modeset == std::int64_t{-1})
    blocked.emplace_back("nomodeset (kernel command line)");
  // modprobe.blacklist= (kmod, every occurrence, comma-separated whole names) and the kernel's
  // own module_blacklist= (kernel/module/main.c: one string parameter, comma-separated, the last
  // occurrence wins).
  const auto mp_bl = facts.get<std::vector<std::string>>("kernel.cmdline.modprobe_blacklist")
                         .value_or(std::vector<std::string>{});
  if (std::find(mp_bl.begin(), mp_bl.end(), "amdgpu") != mp_bl.end())
    blocked.emplace_back("modprobe.blacklist=...amdgpu... (kernel command line)");
  if (auto v = facts.get<std::string>("kernel.cmdline.param.module_blacklist")) {
    std::string_view list = *v;
    while (true) {
      const auto comma = list.find(',');
      if (list.substr(0, comma) == "amdgpu") {
        blocked.push_back(fmt::format("module_blacklist={} (kernel command line)", *v));
        break;
      }
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  if (facts.find("modprobe.blacklist_source.amdgpu") != nullptr)
    blocked.push_back("blacklist amdgpu (" +
                      *facts.get<std::string>("modprobe.blacklist_source.amdgpu") + ")");
  derive_install_lines(facts, blocked);
  for (const auto& m : facts.get<std::vector<std::string>>("modparam.invalid_modules")
                           .value_or(std::vector<std::string>{}))
    blocked.push_back(fmt::format("an invalid {} option makes the module fail to load", m));
  facts.put_ok("amdgpu.blocked_by", blocked, "derived: /proc/cmdline, modprobe.d");
}

/// The value of a TTM parameter as configured for module `m`: kernel command line first (kmod
/// appends it after modprobe.d's options, so it wins), then modprobe.d. A value the kernel
/// rejects is `invalid` (see modparam.invalid), not a number.
struct Configured {
  std::optional<std::int64_t> cmdline;
  std::optional<std::int64_t> modprobe;
  std::string cmdline_src;
  std::string modprobe_src;
};

Configured configured(const FactSet& facts, const std::string& m, const std::string& p) {
  Configured c;
  const IntParam* ip = int_param(m, p);
  // The command line alone, as kmod reads it (it includes options after `--`).
  const auto from_cmd = module_options(facts, m, true);
  if (auto it = from_cmd.find(p); it != from_cmd.end()) {
    c.cmdline = ip != nullptr ? kernel_int(*ip, it->second.value) : std::nullopt;
    c.cmdline_src = it->second.source;
  }
  const std::string mk = "modprobe.options." + m + "." + p;
  if (auto v = facts.get<std::string>(mk)) {
    c.modprobe = ip != nullptr ? kernel_int(*ip, std::optional<std::string>(*v)) : std::nullopt;
    c.modprobe_src = facts.find(mk)->source;
  }
  return c;
}

void derive_ttm(FactSet& facts, const ProbeOptions& opt) {
  const std::array<std::string, 3> modules = {"ttm", "amdttm", "amd_ttm"};
  const std::array<std::string, 2> params = {"pages_limit", "page_pool_size"};
  auto used = facts.get<std::string>("ttm.module");

  std::vector<std::string> elsewhere;
  for (const auto& m : modules) {
    if (used && m == *used) continue;
    for (const auto& p : params) {
      const Configured c = configured(facts, m, p);
      if (!c.cmdline_src.empty())
        elsewhere.push_back(fmt::format("{}.{} (kernel command line)", m, p));
      if (!c.modprobe_src.empty())
        elsewhere.push_back(fmt::format("{}.{} ({})", m, p, c.modprobe_src));
    }
  }
  const Fact* hidden = hidden_host_config(facts);
  if (used && hidden != nullptr)
    put_hidden(facts, "ttm.configured_elsewhere", *hidden);
  else if (used)
    facts.put_ok("ttm.configured_elsewhere", elsewhere, "derived: /proc/cmdline, modprobe.d");
  else
    facts.put_status("ttm.configured_elsewhere", Status::missing, kDerived,
                     "the TTM module amdgpu uses is unknown");

  bool on_used = false;
  for (const auto& p : params) {
    const std::string base = "ttm.configured." + p;
    const std::string cmd_key = "ttm.cmdline." + p;
    const std::string mp_key = "ttm.modprobe." + p;
    if (!used) {
      for (const auto& k : {base, cmd_key, mp_key})
        for (const char* u : {"_pages", "_bytes"})
          facts.put_status(k + u, Status::missing, kDerived,
                           "the TTM module amdgpu uses is unknown");
      continue;
    }
    Configured c = configured(facts, *used, p);
    auto put = [&](const std::string& key, std::optional<std::int64_t> v, const std::string& src) {
      if (v) {
        facts.put_ok(key + "_pages", *v, src);
        // The kernel accepts any unsigned long (ttm_tt.c: module_param_named(pages_limit, ...,
        // ulong)), far beyond RAM: pages x 4096 in checked arithmetic, and a product beyond 64
        // bits is an error naming where it was set, never a wrapped value. ttm-limit-overcommit
        // then cannot pass (the _pages fact exists, the _bytes comparison is unknown).
        if (const auto bytes = units::checked_bytes(*v, units::kTtmPageBytes))
          facts.put_ok(key + "_bytes", *bytes, src);
        else
          facts.put_status(key + "_bytes", Status::error, src,
                           units::overflow_reason(*v, "pages", units::kTtmPageBytes));
      } else if (!src.empty()) {
        for (const char* u : {"_pages", "_bytes"})
          facts.put_status(key + u, Status::error, src,
                           "set to a value the kernel rejects: the module fails to load (see "
                           "modparam.invalid)");
      } else {
        facts.put_status(key + "_pages", Status::missing, kDerived, "not configured");
        facts.put_status(key + "_bytes", Status::missing, kDerived, "not configured");
      }
    };
    put(cmd_key, c.cmdline, c.cmdline_src);
    const bool cmd_given = !c.cmdline_src.empty();
    if (hidden != nullptr) {
      for (const char* u : {"_pages", "_bytes"}) {
        put_hidden(facts, mp_key + u, *hidden);
        if (!cmd_given) put_hidden(facts, base + u, *hidden);
      }
      if (cmd_given) put(base, c.cmdline, c.cmdline_src);
      on_used = on_used || c.cmdline;
      continue;
    }
    put(mp_key, c.modprobe, c.modprobe_src);
    put(base, cmd_given ? c.cmdline : c.modprobe, cmd_given ? c.cmdline_src : c.modprobe_src);
    on_used = on_used || c.cmdline || c.modprobe;
  }
  if (used && hidden != nullptr && !on_used)
    put_hidden(facts, "ttm.configured_on_used", *hidden);
  else if (used)
    facts.put_ok("ttm.configured_on_used", on_used, "derived: /proc/cmdline, modprobe.d");
  else
    facts.put_status("ttm.configured_on_used", Status::missing, kDerived,
                     "the TTM module amdgpu uses is unknown");

  // Recommended limit: MemTotal minus --reserve, in whole GiB, as 4 KiB pages. The largest limit
  // that leaves the OS its headroom is one fact, read by ttm-limit-overcommit and fix --ttm-limit.
  if (auto total = facts.get_int("mem.total_bytes")) {
    facts.put_ok("ttm.max_limit_bytes", *total - units::kTtmOsHeadroomBytes,
                 "derived: MemTotal - 2 GiB (units::kTtmOsHeadroomBytes)");
    const std::int64_t gib = *total / units::kGiB - opt.reserve_gib;
    const std::string src =
        fmt::format("derived: floor(MemTotal in GiB) - reserve {} GiB", opt.reserve_gib);
    // gib <= MemTotal / 2^30, so neither product can overflow; checked all the same.
    const auto pages = units::checked_bytes(gib, units::kPagesPerGiB);
    const auto bytes = units::checked_bytes(gib, units::kGiB);
    if (gib > 0 && pages && bytes) {
      facts.put_ok("ttm.recommended_gib", gib, src);
      facts.put_ok("ttm.recommended_pages", *pages, src);
      facts.put_ok("ttm.recommended_bytes", *bytes, src);
    } else if (gib > 0) {
      for (const char* k :
           {"ttm.recommended_gib", "ttm.recommended_pages", "ttm.recommended_bytes"})
        facts.put_status(k, Status::error, facts.find("mem.total_bytes")->source,
                         units::overflow_reason(gib, "GiB", units::kGiB));
    } else {
      for (const char* k :
           {"ttm.recommended_gib", "ttm.recommended_pages", "ttm.recommended_bytes"})
        facts.put_status(k, Status::error, src, "--reserve leaves no memory for the GPU");
    }
  } else {
    for (const char* k : {"ttm.recommended_gib", "ttm.recommended_pages", "ttm.recommended_bytes",
                          "ttm.max_limit_bytes"})
      facts.put_status(k, Status::missing, kDerived, "MemTotal unknown");
  }
}

void derive_gttsize(FactSet& facts) {
  // amdgpu.gttsize (MiB, -1 = auto) is deprecated; the configured value is what the user wrote,
  // the active one what the module took (0600: root only).
  std::optional<std::int64_t> v;
  std::string src;
  const auto opts = module_options(facts, "amdgpu");
  if (auto it = opts.find("gttsize"); it != opts.end()) {
    v = kernel_int(kIntParams[6], it->second.value);
    src = it->second.source;
  } else if (auto s = facts.get<std::string>("amdgpu.param.gttsize")) {
    v = kstrtoint(*s);
    src = facts.find("amdgpu.param.gttsize")->source;
  }
  const bool set = v && *v != -1;
  facts.put_ok("amdgpu.gttsize_set", set, src.empty() ? "derived: not configured" : src);
  if (set) {
    facts.put_ok("amdgpu.gttsize_mib", *v, src);
    // kstrtoint: at most 2^31 MiB, which fits; checked like every byte product.
    if (const auto bytes = units::checked_bytes(*v, units::kMiB))
      facts.put_ok("amdgpu.gttsize_bytes", *bytes, src);
    else
      facts.put_status("amdgpu.gttsize_bytes", Status::error, src,
                       units::overflow_reason(*v, "MiB", units::kMiB));
  } else {
    facts.put_status("amdgpu.gttsize_mib", Status::missing, kDerived, "amdgpu.gttsize is not set");
    facts.put_status("amdgpu.gttsize_bytes", Status::missing, kDerived,
                     "amdgpu.gttsize is not set");
  }
}

/// Known misspellings seen in the field; the kernel ignores them ("unknown parameter ignored").
struct Typo {
  const char* name;
  const char* hint;
};
constexpr std::array<Typo, 8> kTypos = {{
    {"amdgpu.gtt_size",
     "did you mean amdgpu.gttsize? It is deprecated anyway: use ttm.pages_limit (ROCm/ROCm#5595)"},
    {"ttm.pages_pool_size", "did you mean ttm.page_pool_size?"},
    {"amdttm.pages_pool_size", "did you mean amdttm.page_pool_size?"},
    {"amd_ttm.pages_pool_size", "did you mean amd_ttm.page_pool_size?"},
    {"ttm.page_limit", "did you mean ttm.pages_limit?"},
    {"amdttm.page_limit", "did you mean amdttm.pages_limit?"},
    {"ttm.pool_size", "did you mean ttm.page_pool_size?"},
    {"amdgpu.gtt", "did you mean amdgpu.gttsize? Use ttm.pages_limit instead"},
}};

/// True when the loaded module `m` lists its parameters in /sys/module/m/parameters and `p` is
/// not among them. Parameters with permission 0 are absent from sysfs, so only amdgpu and the TTM
/// modules, whose lists the probes hold, are judged; other modules give false.
bool lacks_param(const FactSet& facts, const std::string& m, const std::string& p) {
  std::optional<std::vector<std::string>> known;
  if (m == "amdgpu")
    known = facts.get<std::vector<std::string>>("amdgpu.param_names");
  else if (m == "ttm" || m == "amdttm" || m == "amd_ttm")
    known = facts.get<std::vector<std::string>>("ttm.module." + m + ".param_names");
  return known && std::find(known->begin(), known->end(), p) == known->end();
}

void derive_suspects(FactSet& facts) {
  std::vector<std::string> names;
  std::vector<std::string> hints;
  auto flag = [&](const std::string& name, const std::string& hint) {
    if (std::find(names.begin(), names.end(), name) != names.end()) return;
    names.push_back(name);
    hints.push_back(fmt::format("{}: {}", name, hint));
  };
  const auto cmd_names = facts.get<std::vector<std::string>>("kernel.cmdline.names");
  if (!cmd_names) {
    facts.put_status("kernel.cmdline.suspect_names", Status::missing, kDerived,
                     "no kernel command line");
    facts.put_status("kernel.cmdline.suspect_hints", Status::missing, kDerived,
                     "no kernel command line");
    return;
  }
  for (const auto& n : *cmd_names) {
    for (const auto& t : kTypos)
      if (n == t.name) flag(n, std::string("no such parameter, ") + t.hint);
    // A module parameter the loaded module does not have is ignored by the kernel.
    auto dot = n.find('.');
    if (dot != std::string::npos) {
      const std::string m = n.substr(0, dot);
      const std::string p = n.substr(dot + 1);
      if (lacks_param(facts, m, p))
        flag(n, fmt::format(
                    "the loaded {} module has no parameter '{}' (see /sys/module/{}/parameters)", m,
                    p, m));
    }
  }
  // parse_amd_iommu_options() (drivers/iommu/amd/init.c): comma-separated words, each matched by
  // prefix (strncmp) against this list; anything else is logged as "AMD-Vi: Unknown option - 'x'"
  // and ignored, so `amd_iommu=pt` and `amd_iommu=on` do nothing
  // (kyuz0/amd-strix-halo-toolboxes#66).
  if (auto v = facts.get<std::string>("kernel.cmdline.param.amd_iommu")) {
    static constexpr std::array<std::string_view, 9> kAmdIommuWords = {
        "fullflush", "force_enable", "off",         "force_isolation", "pgtbl_v1",
        "pgtbl_v2",  "irtcachedis",  "nohugepages", "v2_pgsizes_only"};
    std::string_view rest = *v;
    std::vector<std::string> unknown_words;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const std::string_view word = rest.substr(0, comma);
      const bool known =
          std::any_of(kAmdIommuWords.begin(), kAmdIommuWords.end(),
                      [&](std::string_view k) { return word.substr(0, k.size()) == k; });
      if (!known) unknown_words.emplace_back(word);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
      while (!rest.empty() && rest.front() == ',')
        rest.remove_prefix(1);
    }
    if (v->empty()) unknown_words.emplace_back("");
    if (!unknown_words.empty())
      flag("amd_iommu",
           fmt::format("amd_iommu={} has no effect: the kernel knows only fullflush, force_enable, "
                       "off, force_isolation, pgtbl_v1/v2, irtcachedis, nohugepages and "
                       "v2_pgsizes_only, and logs \"AMD-Vi: Unknown option - '{}'\" for the rest "
                       "(drivers/iommu/amd/init.c). For passthrough write iommu=pt; to disable the "
                       "IOMMU, amd_iommu=off (faster memory on Strix Halo, but no NPU and no VFIO; "
                       "kyuz0/amd-strix-halo-toolboxes#66)",
                       *v, unknown_words.front()));
  }
  for (const auto& n : *cmd_names) {
    if (n == "Modprobe.blacklist" || n == "Module_blacklist")
      flag(n, "kernel parameter names are case-sensitive: write modprobe.blacklist");
  }
  const std::string src = facts.find("kernel.cmdline.names")->source;
  facts.put_ok("kernel.cmdline.suspect_names", names, src);
  facts.put_ok("kernel.cmdline.suspect_hints", hints, src);

  // modprobe.d options for parameters the module does not have.
  std::vector<std::string> mp_hints;
  for (const Fact* opt : facts.match("modprobe.options.**")) {
    const Fact& f = *opt;
    const std::string& key = f.key;
    if (!f.ok()) continue;
    const std::string rest = key.substr(17);
    const auto dot = rest.find('.');
    const std::string m = rest.substr(0, dot);
    const std::string p = rest.substr(dot + 1);
    const auto notes = facts.get<std::vector<std::string>>("modprobe.note_words." + m)
                           .value_or(std::vector<std::string>{});
    const bool after_hash = std::find(notes.begin(), notes.end(), p) != notes.end();
    if (after_hash && !lacks_param(facts, m, p) &&
        facts.get<std::vector<std::string>>(m == "amdgpu" ? "amdgpu.param_names"
                                                          : "ttm.module." + m + ".param_names"))
      mp_hints.push_back(fmt::format(
          "options {} ... {}={} ({}): this follows a '#' but is applied: kmod starts a comment "
          "only at the beginning of a line (libkmod-config.c)",
          m, p, *facts.get<std::string>(key), f.source));
    else if (!after_hash && lacks_param(facts, m, p))
      mp_hints.push_back(
          fmt::format("options {} {} ({}): the module has no parameter '{}'", m, p, f.source, p));
  }
  if (const Fact* hidden = hidden_host_config(facts))
    put_hidden(facts, "modprobe.suspect_hints", *hidden);
  else
    facts.put_ok("modprobe.suspect_hints", mp_hints,
                 "derived: modprobe.d, /sys/module/*/parameters");
}

/// gpu.N.render.{path,exists,rw,gid,group,mode}: the access facts (checks/device_access.cpp) of
/// GPU N's own render node, /dev/dri/renderD<gpu.N.render_minor>, so that a per-GPU rule judges
/// each GPU's node (ROCr opens the render node of every GPU agent it exposes).
/// The key prefix ("access.render.1") of the member of a fact family (pattern
/// "access.render.*.path") whose string value is `value`; empty when none is. Joins a family
/// another probe indexed its own way to gpu.N.
std::string member_with(const FactSet& facts, std::string_view pattern, std::string_view value) {
  const std::string_view field = pattern.substr(pattern.rfind('.'));
  for (const Fact* f : facts.match(pattern))
    if (f->ok() && std::get_if<std::string>(&f->value) != nullptr &&
        std::get<std::string>(f->value) == value)
      return f->key.substr(0, f->key.size() - field.size());
  return {};
}

/// Copies `from.<field>` to `to.<field>` for each field (alias()); with `from` empty, each is
/// missing with `why`.
void alias_fields(FactSet& facts, const std::string& to, const std::string& from,
                  std::initializer_list<const char*> fields, const std::string& why) {
  for (const char* field : fields)
    alias(facts, to + "." + field, from.empty() ? std::string() : from + "." + field, why);
}

void derive_render_access(FactSet& facts) {
  const std::int64_t n = facts.get_int("gpu.count").value_or(0);
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
  const std::int64_t n = facts.get_int("gpu.count").value_or(0);
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

/// gpu.N.pcie.* and gpu.N.temp.*: the PCIe link and hwmon temperatures (checks/drm.cpp) of GPU
/// N's DRM card.
void derive_link_and_thermal_per_gpu(FactSet& facts) {
  const std::int64_t n = facts.get_int(keys::gpu_count).value_or(0);
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

/// Lists GPU indexes as "GPU 7" or "GPUs 0, 1, 2".
std::string gpu_list(const std::vector<std::int64_t>& idx) {
  return fmt::format("{} {}", idx.size() == 1 ? "GPU" : "GPUs", fmt::join(idx, ", "));
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
  const std::int64_t n = facts.get_int(keys::gpu_count).value_or(0);
  std::map<std::string, std::vector<std::int64_t>> by_card;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = facts.get<std::string>(keys::gpu(i, "card")).value_or("");
    if (!card.empty()) by_card[card].push_back(i);
  }
  std::map<std::string, std::vector<std::int64_t>> physical_by_mode;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = facts.get<std::string>(keys::gpu(i, "card")).value_or("");
    const std::string from = card.empty() ? std::string() : "drm." + card;
    const std::string no_files = "this GPU has no partition modes (no current_compute_partition)";
    alias(facts, keys::gpu(i, "compute_partition"),
          from.empty() ? std::string() : from + ".current_compute_partition", no_files);
    alias(facts, keys::gpu(i, "memory_partition"),
          from.empty() ? std::string() : from + ".current_memory_partition", no_files);
    if (card.empty()) {
      facts.put_ok(keys::gpu(i, "partition_index"), std::int64_t{0},
                   "derived: no DRM card, one logical GPU");
      facts.put_ok(keys::gpu(i, "partition_nodes"), std::int64_t{1},
                   "derived: no DRM card, one logical GPU");
      for (const char* k : {"partition_xcc", "partition_mode", "partition_expected_nodes"})
        facts.put_status(keys::gpu(i, k), Status::missing, kDerived, "no amdgpu DRM card");
      continue;
    }
    const auto& siblings = by_card[card];
    const auto pos = std::find(siblings.begin(), siblings.end(), i) - siblings.begin();
    const std::string src = fmt::format("derived: KFD nodes on {} (location_id)", card);
    facts.put_ok(keys::gpu(i, "partition_index"), static_cast<std::int64_t>(pos), src);
    facts.put_ok(keys::gpu(i, "partition_nodes"), static_cast<std::int64_t>(siblings.size()), src);
    std::int64_t xcc_sum = 0;
    bool xcc = true;
    for (const auto j : siblings) {
      const auto node = facts.get<std::string>(keys::gpu(j, "kfd_node"));
      const auto x = node ? facts.get_int("kfd.node." + *node + ".num_xcc") : std::nullopt;
      xcc = xcc && x && *x > 0 && *x <= 64;
      if (xcc) xcc_sum += *x;
    }
    if (xcc)
      facts.put_ok(keys::gpu(i, "partition_xcc"), xcc_sum, "derived: KFD num_xcc of " + card);
    else
      facts.put_status(keys::gpu(i, "partition_xcc"), Status::missing, kDerived,
                       "KFD lists no num_xcc for a node of this GPU (kernel before 6.5)");
    if (siblings.size() > 1) {
      const auto node = facts.get<std::string>(keys::gpu(i, "kfd_node")).value_or("");
      for (const Fact* b : facts.match("kfd.node." + node + ".mem_bank.*.size_bytes"))
        if (b->ok() && facts.get_int(b->key.substr(0, b->key.rfind('.')) + ".heap_type") != 0) {
          Fact c = *b;
          c.key = keys::gpu(i, "vram_total_bytes");
          facts.put(std::move(c));
          break;
        }
    }
    const auto compute = facts.get<std::string>(keys::gpu(i, "compute_partition"));
    const auto memory = facts.get<std::string>(keys::gpu(i, "memory_partition"));
    if (!compute || !memory) {
      const Fact* bad =
          facts.find(keys::gpu(i, compute ? "memory_partition" : "compute_partition"));
      for (const char* k : {"partition_mode", "partition_expected_nodes"}) {
        Fact c = bad != nullptr ? *bad : Fact{};
        c.key = keys::gpu(i, k);
        c.value = {};
        if (bad == nullptr) c.status = Status::missing;
        facts.put(std::move(c));
      }
      continue;
    }
    const std::string mode = *compute + "/" + *memory;
    facts.put_ok(keys::gpu(i, "partition_mode"), mode, "derived: " + from + ".current_*_partition");
    if (pos == 0) physical_by_mode[mode].push_back(i);
    static const std::map<std::string, std::int64_t, std::less<>> kPartitions = {
        {"SPX", 1}, {"DPX", 2}, {"TPX", 3}, {"QPX", 4}};
    if (const auto it = kPartitions.find(*compute); it != kPartitions.end())
      facts.put_ok(keys::gpu(i, "partition_expected_nodes"), it->second,
                   "derived: " + *compute + " is " + std::to_string(it->second) +
                       " partition(s) per GPU");
    else if (*compute == "CPX" && xcc)
      facts.put_ok(keys::gpu(i, "partition_expected_nodes"), xcc_sum,
                   "derived: CPX is one partition per XCC (KFD num_xcc)");
    else
      facts.put_status(keys::gpu(i, "partition_expected_nodes"), Status::missing, kDerived,
                       "compute partition '" + *compute + "' has no known partition count");
  }
  std::vector<std::string> modes;
  std::vector<std::string> summary;
  for (const auto& [mode, idx] : physical_by_mode) {
    modes.push_back(mode);
    summary.push_back(fmt::format("{} on {}", mode, gpu_list(idx)));
  }
  facts.put_ok("gpu.partition_modes", modes, "derived: gpu.*.partition_mode");
  facts.put_ok("gpu.partition_mode_count", static_cast<std::int64_t>(modes.size()),
               "derived: gpu.*.partition_mode");
  facts.put_ok("gpu.partition_summary", fmt::format("{}", fmt::join(summary, "; ")),
               "derived: gpu.*.partition_mode");
}

/// XGMI per GPU (checks/xgmi.cpp) and for the host: xgmi.expected_members, the physical
/// MI300-series GPUs here (an MI300X or MI325X board joins its eight OAMs in one hive), and
/// xgmi.main_hive_id, the hive most of them are in.
void derive_xgmi(FactSet& facts) {
  const std::int64_t n = facts.get_int(keys::gpu_count).value_or(0);
  std::int64_t members = 0;
  std::map<std::string, std::int64_t> hives;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = facts.get<std::string>(keys::gpu(i, "card")).value_or("");
    alias_fields(facts, keys::gpu(i, "xgmi"), card.empty() ? std::string() : "xgmi." + card,
                 {"member", "hive_id", "hive_size", "far_peers", "physical_id"},
                 "no amdgpu DRM card for this GPU, so no XGMI facts");
    if (facts.get_int(keys::gpu(i, "partition_index")).value_or(0) != 0) continue;
    if (facts.get<bool>(keys::gpu(i, "mi300_series")) == true) ++members;
    if (auto h = facts.get<std::string>(keys::gpu(i, "xgmi.hive_id")); h && *h != "0") ++hives[*h];
  }
  facts.put_ok("xgmi.expected_members", members,
               "derived: physical MI300-series GPUs (gpu.*.mi300_series)");
  if (hives.empty()) {
    facts.put_status("xgmi.main_hive_id", Status::missing, kDerived, "no GPU is in an XGMI hive");
    return;
  }
  const auto best = std::max_element(
      hives.begin(), hives.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  facts.put_ok("xgmi.main_hive_id", best->first, "derived: the hive most GPUs are in");
}

/// Firmware of the GPUs (checks/gpu_firmware.cpp) compared within each product (PCI device id):
/// gpu.firmware_mismatch lists each firmware whose version differs between GPUs of one product
/// ("mec (0x000080a5: GPU 2; 0x000080b1: GPUs 0, 1)"), gpu.firmware_compared the number of
/// GPUs of the largest product group whose firmware could be read. Partitions count once.
/// gpu.N.perf_level: the DPM performance level of GPU N's card; gpu.N.metrics.*: its gpu_metrics
/// table (checks/gpu_metrics.cpp).
void derive_gpu_firmware(FactSet& facts) {
  const std::int64_t n = facts.get_int(keys::gpu_count).value_or(0);
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

/// gpu.N.ras.*: the RAS counters (checks/ras.cpp) of GPU N's DRM card.
void derive_ras_per_gpu(FactSet& facts) {
  const std::int64_t n = facts.get_int("gpu.count").value_or(0);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string card = facts.get<std::string>(fmt::format("gpu.{}.card", i)).value_or("");
    alias_fields(facts, fmt::format("gpu.{}.ras", i), card.empty() ? std::string() : "ras." + card,
                 {"supported", "ue_count", "ce_count", "de_count", "ue_blocks", "bad_pages_retired",
                  "bad_pages_pending", "bad_pages_failed"},
                 "no amdgpu DRM card for this GPU, so no RAS counters");
  }
}

/// gpu.N.usable_bytes: the memory a process on GPU N can allocate, the capacity `plan` sets a
/// run against. ROCr's coarse-grained pool when the runtime was asked (HIP's totalGlobalMem is
/// that pool: rocm-systems PR 8475); else, from sysfs: a discrete GPU's VRAM; an APU whose GTT is
/// larger than its carve-out allocates from GTT up to the TTM limit (the kernel's apu_prefer_gtt,
/// commit 759e764; reference/framework-facts.md 2), else from the carve-out.
void derive_usable_memory(FactSet& facts) {
  const std::int64_t n = facts.get_int(keys::gpu_count).value_or(0);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string key = keys::gpu(i, "usable_bytes");
    if (auto pool = facts.get_int(keys::gpu(i, "hsa_coarse_pool_bytes"))) {
      facts.put_ok(key, *pool, "derived: ROCr's coarse-grained GPU pool (hsa_coarse_pool_bytes)");
      continue;
    }
    const auto vram = facts.get_int(keys::gpu(i, "vram_total_bytes"));
    if (!vram) {
      facts.put_status(key, Status::missing, kDerived, "the GPU's VRAM size is unknown");
      continue;
    }
    if (facts.get<bool>(keys::gpu(i, "apu")) != true) {
      facts.put_ok(key, *vram, "derived: the GPU's VRAM (mem_info_vram_total)");
      continue;
    }
    const auto gtt = facts.get_int(keys::gpu(i, "gtt_total_bytes"));
    const auto ttm = facts.get_int("ttm.pages_limit_bytes");
    if (!gtt || *gtt <= *vram) {
      facts.put_ok(key, *vram, "derived: APU carve-out (GTT is not larger than it)");
      continue;
    }
    const std::int64_t gpu_side = ttm ? std::min(*gtt, *ttm) : *gtt;
    facts.put_ok(key, std::max(*vram, gpu_side),
                 ttm ? "derived: APU: max(carve-out, min(GTT, TTM pages_limit))"
                     : "derived: APU: max(carve-out, GTT) (TTM limit unknown)");
  }
}

/// The GPU a plan runs on (HIP device 0) and its capacity; on an APU also the capacity with the
/// recommended TTM limit (ttm.recommended_bytes), which `halo-doctor fix` sets.
void derive_plan(FactSet& facts) {
  if (facts.get<bool>("plan.present") != true) {
    for (const char* k : {"plan.gpu", "plan.capacity_bytes", "plan.capacity_with_ttm_fix_bytes",
                          "plan.apu", "plan.gfx_target"})
      facts.put_status(k, Status::missing, kDerived, "no training run given (--model)");
    return;
  }
  const auto dev0 = facts.get_int("gpu.device0");
  if (!dev0) {
    for (const char* k : {"plan.gpu", "plan.capacity_bytes", "plan.capacity_with_ttm_fix_bytes",
                          "plan.apu", "plan.gfx_target"})
      facts.put_status(k, Status::missing, kDerived, "no GPU is visible to HIP");
    return;
  }
  facts.put_ok("plan.gpu", *dev0, "derived: HIP device 0 (gpu.device0)");
  alias(facts, "plan.capacity_bytes", keys::gpu(*dev0, "usable_bytes"), "unknown");
  alias(facts, "plan.apu", keys::gpu(*dev0, "apu"), "unknown");
  alias(facts, "plan.gfx_target", keys::gpu(*dev0, "gfx_target"), "unknown");
  const auto vram = facts.get_int(keys::gpu(*dev0, "vram_total_bytes"));
  const auto rec = facts.get_int("ttm.recommended_bytes");
  if (facts.get<bool>(keys::gpu(*dev0, "apu")) == true && vram && rec)
    facts.put_ok("plan.capacity_with_ttm_fix_bytes", std::max(*vram, *rec),
                 "derived: APU with the TTM limit at ttm.recommended_bytes");
  else
    facts.put_status("plan.capacity_with_ttm_fix_bytes", Status::missing, kDerived,
                     "not an APU, or MemTotal unknown");
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  derive_gpus(facts);
  derive_ras_per_gpu(facts);
  derive_link_and_thermal_per_gpu(facts);
  derive_partitions(facts);
  derive_xgmi(facts);
  derive_gpu_firmware(facts);
  derive_render_access(facts);
  derive_libdrm_per_gpu(facts);
  derive_runenv(facts);
  derive_virtualization(facts);
  derive_alloc_conf(facts);
  derive_debug_settings(facts);
  derive_framework_companions(facts);
  derive_framework_kernel_targets(facts);
  derive_framework_rocm_version(facts);
  derive_aotriton_per_gpu(facts);
  derive_visibility(facts);
  derive_invalid_options(facts);
  derive_binding(facts);
  derive_firmware_now(facts);
  derive_probe_causes(facts);
  derive_driver(facts);
  derive_ttm(facts, ctx.options);
  derive_gttsize(facts);
  derive_suspects(facts);
  derive_usable_memory(facts);
  derive_plan(facts);
  derive_framework_deep(facts);
}

} // namespace

std::unique_ptr<Probe> make_derived_probe() {
  using enum FactType;
  std::vector<FactDecl> decls{
      {"amd.gpu_present", boolean, "", "an AMD GPU is here (PCI, DRM or KFD)"},
      {"gpu.count", integer, "count",
       "the GPUs: KFD GPU nodes, else AMD DRM cards, else AMD PCI GPUs"},
      {"gpu.*.gfx_target", string, "",
       "GPU N's gfx target (KFD; without KFD, from the PCI device id: checks/gfx.cpp)"},
      {"gpu.*.device_id", integer, "", "GPU N's PCI device id"},
      {"gpu.*.card", string, "", "GPU N's DRM card (`card1`), joined by render minor"},
      {"gpu.*.vram_total_bytes", integer, "bytes",
       "GPU N's VRAM (a partition's: its KFD frame-buffer bank, ROCm#4750)"},
      {"gpu.*.vis_vram_total_bytes", integer, "bytes", "GPU N's CPU-visible VRAM"},
      {"gpu.*.gtt_total_bytes", integer, "bytes", "GPU N's GTT"},
      {"gpu.*.apu", boolean, "", "GPU N is an APU (table in checks/gfx.cpp)"},
      {"gpu.*.instinct", boolean, "", "GPU N is an Instinct accelerator (table in checks/gfx.cpp)"},
      {"gpu.*.mi300_series", boolean, "", "GPU N is MI300-class"},
      {"gpu.*.kfd_node", string, "", "GPU N's KFD node id"},
      {"gpu.*.amdgpu_bound", boolean, "", "amdgpu drives GPU N's PCI device"},
      {"gpu.*.name", string, "",
       "the product name from the PCI device id table (checks/gfx.cpp, pci.ids names)"},
      {"gpu.*.pci_slot", string, "",
       "GPU N's PCI address: its DRM card's PCI device (`/sys/class/drm/cardX/device`), else its "
       "PCI device"},
      {"gpu.*.hip_device", integer, "",
       "the device number HIP gives GPU N under this environment's `ROCR_VISIBLE_DEVICES` and "
       "`HIP_VISIBLE_DEVICES`; missing when training here will not see it"},
      {"gpu.*.render_minor", integer, "",
       "GPU N's render node minor: `drm_render_minor` of its KFD node, else its DRM card's"},
      {"gpu.*.hsa_coarse_pool_bytes", integer, "bytes",
       "ROCr's coarse-grained pool of GPU N's agent (its position among the ROCR-visible GPUs)"},
      {"gpu.*.usable_bytes", integer, "bytes",
       "what a process on GPU N can allocate: that pool, else a discrete GPU's VRAM, else on an "
       "APU `max(carve-out, min(GTT, TTM pages_limit))` (docs/plan.md \"Capacity\")"},
      {"plan.gpu", integer, "", "the GPU the run uses (HIP device 0, `gpu.device0`)"},
      {"plan.capacity_bytes", integer, "bytes", "that GPU's `usable_bytes`"},
      {"plan.capacity_with_ttm_fix_bytes", integer, "bytes",
       "on an APU, the capacity with the TTM limit at `ttm.recommended_bytes`"},
      {"plan.apu", boolean, "", "that GPU is an APU"},
      {"plan.gfx_target", string, "", "that GPU's gfx target"},
      {"gpu.*.render.path", string, "",
       "the path of GPU N's render node `/dev/dri/renderD<minor>`"},
      {"gpu.*.render.exists", boolean, "",
       "it exists here (not in a container started without `/dev/dri`)"},
      {"gpu.*.render.rw", boolean, "", "the user may read and write it (`access.render.*.rw`)"},
      {"gpu.*.render.gid", integer, "", "its group's gid"},
      {"gpu.*.render.group", string, "", "its group's name"},
      {"gpu.*.render.mode", string, "", "its permission bits, octal"},
      {"gpu.render_nodes_present", integer, "count",
       "how many GPUs' render nodes exist here (0 in a container started without `/dev/dri`)"},
      {"gpu.*.ras.supported", boolean, "", "GPU N's card's `ras.<card>.supported`"},
      {"gpu.*.ras.ue_count", integer, "count", "GPU N's card's `ras.<card>.ue_count`"},
      {"gpu.*.ras.ce_count", integer, "count", "GPU N's card's `ras.<card>.ce_count`"},
      {"gpu.*.ras.de_count", integer, "count", "GPU N's card's `ras.<card>.de_count`"},
      {"gpu.*.ras.ue_blocks", list, "", "GPU N's card's `ras.<card>.ue_blocks`"},
      {"gpu.*.ras.bad_pages_retired", integer, "count",
       "GPU N's card's `ras.<card>.bad_pages_retired`"},
      {"gpu.*.ras.bad_pages_pending", integer, "count",
       "GPU N's card's `ras.<card>.bad_pages_pending`"},
      {"gpu.*.ras.bad_pages_failed", integer, "count",
       "GPU N's card's `ras.<card>.bad_pages_failed`"},
      {"gpu.*.pcie.current_speed_gts", number, "GT/s",
       "GPU N's card's `drm.<card>.pcie.current_speed_gts`"},
      {"gpu.*.pcie.max_speed_gts", number, "GT/s",
       "GPU N's card's `drm.<card>.pcie.max_speed_gts`"},
      {"gpu.*.pcie.current_width", integer, "lanes",
       "GPU N's card's `drm.<card>.pcie.current_width`"},
      {"gpu.*.pcie.max_width", integer, "lanes", "GPU N's card's `drm.<card>.pcie.max_width`"},
      {"gpu.*.temp.edge_mc", integer, "millidegrees C", "GPU N's card's `drm.<card>.temp.edge_mc`"},
      {"gpu.*.temp.edge_crit_mc", integer, "millidegrees C",
       "GPU N's card's `drm.<card>.temp.edge_crit_mc`"},
      {"gpu.*.temp.junction_mc", integer, "millidegrees C",
       "GPU N's card's `drm.<card>.temp.junction_mc`"},
      {"gpu.*.temp.junction_crit_mc", integer, "millidegrees C",
       "GPU N's card's `drm.<card>.temp.junction_crit_mc`"},
      {"gpu.*.temp.mem_mc", integer, "millidegrees C", "GPU N's card's `drm.<card>.temp.mem_mc`"},
      {"gpu.*.temp.mem_crit_mc", integer, "millidegrees C",
       "GPU N's card's `drm.<card>.temp.mem_crit_mc`"},
      {"gpu.*.power.cap_uw", integer, "microwatts", "GPU N's card's `drm.<card>.power.cap_uw`"},
      {"gpu.*.power.cap_max_uw", integer, "microwatts",
       "GPU N's card's `drm.<card>.power.cap_max_uw`"},
      {"gpu.*.power.cap_default_uw", integer, "microwatts",
       "GPU N's card's `drm.<card>.power.cap_default_uw`"},
      {"gpu.*.power.now_uw", integer, "microwatts", "GPU N's card's `drm.<card>.power.now_uw`"},
      {"gpu.*.compute_partition", string, "", "GPU N's card's `current_compute_partition`"},
      {"gpu.*.memory_partition", string, "", "GPU N's card's `current_memory_partition`"},
      {"gpu.*.partition_index", integer, "",
       "GPU N's place among its card's compute partitions (0: the GPU is judged once by "
       "physical-GPU rules)"},
      {"gpu.*.partition_nodes", integer, "count", "the KFD nodes (partitions) of GPU N's card"},
      {"gpu.*.partition_xcc", integer, "count", "their `num_xcc` summed"},
      {"gpu.*.partition_mode", string, "",
       "the card's `compute/memory` partition pair (`CPX/NPS4`)"},
      {"gpu.*.partition_expected_nodes", integer, "count",
       "the nodes the compute mode should give: SPX 1, DPX 2, TPX 3, QPX 4, CPX one per XCC"},
      {"gpu.partition_modes", list, "", "the distinct `compute/memory` pairs of the physical GPUs"},
      {"gpu.partition_mode_count", integer, "count", "how many distinct pairs"},
      {"gpu.partition_summary", string, "", "who runs which pair"},
      {"gpu.*.xgmi.member", boolean, "", "GPU N's card's `xgmi.<card>.member`"},
      {"gpu.*.xgmi.hive_id", string, "", "GPU N's card's `xgmi.<card>.hive_id`"},
      {"gpu.*.xgmi.hive_size", integer, "count", "GPU N's card's `xgmi.<card>.hive_size`"},
      {"gpu.*.xgmi.far_peers", integer, "count", "GPU N's card's `xgmi.<card>.far_peers`"},
      {"gpu.*.xgmi.physical_id", integer, "", "GPU N's card's `xgmi.<card>.physical_id`"},
      {"xgmi.expected_members", integer, "count", "the physical MI300-series GPUs here"},
      {"xgmi.main_hive_id", string, "", "the hive most of them are in"},
      {"gpu.*.perf_level", string, "", "the DPM level of GPU N's card (`drm.<card>.perf_level`)"},
      {"gpu.*.metrics.version", string, "", "GPU N's card's `gpu_metrics.<card>.version`"},
      {"gpu.*.metrics.temperature_edge_c", integer, "degrees C",
       "GPU N's card's `gpu_metrics.<card>.temperature_edge_c`"},
      {"gpu.*.metrics.temperature_hotspot_c", integer, "degrees C",
       "GPU N's card's `gpu_metrics.<card>.temperature_hotspot_c`"},
      {"gpu.*.metrics.temperature_mem_c", integer, "degrees C",
       "GPU N's card's `gpu_metrics.<card>.temperature_mem_c`"},
      {"gpu.*.metrics.socket_power_w", integer, "watts",
       "GPU N's card's `gpu_metrics.<card>.socket_power_w`"},
      {"gpu.*.metrics.throttle_power", list, "",
       "GPU N's card's `gpu_metrics.<card>.throttle_power`"},
      {"gpu.*.metrics.throttle_current", list, "",
       "GPU N's card's `gpu_metrics.<card>.throttle_current`"},
      {"gpu.*.metrics.throttle_thermal", list, "",
       "GPU N's card's `gpu_metrics.<card>.throttle_thermal`"},
      {"gpu.firmware_mismatch", list, "",
       "for each product (PCI device id) with two or more GPUs, every firmware (and the VBIOS) "
       "whose version differs between them, as `name (value: GPUs ...; value: GPU ...)` (`absent`, "
       "`unreadable` count as values)"},
      {"gpu.firmware_compared", integer, "count", "the size of the largest group compared"},
      {"gpu.*.mes_fw_version", integer, "",
       "the MES firmware version libdrm_amdgpu read (`AMDGPU_INFO_FW_MES`) from the device whose "
       "PCI bus id is GPU N's slot; without that, the card's `fw_version/mes_fw_version` (the same "
       "masked number, no root)"},
      {"gpu.*.mes_fw_version_hex", string, "", "the same as `0x%08x`"},
      {"gpu.*.mes_feature_version", integer, "",
       "the MES feature version libdrm_amdgpu read; missing without libdrm"},
      {"host.container", boolean, "",
       "the doctor runs in a container: a container marker of the runenv probe, or `/dev/kfd` with "
       "no AMD GPU in `/sys/bus/pci`"},
      {"host.runs_in", string, "",
       "the kind of container (`toolbox`, `podman`, `docker`, `kubernetes`, ...), else `host`"},
      {"host.stack_origin", string, "",
       "in a container, the phrase the kernel/ROCm matrix rules append to say that ROCm is the "
       "image's and the kernel the host's (empty on the host)"},
      {"host.virtualization", string, "",
       "systemd-detect-virt's DMI vendor table (systemd src/basic/virt.c), else `vm-other` from "
       "the hypervisor flag, else `none`"},
      {"framework.alloc_conf.vars", list, "",
       "each of `PYTORCH_ALLOC_CONF`, `PYTORCH_CUDA_ALLOC_CONF`, `PYTORCH_HIP_ALLOC_CONF` that is "
       "set"},
      {"framework.alloc_conf.problems", list, "",
       "what c10/core/AllocatorConfig.cpp would reject in them, each parsed as it does "
       "(checks/alloc_conf.cpp): the TORCH_CHECK message it would raise"},
      {"framework.alloc_conf.shadowed", boolean, "",
       "the CUDA and HIP names are both set and differ (c10/cuda/CUDAAllocatorConfig.h reads the "
       "HIP name only when the CUDA name is unset)"},
      {"framework.companion_problems", list, "",
       "each of torchvision and torchaudio whose release does not pair with torch's (torch 2.N: "
       "torchvision 0.(N+15), torchaudio 2.N; 1.N: 0.(N+1), 0.N) or whose local label (`+rocm6.2`) "
       "differs from torch's"},
      {"framework.torch.kernel_targets", list, "",
       "the intersection of `framework.torch.offload_targets` and `framework.torch.gfx_targets` "
       "where each could be read, generic targets (`gfx11-generic`) expanded to their processors "
       "(LLVM AMDGPUUsage); what torch-missing-gfx-target judges"},
      {"framework.torch.rocm_version", string, "",
       "the ROCm release (`MAJOR.MINOR`) of a ROCm wheel, from `torch.version.hip` (HIP's "
       "major.minor are ROCm's; its third field is a build number); `error` when it is not "
       "`MAJOR.MINOR[.BUILD]`"},
      {"env.debug_settings", list, "",
       "debugging switches left on in the environment, as `NAME=VALUE (cost)`: "
       "`AMD_SERIALIZE_KERNEL`/`AMD_SERIALIZE_COPY` 1-3, `PYTORCH_NO_{CUDA,HIP}_MEMORY_CACHING=1`, "
       "`HSA_ENABLE_SDMA=0`, `AMD_LOG_LEVEL` 3 or more"},
      {"gpu.*.aotriton_images", list, "",
       "the AOTriton kernel images of the wheel (`framework.torch.aotriton_images`) whose name "
       "covers GPU N's gfx target (`gfx11xx` covers gfx1151: `x` is any digit); empty: SDPA has "
       "no flash or memory-efficient kernels for it"},
      {"framework.deep.device0_expected_bytes", integer, "bytes",
       "what HIP device 0 could give a process: an APU's max(carve-out, `ttm.recommended_bytes`), "
       "a dGPU's VRAM"},
      {"framework.deep.device0_seen_ratio", number, "",
       "PyTorch's share of it: `framework.deep.device0.total_bytes` / "
       "`framework.deep.device0_expected_bytes`"},
      {"gpu.visible", list, "",
       "the GPUs training here sees, in HIP order: `ROCR_VISIBLE_DEVICES`, then "
       "`HIP_VISIBLE_DEVICES` (else `CUDA_VISIBLE_DEVICES`) indexing into what ROCr left; a list "
       "stops at its first invalid entry"},
      {"gpu.visible_gfx_targets", list, "", "their distinct gfx targets"},
      {"gpu.visible_gfx_target_count", integer, "count", "how many distinct targets"},
      {"gpu.device0", integer, "", "the GPU (index N of `gpu.N`) that is HIP device 0"},
      {"gpu.device0_gfx_target", string, "", "its gfx target"},
      {"env.hsa_override_mismatch", list, "",
       "the GPUs ROCr sees whose target differs from the override that applies to them "
       "(`HSA_OVERRIDE_GFX_VERSION_<node>`, else `HSA_OVERRIDE_GFX_VERSION`), as `gpu.N (gfx) "
       "runs gfxM code (VAR=value)`"},
      {"env.hsa_override_per_gpu", list, "",
       "each GPU an override applies to, with the variable (per node or global) and its target"},
      {"env.hsa_override_invalid", list, "",
       "overrides that are not MAJOR.MINOR.STEPPING (libhsakmt then fails to read the node)"},
      {"env.hsa_override_set", boolean, "",
       "`HSA_OVERRIDE_GFX_VERSION` or some `HSA_OVERRIDE_GFX_VERSION_<node>` is set"},
      {"apu.present", boolean, "", "an APU is here, wherever KFD lists it (a dGPU may be GPU 0)"},
      {"apu.index", integer, "", "the APU's N in `gpu.N`"},
      {"apu.gfx_target", string, "", "the APU's gfx target"},
      {"apu.vram_total_bytes", integer, "bytes", "the APU's VRAM: the BIOS carve-out"},
      {"apu.gtt_total_bytes", integer, "bytes", "the APU's GTT"},
      {"apu.amdgpu_bound", boolean, "", "amdgpu drives the APU"},
      {"apu.hsa_coarse_pool_bytes", integer, "bytes", "ROCr's coarse-grained pool of the APU"},
      {"apu.card", string, "", "the APU's DRM card"},
      {"apu.carveout_min_bytes", integer, "bytes",
       "the smallest carve-out the APU's firmware offers (`drm.<card>.uma_carveout_min_bytes`)"},
      {"amdgpu.live", boolean, "",
       "amdgpu is running: initstate `live`, or a DRM card driven by amdgpu"},
      {"amdgpu.blocked_by", list, "",
       "what stops amdgpu at the next boot: `nomodeset` (only while `amdgpu.modeset` is -1 and "
       "amdgpu is not live), `amdgpu.modeset=0`, `modprobe.blacklist=`, `module_blacklist=`, "
       "modprobe.d blacklist/install lines, invalid options"},
      {"modprobe.install_stops_amdgpu", list, "",
       "modprobe.d install lines that keep amdgpu from loading: amdgpu's own, or that of the TTM "
       "module it needs, as `install <module> <command> (file:line): why`"},
      {"modprobe.install_unjudged", list, "",
       "install lines for amdgpu or its TTM module whose effect the doctor cannot follow"},
      {"modprobe.install_no_effect", list, "",
       "install lines that never run (amdkfd: part of amdgpu since Linux 4.20)"},
      {"amd.gpus_unbound", list, "",
       "AMD GPUs whose `/sys/bus/pci/devices/BDF/driver` is not amdgpu (none, or another driver)"},
      {"kernel_log.amdgpu_probe_causes", list, "",
       "what the amdgpu probe errors in the kernel log mean (the -2 cause says which firmware is "
       "on disk now and which is missing)"},
      {"kernel_log.firmware_present_now", list, "",
       "failed firmware files on disk now (installed since boot, or not in the initramfs: rebuild "
       "it and reboot)"},
      {"kernel_log.firmware_missing_now", list, "",
       "failed firmware files still missing (install linux-firmware)"},
      {"amd.gpus_passthrough", list, "",
       "AMD GPUs bound to vfio-pci or pci-stub (passed through to a VM)"},
      {"modparam.invalid", list, "",
       "ttm/amdttm/amd_ttm `pages_limit`, `page_pool_size` and amdgpu `gttsize`, `modeset` values "
       "the kernel rejects (kstrtoul / kstrtoint, base 0) in the options the module receives "
       "(modprobe.d, then the command line)"},
      {"modparam.invalid_modules", list, "", "the modules with such values"},
      {"ttm.configured_elsewhere", list, "", "TTM settings aimed at modules amdgpu does not use"},
      {"ttm.configured_on_used", boolean, "",
       "a TTM limit is configured for the module amdgpu uses"},
      {"ttm.configured.pages_limit_pages", integer, "pages",
       "the configured `pages_limit` of the TTM module amdgpu uses, in pages"},
      {"ttm.configured.pages_limit_bytes", integer, "bytes",
       "the configured `pages_limit` of the TTM module amdgpu uses, in bytes"},
      {"ttm.configured.page_pool_size_pages", integer, "pages",
       "the configured `page_pool_size` of the TTM module amdgpu uses, in pages"},
      {"ttm.configured.page_pool_size_bytes", integer, "bytes",
       "the configured `page_pool_size` of the TTM module amdgpu uses, in bytes"},
      {"ttm.cmdline.pages_limit_pages", integer, "pages",
       "the command line's `pages_limit` of the TTM module amdgpu uses, in pages"},
      {"ttm.cmdline.pages_limit_bytes", integer, "bytes",
       "the command line's `pages_limit` of the TTM module amdgpu uses, in bytes"},
      {"ttm.cmdline.page_pool_size_pages", integer, "pages",
       "the command line's `page_pool_size` of the TTM module amdgpu uses, in pages"},
      {"ttm.cmdline.page_pool_size_bytes", integer, "bytes",
       "the command line's `page_pool_size` of the TTM module amdgpu uses, in bytes"},
      {"ttm.modprobe.pages_limit_pages", integer, "pages",
       "modprobe.d's `pages_limit` of the TTM module amdgpu uses, in pages"},
      {"ttm.modprobe.pages_limit_bytes", integer, "bytes",
       "modprobe.d's `pages_limit` of the TTM module amdgpu uses, in bytes"},
      {"ttm.modprobe.page_pool_size_pages", integer, "pages",
       "modprobe.d's `page_pool_size` of the TTM module amdgpu uses, in pages"},
      {"ttm.modprobe.page_pool_size_bytes", integer, "bytes",
       "modprobe.d's `page_pool_size` of the TTM module amdgpu uses, in bytes"},
      {"ttm.recommended_gib", integer, "GiB", "floor(MemTotal in GiB) - `--reserve`"},
      {"ttm.recommended_pages", integer, "pages", "that, x 262144 pages per GiB"},
      {"ttm.recommended_bytes", integer, "bytes", "the same in bytes"},
      {"ttm.max_limit_bytes", integer, "bytes",
       "the largest TTM limit that leaves the OS its headroom: MemTotal minus the headroom "
       "(include/halo/units.hpp); read by ttm-limit-overcommit and fix --ttm-limit"},
      {"amdgpu.gttsize_set", boolean, "",
       "`amdgpu.gttsize` is set (command line, modprobe.d or the active parameter)"},
      {"amdgpu.gttsize_mib", integer, "MiB", "its value"},
      {"amdgpu.gttsize_bytes", integer, "bytes", "the same in bytes"},
      {"kernel.cmdline.suspect_names", list, "",
       "command-line names that are known misspellings, or module parameters missing from "
       "`/sys/module/<m>/parameters`"},
      {"kernel.cmdline.suspect_hints", list, "", "what each was probably meant to be"},
      {"modprobe.suspect_hints", list, "", "the same for modprobe.d options"},
  };
  return std::make_unique<BasicProbe>(
      "derived", std::move(decls),
      std::vector<std::string>{"access.**",       "amdgpu.**",     "drm.**",         "env.**",
                               "framework.**",    "fw.**",         "gpu_metrics.**", "hsa.**",
                               "kernel.**",       "kernel_log.**", "kfd.**",         "libdrm.**",
                               "mem.total_bytes", "modprobe.**",   "pci.**",         "plan.**",
                               "ras.**",          "runenv.**",     "ttm.**",         "xgmi.**",
                               "wsl.wsl2"},
      "computed from the facts of the probes before it; it reads no file. GPUs: KFD GPU nodes in "
      "numeric node order (ROCr's order) joined with DRM cards by render minor; without KFD, the "
      "gfx target from the PCI device id (table in checks/gfx.cpp); APU/Instinct tables in "
      "checks/gfx.cpp. Each compute partition of an MI300-class GPU is a KFD node of its own, "
      "joined to its card by KFD `location_id`/`domain` (the PCI function; a partition's render "
      "node is not the card's). A partition's `gpu.N.vram_total_bytes` is its KFD frame-buffer "
      "bank (ROCm#4750), not the card's whole HBM. `gpu.N.*` aliases of card facts (render node, "
      "RAS, PCIe, temperatures, power, XGMI, gpu_metrics) are `missing` when the GPU has no amdgpu "
      "DRM card. `ttm.configured.*`: the limit configured for the module amdgpu uses (command line "
      "wins over modprobe.d); `ttm.cmdline.*` and `ttm.modprobe.*` each source alone.",
      std::vector<std::string>{}, collect);
}

} // namespace halo::probes
