// SPDX-License-Identifier: MIT
#include "gfx.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <map>
#include <set>

namespace halo::probes {

std::optional<std::string> decode_gfx_target_version(std::int64_t v) {
  if (v <= 0) return std::nullopt;
  const std::int64_t major = v / 10000;
  const std::int64_t minor = (v / 100) % 100;
  const std::int64_t step = v % 100;
  if (minor > 15 || step > 15) return std::nullopt;
  return fmt::format("gfx{}{:x}{:x}", major, minor, step);
}

std::optional<std::string> gfx_from_override(const std::string& value) {
  // "MAJOR.MINOR.STEP", decimal; a hand loop with std::from_chars, so an environment value of any
  // length costs linear time and constant stack (std::regex recursed per character and a
  // 30,000-digit value overflowed the stack), and a number beyond long long is no version.
  std::array<long long, 3> n{};
  const char* p = value.data();
  const char* const end = value.data() + value.size();
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (i > 0) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
    if (p == end || *p < '0' || *p > '9') return std::nullopt; // from_chars would take a '-'
    const auto [next, ec] = std::from_chars(p, end, n.at(i));
    if (ec != std::errc()) return std::nullopt;
    p = next;
  }
  if (p != end) return std::nullopt;
  const long long major = n[0];
  const long long minor = n[1];
  const long long step = n[2];
  if (minor > 15 || step > 15) return std::nullopt;
  return fmt::format("gfx{}{:x}{:x}", major, minor, step);
}

namespace {
struct Known {
  const char* gfx;
  std::int64_t id;
  const char* name;
};
// Integrated GPUs (APUs). gfx targets per LLVM AMDGPUUsage; ids per pci.ids.
constexpr std::array<Known, 17> kApus = {{
    {"gfx1151", 0x1586, "Strix Halo (Radeon 8060S/8050S/8040S)"},
    {"gfx1150", 0x150e, "Strix Point (Radeon 890M/880M)"},
    {"gfx1152", 0x1114, "Krackan Point (Radeon 860M/840M)"},
    {"gfx1103", 0x15bf, "Phoenix (Radeon 780M/760M)"},
    {"gfx1103", 0x15c8, "Phoenix 2 (Radeon 740M)"},
    {"gfx1103", 0x1900, "Hawk Point (Radeon 780M)"},
    {"gfx1103", 0x1901, "Hawk Point 2"},
    {"gfx1037", 0x1506, "Mendocino (Radeon 610M)"},
    {"gfx1036", 0x164e, "Raphael (Radeon Graphics)"},
    {"gfx1035", 0x1681, "Rembrandt (Radeon 680M/660M)"},
    {"gfx1033", 0x163f, "Van Gogh"},
    {"gfx90c", 0x1636, "Renoir"},
    {"gfx90c", 0x1638, "Cezanne"},
    {"gfx90c", 0x164c, "Lucienne"},
    {"gfx902", 0x15dd, "Raven"},
    {"gfx909", 0x15d8, "Picasso"},
    {"gfx942", 0x74a0, "Instinct MI300A"},
}};
// Discrete GPUs (pci.ids names; LLVM AMDGPUUsage targets; Vega M's gfx803 per libhsakmt's
// gfxip table, ROCT-Thunk-Interface src/topology.c: {0x694C, 8, 0, 3, "VegaM"}).
constexpr std::array<Known, 23> kDiscrete = {{
    {"gfx942", 0x74a1, "Instinct MI300X"},
    {"gfx942", 0x74a2, "Instinct MI308X"},
    {"gfx942", 0x74a5, "Instinct MI325X"},
    {"gfx942", 0x74b5, "Instinct MI300X VF"},
    {"gfx950", 0x75a0, "Instinct MI350X"},
    {"gfx950", 0x75a3, "Instinct MI355X"},
    {"gfx90a", 0x740c, "Instinct MI250X/MI250"},
    {"gfx90a", 0x740f, "Instinct MI210"},
    {"gfx908", 0x738c, "Instinct MI100"},
    {"gfx906", 0x66a1, "Instinct MI50/MI60"},
    {"gfx906", 0x66af, "Radeon VII"},
    {"gfx1201", 0x7551, "Radeon AI PRO R9700"},
    {"gfx1201", 0x7550, "Radeon RX 9070/9070 XT"},
    {"gfx1200", 0x7590, "Radeon RX 9060 XT"},
    {"gfx1100", 0x744c, "Radeon RX 7900 XT/XTX/GRE"},
    {"gfx1100", 0x7448, "Radeon PRO W7900"},
    {"gfx1101", 0x747e, "Radeon RX 7700 XT/7800 XT"},
    {"gfx1102", 0x7480, "Radeon RX 7600"},
    {"gfx1030", 0x73bf, "Radeon RX 6800/6900 XT"},
    {"gfx1030", 0x73a3, "Radeon PRO W6800"},
    {"gfx1031", 0x73df, "Radeon RX 6700 XT"},
    {"gfx1032", 0x73ff, "Radeon RX 6600 XT"},
    {"gfx803", 0x694c, "Radeon RX Vega M GH"},
}};
} // namespace

std::optional<PciGfx> gfx_from_pci_id(std::int64_t device_id) {
  for (const auto& k : kApus)
    if (k.id == device_id) return PciGfx{k.gfx, k.name};
  for (const auto& k : kDiscrete)
    if (k.id == device_id) return PciGfx{k.gfx, k.name};
  return std::nullopt;
}

std::optional<std::string> apu_basis(const std::optional<std::string>& gfx,
                                     std::optional<std::int64_t> device_id) {
  if (device_id) {
    for (const auto& k : kApus)
      if (k.id == *device_id) return fmt::format("PCI device 0x{:04x} is {}", k.id, k.name);
  }
  if (gfx && *gfx != "gfx942") {
    for (const auto& k : kApus)
      if (*gfx == k.gfx) return fmt::format("{} is an integrated-GPU target ({})", *gfx, k.name);
  }
  return std::nullopt;
}

bool is_instinct(const std::optional<std::string>& gfx, std::optional<std::int64_t> device_id) {
  if (gfx && (*gfx == "gfx908" || *gfx == "gfx90a" || *gfx == "gfx940" || *gfx == "gfx941" ||
              *gfx == "gfx942" || *gfx == "gfx950"))
    return true;
  if (device_id) {
    const std::int64_t id = *device_id;
    return id == 0x738c || id == 0x7388 || (id >= 0x7408 && id <= 0x740f) ||
           (id >= 0x74a0 && id <= 0x74a5) || id == 0x75a0 || id == 0x75a3;
  }
  return false;
}

bool is_mi300_series(const std::optional<std::string>& gfx, std::optional<std::int64_t> device_id) {
  if (gfx && (*gfx == "gfx940" || *gfx == "gfx941" || *gfx == "gfx942")) return true;
  return device_id && *device_id >= 0x74a0 && *device_id <= 0x74a5;
}

std::vector<std::string> with_generic_processors(const std::vector<std::string>& targets) {
  // LLVM AMDGPUUsage, "Generic Processor Versions": each generic target and its processors.
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
  std::set<std::string> out;
  for (const auto& t : targets) {
    out.insert(t);
    if (auto g = table.find(t); g != table.end()) out.insert(g->second.begin(), g->second.end());
  }
  return {out.begin(), out.end()};
}

std::string instinct_series(const std::optional<std::string>& gfx,
                            std::optional<std::int64_t> device_id) {
  if (gfx) {
    if (*gfx == "gfx950") return "MI350";
    if (*gfx == "gfx940" || *gfx == "gfx941" || *gfx == "gfx942") return "MI300";
    if (*gfx == "gfx90a") return "MI200";
    if (*gfx == "gfx908") return "MI100";
    return "none";
  }
  if (!device_id) return "none";
  const std::int64_t id = *device_id;
  if (id == 0x75a0 || id == 0x75a3) return "MI350";
  if ((id >= 0x74a0 && id <= 0x74a5) || id == 0x74b5) return "MI300";
  if (id >= 0x7408 && id <= 0x740f) return "MI200";
  if (id == 0x738c || id == 0x7388) return "MI100";
  return "none";
}

} // namespace halo::probes
