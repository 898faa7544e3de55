// SPDX-License-Identifier: MIT
// The one redactor (include/halo/redact.hpp): what identifies the machine or its people, learnt
// once from the root and the facts, and replaced by the same pseudonyms in the capture bundle
// (src/core/bundle_redact.cpp) and the Markdown report (src/report/markdown.cpp).
#include "redact_rules.hpp"

#include <halo/bundle.hpp>
#include <halo/redact.hpp>

#include <fmt/format.h>

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <optional>
#include <utility>
#include <vector>

namespace halo {
namespace {

/// A user or host name as the shadow utils accept one (useradd(8): letters, digits, `_`, `-`,
/// `.`), at most 64 bytes; anything else is not learnt.
bool plausible_name(std::string_view n) {
  if (n.empty() || n.size() > 64 || n == "." || n == "..") return false;
  return std::ranges::all_of(n, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
  });
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
}

bool word_char(char c) {
  return name_char(c) || c == '/';
}

bool is_hex(std::string_view s) {
  return !s.empty() && std::ranges::all_of(s, [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  });
}

/// A systemd machine-id: 32 lower-case hexadecimal digits (machine-id(5)).
bool machine_id_shaped(std::string_view s) {
  return s.size() == 32 && std::ranges::all_of(s, [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::vector<std::string_view> split_view(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find(sep, start);
    out.push_back(
        s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

/// `text` with every occurrence of `from` that stands as a word (no name or path character on
/// either side; a `/home/` before it is a home directory and counts as a word start) replaced.
std::string replace_word(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t at = text.find(from, i);
    if (at == std::string_view::npos) break;
    const std::size_t end = at + from.size();
    const bool home = at >= 6 && text.substr(at - 6, 6) == "/home/";
    const bool start_ok = at == 0 || home || !word_char(text[at - 1]);
    // A trailing '.' ends a sentence: "user dev." is the name dev.
    const bool end_ok = end == text.size() || !word_char(text[end]) || (text[end] == '/' && home) ||
                        (text[end] == '.' && (end + 1 == text.size() || !word_char(text[end + 1])));
    out.append(text.substr(i, at - i));
    out.append(start_ok && end_ok ? to : from);
    i = end;
  }
  out.append(text.substr(i));
  return out;
}

/// Every occurrence of each key of `map` replaced by its value, longest key first (a value that
/// holds another).
template <typename Map> std::string replace_all(std::string text, const Map& map) {
  if (map.empty()) return text;
  std::vector<std::pair<std::string_view, std::string_view>> order(map.begin(), map.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [from, to] : order)
    for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos;) {
      text.replace(pos, from.size(), to);
      pos += to.size();
    }
  return text;
}

/// Where a command line names the host, as (offset, length) spans of `text`: the `<hostname>`
/// field of `ip=<client-ip>:<server-ip>:<gw-ip>:<netmask>:<hostname>:<device>:...` (the
/// kernel's Documentation/admin-guide/nfs/nfsroot.rst; dracut.cmdline(7) writes IPv6 addresses
/// in brackets, which hold ':'), the last component of `nfsroot=[<server-ip>:]<root-dir>[,opts]`
/// (diskless setups export one root per client, named after it; a `%s` there is the client's
/// address, filled in by the kernel, and names nothing), and the value of `hostname=` and
/// `systemd.hostname=` (systemd(1)). A parameter starts a line or follows white space or a quote.
std::vector<std::pair<std::size_t, std::size_t>> cmdline_host_spans(std::string_view text) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  static constexpr std::array<std::string_view, 4> kParams = {
      "ip=", "nfsroot=", "hostname=", "systemd.hostname="};
  for (const std::string_view param : kParams)
    for (std::size_t p = 0; (p = text.find(param, p)) != std::string_view::npos;
         p += param.size()) {
      if (p > 0 && std::string_view(" \t\n\"'\0", 6).find(text[p - 1]) == std::string_view::npos)
        continue;
      const std::size_t vstart = p + param.size();
      std::size_t vend = text.find_first_of(std::string_view(" \t\n\"'\0", 6), vstart);
      if (vend == std::string_view::npos) vend = text.size();
      const std::string_view v = text.substr(vstart, vend - vstart);
      std::size_t hs = 0;
      std::size_t hl = 0;
      if (param == "ip=") {
        // The fifth ':'-separated field, counting a bracketed address as one.
        std::size_t field = 0;
        std::size_t fstart = 0;
        bool bracket = false;
        for (std::size_t i = 0; i <= v.size(); ++i) {
          if (i < v.size() && v[i] == '[') bracket = true;
          if (i < v.size() && v[i] == ']') bracket = false;
          if (i == v.size() || (v[i] == ':' && !bracket)) {
            if (field == 4) {
              hs = fstart;
              hl = i - fstart;
              break;
            }
            ++field;
            fstart = i + 1;
          }
        }
      } else if (param == "nfsroot=") {
        const std::size_t slash_from = v.find('/');
        if (slash_from == std::string_view::npos) continue;
        std::size_t pend = v.find(',', slash_from);
        if (pend == std::string_view::npos) pend = v.size();
        while (pend > slash_from + 1 && v[pend - 1] == '/')
          --pend;
        const std::size_t last = v.rfind('/', pend - 1);
        hs = last + 1;
        hl = pend - hs;
      } else {
        hs = 0;
        hl = v.size();
      }
      const std::string_view host = v.substr(hs, hl);
      if (hl > 0 && plausible_name(host) && host.find('%') == std::string_view::npos)
        out.emplace_back(vstart + hs, hl);
    }
  std::sort(out.begin(), out.end());
  return out;
}

/// The machine-ids `text` names: `initrd=/<id>/...` or `initrd=\<id>\...` (systemd-boot and
/// kernel-install(8) keep a kernel's files under $BOOT/<machine-id>/<version>/), a loader entry
/// `.../loader/entries/<id>-<version>.conf` (Boot Loader Specification), and its `machine-id`
/// key at the start of a line.
std::vector<std::string> machine_ids_in(std::string_view text) {
  std::vector<std::string> out;
  static const RE2 kId(
      R"((?:initrd=[/\\]|/loader/entries/|(?:^|\n)machine-id[ \t]+)([0-9a-f]{32})(?:[^0-9a-f]|$))");
  re2::StringPiece in(text.data(), text.size());
  std::string id;
  while (RE2::FindAndConsume(&in, kId, &id))
    out.push_back(id);
  return out;
}

/// The hex digits of every ROCr agent UUID (`GPU-` and the 64-bit unique_id in hex, ROCr
/// amd_gpu_agent.cpp) in `text`.
std::vector<std::string> gpu_uuids_in(std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t p = 0; (p = text.find("GPU-", p)) != std::string_view::npos; p += 4) {
    if (p > 0 && std::isalnum(static_cast<unsigned char>(text[p - 1])) != 0) continue;
    std::size_t e = p + 4;
    while (e < text.size() && std::isxdigit(static_cast<unsigned char>(text[e])) != 0)
      ++e;
    const std::string_view hex = text.substr(p + 4, e - p - 4);
    if (hex.size() >= 8 && hex.size() <= 16 &&
        (e == text.size() || std::isalnum(static_cast<unsigned char>(text[e])) == 0))
      out.emplace_back(hex);
  }
  return out;
}

/// The trimmed text of a small file, or nothing.
std::optional<std::string> read_small(const Root& root, std::string_view abs,
                                      std::size_t max = 4096) {
  ReadResult r = root.read(abs, max);
  if (!r.ok()) return std::nullopt;
  while (!r.text.empty() && std::isspace(static_cast<unsigned char>(r.text.back())) != 0)
    r.text.pop_back();
  return r.text;
}

/// Where systemd-boot and Boot Loader Specification entries live ($BOOT/loader/entries, as
/// checks/boot/boot_stack.cpp reads them).
/// The most read of one text file that may name a host or an identifier (64 KiB: a kernel command
/// line is at most a few KiB, COMMAND_LINE_SIZE; a KFD properties file under 2 KiB).
constexpr std::size_t kTextCap = std::size_t{64} * 1024;

constexpr std::array<std::string_view, 3> kEntryDirs = {
    "/boot/loader/entries", "/efi/loader/entries", "/boot/efi/loader/entries"};

} // namespace

Redactor::Redactor(const Root* root, const FactSet& facts, bool identities) : on_(identities) {
  if (!on_) return;
  if (root != nullptr) learn_root(*root);
  learn_facts(facts);
}

void Redactor::learn_root(const Root& root) {
  if (auto h = read_small(root, "/proc/sys/kernel/hostname")) learn_host(*h);
  // Serial numbers and UUIDs from where the kernel shows them, whether or not a probe reads
  // those files (drivers/firmware/dmi-id.c, drivers/nvme/host/sysfs.c, drivers/pci/pci-sysfs.c
  // and amdgpu's serial_number and unique_id "%016llx", kfd topology's decimal unique_id).
  for (const char* f : {"product_serial", "product_uuid", "board_serial", "chassis_serial",
                        "board_asset_tag", "chassis_asset_tag"})
    if (auto v = read_small(root, std::string("/sys/class/dmi/id/") + f, 256))
      identifier(*v, IdForm::text);
  if (auto names = root.list("/sys/class/nvme"))
    for (const auto& n : *names)
      if (auto v = read_small(root, fmt::format("/sys/class/nvme/{}/serial", n), 256))
        identifier(*v, IdForm::text);
  if (auto names = root.list("/sys/bus/pci/devices"))
    for (const auto& n : *names) {
      if (auto v = read_small(root, fmt::format("/sys/bus/pci/devices/{}/serial_number", n), 256))
        identifier(*v, IdForm::text);
      if (auto v = read_small(root, fmt::format("/sys/bus/pci/devices/{}/unique_id", n), 256))
        identifier(*v, IdForm::hex);
    }
  if (auto names = root.list("/sys/class/kfd/kfd/topology/nodes"))
    for (const auto& n : *names)
      if (auto v = read_small(
              root, fmt::format("/sys/class/kfd/kfd/topology/nodes/{}/properties", n), kTextCap))
        for (const auto line : split_view(*v, '\n'))
          if (line.starts_with("unique_id "))
            identifier(std::string(line.substr(10)), IdForm::decimal);
  if (auto id = read_small(root, "/etc/machine-id")) learn_machine_id(*id);
  for (const auto dir : kEntryDirs)
    if (auto names = root.list(dir))
      for (const auto& n : *names) {
        // Boot Loader Specification: entries named `<machine-id>-<version>.conf`.
        if (n.size() > 33 && n[32] == '-') learn_machine_id(std::string_view(n).substr(0, 32));
        if (auto text = read_small(root, fmt::format("{}/{}", dir, n), kTextCap)) learn_text(*text);
      }
  for (const char* f : {"/proc/cmdline", "/etc/kernel/cmdline"})
    if (auto text = read_small(root, f, kTextCap)) learn_text(*text);
  // People with an account in the passwd file (useradd's UID_MIN..UID_MAX: 1000..59999).
  if (auto pw = read_small(root, "/etc/passwd", 4 << 20))
    for (const auto line : split_view(*pw, '\n')) {
      const auto f = split_view(line, ':');
      if (f.size() < 3) continue;
      long uid = -1;
      const auto [p, ec] = std::from_chars(f[2].data(), f[2].data() + f[2].size(), uid);
      if (ec != std::errc() || uid < 1000 || uid >= 60000) continue;
      learn_user(f[0]);
    }
  // People from LDAP/SSSD have no passwd line: the environment the doctor runs in names them
  // (environ(7): USER, LOGNAME, HOME; sudo(8): SUDO_USER; venv: VIRTUAL_ENV; conda:
  // CONDA_PREFIX).
  if (auto env = read_small(root, "/proc/self/environ", 1 << 20))
    for (const auto var : split_view(*env, '\0')) {
      const auto eq = var.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view name = var.substr(0, eq);
      const std::string_view val = var.substr(eq + 1);
      if (name == "USER" || name == "LOGNAME" || name == "SUDO_USER") learn_user(val);
      if (name == "HOME" || name == "VIRTUAL_ENV" || name == "CONDA_PREFIX") learn_homes(val);
      if (name == "HOME" && val.size() > 1) {
        // A cluster's home directories are not always under /home (/u/NAME, /gpfs/home/NAME):
        // the last component of a HOME outside the system's own directories is the person.
        std::string_view h = val;
        while (h.size() > 1 && h.back() == '/')
          h.remove_suffix(1);
        bool system = false;
        for (const std::string_view d :
             {"/var/", "/usr/", "/etc/", "/run/", "/proc/", "/sys/", "/opt/", "/srv/", "/dev/",
              "/tmp/", "/nonexistent", "/bin", "/sbin", "/lib"})
          system = system || h.starts_with(d);
        if (!system) learn_user(h.substr(h.rfind('/') + 1));
      }
      learn_text(val);
    }
}

void Redactor::learn_facts(const FactSet& facts) {
  if (auto h = facts.get<std::string>(keys::host_name)) learn_host(*h);
  for (const auto key : {keys::user_name, keys::env_sudo_user})
    if (auto u = facts.get<std::string>(key)) learn_user(*u);
  for (const auto& [key, fact] : facts.all()) {
    auto learn_in = [&](const std::string& s) {
      learn_homes(s);
      learn_text(s);
    };
    if (const auto* v = std::get_if<std::string>(&fact.value)) {
      if (redact_rules::identifier_key(key) && fact.ok() && v->size() >= 4) identifier_value(*v);
      learn_in(*v);
    }
    if (const auto* l = std::get_if<std::vector<std::string>>(&fact.value))
      for (const auto& e : *l)
        learn_in(e);
    learn_in(fact.source);
    learn_in(fact.reason);
  }
}

void Redactor::learn_host(std::string_view name) {
  if (!on_ || !plausible_name(name) || name == "localhost" || redact_rules::is_pseudonym(name) ||
      hosts_.contains(name))
    return;
  const std::string pseudonym = hosts_.empty()
                                    ? std::string(redact_rules::kHost)
                                    : fmt::format("{}-{}", redact_rules::kHost, hosts_.size() + 1);
  hosts_.emplace(std::string(name), pseudonym);
}

void Redactor::learn_user(std::string_view name) {
  // root names no person; the system accounts (uid < 1000) are never learnt from passwd.
  if (!on_ || !plausible_name(name) || name == "root" || redact_rules::is_pseudonym(name) ||
      users_.contains(name))
    return;
  users_.emplace(std::string(name), redact_rules::user(users_.size() + 1));
}

void Redactor::learn_homes(std::string_view text) {
  if (!on_ || text.find("home/") == std::string_view::npos) return;
  static const RE2 kHome(R"(/(?:var/)?home/([A-Za-z0-9_.-]{1,64}))");
  re2::StringPiece in(text.data(), text.size());
  std::string name;
  while (RE2::FindAndConsume(&in, kHome, &name))
    learn_user(name);
}

void Redactor::learn_machine_id(std::string_view id) {
  if (!on_ || !machine_id_shaped(id) || redact_rules::identifies_nothing(id) ||
      redact_rules::is_pseudonym(id) || machine_ids_.contains(id))
    return;
  machine_ids_.emplace(std::string(id), fmt::format("{:032x}", machine_ids_.size() + 1));
}

void Redactor::learn_text(std::string_view text) {
  if (!on_ || text.empty()) return;
  for (const auto& [at, len] : cmdline_host_spans(text))
    learn_host(text.substr(at, len));
  for (const auto& id : machine_ids_in(text))
    learn_machine_id(id);
  for (const auto& hex : gpu_uuids_in(text))
    identifier(hex, IdForm::hex);
}

std::string Redactor::identifier(const std::string& v, IdForm form) {
  if (!on_ || v.empty() || redact_rules::identifies_nothing(v) || redact_rules::is_pseudonym(v))
    return v;
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
  if (v.size() >= (num ? 10U : 6U)) replace_[v] = out;
  if (num && fmt::format("{}", *num).size() >= 10) {
    const std::string hex = fmt::format("{:016x}", *num);
    const std::string hex_to = fmt::format("{:016x}", n);
    replace_[hex] = hex_to;
    std::string upper = hex;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    replace_[upper] = hex_to;
    replace_[fmt::format("{}", *num)] = fmt::format("{}", n);
  }
  return out;
}

std::string Redactor::identifier_value(const std::string& v) {
  if (v.starts_with("GPU-") && v.size() > 4 && is_hex(std::string_view(v).substr(4)))
    return "GPU-" + identifier(v.substr(4), IdForm::hex);
  return identifier(v, IdForm::text);
}

std::string Redactor::user(std::string_view name) const {
  auto it = users_.find(name);
  return it == users_.end() ? std::string() : it->second;
}

std::string Redactor::identifiers(std::string text) const {
  return replace_all(replace_all(std::move(text), replace_), machine_ids_);
}

std::string Redactor::cmdline_hosts(std::string text) const {
  if (hosts_.empty()) return text;
  const auto spans = cmdline_host_spans(text);
  // Right to left, so the earlier offsets hold.
  std::for_each(spans.rbegin(), spans.rend(), [&](const auto& span) {
    const auto h = hosts_.find(std::string_view(text).substr(span.first, span.second));
    if (h != hosts_.end()) text.replace(span.first, span.second, h->second);
  });
  return text;
}

std::string Redactor::homes(std::string text) const {
  for (const auto& [name, pseudonym] : users_)
    for (const std::string_view base : {"/home/", "/var/home/"}) {
      const std::string from = std::string(base) + name;
      for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos;) {
        const std::size_t end = pos + from.size();
        if (end == text.size() || !name_char(text[end])) {
          text.replace(pos, from.size(), std::string(base) + pseudonym);
          pos += base.size() + pseudonym.size();
        } else {
          pos = end;
        }
      }
    }
  return text;
}

std::string Redactor::in_file(std::string_view text) const {
  if (!on_) return std::string(text);
  return homes(cmdline_hosts(identifiers(std::string(text))));
}

std::string Redactor::path(std::string_view abs) const {
  if (!on_) return std::string(abs);
  return homes(replace_all(std::string(abs), machine_ids_));
}

std::string Redactor::operator()(std::string_view text) const {
  std::string out = mask_url_credentials(text);
  if (!on_) return out;
  out = cmdline_hosts(identifiers(std::move(out)));
  // Longest first: a fully qualified name before its first label.
  std::vector<std::pair<std::string_view, std::string_view>> hosts(hosts_.begin(), hosts_.end());
  std::stable_sort(hosts.begin(), hosts.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [name, pseudonym] : hosts)
    out = replace_word(out, name, pseudonym);
  out = homes(std::move(out));
  for (const auto& [name, pseudonym] : users_)
    out = replace_word(out, name, pseudonym);
  return out;
}

std::string mask_url_credentials(std::string_view value) {
  std::string out;
  std::size_t i = 0;
  for (const auto& [start, len] : redact_rules::url_userinfo(value)) {
    out.append(value.substr(i, start - i));
    out += "<masked>";
    i = start + len;
  }
  out.append(value.substr(i));
  return out;
}

} // namespace halo
