// SPDX-License-Identifier: MIT
// Probe: the distribution, from os-release(5): /etc/os-release, else /usr/lib/os-release.
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

namespace halo::probes {
namespace {

/// Unquotes an os-release value: shell-style single or double quotes, backslash escapes.
std::string unquote(std::string_view v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    const char q = v.front();
    v = v.substr(1, v.size() - 2);
    if (q == '\'') return std::string(v);
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '\\' && i + 1 < v.size()) ++i;
      out += v[i];
    }
    return out;
  }
  return std::string(v);
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  put_text(facts, ctx.root, std::string(fact_keys::host::name), "/proc/sys/kernel/hostname");
  // The host's distribution (its boot tools follow it); the image's only when no host root is
  // reachable in a container.
  const Root* host = ctx.host_config_root();
  const Root& os_root = host != nullptr ? *host : ctx.root;
  ReadResult r = os_root.read("/etc/os-release");
  if (r.status == Status::missing) r = os_root.read("/usr/lib/os-release");
  const std::vector<std::pair<std::string, std::string>> wanted = {
      {"ID", std::string(fact_keys::os::id)},
      {"ID_LIKE", std::string(fact_keys::os::id_like)},
      {"VERSION_ID", std::string(fact_keys::os::version_id)},
      {"VARIANT_ID", std::string(fact_keys::os::variant_id)},
      {"PRETTY_NAME", std::string(fact_keys::os::pretty_name)}};
  if (!r.ok()) {
    for (const auto& [field, key] : wanted)
      facts.put_status(key, r.status, r.path, r.reason);
    return;
  }
  std::map<std::string, std::string> kv;
  for (const auto& line : split_lines(r.text)) {
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    kv[line.substr(0, eq)] = unquote(std::string_view(line).substr(eq + 1));
  }
  for (const auto& [field, key] : wanted) {
    auto it = kv.find(field);
    if (it != kv.end())
      facts.put_ok(key, it->second, r.path);
    else
      facts.put_status(key, Status::missing, r.path, field + " is not set");
  }
  // ID_LIKE as a list makes "is this Debian-like" a single contains test.
  std::vector<std::string> family;
  if (kv.contains("ID")) family.push_back(kv["ID"]);
  std::string like = kv.contains("ID_LIKE") ? kv["ID_LIKE"] : "";
  std::size_t pos = 0;
  while (pos < like.size()) {
    auto sp = like.find(' ', pos);
    if (sp == std::string::npos) sp = like.size();
    if (sp > pos) family.push_back(like.substr(pos, sp - pos));
    pos = sp + 1;
  }
  facts.put_ok(std::string(fact_keys::os::family), family, r.path);
}

} // namespace

std::unique_ptr<Probe> make_os_probe() {
  return std::make_unique<BasicProbe>("os", collect);
}

} // namespace halo::probes
