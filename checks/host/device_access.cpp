// SPDX-License-Identifier: MIT
// Probe: can the current user open /dev/kfd and the GPUs' render nodes read-write, as ROCm
// must? Identity comes from /proc/self/status (Uid:, Gid:, Groups:), names from /etc/passwd and
// /etc/group, never from getlogin(). On the live root the kernel's own answer, access(2)
// (which also honours ACLs such as logind's uaccess), decides; in a fixture the mode bits do.
// The fixture sidecar /.halo/nodes.json holds device-node owners and modes (see Root).
#include "gpus/gpus.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

namespace halo::probes {
namespace {

struct Identity {
  std::optional<std::uint32_t> uid;
  std::optional<std::uint32_t> gid;
  std::set<std::uint32_t> gids; // active: primary + supplementary
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto p = s.find(sep, start);
    if (p == std::string::npos) p = s.size();
    out.push_back(s.substr(start, p - start));
    start = p + 1;
  }
  return out;
}

bool user_can_rw(const NodeInfo& n, const Identity& id, const std::set<std::uint32_t>& gids) {
  if (!id.uid) return false;
  if (*id.uid == 0) return true;
  if (n.uid == *id.uid) return (n.mode & 0600U) == 0600U;
  if (gids.contains(n.gid)) return (n.mode & 0060U) == 0060U;
  return (n.mode & 0006U) == 0006U;
}

/// The facts of one device node: /dev/kfd (access.kfd.*) or the render node of GPU N
/// (access.render.N.*).
struct NodeKeys {
  std::string path;
  std::string exists;
  std::string mode;
  std::string group;
  std::string uid;
  std::string gid;
  std::string rw;
  std::string rw_after_relogin;

  static NodeKeys kfd() {
    namespace a = fact_keys::access;
    return {std::string(a::kfd_path), std::string(a::kfd_exists),
            std::string(a::kfd_mode), std::string(a::kfd_group),
            std::string(a::kfd_uid),  std::string(a::kfd_gid),
            std::string(a::kfd_rw),   std::string(a::kfd_rw_after_relogin)};
  }
  static NodeKeys render(std::int64_t i) {
    namespace a = fact_keys::access;
    return {
        a::render_path(i), a::render_exists(i), a::render_mode(i), a::render_group(i),
        a::render_uid(i),  a::render_gid(i),    a::render_rw(i),   a::render_rw_after_relogin(i)};
  }
};

void collect(const ProbeContext& ctx, FactSet& facts) {
  const Root& root = ctx.root;
  Identity id;
  ReadResult st = root.read("/proc/self/status");
  if (st.ok()) {
    for (const auto& line : split_lines(st.text)) {
      auto first_num = [&](std::size_t off) {
        return parse_int(line.substr(off, line.find_first_of(" \t", off + 1) - off));
      };
      if (line.rfind("Uid:", 0) == 0) {
        if (auto v = first_num(line.find_first_not_of(" \t", 4)))
          id.uid = static_cast<std::uint32_t>(*v);
      } else if (line.rfind("Gid:", 0) == 0) {
        if (auto v = first_num(line.find_first_not_of(" \t", 4)))
          id.gid = static_cast<std::uint32_t>(*v);
      } else if (line.rfind("Groups:", 0) == 0) {
        std::string rest = line.substr(7);
        for (const auto& tok : split(rest, ' ')) {
          for (const auto& t2 : split(tok, '\t'))
            if (auto v = parse_int(t2)) id.gids.insert(static_cast<std::uint32_t>(*v));
        }
      }
    }
  }
  if (id.gid) id.gids.insert(*id.gid);
  // Under sudo the doctor runs as root, but the training job will run as the invoking user:
  // judge access for SUDO_UID with the groups /etc/group gives that user (sudo(8) sets SUDO_UID).
  // The environment probe (which runs before this one) has read /proc/self/environ.
  bool via_sudo = false;
  if (id.uid == 0U) {
    const auto sudo_uid = facts.get<std::string>(fact_keys::env::key("sudo_uid"));
    if (auto v = sudo_uid ? parse_int(*sudo_uid) : std::nullopt; v && *v > 0) {
      id.uid = static_cast<std::uint32_t>(*v);
      id.gid.reset();
      id.gids.clear();
      via_sudo = true;
    }
  }
  facts.put_ok(std::string(fact_keys::user::via_sudo), via_sudo, "/proc/self/environ (SUDO_UID)");
  if (!id.uid) {
    facts.put_status(std::string(fact_keys::user::uid), st.ok() ? Status::error : st.status,
                     st.path, st.ok() ? "no Uid: line" : st.reason);
  } else {
    facts.put_ok(std::string(fact_keys::user::uid), static_cast<std::int64_t>(*id.uid), st.path);
  }

  // Names: /etc/passwd for the user, /etc/group for group names and configured membership.
  std::string user_name;
  ReadResult pw = root.read("/etc/passwd", std::size_t{1024} * 1024);
  if (pw.ok() && id.uid) {
    for (const auto& line : split_lines(pw.text)) {
      auto f = split(line, ':');
      if (f.size() >= 4 && parse_int(f[2]) == static_cast<std::int64_t>(*id.uid)) {
        user_name = f[0];
        if (via_sudo)
          if (auto g = parse_int(f[3])) id.gid = static_cast<std::uint32_t>(*g);
        break;
      }
    }
  }
  if (!user_name.empty())
    facts.put_ok(std::string(fact_keys::user::name), user_name, pw.path);
  else
    facts.put_status(std::string(fact_keys::user::name), pw.ok() ? Status::missing : pw.status,
                     pw.path, pw.ok() ? "uid not in /etc/passwd" : pw.reason);

  std::map<std::uint32_t, std::string> group_names;
  std::map<std::string, std::uint32_t> group_ids;
  std::set<std::uint32_t> configured =
      id.gid ? std::set<std::uint32_t>{*id.gid} : std::set<std::uint32_t>{};
  ReadResult gr = root.read("/etc/group", std::size_t{1024} * 1024);
  if (gr.ok()) {
    for (const auto& line : split_lines(gr.text)) {
      auto f = split(line, ':');
      if (f.size() < 4) continue;
      auto g = parse_int(f[2]);
      if (!g) continue;
      const auto gid = static_cast<std::uint32_t>(*g);
      group_names[gid] = f[0];
      group_ids[f[0]] = gid;
      auto members = split(f[3], ',');
      if (!user_name.empty() &&
          std::find(members.begin(), members.end(), user_name) != members.end())
        configured.insert(gid);
    }
  }
  if (via_sudo) {
    if (id.gid) configured.insert(*id.gid);
    id.gids = configured; // the user's next session gets exactly these
  }
  auto names_of = [&](const std::set<std::uint32_t>& gids) {
    std::vector<std::string> out;
    out.reserve(gids.size());
    for (auto g : gids)
      out.push_back(group_names.contains(g) ? group_names[g] : std::to_string(g));
    return out;
  };
  if (id.uid)
    facts.put_ok(std::string(fact_keys::user::groups), names_of(id.gids), st.path + " (Groups:)");
  if (gr.ok())
    facts.put_ok(std::string(fact_keys::user::configured_groups), names_of(configured), gr.path);
  else
    facts.put_status(std::string(fact_keys::user::configured_groups), gr.status, gr.path,
                     gr.reason);
  for (const char* g : {"render", "video"}) {
    if (group_ids.contains(g))
      facts.put_ok(fact_keys::group::gid(g), static_cast<std::int64_t>(group_ids[g]), gr.path);
  }

  auto node_facts = [&](const NodeKeys& k, const std::string& path) {
    NodeInfo n = root.node(path);
    facts.put_ok(k.path, path, path);
    facts.put_ok(k.exists, n.status == Status::ok, path);
    if (n.status != Status::ok) {
      for (const std::string* key : {&k.mode, &k.group, &k.rw, &k.rw_after_relogin})
        facts.put_status(*key, n.status, path, n.reason);
      return;
    }
    facts.put_ok(k.mode, fmt::format("{:04o}", n.mode), path);
    facts.put_ok(k.group, group_names.contains(n.gid) ? group_names[n.gid] : std::to_string(n.gid),
                 path);
    facts.put_ok(k.uid, static_cast<std::int64_t>(n.uid), path);
    facts.put_ok(k.gid, static_cast<std::int64_t>(n.gid), path);
    if (!id.uid) {
      facts.put_status(k.rw, Status::error, path, "the current user is unknown");
      return;
    }
    if (root.is_live() && !via_sudo) {
      const bool ok = ::access(path.c_str(), R_OK | W_OK) == 0;
      facts.put_ok(k.rw, ok, "access(2) " + path);
    } else {
      facts.put_ok(k.rw, user_can_rw(n, id, id.gids), path + " (mode bits)");
    }
    std::set<std::uint32_t> after = id.gids;
    after.insert(configured.begin(), configured.end());
    facts.put_ok(k.rw_after_relogin, user_can_rw(n, id, after), path + " (mode bits, /etc/group)");
  };

  node_facts(NodeKeys::kfd(), "/dev/kfd");
  // The render node of each KFD GPU node, in the same order as gpu.N.
  std::int64_t i = 0;
  if (auto gpus = facts.get<std::vector<std::string>>(fact_keys::kfd::gpu_nodes)) {
    for (const auto& node : *gpus) {
      auto minor = facts.get_int(fact_keys::kfd::node_drm_render_minor(node));
      if (!minor) continue;
      node_facts(NodeKeys::render(i++), fmt::format("/dev/dri/renderD{}", *minor));
    }
  }
  if (i == 0) {
    // No KFD topology: fall back to the render nodes of the AMD DRM cards.
    if (auto cards = facts.get<std::vector<std::string>>(kAmdCards)) {
      for (const auto& c : *cards)
        if (auto minor = facts.get_int(fact_keys::drm::render_minor(c)))
          node_facts(NodeKeys::render(i++), fmt::format("/dev/dri/renderD{}", *minor));
    }
  }
  facts.put_ok(std::string(fact_keys::access::render_count), i, "/dev/dri");
}

} // namespace

std::unique_ptr<Probe> make_device_access_probe() {
  return std::make_unique<BasicProbe>("device_access", collect);
}

} // namespace halo::probes
