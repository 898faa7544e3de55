// SPDX-License-Identifier: MIT
// The host root inside containers (include/halo/probe.hpp: HostRoot, detect_host_root).
#include <halo/probe.hpp>

#include <fmt/format.h>

namespace halo {

HostRoot detect_host_root(const Root& env, const std::string& host_root_flag) {
  HostRoot h;
  if (!host_root_flag.empty()) {
    h.root.emplace(host_root_flag);
    h.basis = "--host-root " + host_root_flag;
    return h;
  }
  // Container markers, each from its engine: Docker's /.dockerenv, podman's /run/.containerenv,
  // toolbox's /run/.toolboxenv, systemd's container interface /run/systemd/container.
  std::string kind;
  if (env.exists("/run/.toolboxenv"))
    kind = "toolbox";
  else if (env.exists("/run/.containerenv"))
    kind = "podman";
  else if (env.exists("/.dockerenv"))
    kind = "docker";
  else if (auto c = env.read_trimmed("/run/systemd/container"); c.ok() && !c.text.empty())
    kind = c.text;
  if (kind.empty()) {
    h.root.emplace(env.base());
    h.basis = "the same root (not in a container)";
    return h;
  }
  // toolbox and distrobox: `--volume /:/run/host:rslave` (containers/toolbox src/cmd/create.go,
  // distrobox-create). The host's /etc must be there, not just an empty mount point.
  if (env.is_dir("/run/host/etc")) {
    h.root.emplace(env.resolve("/run/host"));
    h.basis = fmt::format("/run/host (the host's / in this {} container)", kind);
    return h;
  }
  h.basis = fmt::format(
      "{}inside a {} container the host's boot configuration is not visible: run halo-doctor on "
      "the host, or mount the host's / and pass --host-root (docker run -v /:/host:ro ... "
      "halo-doctor check --host-root /host)",
      kNotProbedPrefix, kind);
  return h;
}

} // namespace halo
