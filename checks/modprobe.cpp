// Probe: modprobe configuration, modprobe.d(5). Files named *.conf in /etc/modprobe.d,
// /run/modprobe.d, /usr/local/lib/modprobe.d, /usr/lib/modprobe.d and /lib/modprobe.d; a file
// in an earlier directory hides one of the same name in a later one; the survivors are read in
// file-name order. Module and parameter names are compared with '-' equal to '_', as kmod and
// the kernel do. Only options for the modules the doctor judges are recorded.
#include "probe_util.hpp"
#include "probes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace halo::probes {
namespace {

const char* const kDirs[] = {"/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d",
                             "/usr/lib/modprobe.d", "/lib/modprobe.d"};
const std::set<std::string, std::less<>> kModules = {"amdgpu",  "ttm",    "amdttm",
                                                     "amd_ttm", "amdkfd", "drm"};

std::string norm(std::string s) {
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  std::map<std::string, std::string> files; // name -> absolute path of the winning file
  for (const char* d : kDirs) {
    auto names = ctx.root.list(d);
    if (!names) continue;
    for (const auto& n : *names) {
      if (n.size() > 5 && n.substr(n.size() - 5) == ".conf")
        files.emplace(n, std::string(d) + "/" + n);
    }
  }
  std::vector<std::string> used_files;
  std::vector<std::string> blacklist;
  std::vector<std::string> blocked;
  std::vector<std::string> unreadable;
  for (const auto& [name, path] : files) {
    ReadResult r = ctx.root.read(path, 256 * 1024);
    if (!r.ok()) {
      unreadable.push_back(fmt::format("{} ({})", path, r.reason));
      continue;
    }
    used_files.push_back(path);
    // Join continuation lines first, remembering where each logical line started.
    std::vector<std::pair<std::size_t, std::string>> lines;
    std::size_t lineno = 0;
    std::string pending;
    std::size_t start_line = 0;
    for (const auto& raw : split_lines(r.text)) {
      ++lineno;
      if (pending.empty()) start_line = lineno;
      if (!raw.empty() && raw.back() == '\\') {
        pending += raw.substr(0, raw.size() - 1) + " ";
        continue;
      }
      lines.emplace_back(start_line, pending + raw);
      pending.clear();
    }
    for (const auto& [ln, text] : lines) {
      std::istringstream in(text);
      std::string cmd;
      std::string module;
      in >> cmd >> module;
      if (cmd.empty() || cmd[0] == '#') continue;
      module = norm(module);
      const std::string where = fmt::format("{}:{}", path, ln);
      if (cmd == "blacklist" && kModules.count(module) != 0U) {
        blacklist.push_back(module);
        facts.put_ok("modprobe.blacklist_source." + module, where, where);
      } else if (cmd == "install" && kModules.count(module) != 0U) {
        std::string rest;
        std::getline(in, rest);
        if (rest.find("/bin/false") != std::string::npos ||
            rest.find("/bin/true") != std::string::npos) {
          blocked.push_back(module);
          facts.put_ok("modprobe.blocked_source." + module, where, where);
        }
      } else if (cmd == "options" && kModules.count(module) != 0U) {
        std::string opt;
        while (in >> opt) {
          if (opt[0] == '#') break;
          auto eq = opt.find('=');
          std::string param = norm(opt.substr(0, eq));
          std::string value = eq == std::string::npos ? "" : opt.substr(eq + 1);
          if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
            value = value.substr(1, value.size() - 2);
          facts.put_ok("modprobe.options." + module + "." + param, value, where);
        }
      }
    }
  }
  facts.put_ok("modprobe.files", used_files, "modprobe.d");
  facts.put_ok("modprobe.blacklist", blacklist, "modprobe.d");
  facts.put_ok("modprobe.install_blocked", blocked, "modprobe.d");
  facts.put_ok("modprobe.unreadable", unreadable, "modprobe.d");
}

} // namespace

std::unique_ptr<Probe> make_modprobe_probe() {
  return std::make_unique<BasicProbe>(
      "modprobe",
      std::vector<std::string>{"modprobe.files", "modprobe.blacklist", "modprobe.install_blocked",
                               "modprobe.unreadable", "modprobe.options.*.*",
                               "modprobe.blacklist_source.*", "modprobe.blocked_source.*"},
      std::vector<std::string>{"/etc/modprobe.d/*.conf", "/run/modprobe.d/*.conf",
                               "/usr/local/lib/modprobe.d/*.conf", "/usr/lib/modprobe.d/*.conf",
                               "/lib/modprobe.d/*.conf"},
      collect);
}

} // namespace halo::probes
