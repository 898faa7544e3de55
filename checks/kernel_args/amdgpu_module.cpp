// SPDX-License-Identifier: MIT
// Probe: the amdgpu kernel module. Reads /sys/module/amdgpu/{initstate,version,parameters/*}.
// A module built into the kernel has /sys/module/amdgpu (for its parameters) but no
// initstate file; rocminfo treats that case the same way (rocminfo.cc, CheckInitialState).
#include "probe_util.hpp"
#include "probes.hpp"

namespace halo::probes {
namespace {

void collect(const ProbeContext& ctx, FactSet& facts) {
  const Root& root = ctx.root;
  const bool loaded = root.is_dir("/sys/module/amdgpu");
  facts.put_ok("amdgpu.loaded", loaded, "/sys/module/amdgpu");
  if (!loaded) {
    for (const char* k : {"amdgpu.initstate", "amdgpu.version", "amdgpu.param_names"})
      facts.put_status(k, Status::missing, "/sys/module/amdgpu", "amdgpu is not loaded");
    return;
  }
  ReadResult init = root.read_trimmed("/sys/module/amdgpu/initstate");
  if (init.ok())
    facts.put_ok("amdgpu.initstate", init.text, init.path);
  else
    facts.put_status("amdgpu.initstate", init.status, init.path, init.reason);
  facts.put_ok("amdgpu.builtin", init.status == Status::missing, init.path);
  // /sys/module/amdgpu/version exists for out-of-tree (DKMS) builds, which set MODULE_VERSION.
  ReadResult ver = root.read_trimmed("/sys/module/amdgpu/version");
  if (ver.ok())
    facts.put_ok("amdgpu.version", ver.text, ver.path);
  else
    facts.put_status("amdgpu.version", ver.status, ver.path,
                     ver.status == Status::missing ? "no version file: the in-kernel driver"
                                                   : ver.reason);
  facts.put_ok("amdgpu.dkms", ver.ok(), "/sys/module/amdgpu/version");

  Status st = Status::ok;
  auto names = root.list("/sys/module/amdgpu/parameters", &st);
  if (!names) {
    facts.put_status("amdgpu.param_names", st, "/sys/module/amdgpu/parameters", "cannot list");
    return;
  }
  facts.put_ok("amdgpu.param_names", *names, "/sys/module/amdgpu/parameters");
  for (const auto& n : *names)
    put_text(facts, root, "amdgpu.param." + n, "/sys/module/amdgpu/parameters/" + n);
}

} // namespace

std::unique_ptr<Probe> make_amdgpu_module_probe() {
  return std::make_unique<BasicProbe>("amdgpu_module",
                                      std::vector<std::string>{"/sys/module/amdgpu/initstate",
                                                               "/sys/module/amdgpu/version",
                                                               "/sys/module/amdgpu/parameters/*"},
                                      collect);
}

} // namespace halo::probes
