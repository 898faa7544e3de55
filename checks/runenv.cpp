// Probe: where the doctor runs: bare metal (or a VM), or a container, with the evidence.
// Markers, each from its engine's documentation or source:
//   /.dockerenv                 Docker creates it in every container (moby daemon/initlayer).
//   /run/.containerenv          podman writes it (podman-run(1): engine=, name=, image=,
//   rootless=). /run/.toolboxenv            toolbox adds it (containers/toolbox,
//   src/cmd/create.go). CONTAINER_ID in the env     distrobox sets it (distrobox-enter).
//   /run/systemd/container      systemd's container interface (systemd.io/CONTAINER_INTERFACE):
//                               "lxc", "systemd-nspawn", "docker", "podman", ...
//   /var/run/secrets/kubernetes.io/serviceaccount  a Kubernetes pod (kubelet's token mount).
//   /proc/1/cgroup              cgroup v1 paths naming docker, kubepods or libpod.
#include "probe_util.hpp"
#include "probes.hpp"

#include <fmt/format.h>

namespace halo::probes {
namespace {

void collect(const ProbeContext& ctx, FactSet& facts) {
  const Root& root = ctx.root;
  if (ctx.host_config_root() != nullptr)
    facts.put_ok("runenv.host_root", ctx.host_basis(), "host root detection");
  else
    facts.put_status("runenv.host_root", Status::missing, "host root detection", ctx.host_basis());
  facts.put_ok("runenv.dockerenv", root.exists("/.dockerenv"), "/.dockerenv");
  facts.put_ok("runenv.toolboxenv", root.exists("/run/.toolboxenv"), "/run/.toolboxenv");
  if (ReadResult r = root.read("/run/.containerenv", 64 * 1024); r.ok()) {
    // key="value" lines; only the engine and name are kept.
    for (const auto& line : split_lines(r.text)) {
      for (const char* k : {"engine", "name", "rootless"}) {
        const std::string pre = std::string(k) + "=";
        if (line.rfind(pre, 0) != 0) continue;
        std::string v = line.substr(pre.size());
        if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
        facts.put_ok(std::string("runenv.containerenv.") + k, v, r.path);
      }
    }
    facts.put_ok("runenv.containerenv", true, r.path);
  } else {
    facts.put_ok("runenv.containerenv", root.exists("/run/.containerenv"), r.path);
  }
  if (ReadResult r = root.read_trimmed("/run/systemd/container"); r.ok())
    facts.put_ok("runenv.systemd_container", r.text, r.path);
  else
    facts.put_status("runenv.systemd_container", r.status, r.path, r.reason);
  facts.put_ok("runenv.kubernetes",
               root.exists("/var/run/secrets/kubernetes.io/serviceaccount") ||
                   root.exists("/run/secrets/kubernetes.io/serviceaccount"),
               "/var/run/secrets/kubernetes.io/serviceaccount");
  std::string engine;
  if (ReadResult r = root.read("/proc/1/cgroup", 64 * 1024); r.ok()) {
    for (const char* word : {"kubepods", "docker", "libpod", "lxc"})
      if (engine.empty() && r.text.find(word) != std::string::npos) engine = word;
    facts.put_ok("runenv.cgroup_engine", engine, r.path);
  } else {
    facts.put_status("runenv.cgroup_engine", r.status, r.path, r.reason);
  }
}

} // namespace

std::unique_ptr<Probe> make_runenv_probe() {
  return std::make_unique<BasicProbe>(
      "runenv",
      std::vector<std::string>{"runenv.host_root", "runenv.dockerenv", "runenv.toolboxenv",
                               "runenv.containerenv", "runenv.containerenv.*",
                               "runenv.systemd_container", "runenv.kubernetes",
                               "runenv.cgroup_engine"},
      std::vector<std::string>{"/.dockerenv", "/run/.toolboxenv", "/run/.containerenv",
                               "/run/systemd/container",
                               "/var/run/secrets/kubernetes.io/serviceaccount", "/proc/1/cgroup"},
      collect);
}

} // namespace halo::probes
