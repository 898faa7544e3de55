// SPDX-License-Identifier: MIT
#include "cmdline.hpp"

#include <re2/re2.h>

#include <cctype>
#include <charconv>
#include <limits>

namespace halo::probes {

bool kernel_isspace(unsigned char c) {
  // lib/ctype.c: _S is set for 9-13, 32 and 160 (0xA0, Latin-1 no-break space).
  return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xA0;
}

namespace {

std::string normalise_name(std::string_view raw) {
  std::string n(raw);
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

/// The C string the kernel sees: everything up to the first NUL byte.
std::string_view up_to_nul(std::string_view s) {
  const auto nul = s.find('\0');
  return nul == std::string_view::npos ? s : s.substr(0, nul);
}

std::size_t skip_spaces(std::string_view s, std::size_t p) {
  while (p < s.size() && kernel_isspace(static_cast<unsigned char>(s[p])))
    ++p;
  return p;
}

/// One next_arg() step (kernel/params.c) from `p`; returns the position after the argument and
/// its trailing spaces.
std::size_t next_arg(std::string_view s, std::size_t p, KernelArg& out) {
  bool in_quote = false;
  bool quoted = false;
  if (s[p] == '"') {
    ++p;
    in_quote = true;
    quoted = true;
  }
  const std::string_view args = s.substr(p);
  std::size_t i = 0;
  std::size_t equals = 0; // 0 means none, as in the kernel: '=' at offset 0 is not recorded
  for (; i < args.size(); ++i) {
    if (kernel_isspace(static_cast<unsigned char>(args[i])) && !in_quote) break;
    if (equals == 0 && args[i] == '=') equals = i;
    if (args[i] == '"') in_quote = !in_quote;
  }
  // The bytes next_arg() would NUL out, tracked as an end index for the value and the name.
  std::size_t end = i;
  bool last_cut = false; // args[i-1] was overwritten with '\0'
  std::optional<std::string> value;
  std::size_t name_end = i;
  if (equals != 0) {
    name_end = equals;
    std::size_t v = equals + 1;
    if (v < args.size() && args[v] == '"') {
      ++v;
      if (i > 0 && args[i - 1] == '"') {
        last_cut = true;
        end = i - 1;
      }
    }
    value = v <= end ? std::string(args.substr(v, end - v)) : std::string();
  }
  if (quoted && i > 0 && !last_cut && args[i - 1] == '"') {
    if (equals == 0)
      name_end = i - 1;
    else if (value && !value->empty() && i - 1 > equals)
      value->pop_back();
  }
  out.raw_name = std::string(args.substr(0, name_end));
  out.name = normalise_name(out.raw_name);
  out.value = std::move(value);
  out.offset = quoted ? p - 1 : p;
  std::size_t next = p + i;
  if (next < s.size()) ++next;
  return skip_spaces(s, next);
}

} // namespace

std::vector<KernelArg> split_kernel_args(std::string_view s, bool stop_at_dashes,
                                         std::string* rest) {
  s = up_to_nul(s);
  std::vector<KernelArg> out;
  std::size_t p = skip_spaces(s, 0);
  while (p < s.size()) {
    KernelArg a;
    p = next_arg(s, p, a);
    // parse_args(): "Stop at --".
    if (stop_at_dashes && !a.value && a.raw_name == "--") {
      if (rest != nullptr) *rest = std::string(s.substr(p));
      return out;
    }
    out.push_back(std::move(a));
  }
  if (rest != nullptr) rest->clear();
  return out;
}

std::vector<KernelArg> parse_cmdline(std::string_view cmdline) {
  return split_kernel_args(cmdline, true);
}

std::vector<std::string> cmdline_init_args(std::string_view cmdline) {
  std::string rest;
  split_kernel_args(cmdline, true, &rest);
  std::vector<std::string> out;
  for (const KernelArg& a : split_kernel_args(rest, false))
    out.push_back(a.value ? a.raw_name + "=" + *a.value : a.raw_name);
  return out;
}

std::optional<std::string> kmod_underscores(std::string_view name) {
  std::string s(name);
  for (std::size_t i = 0; i < s.size(); ++i) {
    switch (s[i]) {
    case '-':
      s[i] = '_';
      break;
    case ']':
      return std::nullopt;
    case '[': {
      const auto close = s.find(']', i);
      if (close == std::string::npos) return std::nullopt;
      i = close;
      break;
    }
    default:
      break;
    }
  }
  return s;
}

KmodCmdline parse_kmod_cmdline(std::string_view cmdline) {
  // kmod_config_parse_kcmdline(): read_str_safe() into a 4096-byte buffer keeps 4095 bytes.
  constexpr std::size_t kKcmdLineSize = 4096;
  KmodCmdline r;
  std::string buf(up_to_nul(cmdline.substr(0, kKcmdLineSize - 1)));
  r.truncated = cmdline.size() > kKcmdLineSize - 1;
  enum class St { ignore, modname, param, value, complete };
  St state = St::modname;
  bool is_quoted = false;
  constexpr std::size_t kNone = std::string::npos;
  std::size_t quote_start = kNone;
  std::size_t modname = 0;
  std::size_t param_pos = 0;
  std::optional<std::size_t> value;
  std::size_t modname_end = 0;
  // buf[p] == size() plays the part of the terminating NUL.
  for (std::size_t p = 0; p <= buf.size(); ++p) {
    const char c = p < buf.size() ? buf[p] : '\0';
    switch (c) {
    case '"':
      is_quoted = !is_quoted;
      // Only a quote opening the token (or inside the value) is well formed.
      if (is_quoted && state == St::modname && p == modname) {
        quote_start = p;
        modname = p + 1;
      } else if (state != St::value) {
        state = St::ignore;
      }
      break;
    case '\0':
    case ' ':
    case '\n':
    case '\t':
    case '\v':
    case '\f':
    case '\r':
      if (is_quoted && state == St::value) {
        // a quoted value keeps its spaces
      } else if (is_quoted) {
        state = St::ignore;
      } else if (state == St::value || state == St::param) {
        state = St::complete;
      } else {
        modname = p + 1;
        state = St::modname;
        quote_start = kNone;
      }
      break;
    case '.':
      if (state == St::modname) {
        modname_end = p;
        param_pos = p + 1;
        state = St::param;
      } else if (state == St::param) {
        state = St::ignore;
      }
      break;
    case '=':
      if (state == St::param) {
        value = p + 1;
        state = St::value;
      } else if (state == St::modname) {
        state = St::ignore;
      }
      break;
    default:
      break;
    }
    if (state == St::complete) {
      const std::string mod = buf.substr(modname, modname_end - modname);
      std::string opt = buf.substr(param_pos, p - param_pos);
      // kmod re-quotes `"mod.param=a b"` as `param="a b"` (memmove in the same function).
      if (quote_start != kNone && quote_start < modname && value)
        opt = buf.substr(param_pos, *value - param_pos) + '"' + buf.substr(*value, p - *value);
      // kcmdline_parse_result()
      if (mod == "modprobe" && opt.rfind("blacklist=", 0) == 0) {
        std::string_view list = std::string_view(opt).substr(10);
        while (true) {
          const auto comma = list.find(',');
          r.blacklist.emplace_back(list.substr(0, comma));
          if (comma == std::string_view::npos) break;
          list.remove_prefix(comma + 1);
        }
      } else if (auto m = kmod_underscores(mod)) {
        r.options.push_back({*m, opt});
      }
      modname = p + 1;
      state = St::modname;
      quote_start = kNone;
    }
  }
  return r;
}

namespace {

/// _parse_integer_fixup_radix() and _parse_integer() of lib/kstrtox.c for base 0.
std::optional<std::uint64_t> parse_unsigned(std::string_view s) {
  unsigned base = 10;
  if (!s.empty() && s[0] == '0') {
    const bool hex = s.size() > 2 && (s[1] == 'x' || s[1] == 'X') &&
                     std::isxdigit(static_cast<unsigned char>(s[2])) != 0;
    if (hex) {
      base = 16;
      s.remove_prefix(2);
    } else {
      base = 8;
    }
  }
  std::uint64_t v = 0;
  std::size_t digits = 0;
  for (; digits < s.size(); ++digits) {
    const char c = s[digits];
    unsigned d = 0;
    if (c >= '0' && c <= '9')
      d = static_cast<unsigned>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<unsigned>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = static_cast<unsigned>(c - 'A' + 10);
    else
      break;
    if (d >= base) break;
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / base) return std::nullopt; // -ERANGE
    v = v * base + d;
  }
  if (digits == 0) return std::nullopt;
  s.remove_prefix(digits);
  if (!s.empty() && s[0] == '\n') s.remove_prefix(1);
  if (!s.empty()) return std::nullopt;
  return v;
}

} // namespace

std::optional<std::uint64_t> kstrtoull(std::string_view s) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  return parse_unsigned(s);
}

std::optional<std::int64_t> kstrtoll(std::string_view s) {
  if (!s.empty() && s[0] == '-') {
    auto v = parse_unsigned(s.substr(1));
    if (!v || *v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1U)
      return std::nullopt;
    return static_cast<std::int64_t>(0U - *v);
  }
  auto v = kstrtoull(s);
  if (!v || *v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return std::nullopt;
  return static_cast<std::int64_t>(*v);
}

std::optional<std::int32_t> kstrtoint(std::string_view s) {
  auto v = kstrtoll(s);
  if (!v || *v < std::numeric_limits<std::int32_t>::min() ||
      *v > std::numeric_limits<std::int32_t>::max())
    return std::nullopt;
  return static_cast<std::int32_t>(*v);
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
  // Ubuntu's mainline kernel builds (kernel.ubuntu.com/mainline) put the upstream version,
  // zero-padded, where an Ubuntu kernel has its ABI: "6.17.5-061705-generic". They carry no
  // Ubuntu patches, so they are judged by their upstream version alone. Ubuntu's own ABI numbers
  // never start with 0.
  if (RE2::FullMatch(s, ubuntu_re, nullptr, &abi, &flavor) && abi.front() != '0') {
    const auto [p, ec] = std::from_chars(abi.data(), abi.data() + abi.size(), abi_number);
    if (ec == std::errc() && p == abi.data() + abi.size()) {
      r.ubuntu_abi = abi_number;
      r.ubuntu_flavor = flavor;
    }
  }
  return r;
}

} // namespace halo::probes
