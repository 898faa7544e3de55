// Probe: automatic NUMA balancing, /proc/sys/kernel/numa_balancing (0 off, 1 on, 2 memory
// tiering). AMD's MI300X tuning guide recommends 0.
#include "probe_util.hpp"
#include "probes.hpp"

namespace halo::probes {
namespace {
void collect(const ProbeContext& ctx, FactSet& facts) {
  put_int(facts, ctx.root, "numa.balancing", "/proc/sys/kernel/numa_balancing");
}
} // namespace

std::unique_ptr<Probe> make_numa_probe() {
  return std::make_unique<BasicProbe>("numa", std::vector<std::string>{"numa.balancing"},
                                      std::vector<std::string>{"/proc/sys/kernel/numa_balancing"},
                                      collect);
}

} // namespace halo::probes
