#include "cmdline.hpp"

#include <re2/re2.h>

#include <charconv>

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
  // RE2 (linear time, no recursion per character): std::regex's `.*` overflowed the stack on a
  // release string of some ten thousand characters.
  static const RE2 version_re(R"(^(\d+\.\d+(?:\.\d+)?))");
  static const RE2 ubuntu_re(R"((\d+\.\d+\.\d+)-(\d+)-([a-z][a-z0-9-]*))");
  const re2::StringPiece s(release.data(), release.size());
  std::string version;
  if (!RE2::PartialMatch(s, version_re, &version)) return std::nullopt;
  KernelRelease r;
  r.version = version;
  std::string abi;
  std::string flavor;
  long long abi_number = 0;
  if (RE2::FullMatch(s, ubuntu_re, nullptr, &abi, &flavor)) {
    const auto [p, ec] = std::from_chars(abi.data(), abi.data() + abi.size(), abi_number);
    if (ec == std::errc() && p == abi.data() + abi.size()) {
      r.ubuntu_abi = abi_number;
      r.ubuntu_flavor = flavor;
    }
  }
  return r;
}

} // namespace halo::probes
