// SPDX-License-Identifier: MIT
// Capture bundles with libarchive: what the probes read, written as a gzip'd tar, and extracted
// again for replay.
#include <halo/bundle.hpp>
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/sanitize.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace halo {
namespace {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto pos = s.find(sep, start);
    out.emplace_back(
        s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

/// True when a symlink stored at `rel` with target `target` stays inside the bundle: relative,
/// and its `..` never climbs above the bundle's root counting from the link's directory.
/// (Reads of a replayed bundle are confined by Root as well; this refuses the obvious cases.)
bool link_stays_inside(const std::string& rel, const std::string& target) {
  if (target.empty() || target[0] == '/') return false;
  auto segs = split(rel, '/');
  segs.pop_back(); // the link's own name
  long depth = 0;
  for (const auto& s : segs)
    if (!s.empty() && s != ".") ++depth;
  for (const auto& s : split(target, '/')) {
    if (s.empty() || s == ".") continue;
    depth += s == ".." ? -1 : 1;
    if (depth < 0) return false;
  }
  return true;
}

bool is_link(const Root& root, const std::string& abs) {
  std::error_code ec;
  return std::filesystem::is_symlink(root.resolve(abs, /*follow_last=*/false), ec);
}

/// Paths whose symlink target is the fact (probes call Root::link_name on them).
bool read_as_link(const std::string& abs) {
  return abs.size() > 7 && abs.ends_with("/driver");
}

void expand(const Root& root, const std::vector<std::string>& segs, std::size_t i,
            const std::string& prefix, std::set<std::string>& out) {
  if (i == segs.size()) {
    if (root.exists(prefix) || (read_as_link(prefix) && is_link(root, prefix))) out.insert(prefix);
    return;
  }
  const std::string& seg = segs[i];
  if (seg.find_first_of("*?[") == std::string::npos) {
    expand(root, segs, i + 1, prefix + "/" + seg, out);
    return;
  }
  const auto names = root.list(prefix.empty() ? "/" : prefix);
  if (!names) return;
  for (const auto& n : *names)
    if (::fnmatch(seg.c_str(), n.c_str(), 0) == 0)
      expand(root, segs, i + 1, fmt::format("{}/{}", prefix, n), out);
}

/// Declared patterns, comments removed, without /dev. Inside toolbox or distrobox the host's
/// configuration is read through /run/host (detect_host_root): the same files are captured
/// there too, so a bundle replays with the host's configuration.
std::vector<std::string> patterns(const ProbeRegistry& reg, const Root& root) {
  std::set<std::string> pats;
  const bool host_tree = root.is_dir("/run/host/etc");
  for (const auto& p : reg.probes())
    for (auto r : p->reads()) {
      r = r.substr(0, r.find(' '));
      if (r.empty() || r[0] != '/' || r.starts_with("/dev/") || r == "/dev") continue;
      pats.insert(r);
      const bool kernel_state = r.starts_with("/proc/") || r.starts_with("/sys/");
      const bool literal = r.find_first_of("*?[") == std::string::npos;
      if (host_tree && !kernel_state && (!literal || root.exists("/run/host" + r)))
        pats.insert("/run/host" + r);
    }
  return {pats.begin(), pats.end()};
}

/// The environment allow-list: every variable some probe declares it reads (Probe::env_reads).
std::vector<std::string> env_allow_list(const ProbeRegistry& reg) {
  std::set<std::string> names;
  for (const auto& p : reg.probes())
    for (auto& n : p->env_reads())
      names.insert(std::move(n));
  return {names.begin(), names.end()};
}

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

/// Container secret mounts (Docker and Kubernetes: /run/secrets, the service-account token
/// under /var/run/secrets/kubernetes.io/serviceaccount): a probe may test that they exist, but
/// their files are bearer tokens, so a bundle stores the directory and never a file's bytes.
bool secret_mount(const std::string& abs) {
  static constexpr std::array<std::string_view, 4> kMounts = {
      "/run/secrets", "/var/run/secrets", "/run/host/run/secrets", "/run/host/var/run/secrets"};
  return std::any_of(kMounts.begin(), kMounts.end(), [&](std::string_view base) {
    return abs == base ||
           (abs.starts_with(base) && abs.size() > base.size() && abs[base.size()] == '/');
  });
}

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

namespace {

/// Makes a bundle safe to post: secrets are never stored (the environment by allow-list, URL
/// credentials and secret-named variables masked, secret mounts empty), and unless `--no-redact`
/// the identities are replaced: the host name by `redacted-host`, human user names (uid
/// 1000..59999 in /etc/passwd) by user1, user2, ..., serial numbers and UUIDs by pseudonyms that
/// are stable within the bundle (the same value gets the same pseudonym, so fleet compare still
/// tells GPUs apart).
class Redactor {
public:
  Redactor(const Root& root, std::vector<std::string> env_allow, bool on)
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
      names_[f[0]] = fmt::format("user{}", names_.size() + 1);
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
        text = "redacted-host\n";
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
      const bool id_key = k.find("uuid") != std::string::npos ||
                          k.find("serial") != std::string::npos ||
                          k.find("unique_id") != std::string::npos;
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
  /// text as `redacted-serial-N`. An empty or all-zero value identifies nothing and is kept.
  std::string pseudonym(const std::string& v, IdForm form) {
    if (v.find_first_not_of("0 ") == std::string::npos || placeholder(v)) return v;
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
      out = fmt::format("redacted-serial-{}", n);
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

  /// The text firmware leaves in DMI fields nobody filled in (dmidecode's "junk" strings): it
  /// identifies no machine, and replacing it everywhere would change other fields that hold the
  /// same text (a board_vendor of "Default string").
  static bool placeholder(std::string_view v) {
    std::string low(v);
    std::transform(low.begin(), low.end(), low.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char* p : {"to be filled by o.e.m.", "default string", "not specified",
                          "not applicable", "none", "n/a", "unknown", "system serial number",
                          "chassis serial number", "base board serial number", "0123456789",
                          "123456789", "03000200-0400-0500-0006-000700080009"})
      if (low == p) return true;
    return v.find_first_not_of(v.front()) == std::string_view::npos; // "FFFFFFFF", "........"
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
            val = "redacted-host";
          val = home(val);
          if (hostname_.size() >= 3)
            for (std::size_t pos = 0; (pos = val.find(hostname_, pos)) != std::string::npos;)
              val.replace(pos, hostname_.size(), "redacted-host");
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

/// Owns a libarchive writer that builds the archive in memory (the caller writes it with
/// write_output_file, atomically); every failure becomes an InputError naming the file.
class TarWriter {
public:
  explicit TarWriter(std::string origin) : a_(archive_write_new()), origin_(std::move(origin)) {

    if (archive_write_add_filter_gzip(a_) != ARCHIVE_OK ||
        archive_write_set_format_pax_restricted(a_) != ARCHIVE_OK ||
        archive_write_open(a_, &data_, nullptr, &TarWriter::append, nullptr) != ARCHIVE_OK)
      fail();
    mtime_ = std::time(nullptr);
  }
  ~TarWriter() {
    if (a_ != nullptr) archive_write_free(a_);
  }
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;
  TarWriter(TarWriter&&) = delete;
  TarWriter& operator=(TarWriter&&) = delete;

  void dir(const std::string& rel) { header(rel, AE_IFDIR, 0755, 0, nullptr); }
  void file(const std::string& rel, const std::string& data, int perm = 0644) {
    header(rel, AE_IFREG, perm, data.size(), nullptr);
    if (!data.empty() && archive_write_data(a_, data.data(), data.size()) < 0) fail();
  }
  void link(const std::string& rel, const std::string& target) {
    header(rel, AE_IFLNK, 0777, 0, target.c_str());
  }
  void close() {
    if (archive_write_close(a_) != ARCHIVE_OK) fail();
  }
  /// The compressed archive (complete after close()).
  const std::string& data() const { return data_; }

private:
  static la_ssize_t append(archive* /*a*/, void* client, const void* buf, std::size_t n) {
    static_cast<std::string*>(client)->append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
  }
  void header(const std::string& rel, unsigned type, int perm, std::size_t size,
              const char* target) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, rel.c_str());
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, static_cast<mode_t>(perm));
    archive_entry_set_size(e, static_cast<la_int64_t>(size));
    archive_entry_set_mtime(e, mtime_, 0);
    if (target != nullptr) archive_entry_set_symlink(e, target);
    const int rc = archive_write_header(a_, e);
    archive_entry_free(e);
    if (rc != ARCHIVE_OK) fail();
  }
  [[noreturn]] void fail() const {
    throw InputError(fmt::format("{}: cannot write the bundle: {}", origin_,
                                 archive_error_string(a_) != nullptr ? archive_error_string(a_)
                                                                     : "unknown error"));
  }
  archive* a_ = nullptr;
  std::string data_;
  std::string origin_;
  std::time_t mtime_ = 0;
};

std::string node_sidecar(const Root& root) {
  if (!root.is_live()) {
    const ReadResult side = root.read("/.halo/nodes.json", std::size_t{256} * 1024);
    if (side.ok()) return side.text;
  }
  nlohmann::json j = nlohmann::json::object();
  std::vector<std::string> paths{"/dev/kfd", "/dev/dxg"}; // dxg: WSL2 (checks/wsl.cpp)
  if (auto names = root.list("/dev/dri"))
    for (const auto& n : *names)
      paths.push_back("/dev/dri/" + n);
  for (const auto& p : paths) {
    const NodeInfo n = root.node(p);
    if (n.status != Status::ok) continue;
    j[p] = {{"type", n.is_char_device ? "char" : "other"},
            {"mode", fmt::format("{:04o}", n.mode)},
            {"uid", n.uid},
            {"gid", n.gid}};
  }
  return dump_json(j, 2) + "\n";
}

/// Facts no file in the bundle holds: those of the runtime probes (ROCr, libdrm), and the
/// framework probe's (checks/framework.cpp), which reads a Python environment named by
/// VIRTUAL_ENV/CONDA_PREFIX and the file names of kernel libraries of hundreds of MB; the
/// amdgpu module file's (checks/module_file.cpp: a binary of megabytes, never stored) and which
/// firmware files that failed at boot are on disk now (checks/kernel_log.cpp: /lib/firmware is
/// not stored either); and the wsl probe's (checks/wsl.cpp: librocdxg, DXCore and ROCr are
/// binaries, looked up by name and never stored).
FactSet runtime_facts(const FactSet& facts) {
  FactSet out;
  for (const auto& [k, f] : facts.all())
    // A probe that did not run (--no-runtime, no --framework-deep) has nothing to keep: on
    // replay under --root it is not run either.
    if ((k.starts_with(keys::hsa_prefix) || k.starts_with(keys::libdrm_prefix) ||
         k.starts_with(keys::framework_prefix) || k.starts_with(keys::amdgpu_module_prefix) ||
         k.starts_with(keys::wsl_prefix) || k == keys::kernel_log_firmware_on_disk) &&
        !f.not_probed())
      out.put(f);
  return out;
}

std::string utc_now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

} // namespace

std::vector<std::string> expand_probe_reads(const ProbeRegistry& reg, const Root& root) {
  std::set<std::string> out;
  for (const auto& pat : patterns(reg, root)) {
    expand(root, split(pat.substr(1), '/'), 0, "", out);
    if (pat.find_first_of("*?[") == std::string::npos && root.is_dir(pat))
      if (auto names = root.list(pat))
        for (const auto& n : *names)
          out.insert(fmt::format("{}/{}", pat, n));
  }
  return {out.begin(), out.end()};
}

CaptureManifest write_capture_bundle(const ProbeRegistry& reg, const Root& root,
                                     const FactSet& facts, const CaptureOptions& opt,
                                     const std::string& out_path) {
  CaptureManifest m;
  Redactor red(root, env_allow_list(reg), opt.redact);
  red.learn_machine_identifiers(root);
  struct Pending {
    std::string abs;
    std::string text;
    int perm;
  };
  std::vector<Pending> pending; // files, redacted once all are read
  std::string archive_bytes;
  {
    TarWriter tar(out_path);
    std::set<std::string> dirs;
    auto parents = [&](const std::string& abs) {
      std::string acc;
      const auto segs = split(abs.substr(1), '/');
      for (std::size_t i = 0; i + 1 < segs.size(); ++i) {
        acc += (acc.empty() ? "" : "/") + segs[i];
        if (dirs.insert(acc).second) tar.dir(acc);
      }
    };
    std::set<std::string> matched;
    for (const auto& pat : patterns(reg, root)) {
      std::set<std::string> hits;
      expand(root, split(pat.substr(1), '/'), 0, "", hits);
      const bool literal = pat.find_first_of("*?[") == std::string::npos;
      if (hits.empty() && literal) m.missing.push_back(pat);
      matched.insert(hits.begin(), hits.end());
      // A directory named without a glob is read by listing it: its entries go in too.
      if (literal && root.is_dir(pat))
        if (auto names = root.list(pat))
          for (const auto& n : *names)
            matched.insert(fmt::format("{}/{}", pat, n));
    }
    for (const auto& abs : matched) {
      const std::string rel = abs.substr(1);
      if (read_as_link(abs) && is_link(root, abs)) {
        std::error_code ec;
        const auto target =
            std::filesystem::read_symlink(root.resolve(abs, /*follow_last=*/false), ec);
        if (ec) {
          m.skipped.push_back(fmt::format("{}: {}", abs, ec.message()));
          continue;
        }
        // A bundle keeps only links that stay inside it (replay refuses the others).
        if (!link_stays_inside(rel, target.string())) {
          m.skipped.push_back(fmt::format("{}: symbolic link to {} leaves the root; not stored",
                                          abs, target.string()));
          continue;
        }
        parents(abs);
        tar.link(rel, target.string());
        m.links.push_back(abs);
        continue;
      }
      if (root.is_dir(abs)) {
        parents(abs);
        if (dirs.insert(rel).second) tar.dir(rel);
        m.files.push_back(abs);
        continue;
      }
      if (secret_mount(abs)) {
        parents(abs);
        tar.file(rel, "", 0644);
        m.files.push_back(abs);
        m.skipped.push_back(abs + ": a container secret mount, stored empty");
        continue;
      }
      // Executables (boot tools) matter by their presence and mode only: stored empty, with
      // their execute bits, so a bundle never ships binaries.
      struct stat st {};
      const bool have_stat = ::stat(root.resolve(abs).c_str(), &st) == 0;
      const int perm = have_stat ? static_cast<int>((st.st_mode & 0755U) | 0444U) : 0644;
      if (have_stat && S_ISREG(st.st_mode) && (st.st_mode & 0111U) != 0) {
        parents(abs);
        tar.file(rel, "", perm);
        m.files.push_back(abs);
        m.skipped.push_back(abs + ": executable, stored empty with its mode");
        continue;
      }
      const ReadResult r = root.read(abs, opt.max_file_bytes);
      if (r.status == Status::missing)
        m.missing.push_back(abs);
      else if (r.status == Status::denied)
        m.denied.push_back(abs);
      else if (!r.ok())
        m.skipped.push_back(fmt::format("{}: {}", abs, r.reason));
      if (!r.ok()) continue;
      parents(abs);
      pending.push_back({abs, r.text, perm});
      m.files.push_back(abs);
    }
    // Two passes: identifiers and secrets are learnt from every file first, so that the same
    // value is replaced wherever else it occurs (a serial in the kernel log, a token pasted into
    // a second variable, ROCr's GPU-<hex> of a kfd unique_id).
    for (const auto& p : pending)
      red.learn(p.abs, p.text);
    for (auto& p : pending)
      tar.file(p.abs.substr(1), red.apply(p.abs, std::move(p.text)), p.perm);

    if (dirs.insert(".halo").second) tar.dir(".halo");
    tar.file(".halo/nodes.json", node_sidecar(root));
    // The kernel log's lines about amdgpu, firmware and module signing (checks/kernel_log.cpp
    // keeps only those), so a replay reaches the same verdicts; `--root` reads them back.
    if (const Fact* k = facts.find(keys::kernel_log_lines); k != nullptr && k->ok()) {
      std::string text;
      for (const auto& l : std::get<std::vector<std::string>>(k->value))
        text += l + "\n";
      tar.file(".halo/dmesg.txt", red.apply("/.halo/dmesg.txt", text));
    }
    FactSet rt = runtime_facts(facts);
    red.apply(rt);
    if (rt.size() > 0)
      tar.file(kBundleRuntimeFacts,
               dump_json(facts_to_json(rt, "halo-doctor", opt.tool_version), 2) + "\n");
    m.redacted = red.notes();
    nlohmann::json man = {
        {"bundle_version", 1},
        {"tool", {{"name", "halo-doctor"}, {"version", opt.tool_version}}},
        {"created", utc_now()},
        {"root",
         opt.redact && root.base() != "/" ? std::string("(redacted)") : root.base().string()},
        {"redacted", opt.redact},
        // What /proc/self/environ keeps (Probe::env_reads of every probe; docs/security.md).
        {"environment_kept", env_allow_list(reg)},
        {"redactions", m.redacted},
        {"files", m.files},
        {"links", m.links},
        {"missing", m.missing},
        {"denied", m.denied},
        {"skipped", m.skipped},
        {"runtime_facts", rt.size()},
    };
    tar.file(".halo/manifest.json", dump_json(man, 2) + "\n");
    tar.close();
    archive_bytes = tar.data();
  }
  write_output_file(out_path, archive_bytes);
  return m;
}

namespace {

/// The extraction directory of the live ExtractedBundle, for the signal handler (one at a time).
std::array<char, 4096> g_bundle_dir = {};
volatile sig_atomic_t g_bundle_dir_set = 0;

/// Removes everything under the directory `dfd` refers to, then closes it; only
/// async-signal-safe calls (signal-safety(7): openat, unlinkat, close; getdents64 is a plain
/// system call), no allocation. Depth is bounded by kMaxBundleDepth.
void remove_tree_at(int dfd, int depth) {
  alignas(8) std::array<char, 4096> buf{};
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dfd, buf.data(), buf.size());
    if (n <= 0) break;
    bool removed_any = false;
    for (long off = 0; off < n;) {
      struct Dirent64 {
        std::uint64_t d_ino;
        std::int64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[1]; // NOLINT(*-avoid-c-arrays): struct linux_dirent64, getdents64(2)
      };
      const auto* d = reinterpret_cast<const Dirent64*>(buf.data() + off);
      off += d->d_reclen;
      const char* name = d->d_name;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      if (::unlinkat(dfd, name, 0) == 0) {
        removed_any = true;
        continue;
      }
      if (depth < 64) {
        const int sub = ::openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) remove_tree_at(sub, depth + 1);
      }
      if (::unlinkat(dfd, name, AT_REMOVEDIR) == 0) removed_any = true;
    }
    if (removed_any) ::lseek(dfd, 0, SEEK_SET);
  }
  ::close(dfd);
}

/// On a fatal signal: remove the extraction directory, then die of the same signal (SIG_DFL and
/// re-raise, so the exit status still says which signal it was).
void bundle_signal_handler(int sig) {
  if (g_bundle_dir_set != 0) {
    g_bundle_dir_set = 0;
    const int dfd = ::open(g_bundle_dir.data(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd >= 0) remove_tree_at(dfd, 0);
    ::rmdir(g_bundle_dir.data());
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

constexpr std::array<int, 9> kCleanupSignals = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT,
                                                SIGSEGV, SIGBUS, SIGFPE, SIGILL};

/// Installs bundle_signal_handler for the fatal signals, on an alternate stack so a stack
/// overflow (SIGSEGV) can still clean up (sigaltstack(2)).
void install_cleanup_handlers() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  static std::array<char, std::size_t{64} * 1024> alt_stack{};
  stack_t ss{};
  ss.ss_sp = alt_stack.data();
  ss.ss_size = alt_stack.size();
  ::sigaltstack(&ss, nullptr);
  for (int sig : kCleanupSignals) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue; // nohup and friends: leave ignored signals ignored
    struct sigaction sa {};
    sa.sa_handler = bundle_signal_handler;
    sa.sa_flags = static_cast<int>(SA_ONSTACK | SA_RESETHAND);
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

/// A reader for gzip/xz/zstd/bzip2-compressed (or plain) tar archives using libarchive's
/// built-in decompressors only: a filter that would run an external program (libarchive
/// returns ARCHIVE_WARN for those, archive_read_support_filter_* (3)) is not registered, and
/// lrzip, lzop, grzip, lz4 via program and the like are never offered (no support_filter_all).
archive* new_bundle_reader() {
  using Support = int (*)(archive*);
  archive* in = archive_read_new();
  for (Support add :
       {Support{archive_read_support_filter_gzip}, Support{archive_read_support_filter_xz},
        Support{archive_read_support_filter_zstd}, Support{archive_read_support_filter_bzip2}}) {
    archive* probe = archive_read_new();
    const bool builtin = add(probe) == ARCHIVE_OK;
    archive_read_free(probe);
    if (builtin) add(in);
  }
  archive_read_support_format_tar(in);
  archive_read_support_format_gnutar(in);
  return in;
}

} // namespace

ExtractedBundle::ExtractedBundle(const std::string& archive_path) {
  // The archive itself: a regular file (a FIFO or /dev/zero would block or never end).
  {
    struct stat st {};
    if (::stat(archive_path.c_str(), &st) != 0)
      throw InputError(fmt::format("{}: cannot be read: {}", archive_path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
      throw InputError(fmt::format("{}: cannot be read: not a regular file", archive_path));
  }
  install_cleanup_handlers();
  std::string templ = (std::filesystem::temp_directory_path() / "halo-bundle-XXXXXX").string();
  if (templ.size() >= g_bundle_dir.size() || ::mkdtemp(templ.data()) == nullptr)
    throw InputError(fmt::format("{}: cannot create a directory to extract it", archive_path));
  dir_ = templ;
  std::memcpy(g_bundle_dir.data(), templ.c_str(), templ.size() + 1);
  g_bundle_dir_set = 1;
  archive* in = new_bundle_reader();
  archive* out = archive_write_disk_new();
  // Entry names are checked below and made absolute under dir_; no owners, no special modes.
  archive_write_disk_set_options(out,
                                 ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS);
  auto cleanup = [&] {
    archive_read_free(in);
    archive_write_free(out);
    g_bundle_dir_set = 0;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  };
  auto refuse = [&](const std::string& what) {
    cleanup();
    throw InputError(fmt::format("{}: {}", archive_path, what));
  };
  auto fail = [&](archive* a) {
    const std::string msg =
        archive_error_string(a) != nullptr ? archive_error_string(a) : "unknown error";
    refuse("not a readable capture bundle: " + msg);
  };
  if (archive_read_open_filename(in, archive_path.c_str(), std::size_t{64} * 1024) != ARCHIVE_OK)
    fail(in);
  archive_entry* e = nullptr;
  int rc = ARCHIVE_OK;
  std::size_t members = 0;
  std::uint64_t total = 0;
  while ((rc = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
    const char* name = archive_entry_pathname(e);
    const std::string rel = name != nullptr ? name : "";
    const auto segs = split(rel, '/');
    if (rel.empty() || rel[0] == '/' || std::find(segs.begin(), segs.end(), "..") != segs.end() ||
        archive_entry_hardlink(e) != nullptr)
      refuse(fmt::format("entry '{}' would be extracted outside the bundle", rel));
    if (++members > kMaxBundleMembers)
      refuse(fmt::format("more than {} members; not a capture bundle", kMaxBundleMembers));
    if (segs.size() > kMaxBundleDepth)
      refuse(fmt::format("entry '{}' is nested deeper than {} levels", rel, kMaxBundleDepth));
    const auto type = archive_entry_filetype(e);
    if (type == AE_IFLNK) {
      const char* t = archive_entry_symlink(e);
      const std::string target = t != nullptr ? t : "";
      if (!link_stays_inside(rel, target))
        refuse(
            fmt::format("entry '{}' is a symbolic link to '{}', outside the bundle", rel, target));
    } else if (type != AE_IFREG && type != AE_IFDIR) {
      refuse(fmt::format("entry '{}' is not a regular file, directory or symbolic link (device "
                         "nodes, FIFOs and sockets are never extracted)",
                         rel));
    }
    // Plain permissions only: no set-user-ID, set-group-ID or sticky bits, always readable and
    // writable by us so the directory can be removed again.
    const mode_t perm = archive_entry_perm(e);
    archive_entry_set_perm(
        e, static_cast<mode_t>((perm & 0755U) | (type == AE_IFDIR ? 0700U : 0600U)));
    archive_entry_set_uid(e, ::getuid());
    archive_entry_set_gid(e, ::getgid());
    const std::string dest = (dir_ / rel).string();
    archive_entry_set_pathname(e, dest.c_str());
    if (archive_write_header(out, e) != ARCHIVE_OK) fail(out);
    const void* buf = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    int r = ARCHIVE_OK;
    while ((r = archive_read_data_block(in, &buf, &size, &offset)) == ARCHIVE_OK) {
      // Offset + size, not size alone: a sparse entry could claim terabytes with a few bytes.
      const std::uint64_t end_at =
          static_cast<std::uint64_t>(std::max<la_int64_t>(offset, 0)) + size;
      if (end_at > kMaxBundleMemberBytes)
        refuse(fmt::format("entry '{}' is larger than {} bytes", rel, kMaxBundleMemberBytes));
      total += size;
      if (total > kMaxBundleBytes)
        refuse(fmt::format("expands to more than {} bytes; not a capture bundle", kMaxBundleBytes));
      if (archive_write_data_block(out, buf, size, offset) != ARCHIVE_OK) fail(out);
    }
    if (r != ARCHIVE_EOF) fail(in);
    if (archive_write_finish_entry(out) != ARCHIVE_OK) fail(out);
  }
  if (rc != ARCHIVE_EOF) fail(in);
  archive_read_free(in);
  archive_write_free(out);
  in = nullptr;
  out = nullptr;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir_ / ".halo/manifest.json", ec)) {
    g_bundle_dir_set = 0;
    std::filesystem::remove_all(dir_, ec);
    throw InputError(
        fmt::format("{}: not a halo-doctor capture bundle (no .halo/manifest.json)", archive_path));
  }
}

ExtractedBundle::~ExtractedBundle() {
  g_bundle_dir_set = 0;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string ExtractedBundle::runtime_facts_file() const {
  const auto p = dir_ / kBundleRuntimeFacts;
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) ? p.string() : std::string();
}

} // namespace halo
