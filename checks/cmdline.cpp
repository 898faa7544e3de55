#include "cmdline.hpp"

#include <regex>

namespace halo::probes {

std::vector<KernelArg> parse_cmdline(std::string_view s) {
  std::vector<KernelArg> out;
  std::size_t i = 0;
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (true) {
    while (i < s.size() && is_space(s[i]))
      ++i;
    if (i >= s.size()) break;
    bool in_quote = false;
    bool quoted = false;
    if (s[i] == '"') {
      ++i;
      in_quote = true;
      quoted = true;
    }
    const std::size_t start = i;
    std::size_t equals = std::string_view::npos;
    for (; i < s.size(); ++i) {
      if (is_space(s[i]) && !in_quote) break;
      if (equals == std::string_view::npos && s[i] == '=') equals = i;
      if (s[i] == '"') in_quote = !in_quote;
    }
    std::string_view token = s.substr(start, i - start);
    KernelArg a;
    if (equals == std::string_view::npos) {
      if (quoted && !token.empty() && token.back() == '"') token.remove_suffix(1);
      a.raw_name = std::string(token);
    } else {
      a.raw_name = std::string(s.substr(start, equals - start));
      std::string_view v = s.substr(equals + 1, i - equals - 1);
      if (!v.empty() && v.front() == '"') {
        v.remove_prefix(1);
        if (!v.empty() && v.back() == '"') v.remove_suffix(1);
      } else if (quoted && !v.empty() && v.back() == '"') {
        v.remove_suffix(1);
      }
      a.value = std::string(v);
    }
    if (!a.value && a.raw_name == "--") break;
    a.name = a.raw_name;
    for (char& c : a.name)
      if (c == '-') c = '_';
    out.push_back(std::move(a));
  }
  return out;
}

std::optional<KernelRelease> parse_kernel_release(std::string_view release) {
  static const std::regex version_re(R"(^(\d+\.\d+(?:\.\d+)?).*)");
  static const std::regex ubuntu_re(R"(^(\d+\.\d+\.\d+)-(\d+)-([a-z][a-z0-9-]*)$)");
  const std::string s(release);
  std::smatch m;
  if (!std::regex_match(s, m, version_re)) return std::nullopt;
  KernelRelease r;
  r.version = m[1].str();
  if (std::regex_match(s, m, ubuntu_re)) {
    r.ubuntu_abi = std::stoll(m[2].str());
    r.ubuntu_flavor = m[3].str();
  }
  return r;
}

} // namespace halo::probes
