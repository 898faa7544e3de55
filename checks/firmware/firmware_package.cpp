// SPDX-License-Identifier: MIT
// Probe: the installed GPU firmware package and its version, from the package database of the
// host (its configuration root: the image's database says nothing about the firmware the host
// boots). Debian and Ubuntu: /var/lib/dpkg/status, stanzas of "Package:", "Status:" and
// "Version:" fields (deb-control(5), dpkg-query(1)): linux-firmware (Ubuntu; Debian 13 and later),
// firmware-amd-graphics (Debian). Arch: /var/lib/pacman/local/<name>-<version>/desc, "%NAME%"
// and "%VERSION%" sections (libalpm's local database): linux-firmware-amdgpu or linux-firmware.
// Fedora and RHEL keep the rpm database in SQLite (/var/lib/rpm/rpmdb.sqlite): not read here,
// the fact is not probed there. linux-firmware versions are release dates (20251125), which
// the MES firmware rules name.
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>

namespace halo::probes {
namespace {

constexpr std::size_t kMaxStatusBytes = std::size_t{64} << 20; // dpkg status: a few MiB

void put_all(FactSet& facts, Status st, const std::string& src, const std::string& why) {
  for (const std::string_view k :
       {fact_keys::firmware::package, fact_keys::firmware::package_version})
    facts.put_status(std::string(k), st, src, why);
}

/// The installed version of the first of `names` in dpkg's status file, with its package name.
std::optional<std::pair<std::string, std::string>> from_dpkg(const std::string& text) {
  std::optional<std::pair<std::string, std::string>> best;
  std::string pkg;
  std::string version;
  bool installed = false;
  int rank = 99;
  auto flush = [&] {
    static const std::array<std::string_view, 2> kNames = {"linux-firmware",
                                                           "firmware-amd-graphics"};
    for (int i = 0; i < static_cast<int>(kNames.size()); ++i)
      if (installed && pkg == kNames.at(static_cast<std::size_t>(i)) && i < rank &&
          !version.empty()) {
        rank = i;
        best = std::pair{pkg, version};
      }
    pkg.clear();
    version.clear();
    installed = false;
  };
  for (const auto& line : split_lines(text)) {
    if (line.empty()) {
      flush();
      continue;
    }
    if (line.rfind("Package: ", 0) == 0)
      pkg = line.substr(9);
    else if (line.rfind("Version: ", 0) == 0)
      version = line.substr(9);
    else if (line.rfind("Status: ", 0) == 0)
      installed = line.size() >= 18 && line.compare(line.size() - 10, 10, " installed") == 0;
  }
  flush();
  return best;
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  const Root* host = ctx.host_config_root();
  if (host == nullptr) {
    put_all(facts, Status::missing, "host root", ctx.host_basis());
    return;
  }
  if (ReadResult r = host->read("/var/lib/dpkg/status", kMaxStatusBytes); r.ok()) {
    if (auto p = from_dpkg(r.text)) {
      facts.put_ok(std::string(fact_keys::firmware::package), p->first, r.path);
      facts.put_ok(std::string(fact_keys::firmware::package_version), p->second, r.path);
    } else {
      put_all(facts, Status::missing, r.path,
              "neither linux-firmware nor firmware-amd-graphics is installed");
    }
    return;
  } else if (r.status != Status::missing) {
    put_all(facts, r.status, r.path, r.reason);
    return;
  }
  if (auto entries = host->list("/var/lib/pacman/local")) {
    for (const char* name : {"linux-firmware-amdgpu", "linux-firmware"}) {
      for (const auto& e : *entries) {
        // <name>-<pkgver>-<pkgrel>: the name is followed by a version starting with a digit.
        const std::string pre = std::string(name) + "-";
        if (e.rfind(pre, 0) != 0 || e.size() <= pre.size() ||
            (std::isdigit(static_cast<unsigned char>(e[pre.size()])) == 0))
          continue;
        const ReadResult d = host->read("/var/lib/pacman/local/" + e + "/desc", 1 << 20);
        if (!d.ok()) continue;
        const auto lines = split_lines(d.text);
        for (std::size_t i = 0; i + 1 < lines.size(); ++i)
          if (lines[i] == "%VERSION%") {
            facts.put_ok(std::string(fact_keys::firmware::package), std::string(name), d.path);
            facts.put_ok(std::string(fact_keys::firmware::package_version), lines[i + 1], d.path);
            return;
          }
      }
    }
    put_all(facts, Status::missing, "/var/lib/pacman/local", "linux-firmware is not installed");
    return;
  }
  put_all(facts, Status::missing, "/var/lib/dpkg/status",
          std::string(kNotProbedPrefix) +
              "no dpkg or pacman database (rpm's SQLite database is not read)");
}

} // namespace

std::unique_ptr<Probe> make_firmware_package_probe() {
  return std::make_unique<BasicProbe>("firmware_package", collect);
}

} // namespace halo::probes
