// SPDX-License-Identifier: MIT
// Escaping of untrusted text per output format (include/halo/sanitize.hpp).
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

namespace halo {
namespace {

/// Length of the well-formed UTF-8 sequence at `s[i]` (RFC 3629 section 4, Unicode table 3-7),
/// with its code point in `cp`; 0 when the byte there does not start one.
std::size_t utf8_seq(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  std::size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F; // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F; // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  cp = static_cast<std::uint32_t>(c) & (0xFFU >> (len + 1));
  for (std::size_t k = 1; k < len; ++k)
    cp = (cp << 6) | (static_cast<std::uint32_t>(b(k)) & 0x3FU);
  return len;
}

void hex_bytes(std::string& out, std::string_view bytes) {
  for (char c : bytes)
    out += fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
}

/// How escape_each writes one well-formed sequence: as it is, as `\xNN` bytes, or as `text`.
struct Written {
  enum class As { itself, hex, text } as = As::itself;
  std::string_view text;
};

/// Copies `s`, writing each invalid byte as `\xNN` and each valid sequence as `how(code point)`
/// says (a Written).
template <class How> std::string escape_each(std::string_view s, How how) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    const std::size_t n = utf8_seq(s, i, cp);
    if (n == 0) {
      hex_bytes(out, s.substr(i, 1));
      ++i;
      continue;
    }
    const Written w = how(cp);
    if (w.as == Written::As::hex)
      hex_bytes(out, s.substr(i, n));
    else if (w.as == Written::As::text)
      out.append(w.text);
    else
      out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

/// Copies `s`, writing each valid sequence whose code point `bad` rejects, and each invalid
/// byte, as `\xNN`.
template <class Bad> std::string escape_if(std::string_view s, Bad bad) {
  return escape_each(s, [&](std::uint32_t cp) {
    return bad(cp) ? Written{Written::As::hex, {}} : Written{};
  });
}

/// True when `s` is well-formed UTF-8 and `ok` accepts each of its code points.
template <class Ok> bool each_code_point(std::string_view s, Ok ok) {
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    const std::size_t n = utf8_seq(s, i, cp);
    if (n == 0 || !ok(cp)) return false;
    i += n;
  }
  return true;
}

bool valid_utf8(std::string_view s) {
  return each_code_point(s, [](std::uint32_t) { return true; });
}

void make_safe(nlohmann::json& j) {
  if (j.is_string()) {
    auto& s = j.get_ref<std::string&>();
    if (!valid_utf8(s)) s = escape_invalid_utf8(s);
  } else if (j.is_array()) {
    for (auto& e : j)
      make_safe(e);
  } else if (j.is_object()) {
    bool keys_ok = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      keys_ok = keys_ok && valid_utf8(it.key());
      make_safe(it.value());
    }
    if (!keys_ok) {
      nlohmann::json fixed = nlohmann::json::object();
      for (auto it = j.begin(); it != j.end(); ++it)
        fixed[escape_invalid_utf8(it.key())] = std::move(it.value());
      j = std::move(fixed);
    }
  }
}

} // namespace

std::string escape_invalid_utf8(std::string_view s) {
  return escape_if(s, [](std::uint32_t) { return false; });
}

std::string terminal_safe(std::string_view s, bool keep_sgr) {
  std::string out;
  out.reserve(s.size());
  std::size_t start = 0;
  auto flush = [&](std::size_t end) {
    out += escape_if(s.substr(start, end - start), [](std::uint32_t cp) {
      return (cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7F && cp <= 0x9F);
    });
  };
  if (keep_sgr) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\033' || i + 1 >= s.size() || s[i + 1] != '[') continue;
      std::size_t j = i + 2;
      while (j < s.size() && s[j] >= '0' && s[j] <= '9' && j < i + 4)
        ++j;
      // Only the sequences the reporters write (fmt/color.h: reset 0, bold 1, faint 2, red 31,
      // green 32, yellow 33), one parameter each: an SGR from a fact cannot conceal text (8),
      // paint it black on black (30;40) or reverse it; any other ESC is escaped on its own.
      static constexpr std::array<std::string_view, 6> kOurs = {"0", "1", "2", "31", "32", "33"};
      const std::string_view param = s.substr(i + 2, j - i - 2);
      if (j < s.size() && s[j] == 'm' &&
          std::find(kOurs.begin(), kOurs.end(), param) != kOurs.end()) {
        flush(i);
        out.append(s.substr(i, j + 1 - i));
        start = j + 1;
        i = j;
      }
    }
  }
  flush(s.size());
  return out;
}

namespace {
bool invisible_format(std::uint32_t cp) {
  return cp == 0x2028 || cp == 0x2029 || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}
bool not_one_line(std::uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || invisible_format(cp);
}
} // namespace

std::string one_line(std::string_view s) {
  return escape_each(s, [](std::uint32_t cp) {
    using As = Written::As;
    if (cp == '\n') return Written{As::text, "\\n"};
    if (cp == '\r') return Written{As::text, "\\r"};
    if (cp == '\t') return Written{As::text, "\\t"};
    return not_one_line(cp) ? Written{As::hex, {}} : Written{};
  });
}

bool is_one_line(std::string_view s) {
  return each_code_point(s, [](std::uint32_t cp) { return !not_one_line(cp); });
}

std::string xml_safe(std::string_view s) {
  return escape_if(s, [](std::uint32_t cp) {
    return (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xFFFE || cp == 0xFFFF;
  });
}

nlohmann::json utf8_safe_json(const nlohmann::json& j) {
  nlohmann::json out = j;
  make_safe(out);
  return out;
}

namespace {

/// nlohmann escapes C0 controls (RFC 8259 section 7 requires it) but writes DEL and the C1
/// controls U+0080..U+009F as they are, and a terminal showing the JSON acts on C1 CSI (U+009B)
/// like ESC [. Appends `text` (one JSON string as nlohmann wrote it) to `out` with those as \u
/// escapes, which keep the JSON and its value the same (issue 32).
void append_without_c1(std::string& out, std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0U;
    if (c == 0x7F) {
      out += "\\u007f";
    } else if (c == 0xC2 && next >= 0x80 && next <= 0x9F) {
      out += fmt::format("\\u{:04x}", next);
      ++i;
    } else {
      out += text[i];
    }
  }
}

/// Writes a JSON value as nlohmann's `dump(indent, ' ', false, error_handler_t::replace)` does,
/// followed by append_without_c1, but without copying the tree or the text (issue 33: a report
/// is some 130 KB of JSON, and dump_json was a fifth of a check's instructions). Strings that
/// need no escaping, the common case, are copied as they are; every other string, every number,
/// bool and null is written by nlohmann's own serializer, so the text is the same byte for byte.
class JsonWriter {
public:
  JsonWriter(std::string& out, int indent)
      : out_(out), ser_(nlohmann::detail::output_adapter<char>(out), ' ',
                        nlohmann::json::error_handler_t::replace),
        pretty_(indent >= 0), step_(pretty_ ? static_cast<unsigned>(indent) : 0U) {}

  /// Writes `j`, whose first line starts `current` columns in (its closing line too).
  void value(const nlohmann::json& j, unsigned current) {
    switch (j.type()) {
    case nlohmann::json::value_t::object:
      object(j, current);
      break;
    case nlohmann::json::value_t::array:
      array(j, current);
      break;
    case nlohmann::json::value_t::string:
      string(j.get_ref<const std::string&>());
      break;
    default: // numbers, bool, null, binary: nlohmann's own text
      ser_.dump(j, pretty_, false, step_, current);
      break;
    }
  }

  void indent(unsigned n) { out_.append(n, ' '); }

private:
  void object(const nlohmann::json& j, unsigned current) {
    if (j.empty()) {
      out_ += "{}";
      return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!valid_utf8(it.key())) {
        // make_safe renames the keys, which changes their order: write its copy.
        value(utf8_safe_json(j), current);
        return;
      }
    }
    const unsigned inner = current + step_;
    out_ += pretty_ ? "{\n" : "{";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out_ += pretty_ ? ",\n" : ",";
      first = false;
      if (pretty_) indent(inner);
      string(it.key());
      out_ += pretty_ ? ": " : ":";
      value(it.value(), inner);
    }
    if (pretty_) {
      out_ += '\n';
      indent(current);
    }
    out_ += '}';
  }

  void array(const nlohmann::json& j, unsigned current) {
    if (j.empty()) {
      out_ += "[]";
      return;
    }
    const unsigned inner = current + step_;
    out_ += pretty_ ? "[\n" : "[";
    bool first = true;
    for (const auto& e : j) {
      if (!first) out_ += pretty_ ? ",\n" : ",";
      first = false;
      if (pretty_) indent(inner);
      value(e, inner);
    }
    if (pretty_) {
      out_ += '\n';
      indent(current);
    }
    out_ += ']';
  }

  /// True when nlohmann writes `s` as it is and append_without_c1 leaves it: printable ASCII but
  /// DEL, `"` and `\`, and well-formed UTF-8 sequences above U+009F.
  static bool plain(std::string_view s) {
    // The ASCII bytes written as they are: one table look-up a byte for the common run of them.
    static constexpr std::array<bool, 128> kPlainAscii = [] {
      std::array<bool, 128> t{};
      for (std::size_t c = 0x20; c < 0x7F; ++c)
        t.at(c) = c != '"' && c != '\\';
      return t;
    }();
    for (std::size_t i = 0; i < s.size();) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x80) {
        if (!kPlainAscii.at(c)) return false; // C0 controls, DEL, '"' and '\\'
        ++i;
        continue;
      }
      std::uint32_t cp = 0;
      const std::size_t n = utf8_seq(s, i, cp);
      if (n == 0 || cp <= 0x9F) return false;
      i += n;
    }
    return true;
  }

public:
  /// Writes `s` as a JSON string.
  void string(std::string_view s) {
    if (plain(s)) {
      out_ += '"';
      out_.append(s);
      out_ += '"';
      return;
    }
    // Bytes that are not UTF-8 become \xNN text first (make_safe), then nlohmann escapes.
    std::string text;
    nlohmann::detail::serializer<nlohmann::json> one(nlohmann::detail::output_adapter<char>(text),
                                                     ' ', nlohmann::json::error_handler_t::replace);
    one.dump(nlohmann::json(valid_utf8(s) ? std::string(s) : escape_invalid_utf8(s)), false, false,
             0);
    append_without_c1(out_, text);
  }

private:
  std::string& out_;
  nlohmann::detail::serializer<nlohmann::json> ser_;
  bool pretty_;
  unsigned step_;
};

} // namespace

std::string dump_json(const nlohmann::json& j, int indent) {
  // The same text as j.dump(indent, ' ', false, error_handler_t::replace) of utf8_safe_json(j),
  // with DEL and C1 controls as \u escapes (JsonWriter).
  std::string out;
  JsonWriter(out, indent).value(j, 0);
  return out;
}

struct JsonStream::Impl {
  Impl(std::string& out, int indent) : writer(out, indent) {}
  JsonWriter writer;
};

JsonStream::JsonStream(std::string& out, int indent)
    : out_(out), impl_(std::make_unique<Impl>(out, indent)), pretty_(indent >= 0),
      step_(pretty_ ? static_cast<unsigned>(indent) : 0U) {}

JsonStream::~JsonStream() = default;

void JsonStream::before_value() {
  if (after_key_) { // a member's value: on its key's line
    after_key_ = false;
    return;
  }
  if (frames_.empty()) return;
  Frame& f = frames_.back();
  if (f.empty) {
    out_ += f.object ? '{' : '[';
    if (pretty_) out_ += '\n';
    f.empty = false;
  } else {
    out_ += pretty_ ? ",\n" : ",";
  }
  if (pretty_) impl_->writer.indent(static_cast<unsigned>(frames_.size()) * step_);
}

void JsonStream::begin_object() {
  before_value();
  frames_.push_back({true, true});
}

void JsonStream::begin_array() {
  before_value();
  frames_.push_back({false, true});
}

void JsonStream::end_object() {
  const Frame f = frames_.back();
  frames_.pop_back();
  if (f.empty) {
    out_ += f.object ? "{}" : "[]";
    return;
  }
  if (pretty_) {
    out_ += '\n';
    impl_->writer.indent(static_cast<unsigned>(frames_.size()) * step_);
  }
  out_ += f.object ? '}' : ']';
}

void JsonStream::end_array() {
  end_object(); // the frame knows which it closes
}

void JsonStream::key(std::string_view k) {
  before_value();
  impl_->writer.string(k);
  out_ += pretty_ ? ": " : ":";
  after_key_ = true;
}

bool JsonStream::key_ok(std::string_view k) {
  return valid_utf8(k);
}

void JsonStream::value(const nlohmann::json& j) {
  before_value();
  impl_->writer.value(j, static_cast<unsigned>(frames_.size()) * step_);
}

void JsonStream::string(std::string_view s) {
  before_value();
  impl_->writer.string(s);
}

void JsonStream::integer(std::int64_t n) {
  value(nlohmann::json(n));
}

void JsonStream::boolean(bool b) {
  value(nlohmann::json(b));
}

void JsonStream::null() {
  value(nlohmann::json(nullptr));
}

} // namespace halo
