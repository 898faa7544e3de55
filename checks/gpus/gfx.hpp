// SPDX-License-Identifier: MIT
// GPU identity knowledge: gfx target decoding and the APU / Instinct tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace halo::probes {

/// Decodes KFD's gfx_target_version (major*10000 + minor*100 + stepping, decimal) into the LLVM
/// target name: 110501 -> "gfx1151", 90402 -> "gfx942", 90010 -> "gfx90a". Minor and stepping
/// are printed in hex, as rocminfo and the LLVM AMDGPU processor names do. 0 (a CPU node) and
/// values whose minor or stepping exceed 15 give std::nullopt.
std::optional<std::string> decode_gfx_target_version(std::int64_t v);

/// Parses an HSA_OVERRIDE_GFX_VERSION value "11.5.1" into the gfx name "gfx1151" (the same
/// format ROCr accepts: three decimal numbers; minor and stepping printed in hex).
std::optional<std::string> gfx_from_override(const std::string& value);

/// Why a GPU counts as an APU (an integrated GPU sharing system RAM), or std::nullopt.
/// Tables: LLVM AMDGPUUsage processor list (APU column) and pci.ids device names; Strix Halo is
/// gfx1151 / 0x1586 (reference/amd-gpu-facts.md 2.1); MI300A is gfx942 / 0x74a0.
std::optional<std::string> apu_basis(const std::optional<std::string>& gfx,
                                     std::optional<std::int64_t> device_id);

/// The gfx target of an AMD GPU from its PCI device id (/sys/bus/pci/devices/BDF/device), for
/// GPUs that never reach KFD (a kernel too old for the GPU, amdgpu not bound). Table: device
/// names from pci.ids (vendor 1002), targets from LLVM AMDGPUUsage's processor table; the
/// Strix Halo and MI300 ids are confirmed by KFD captures in reference/amd-gpu-facts.md.
/// Returns the target and the product name, or std::nullopt for an id not in the table.
struct PciGfx {
  std::string gfx;
  std::string name;
};
std::optional<PciGfx> gfx_from_pci_id(std::int64_t device_id);

/// True for Instinct accelerators (gfx908, gfx90a, gfx94x, gfx950, or their PCI ids).
bool is_instinct(const std::optional<std::string>& gfx, std::optional<std::int64_t> device_id);

/// True for the MI300 series (MI300X/A, MI308X, MI325X: gfx940-942, ids 0x74a0-0x74a5).
bool is_mi300_series(const std::optional<std::string>& gfx, std::optional<std::int64_t> device_id);

/// `targets` (gfx names as a build lists them: offload-bundle entries, library file names) with
/// each AMDGPU generic target's processors added, sorted and once each: {"gfx11-generic"} gives
/// gfx11-generic, gfx1100 ... gfx1153. A code object built for a generic target loads on each of
/// its processors (LLVM AMDGPUUsage, "Generic Processor Versions",
/// https://llvm.org/docs/AMDGPUUsage.html#generic-processor-versions; ROCm 6.4+ runtimes load
/// them). The one home of that table: torch's, flash_attn's and bitsandbytes' kernel targets all
/// come through it (issue 42 item 3).
std::vector<std::string> with_generic_processors(const std::vector<std::string>& targets);

/// The Instinct series of a GPU, the unit AMD's host-tuning and acceptance guides are written per:
/// "MI350" (MI350X 0x75a0, MI355X 0x75a3: gfx950, CDNA4), "MI300" (MI300A 0x74a0, MI300X 0x74a1,
/// MI308X 0x74a2, MI325X 0x74a5, the MI300X VF 0x74b5: gfx940-942, CDNA3), "MI200" (gfx90a),
/// "MI100" (gfx908), else "none". The gfx target decides when it is known (KFD's
/// gfx_target_version); the PCI id otherwise. Ids: pci.ids (vendor 1002) and AMD's system
/// acceptance guides (ROCm/system-acceptance-docs docs/gpus/mi325x.md `lspci -d 1002:74a5`,
/// docs/gpus/mi355x.md `lspci -d 1002:75a3`, docs/network/topology-mapping.md for 75a0).
std::string instinct_series(const std::optional<std::string>& gfx,
                            std::optional<std::int64_t> device_id);

} // namespace halo::probes
