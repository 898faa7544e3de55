// SPDX-License-Identifier: MIT
// Probe: what the amdgpu kernel driver tells userspace through libdrm_amdgpu on each AMD render
// node: the VRAM, CPU-visible VRAM and GTT heaps (AMDGPU_INFO_MEMORY), the chip identity
// (amdgpu_query_gpu_info) and the MES firmware version (AMDGPU_INFO_FW_MES), which otherwise
// needs root and debugfs (/sys/kernel/debug/dri/N/amdgpu_firmware_info).
//
// It asks the running kernel, so it runs only on the live root; there is no replay. A render node
// the user may not open is a `denied` fact pointing at the render-node-access rule.
#include "probes.hpp"

#include <halo/fact_keys.hpp>
#include <halo/root.hpp>

#include <amdgpu.h>
#include <amdgpu_drm.h>
#include <fmt/format.h>
#include <xf86drm.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace halo::probes {
namespace {

// Newer than libdrm 2.4.114's amdgpu_drm.h (added with Linux 6.2's MES query).
constexpr unsigned kInfoFwMesKiq = 0x19;
constexpr unsigned kInfoFwMes = 0x1a;
constexpr int kAmdVendor = 0x1002;

namespace libdrm_keys = fact_keys::libdrm;

/// The keys of AMD device `d` (libdrm.dev.D.*) set by query_device, all set (with a status)
/// whatever happens to the device.
std::vector<std::string> device_keys(std::int64_t d) {
  return {libdrm_keys::dev_drm_version(d),
          libdrm_keys::dev_vram_total_bytes(d),
          libdrm_keys::dev_vram_usable_bytes(d),
          libdrm_keys::dev_vram_max_allocation_bytes(d),
          libdrm_keys::dev_vis_vram_total_bytes(d),
          libdrm_keys::dev_vis_vram_usable_bytes(d),
          libdrm_keys::dev_vis_vram_max_allocation_bytes(d),
          libdrm_keys::dev_gtt_total_bytes(d),
          libdrm_keys::dev_gtt_usable_bytes(d),
          libdrm_keys::dev_gtt_max_allocation_bytes(d),
          libdrm_keys::dev_family(d),
          libdrm_keys::dev_asic_id(d),
          libdrm_keys::dev_chip_rev(d),
          libdrm_keys::dev_chip_external_rev(d),
          libdrm_keys::dev_mes_fw_version(d),
          libdrm_keys::dev_mes_fw_version_hex(d),
          libdrm_keys::dev_mes_feature_version(d),
          libdrm_keys::dev_mes_kiq_fw_version(d)};
}

/// The keys of one memory heap of device `d` (amdgpu_query_info(AMDGPU_INFO_MEMORY)).
struct HeapKeys {
  std::string total;
  std::string usable;
  std::string max_allocation;
};

/// libdrm and libdrm_amdgpu, loaded with dlopen at the first use so that the doctor starts, and
/// says why, on a machine without them (a minimal container image). The sonames are the ones
/// Debian, Fedora and Arch ship (libdrm2, libdrm-amdgpu1). Function types come from the headers.
struct LibDrm {
  decltype(&::drmGetDevices2) get_devices = nullptr;
  decltype(&::drmFreeDevices) free_devices = nullptr;
  decltype(&::amdgpu_device_initialize) device_initialize = nullptr;
  decltype(&::amdgpu_device_deinitialize) device_deinitialize = nullptr;
  decltype(&::amdgpu_query_info) query_info = nullptr;
  decltype(&::amdgpu_query_gpu_info) query_gpu_info = nullptr;
  decltype(&::amdgpu_query_firmware_version) query_firmware_version = nullptr;
  std::string error; ///< why it could not be loaded; empty when loaded
};

template <class F> void bind(void* lib, const char* name, F& fn, std::string& error) {
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  if (fn == nullptr && error.empty()) error = fmt::format("{} is missing from libdrm", name);
}

const LibDrm& libdrm() {
  static const LibDrm lib = [] {
    LibDrm l;
    // Handles stay open for the life of the process (the probe may run again in tests).
    void* drm = ::dlopen("libdrm.so.2", RTLD_NOW | RTLD_LOCAL);
    void* amd = drm != nullptr ? ::dlopen("libdrm_amdgpu.so.1", RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (amd == nullptr) {
      const char* e = ::dlerror();
      l.error = e != nullptr ? e : "libdrm could not be loaded";
      return l;
    }
    bind(drm, "drmGetDevices2", l.get_devices, l.error);
    bind(drm, "drmFreeDevices", l.free_devices, l.error);
    bind(amd, "amdgpu_device_initialize", l.device_initialize, l.error);
    bind(amd, "amdgpu_device_deinitialize", l.device_deinitialize, l.error);
    bind(amd, "amdgpu_query_info", l.query_info, l.error);
    bind(amd, "amdgpu_query_gpu_info", l.query_gpu_info, l.error);
    bind(amd, "amdgpu_query_firmware_version", l.query_firmware_version, l.error);
    return l;
  }();
  return lib;
}

std::string errno_words(int err) {
  const char* name = ::strerrorname_np(err);
  return fmt::format("-{} ({})", name != nullptr ? name : std::to_string(err), std::strerror(err));
}

void put_device_status(FactSet& facts, std::int64_t d, Status st, const std::string& source,
                       const std::string& reason) {
  for (const auto& key : device_keys(d))
    if (facts.find(key) == nullptr) facts.put_status(key, st, source, reason);
}

std::int64_t as_i64(std::uint64_t v) {
  return v > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(v);
}

void query_device(FactSet& facts, std::int64_t d, const std::string& node) {
  const UniqueFd fd(::open(node.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    const bool denied = err == EACCES || err == EPERM;
    put_device_status(facts, d, denied ? Status::denied : Status::error, "open " + node,
                      fmt::format("open {}: {}{}", node, std::strerror(err),
                                  denied ? " (see rule render-node-access)" : ""));
    return;
  }
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  amdgpu_device_handle dev = nullptr;
  const int r = libdrm().device_initialize(fd.get(), &major, &minor, &dev);
  if (r != 0) {
    put_device_status(facts, d, Status::error, "amdgpu_device_initialize",
                      fmt::format("amdgpu_device_initialize({}): {}", node, errno_words(-r)));
    return;
  }
  facts.put_ok(libdrm_keys::dev_drm_version(d), fmt::format("{}.{}", major, minor),
               "amdgpu_device_initialize");

  drm_amdgpu_memory_info mem{};
  const std::string msrc = "amdgpu_query_info(AMDGPU_INFO_MEMORY)";
  const HeapKeys vram{libdrm_keys::dev_vram_total_bytes(d), libdrm_keys::dev_vram_usable_bytes(d),
                      libdrm_keys::dev_vram_max_allocation_bytes(d)};
  const HeapKeys vis_vram{libdrm_keys::dev_vis_vram_total_bytes(d),
                          libdrm_keys::dev_vis_vram_usable_bytes(d),
                          libdrm_keys::dev_vis_vram_max_allocation_bytes(d)};
  const HeapKeys gtt{libdrm_keys::dev_gtt_total_bytes(d), libdrm_keys::dev_gtt_usable_bytes(d),
                     libdrm_keys::dev_gtt_max_allocation_bytes(d)};
  if (const int m = libdrm().query_info(dev, AMDGPU_INFO_MEMORY, sizeof mem, &mem); m == 0) {
    auto heap = [&](const HeapKeys& k, const drm_amdgpu_heap_info& h) {
      facts.put_ok(k.total, as_i64(h.total_heap_size), msrc);
      facts.put_ok(k.usable, as_i64(h.usable_heap_size), msrc);
      facts.put_ok(k.max_allocation, as_i64(h.max_allocation), msrc);
    };
    heap(vram, mem.vram);
    heap(vis_vram, mem.cpu_accessible_vram);
    heap(gtt, mem.gtt);
  } else {
    for (const HeapKeys* h : {&vram, &vis_vram, &gtt})
      for (const std::string* key : {&h->total, &h->usable, &h->max_allocation})
        facts.put_status(*key, Status::error, msrc, errno_words(-m));
  }

  amdgpu_gpu_info gi{};
  const std::string gsrc = "amdgpu_query_gpu_info";
  if (const int g = libdrm().query_gpu_info(dev, &gi); g == 0) {
    facts.put_ok(libdrm_keys::dev_family(d), static_cast<std::int64_t>(gi.family_id), gsrc);
    facts.put_ok(libdrm_keys::dev_asic_id(d), static_cast<std::int64_t>(gi.asic_id), gsrc);
    facts.put_ok(libdrm_keys::dev_chip_rev(d), static_cast<std::int64_t>(gi.chip_rev), gsrc);
    facts.put_ok(libdrm_keys::dev_chip_external_rev(d),
                 static_cast<std::int64_t>(gi.chip_external_rev), gsrc);
  } else {
    for (const auto& k : {libdrm_keys::dev_family(d), libdrm_keys::dev_asic_id(d),
                          libdrm_keys::dev_chip_rev(d), libdrm_keys::dev_chip_external_rev(d)})
      facts.put_status(k, Status::error, gsrc, errno_words(-g));
  }

  std::uint32_t ver = 0;
  std::uint32_t feature = 0;
  const std::string fsrc = "amdgpu_query_firmware_version(AMDGPU_INFO_FW_MES)";
  if (const int f = libdrm().query_firmware_version(dev, kInfoFwMes, 0, 0, &ver, &feature);
      f != 0) {
    for (const auto& k :
         {libdrm_keys::dev_mes_fw_version(d), libdrm_keys::dev_mes_fw_version_hex(d),
          libdrm_keys::dev_mes_feature_version(d)})
      facts.put_status(
          k, Status::error, fsrc,
          fmt::format("{} (kernels before 6.2 do not answer the MES query)", errno_words(-f)));
  } else if (ver == 0) {
    for (const auto& k :
         {libdrm_keys::dev_mes_fw_version(d), libdrm_keys::dev_mes_fw_version_hex(d),
          libdrm_keys::dev_mes_feature_version(d)})
      facts.put_status(k, Status::missing, fsrc, "the GPU reports no MES firmware (version 0)");
  } else {
    facts.put_ok(libdrm_keys::dev_mes_fw_version(d), static_cast<std::int64_t>(ver), fsrc);
    facts.put_ok(libdrm_keys::dev_mes_fw_version_hex(d), fmt::format("0x{:08x}", ver), fsrc);
    facts.put_ok(libdrm_keys::dev_mes_feature_version(d), static_cast<std::int64_t>(feature), fsrc);
  }
  const std::string ksrc = "amdgpu_query_firmware_version(AMDGPU_INFO_FW_MES_KIQ)";
  if (const int k = libdrm().query_firmware_version(dev, kInfoFwMesKiq, 0, 0, &ver, &feature);
      k != 0)
    facts.put_status(libdrm_keys::dev_mes_kiq_fw_version(d), Status::error, ksrc, errno_words(-k));
  else if (ver == 0)
    facts.put_status(libdrm_keys::dev_mes_kiq_fw_version(d), Status::missing, ksrc,
                     "the GPU reports no MES KIQ firmware");
  else
    facts.put_ok(libdrm_keys::dev_mes_kiq_fw_version(d), static_cast<std::int64_t>(ver), ksrc);

  libdrm().device_deinitialize(dev); // before fd closes: libdrm holds a dup of it
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  std::string skip;
  if (ctx.options.no_runtime)
    skip = "skipped: --no-runtime";
  else if (!ctx.root.is_live())
    skip = "skipped: --root is not / (libdrm asks the running kernel; there is no replay)";
  if (!skip.empty()) {
    for (const auto k : {libdrm_keys::status, libdrm_keys::detail, libdrm_keys::get_devices_ret,
                         libdrm_keys::device_count})
      facts.put_status(std::string(k), Status::missing, "libdrm probe", skip);
    return;
  }
  const std::string src = "drmGetDevices2";
  const LibDrm& lib = libdrm();
  if (!lib.error.empty()) {
    // Absence is data: the runtime library is not installed here.
    facts.put_ok(std::string(libdrm_keys::status), std::string("not_installed"),
                 "dlopen libdrm_amdgpu.so.1");
    facts.put_ok(std::string(libdrm_keys::detail), lib.error, "dlopen libdrm_amdgpu.so.1");
    for (const auto k : {libdrm_keys::get_devices_ret, libdrm_keys::device_count})
      facts.put_status(std::string(k), Status::missing, "dlopen libdrm_amdgpu.so.1", lib.error);
    return;
  }
  const int n = lib.get_devices(0, nullptr, 0);
  facts.put_ok(std::string(libdrm_keys::get_devices_ret), static_cast<std::int64_t>(n), src);
  if (n <= 0) {
    facts.put_ok(std::string(libdrm_keys::status), std::string("no_device"), src);
    facts.put_ok(std::string(libdrm_keys::detail),
                 n < 0
                     ? fmt::format("drmGetDevices2 returned {} = {}: no DRM device (no /dev/dri?)",
                                   n, errno_words(-n))
                     : std::string("drmGetDevices2 found no DRM device"),
                 src);
    facts.put_ok(std::string(libdrm_keys::device_count), std::int64_t{0}, src);
    return;
  }
  std::vector<drmDevicePtr> devs(static_cast<std::size_t>(n), nullptr);
  const int got = lib.get_devices(0, devs.data(), n);
  if (got <= 0) {
    facts.put_ok(std::string(libdrm_keys::status), std::string("no_device"), src);
    facts.put_ok(std::string(libdrm_keys::detail),
                 fmt::format("drmGetDevices2 returned {} on the second call", got), src);
    facts.put_ok(std::string(libdrm_keys::device_count), std::int64_t{0}, src);
    return;
  }
  std::int64_t amd = 0;
  for (int i = 0; i < got; ++i) {
    const drmDevicePtr d = devs[static_cast<std::size_t>(i)];
    if (d == nullptr || d->bustype != DRM_BUS_PCI) continue;
    // drmDevice's businfo and deviceinfo are unions tagged by bustype (xf86drm.h): the PCI
    // members are read only once bustype says DRM_BUS_PCI.
    const drmPciDeviceInfo* info = d->deviceinfo.pci; // NOLINT(*-pro-type-union-access): C API
    if (info == nullptr || info->vendor_id != kAmdVendor) continue;
    const std::int64_t a = amd++;
    const drmPciBusInfo* b = d->businfo.pci; // NOLINT(*-pro-type-union-access): C API
    facts.put_ok(libdrm_keys::dev_bus_id(a),
                 b != nullptr
                     ? fmt::format("{:04x}:{:02x}:{:02x}.{:x}", b->domain, b->bus, b->dev, b->func)
                     : std::string(),
                 src);
    facts.put_ok(libdrm_keys::dev_pci_device_id(a), static_cast<std::int64_t>(info->device_id),
                 src);
    if ((d->available_nodes & (1 << DRM_NODE_RENDER)) == 0 ||
        d->nodes[DRM_NODE_RENDER] == nullptr) {
      facts.put_status(libdrm_keys::dev_render_node(a), Status::missing, src,
                       "the device has no render node");
      put_device_status(facts, a, Status::missing, src, "the device has no render node");
      continue;
    }
    const std::string node = d->nodes[DRM_NODE_RENDER];
    facts.put_ok(libdrm_keys::dev_render_node(a), node, src);
    query_device(facts, a, node);
  }
  lib.free_devices(devs.data(), got);
  facts.put_ok(std::string(libdrm_keys::status), std::string(amd > 0 ? "ok" : "no_device"), src);
  facts.put_ok(std::string(libdrm_keys::detail),
               fmt::format("drmGetDevices2 lists {} DRM device(s), {} AMD", got, amd), src);
  facts.put_ok(std::string(libdrm_keys::device_count), amd, src);
}

} // namespace

std::unique_ptr<Probe> make_libdrm_probe() {
  // The libdrm.dev.*.<key> declarations name every key of device_keys() (statuses are set for
  // each of those when a query fails).
  return std::make_unique<BasicProbe>("libdrm", collect);
}

} // namespace halo::probes
