// SPDX-License-Identifier: MIT
// Probe: AMD GPUs on the PCI bus, driver bound or not. Reads /sys/bus/pci/devices/*/{vendor,
// class,device,numa_node} and the driver link. A GPU is vendor 0x1002 with class 0x03xxxx
// (display controller) or 0x12xxxx (processing accelerator, Instinct), per the PCI class codes.
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>

namespace halo::probes {
namespace {

void collect(const ProbeContext& ctx, FactSet& facts) {
  const std::string base = "/sys/bus/pci/devices";
  Status st = Status::ok;
  auto devs = ctx.root.list(base, &st);
  if (!devs) {
    facts.put_status(std::string(fact_keys::pci::amd_gpu_count), st, base,
                     "cannot list PCI devices");
    return;
  }
  std::int64_t n = 0;
  for (const auto& slot : *devs) {
    const std::string dir = fmt::format("{}/{}", base, slot);
    ReadResult vendor = ctx.root.read_trimmed(dir + "/vendor");
    ReadResult klass = ctx.root.read_trimmed(dir + "/class");
    if (!vendor.ok() || !klass.ok()) continue;
    auto v = parse_hex(vendor.text);
    auto c = parse_hex(klass.text);
    if (!v || !c || *v != 0x1002) continue;
    const std::int64_t base_class = *c >> 16;
    if (base_class != 0x03 && base_class != 0x12) continue;
    const std::int64_t i = n++;
    facts.put_ok(fact_keys::pci::gpu_slot(i), slot, dir);
    facts.put_ok(fact_keys::pci::gpu_class(i), fmt::format("0x{:06x}", *c), klass.path);
    ReadResult dev = ctx.root.read_trimmed(dir + "/device");
    if (auto d = dev.ok() ? parse_hex(dev.text) : std::nullopt)
      facts.put_ok(fact_keys::pci::gpu_device_id(i), *d, dev.path);
    else
      facts.put_status(fact_keys::pci::gpu_device_id(i), dev.ok() ? Status::error : dev.status,
                       dev.path, dev.ok() ? "not a hex id" : dev.reason);
    auto drv = ctx.root.link_name(dir + "/driver");
    if (drv)
      facts.put_ok(fact_keys::pci::gpu_driver(i), *drv, dir + "/driver");
    else
      facts.put_ok(fact_keys::pci::gpu_driver(i), std::string(""), dir + "/driver");
  }
  facts.put_ok(std::string(fact_keys::pci::amd_gpu_count), n, base);
}

} // namespace

std::unique_ptr<Probe> make_pci_probe() {
  return std::make_unique<BasicProbe>("pci", collect);
}

} // namespace halo::probes
