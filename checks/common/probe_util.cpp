// SPDX-License-Identifier: MIT
#include "probe_util.hpp"

#include <halo/probe.hpp>
#include <halo/text.hpp>

#include <fmt/format.h>

#include <charconv>
#include <set>

namespace halo::probes {

namespace {
std::string_view trim_view(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0)
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0)
    s.remove_suffix(1);
  return s;
}
} // namespace

std::vector<std::string> split_list(std::string_view text, char sep, std::size_t max_items) {
  std::vector<std::string> out;
  while (out.size() < max_items) {
    const auto at = text.find(sep);
    const std::string_view item = trim_view(text.substr(0, at));
    if (!item.empty()) out.emplace_back(item);
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return out;
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  s = trim_view(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_hex(std::string_view s) {
  s = trim_view(s);
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

void put_text(FactSet& facts, const Root& root, const std::string& key, std::string_view abs) {
  ReadResult r = root.read_trimmed(abs);
  if (r.ok())
    facts.put_ok(key, r.text, r.path);
  else
    facts.put_status(key, r.status, r.path, r.reason);
}

std::optional<std::int64_t> put_int(FactSet& facts, const Root& root, const std::string& key,
                                    std::string_view abs, std::int64_t scale) {
  ReadResult r = root.read_trimmed(abs);
  if (!r.ok()) {
    facts.put_status(key, r.status, r.path, r.reason);
    return std::nullopt;
  }
  auto v = parse_int(r.text);
  if (!v) {
    facts.put_status(key, Status::error, r.path,
                     fmt::format("expected an integer, found '{}'", r.text.substr(0, 40)));
    return std::nullopt;
  }
  std::int64_t scaled = 0;
  if (__builtin_mul_overflow(*v, scale, &scaled)) { // checked: signed overflow is undefined
    facts.put_status(key, Status::error, r.path,
                     fmt::format("'{}' times {} does not fit a signed 64-bit integer",
                                 r.text.substr(0, 40), scale));
    return std::nullopt;
  }
  facts.put_ok(key, scaled, r.path);
  return scaled;
}

std::map<std::string, std::string, std::less<>> parse_key_value_lines(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  for (const auto& line : split_lines(text)) {
    std::string_view l = trim_view(line);
    auto sp = l.find_first_of(" \t");
    if (sp == std::string_view::npos || sp == 0) continue;
    out.emplace(std::string(l.substr(0, sp)), std::string(trim_view(l.substr(sp + 1))));
  }
  return out;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  for (const std::string_view line : split_records(text, '\n'))
    out.emplace_back(line);
  return out;
}

std::vector<EnvironEntry> environ_entries(std::string_view text) {
  std::vector<EnvironEntry> out;
  std::set<std::string_view> seen;
  for (const std::string_view entry : split_records(text, '\0')) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    if (!seen.insert(entry.substr(0, eq)).second) continue;
    out.push_back(EnvironEntry{entry.substr(0, eq), entry.substr(eq + 1)});
  }
  return out;
}

std::optional<std::string> EnvironRead::get(std::string_view name) const {
  auto it = vars.find(name);
  if (it == vars.end()) return std::nullopt;
  return it->second;
}

EnvironRead read_environ(const Root& root, std::span<const std::string> names) {
  EnvironRead out;
  ReadResult r = root.read("/proc/self/environ", kMaxEnvironBytes);
  out.source = r.path;
  if (!r.ok()) {
    out.status = r.status;
    out.reason = r.reason.empty() ? std::string(to_string(r.status)) : r.reason;
    return out;
  }
  for (const auto& [name, value] : environ_entries(r.text))
    if (env_name_matches(name, names)) out.vars.emplace(std::string(name), std::string(value));
  return out;
}

std::string join_path(std::string_view dir, std::string_view tail) {
  std::string out(dir);
  while (out.size() > 1 && out.back() == '/')
    out.pop_back();
  if (out != "/") out += '/';
  out += tail;
  return out;
}

std::string parent_dir(std::string_view path) {
  while (path.size() > 1 && path.back() == '/')
    path.remove_suffix(1);
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

} // namespace halo::probes
