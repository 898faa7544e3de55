// SPDX-License-Identifier: MIT
// A capture bundle's redaction (src/core/bundle_internal.hpp): the environment kept by allow-list
// with credentials masked, container secret mounts stored empty, and unless `--no-redact` the
// host name, human user names and serial numbers/UUIDs replaced by stable pseudonyms.
#include "bundle_internal.hpp"
#include "redact_rules.hpp"

#include <halo/bundle.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

namespace halo {
namespace bundle_detail {

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

/// How an identifier file writes its value, so its pseudonym is written the same way and the same
/// GPU gets the same pseudonym in every form (kfd `unique_id` decimal, amdgpu `unique_id` %016llx,
/// ROCr's `GPU-<hex>`).
enum class IdForm { decimal, hex, text };

/// Files that hold a serial number or UUID, by name: DMI (drivers/firmware/dmi-id.c
/// product_serial, product_uuid, board_serial, chassis_serial, and the asset tags), PCI and amdgpu
/// (`serial_number`, amdgpu `unique_id`: amdgpu_device.c / amdgpu_psp.c, "%016llx"), NVMe
/// (`serial`, `wwid`, `uuid`, `nguid`, `eui`: drivers/nvme/host/sysfs.c).
std::optional<IdForm> identifier_file(const std::string& abs) {
  const std::string name = abs.substr(abs.rfind('/') + 1);
  if (name == "unique_id") return IdForm::hex;
  for (const char* n :
       {"product_serial", "product_uuid", "board_serial", "chassis_serial", "board_asset_tag",
        "chassis_asset_tag", "serial_number", "serial", "uuid", "wwid", "nguid", "eui"})
    if (name == n) return IdForm::text;
  return std::nullopt;
}

} // namespace

class Redactor::Impl {
public:
  Impl(const Root& root, std::vector<std::string> env_allow, bool on)
      : on_(on), env_allow_(std::move(env_allow)) {
    if (!on_) return;
    const ReadResult host = root.read_trimmed("/proc/sys/kernel/hostname");
    if (host.ok()) hostname_ = host.text;
    const ReadResult pw = root.read("/etc/passwd");
    if (!pw.ok()) return;
    for (const auto& line : split(pw.text, '\n')) {
      const auto f = split(line, ':');
      if (f.size() < 3) continue;
      char* end = nullptr;
      const long uid = std::strtol(f[2].c_str(), &end, 10);
      if (end == f[2].c_str() || uid < 1000 || uid >= 60000 || names_.contains(f[0])) continue;
      names_[f[0]] = redact_rules::user(names_.size() + 1);
    }
  }

  /// Learns the machine's serial numbers and UUIDs from where the kernel shows them, whether or
  /// not a probe reads those files (none is stored for it), so that they are replaced wherever
  /// else they occur (a kernel log line). Sources: drivers/firmware/dmi-id.c,
  /// drivers/nvme/host/sysfs.c (serial), drivers/pci/pci-sysfs.c and amdgpu (serial_number,
  /// unique_id).
  void learn_machine_identifiers(const Root& root) {
    if (!on_) return;
    std::vector<std::string> paths;
    for (const char* f : {"product_serial", "product_uuid", "board_serial", "chassis_serial",
                          "board_asset_tag", "chassis_asset_tag"})
      paths.push_back(std::string("/sys/class/dmi/id/") + f);
    auto each = [&](const std::string& dir, std::initializer_list<const char*> files) {
      if (auto names = root.list(dir))
        for (const auto& n : *names)
          for (const char* f : files)
            paths.push_back(fmt::format("{}/{}/{}", dir, n, f));
    };
    each("/sys/class/nvme", {"serial"});
    each("/sys/bus/pci/devices", {"serial_number", "unique_id"});
    for (const auto& p : paths)
      if (ReadResult r = root.read(p, 256); r.ok()) {
        while (!r.text.empty() && std::isspace(static_cast<unsigned char>(r.text.back())) != 0)
          r.text.pop_back();
        pseudonym(r.text, *identifier_file(p));
      }
  }

  /// First pass, over every stored file in path order: learns the identifiers (serial and UUID
  /// files, kfd `unique_id` lines) and the secrets of the environment, so the second pass can
  /// remove them wherever else they occur.
  void learn(const std::string& abs, const std::string& text) {
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
        for (const auto& cred : url_credentials(val))
          if (cred.size() >= 6) scrub_[cred] = "<masked>";
      }
    }
    if (!on_) return;
    if (const auto form = identifier_file(abs)) {
      std::string v = text;
      while (!v.empty() && (v.back() == '\n' || v.back() == ' '))
        v.pop_back();
      pseudonym(v, *form);
    }
    if (abs.ends_with("/properties"))
      for (const auto& line : split(text, '\n'))
        if (line.starts_with("unique_id ")) pseudonym(line.substr(10), IdForm::decimal);
  }

  /// Second pass: the file's text as stored in the bundle.
  std::string apply(const std::string& abs, std::string text) {
    const std::string before = text;
    if (environ_file(abs)) text = environ(text);
    if (on_) {
      if (abs == "/proc/sys/kernel/hostname")
        text = std::string(redact_rules::kHost) + "\n";
      else if (abs.ends_with("/etc/passwd") || abs.ends_with("/etc/group"))
        text = colon_file(abs, text);
      else if (const auto form = identifier_file(abs)) {
        std::string v = text;
        std::string tail;
        while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) {
          tail.insert(tail.begin(), v.back());
          v.pop_back();
        }
        text = pseudonym(v, *form) + tail;
      } else if (abs.ends_with("/properties")) {
        text = kfd_properties(text);
      }
    }
    text = scrub(text);
    if (text != before) notes_.push_back(note_for(abs));
    return text;
  }

  /// Runtime facts: values whose key names a serial number or UUID get pseudonyms; home
  /// directories name `user1` as the environment does; learnt secrets and identifiers are
  /// replaced in every string.
  void apply(FactSet& facts) {
    FactSet out;
    for (const auto& [k, f] : facts.all()) {
      Fact r = f;
      const bool id_key = redact_rules::identifier_key(k);
      const bool ok = f.ok();
      auto fix = [&](const std::string& v) {
        if (on_ && id_key && ok) return pseudonym_in(v);
        return scrub(on_ ? home(v) : v);
      };
      if (auto* v = std::get_if<std::string>(&r.value)) *v = fix(*v);
      if (auto* l = std::get_if<std::vector<std::string>>(&r.value))
        for (auto& e : *l)
          e = fix(e);
      r.source = scrub(on_ ? home(r.source) : r.source);
      r.reason = scrub(on_ ? home(r.reason) : r.reason);
      if (r.value != f.value || r.source != f.source || r.reason != f.reason)
        notes_.push_back("runtime fact " + k +
                         (id_key ? ": serial/UUID" : ": user name, secret or identifier"));
      out.put(std::move(r));
    }
    facts = std::move(out);
  }

  const std::vector<std::string>& notes() const { return notes_; }

private:
  /// At least 16 characters, letters and digits both, no white space, not a path: the shape of
  /// an API key or token (and not of a user name, a locale or a directory).
  static bool token_shaped(std::string_view v) {
    const auto has = [&](int (*cls)(int)) {
      return std::any_of(v.begin(), v.end(),
                         [&](char c) { return cls(static_cast<unsigned char>(c)) != 0; });
    };
    return v.size() >= 16 && v.front() != '/' &&
           v.find_first_of(" \t\n") == std::string_view::npos && has(&::isalpha) && has(&::isdigit);
  }

  /// The userinfo (`user:pass`, and the password alone) of each URL in `v`.
  static std::vector<std::string> url_credentials(std::string_view v) {
    std::vector<std::string> out;
    for (std::size_t i = 0; (i = v.find("://", i)) != std::string_view::npos;) {
      const std::size_t start = i + 3;
      std::size_t end = v.find_first_of(" \t\n,;\"'<>", start);
      if (end == std::string_view::npos) end = v.size();
      const auto at = v.substr(start, end - start).rfind('@');
      if (at != std::string_view::npos) {
        const std::string info(v.substr(start, at));
        out.push_back(info);
        if (const auto colon = info.find(':'); colon != std::string::npos)
          out.push_back(info.substr(colon + 1));
      }
      i = start;
    }
    return out;
  }

  /// The pseudonym of identifier `v` (learnt on first sight, in path order): `decimal` and
  /// `hex` values are one number (the same GPU in kfd's decimal and amdgpu's hex), written as
  /// N or N in hex with the original's width; UUID-shaped text as a UUID ending in N; other
  /// text as `redacted-serial-N`. A value that identifies nothing
  /// (redact_rules::identifies_nothing) is kept.
  std::string pseudonym(const std::string& v, IdForm form) {
    if (redact_rules::identifies_nothing(v)) return v;
    std::optional<std::uint64_t> num;
    if (form != IdForm::text) {
      std::uint64_t n = 0;
      const auto [p, ec] =
          std::from_chars(v.data(), v.data() + v.size(), n, form == IdForm::decimal ? 10 : 16);
      if (ec == std::errc() && p == v.data() + v.size()) num = n;
    }
    const std::string key = num ? fmt::format("n:{}", *num) : "t:" + v;
    auto it = ids_.find(key);
    if (it == ids_.end()) it = ids_.emplace(key, ids_.size() + 1).first;
    const std::size_t n = it->second;
    std::string out;
    if (num && form == IdForm::decimal) {
      out = fmt::format("{}", n);
    } else if (num) {
      out = fmt::format("{:0{}x}", n, std::max<std::size_t>(v.size(), 1));
    } else if (v.size() == 36 && v[8] == '-' && v[13] == '-' && v[18] == '-' && v[23] == '-') {
      out = fmt::format("00000000-0000-0000-0000-{:012x}", n);
    } else {
      out = redact_rules::serial(n);
    }
    // The same value anywhere else (dmesg, ROCr's GPU-<hex>, another file) gets it too; short
    // values only in their own file (a 4-digit number would match inside unrelated numbers).
    if (v.size() >= (num ? 10U : 6U)) scrub_[v] = out;
    if (num && fmt::format("{}", *num).size() >= 10) {
      const std::string hex = fmt::format("{:016x}", *num);
      const std::string hex_to = fmt::format("{:016x}", n);
      scrub_[hex] = hex_to;
      std::string upper = hex;
      std::transform(upper.begin(), upper.end(), upper.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      scrub_[upper] = hex_to;
      scrub_[fmt::format("{}", *num)] = fmt::format("{}", n);
    }
    return out;
  }

  /// A fact value naming an identifier: ROCr's `GPU-<hex>` keeps its form, anything else is text.
  std::string pseudonym_in(const std::string& v) {
    if (v.starts_with("GPU-") && v.size() > 4) return "GPU-" + pseudonym(v.substr(4), IdForm::hex);
    return pseudonym(v, IdForm::text);
  }

  /// Replaces every learnt secret and identifier, longest first (a value that holds another).
  std::string scrub(std::string text) const {
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

  std::string note_for(const std::string& abs) const {
    if (abs == "/proc/sys/kernel/hostname") return abs + ": host name";
    if (abs.ends_with("/properties")) return abs + ": unique_id (serial number)";
    if (abs.ends_with("/environ"))
      return abs + ": variables no probe reads dropped, credentials masked, user and host names";
    if (identifier_file(abs)) return abs + ": serial number or UUID (pseudonym)";
    if (abs.ends_with("/etc/passwd") || abs.ends_with("/etc/group"))
      return fmt::format("{}: {} user name(s)", abs, names_.size());
    return abs + ": secrets, identifiers or user names";
  }
  std::string user(const std::string& n) const {
    auto it = names_.find(n);
    return it == names_.end() ? n : it->second;
  }
  std::string home(std::string v) const {
    for (const auto& [n, r] : names_)
      for (const std::string base : {"/home/", "/var/home/"}) {
        const std::string from = base + n;
        for (std::size_t pos = 0; (pos = v.find(from, pos)) != std::string::npos;) {
          const std::size_t end = pos + from.size();
          if (end == v.size() || v[end] == '/' || v[end] == ':')
            v.replace(pos, from.size(), base + r);
          pos += base.size() + 1;
        }
      }
    return v;
  }
  std::string colon_file(const std::string& abs, const std::string& text) const {
    std::string out;
    for (const auto& line : split(text, '\n')) {
      auto f = split(line, ':');
      if (f.size() >= 4) {
        f[0] = user(f[0]);
        if (abs.ends_with("/etc/group")) {
          auto members = split(f[3], ',');
          for (auto& m : members)
            m = user(m);
          f[3] = fmt::format("{}", fmt::join(members, ","));
        } else if (f.size() >= 6) {
          if (names_.contains(split(line, ':')[0])) f[4] = "";
          f[5] = home(f[5]);
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
  /// /proc/self/environ as stored: a variable no probe declares keeps only its name
  /// (`NAME=<dropped>`); a kept one loses URL credentials (`scheme://<masked>@host`), and its
  /// value entirely when its name says it is a credential; with redaction on, user and host
  /// names as everywhere else. An entry without `=` is not a variable and is dropped.
  std::string environ(const std::string& text) const {
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
        if (on_) {
          if (key == "USER" || key == "LOGNAME" || key == "USERNAME" || key == "SUDO_USER")
            val = user(val);
          else if (key == "HOSTNAME" || key == "HOST")
            val = redact_rules::kHost;
          val = home(val);
          if (hostname_.size() >= 3)
            for (std::size_t pos = 0; (pos = val.find(hostname_, pos)) != std::string::npos;)
              val.replace(pos, hostname_.size(), redact_rules::kHost);
        }
      }
      out += fmt::format("{}={}", key, val);
      if (i + 1 < vars.size()) out += '\0';
    }
    return out;
  }
  std::string kfd_properties(const std::string& text) {
    std::string out;
    const auto lines = split(text, '\n');
    for (std::size_t i = 0; i < lines.size(); ++i) {
      out += lines[i].starts_with("unique_id ")
                 ? "unique_id " + pseudonym(lines[i].substr(10), IdForm::decimal)
                 : lines[i];
      if (i + 1 < lines.size()) out += '\n';
    }
    return out;
  }

  bool on_;
  std::vector<std::string> env_allow_;
  std::string hostname_;
  std::map<std::string, std::string> names_;
  std::map<std::string, std::size_t> ids_;   ///< identifier -> pseudonym number
  std::map<std::string, std::string> scrub_; ///< learnt secret/identifier -> replacement
  std::vector<std::string> notes_;
};

Redactor::Redactor(const Root& root, std::vector<std::string> env_allow, bool on)
    : impl_(std::make_unique<Impl>(root, std::move(env_allow), on)) {}
Redactor::~Redactor() = default;
void Redactor::learn_machine_identifiers(const Root& root) {
  impl_->learn_machine_identifiers(root);
}
void Redactor::learn(const std::string& abs, const std::string& text) {
  impl_->learn(abs, text);
}
std::string Redactor::apply(const std::string& abs, std::string text) {
  return impl_->apply(abs, std::move(text));
}
void Redactor::apply(FactSet& facts) {
  impl_->apply(facts);
}
const std::vector<std::string>& Redactor::notes() const {
  return impl_->notes();
}

} // namespace bundle_detail

std::string mask_url_credentials(std::string_view value) {
  std::string out;
  std::size_t i = 0;
  for (;;) {
    const auto sep = value.find("://", i);
    if (sep == std::string_view::npos) break;
    const std::size_t start = sep + 3;
    // The URL ends at white space or a list separator; its userinfo ends at the last '@' before
    // that (a password may hold '/' or ':' unescaped: over-masking is safe, leaking is not).
    std::size_t end = value.find_first_of(" \t\n,;\"'<>", start);
    if (end == std::string_view::npos) end = value.size();
    const auto at = value.substr(start, end - start).rfind('@');
    out.append(value.substr(i, start - i));
    if (at != std::string_view::npos) {
      out += "<masked>";
      i = start + at;
    } else {
      i = start;
    }
  }
  out.append(value.substr(i));
  return out;
}

} // namespace halo
