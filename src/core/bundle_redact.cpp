// SPDX-License-Identifier: MIT
// A capture bundle's redaction (src/core/bundle_internal.hpp): the environment kept by allow-list
// with credentials masked, container secret mounts stored empty, and unless `--no-redact` the
// identities the one redactor learnt (include/halo/redact.hpp) replaced by its pseudonyms where
// each file's format holds them.
#include "bundle_internal.hpp"
#include "redact_rules.hpp"

#include <halo/bundle.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <set>

namespace halo::bundle_detail {

/// The environment allow-list: every variable some probe declares it reads (Probe::env_reads).
std::vector<std::string> env_allow_list(const ProbeRegistry& reg) {
  std::set<std::string> names;
  for (const auto& p : reg.probes())
    for (auto& n : p->env_reads())
      names.insert(std::move(n));
  return {names.begin(), names.end()};
}

namespace {

/// Names that say their value is a credential; masked even when a probe reads the variable.
bool secret_name(std::string_view name) {
  std::string up(name);
  std::transform(up.begin(), up.end(), up.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  static constexpr std::array<std::string_view, 10> kWords = {
      "TOKEN",   "SECRET",      "PASSWORD",   "PASSWD", "CREDENTIAL",
      "API_KEY", "PRIVATE_KEY", "ACCESS_KEY", "APIKEY", "AUTH"};
  return std::any_of(kWords.begin(), kWords.end(),
                     [&](std::string_view w) { return up.find(w) != std::string::npos; });
}

/// A process environment (environ(7) as procfs shows it: /proc/self/environ, and any
/// /proc/<pid>/environ a probe might read one day): NUL-separated NAME=VALUE, kept by allow-list.
bool environ_file(const std::string& abs) {
  return abs.ends_with("/environ") &&
         (abs.starts_with("/proc/") || abs.starts_with("/run/host/proc/"));
}

} // namespace

bool secret_mount(const std::string& abs) {
  static constexpr std::array<std::string_view, 4> kMounts = {
      "/run/secrets", "/var/run/secrets", "/run/host/run/secrets", "/run/host/var/run/secrets"};
  return std::any_of(kMounts.begin(), kMounts.end(), [&](std::string_view base) {
    return abs == base ||
           (abs.starts_with(base) && abs.size() > base.size() && abs[base.size()] == '/');
  });
}

namespace {

/// Files that hold a serial number or UUID, by name, and how each writes its value: DMI
/// (drivers/firmware/dmi-id.c product_serial, product_uuid, board_serial, chassis_serial, and the
/// asset tags), PCI and amdgpu (`serial_number`, amdgpu `unique_id`: amdgpu_device.c /
/// amdgpu_psp.c, "%016llx"), NVMe (`serial`, `wwid`, `uuid`, `nguid`, `eui`:
/// drivers/nvme/host/sysfs.c).
std::optional<IdForm> identifier_file(const std::string& abs) {
  const std::string name = abs.substr(abs.rfind('/') + 1);
  if (name == "unique_id") return IdForm::hex;
  for (const char* n :
       {"product_serial", "product_uuid", "board_serial", "chassis_serial", "board_asset_tag",
        "chassis_asset_tag", "serial_number", "serial", "uuid", "wwid", "nguid", "eui"})
    if (name == n) return IdForm::text;
  return std::nullopt;
}

/// A value without its trailing newline and spaces, and that tail.
std::pair<std::string, std::string> trim_tail(std::string v) {
  std::string tail;
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) {
    tail.insert(tail.begin(), v.back());
    v.pop_back();
  }
  return {std::move(v), std::move(tail)};
}

/// At least 16 characters, letters and digits both, no white space, not a path: the shape of an
/// API key or token (and not of a user name, a locale or a directory).
bool token_shaped(std::string_view v) {
  const auto has = [&](int (*cls)(int)) {
    return std::any_of(v.begin(), v.end(),
                       [&](char c) { return cls(static_cast<unsigned char>(c)) != 0; });
  };
  return v.size() >= 16 && v.front() != '/' && v.find_first_of(" \t\n") == std::string_view::npos &&
         has(&::isalpha) && has(&::isdigit);
}

} // namespace

FileRedactor::FileRedactor(Redactor& identities, std::vector<std::string> env_allow)
    : ids_(identities), env_allow_(std::move(env_allow)) {}

void FileRedactor::learn(const std::string& abs, const std::string& text) {
  if (environ_file(abs)) {
    for (const auto& v : split(text, '\0')) {
      const auto eq = v.find('=');
      if (eq == std::string::npos) continue;
      const std::string name = v.substr(0, eq);
      const std::string val = v.substr(eq + 1);
      const bool kept = env_name_matches(name, env_allow_) && !secret_name(name);
      // A value not kept may still occur elsewhere (a token pasted into another variable):
      // long, token-shaped ones are removed from every file.
      if (!kept && token_shaped(val)) scrub_[val] = "<dropped>";
      for (const auto& [start, len] : redact_rules::url_userinfo(val)) {
        const std::string info = val.substr(start, len);
        if (info.size() >= 6) scrub_[info] = "<masked>";
        if (const auto colon = info.find(':');
            colon != std::string::npos && info.size() - colon - 1 >= 6)
          scrub_[info.substr(colon + 1)] = "<masked>";
      }
    }
  }
  if (!ids_.on()) return;
  // What the shared learning step (Redactor) did not see: identifiers in other files of their
  // kind, and the host names, machine-ids, GPU UUIDs and home directories any stored file names
  // (the passwd and group files name the system accounts' homes too: not people).
  if (const auto form = identifier_file(abs)) ids_.identifier(trim_tail(text).first, *form);
  if (abs.ends_with("/properties"))
    for (const auto& line : split(text, '\n'))
      if (line.starts_with("unique_id ")) ids_.identifier(line.substr(10), IdForm::decimal);
  if (!abs.ends_with("/etc/passwd") && !abs.ends_with("/etc/group")) ids_.learn_homes(text);
  ids_.learn_text(text);
}

std::string FileRedactor::apply(const std::string& abs, std::string text) {
  const std::string before = text;
  if (environ_file(abs)) text = environ(text);
  if (ids_.on()) {
    if (abs == "/proc/sys/kernel/hostname") {
      text = std::string(redact_rules::kHost) + "\n";
    } else if (abs.ends_with("/etc/passwd") || abs.ends_with("/etc/group")) {
      text = colon_file(abs, text);
    } else if (const auto form = identifier_file(abs)) {
      auto [v, tail] = trim_tail(text);
      text = ids_.identifier(v, *form) + tail;
    } else if (abs.ends_with("/properties")) {
      text = kfd_properties(text);
    }
    text = ids_.in_file(text);
  }
  text = scrub(text);
  if (text != before) notes_.push_back(ids_.path(note_for(abs)));
  return text;
}

void FileRedactor::apply(FactSet& facts) {
  FactSet out;
  for (const auto& [k, f] : facts.all()) {
    Fact r = f;
    const bool id_key = redact_rules::identifier_key(k);
    const bool ok = f.ok();
    auto fix = [&](const std::string& v) {
      if (ids_.on() && id_key && ok) return ids_.identifier_value(v);
      return scrub(ids_.in_file(v));
    };
    if (auto* v = std::get_if<std::string>(&r.value)) *v = fix(*v);
    if (auto* l = std::get_if<std::vector<std::string>>(&r.value))
      for (auto& e : *l)
        e = fix(e);
    r.source = scrub(ids_.in_file(r.source));
    r.reason = scrub(ids_.in_file(r.reason));
    if (r.value != f.value || r.source != f.source || r.reason != f.reason)
      notes_.push_back("runtime fact " + k +
                       (id_key ? ": serial/UUID" : ": user name, secret or identifier"));
    out.put(std::move(r));
  }
  facts = std::move(out);
}

std::string FileRedactor::scrub(std::string text) const {
  if (scrub_.empty()) return text;
  std::vector<std::pair<std::string, std::string>> order(scrub_.begin(), scrub_.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [from, to] : order)
    for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos;) {
      text.replace(pos, from.size(), to);
      pos += to.size();
    }
  return text;
}

std::string FileRedactor::note_for(const std::string& abs) const {
  if (abs == "/proc/sys/kernel/hostname") return abs + ": host name";
  if (abs.ends_with("/properties")) return abs + ": unique_id (serial number)";
  if (abs.ends_with("/environ"))
    return abs + ": variables no probe reads dropped, credentials masked, user and host names";
  if (identifier_file(abs)) return abs + ": serial number or UUID (pseudonym)";
  if (abs.ends_with("/etc/passwd") || abs.ends_with("/etc/group"))
    return fmt::format("{}: {} user name(s)", abs, ids_.user_count());
  return abs + ": secrets, identifiers, host or user names";
}

std::string FileRedactor::user_or_self(const std::string& n) const {
  const std::string u = ids_.user(n);
  return u.empty() ? n : u;
}

std::string FileRedactor::colon_file(const std::string& abs, const std::string& text) const {
  std::string out;
  for (const auto& line : split(text, '\n')) {
    auto f = split(line, ':');
    if (f.size() >= 4) {
      const bool person = !ids_.user(f[0]).empty();
      f[0] = user_or_self(f[0]);
      if (abs.ends_with("/etc/group")) {
        auto members = split(f[3], ',');
        for (auto& m : members)
          m = user_or_self(m);
        f[3] = fmt::format("{}", fmt::join(members, ","));
      } else if (f.size() >= 6) {
        if (person) f[4] = "";
      }
      out += fmt::format("{}", fmt::join(f, ":"));
    } else {
      out += line;
    }
    out += '\n';
  }
  if (!out.empty() && (text.empty() || text.back() != '\n')) out.pop_back();
  return out;
}

std::string FileRedactor::environ(const std::string& text) const {
  std::string out;
  const auto vars = split(text, '\0');
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const std::string& v = vars[i];
    const auto eq = v.find('=');
    if (eq == std::string::npos) {
      if (!v.empty() && i + 1 < vars.size()) out += std::string("<dropped>") + '\0';
      continue;
    }
    const std::string key = v.substr(0, eq);
    std::string val = v.substr(eq + 1);
    if (!env_name_matches(key, env_allow_)) {
      val = "<dropped>";
    } else if (secret_name(key)) {
      val = "<masked>";
    } else {
      val = mask_url_credentials(val);
      if (ids_.on()) {
        if (key == "HOSTNAME" || key == "HOST")
          val = redact_rules::kHost;
        else
          // A kept value is short and says who and where: names as words too (the report's
          // rule), besides the identifiers and home directories every file loses.
          val = ids_(val);
      }
    }
    out += fmt::format("{}={}", key, val);
    if (i + 1 < vars.size()) out += '\0';
  }
  return out;
}

std::string FileRedactor::kfd_properties(const std::string& text) {
  std::string out;
  const auto lines = split(text, '\n');
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += lines[i].starts_with("unique_id ")
               ? "unique_id " + ids_.identifier(lines[i].substr(10), IdForm::decimal)
               : lines[i];
    if (i + 1 < lines.size()) out += '\n';
  }
  return out;
}

} // namespace halo::bundle_detail
