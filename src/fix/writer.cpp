// SPDX-License-Identifier: MIT
// The writers of generated fix scripts and Nix snippets (src/fix/writer.hpp), and shell_quote.
#include "writer.hpp"

#include <halo/error.hpp>
#include <halo/fix.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace halo::fix {

/// Text of src/fix/templates/NAME (generated/fix_templates.cpp); empty if none.
std::string_view fix_template(std::string_view name);

namespace {
std::string quote(std::string_view s, bool keep_newlines);
} // namespace

std::string shell_quote(std::string_view s) {
  return quote(s, true);
}

std::string shell_word(std::string_view s) {
  return quote(s, false);
}

namespace {
std::string quote(std::string_view s, bool keep_newlines) {
  // A newline inside single quotes is an ordinary character of the word (POSIX XCU 2.2.2), so
  // multi-line file contents stay readable in '...'. Anything else is_one_line rejects (control
  // characters, bytes that are not UTF-8, bidi controls) is written with bash's ANSI-C quoting
  // $'...' (bash manual, "ANSI-C Quoting"), where it appears as \xNN and never as a raw byte.
  std::string flat(s);
  if (keep_newlines) std::replace(flat.begin(), flat.end(), '\n', ' ');
  const bool plain = is_one_line(flat);
  if (plain) {
    std::string out = "'";
    for (char c : s) {
      if (c == '\'')
        out += "'\\''";
      else
        out += c;
    }
    return out + "'";
  }
  std::string out = "$'";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7F) {
      out += fmt::format("\\x{:02X}", u);
    } else if (u >= 0x80) {
      // Multi-byte characters: escape every byte of a sequence one_line would escape; keep the
      // rest (valid UTF-8 text) as it is.
      std::size_t j = i + 1;
      while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0U) == 0x80U && j - i < 4)
        ++j;
      const std::string_view seq = s.substr(i, j - i);
      if (is_one_line(seq)) {
        out.append(seq);
      } else {
        for (char b : seq)
          out += fmt::format("\\x{:02X}", static_cast<unsigned char>(b));
      }
      i = j - 1;
    } else {
      out += c;
    }
  }
  return out + "'";
}

} // namespace

namespace detail {

void ShellWriter::comment(std::string_view text) {
  out_ += text.empty() ? "#" : "# ";
  out_ += one_line(text);
  out_ += '\n';
}

void ShellWriter::comment(Code prefix, std::string_view text) {
  out_ += "# ";
  out_ += prefix.text();
  out_ += one_line(text);
  out_ += '\n';
}

void ShellWriter::assign(Code name, std::string_view value) {
  out_ += name.text();
  out_ += '=';
  out_ += shell_quote(value);
  out_ += '\n';
}

void ShellWriter::array(Code name, const std::vector<std::string>& values) {
  out_ += name.text();
  out_ += "=(";
  for (const auto& v : values) {
    out_ += ' ';
    out_ += shell_word(v);
  }
  out_ += " )\n";
}

void ShellWriter::say(std::string_view text) {
  out_ += "say ";
  out_ += shell_quote(one_line(text));
  out_ += '\n';
}

namespace {
/// Only characters that no shell treats specially, outside or inside double quotes.
bool bare_word(std::string_view value) {
  return !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           std::string_view("_.,:/+@=%-").find(c) != std::string_view::npos;
  });
}
} // namespace

std::string ShellWriter::quoted(std::string_view value) const {
  if (!posix_) return shell_word(value);
  if (!is_one_line(value))
    throw InputError(
        fmt::format("'{}' cannot be written into a POSIX sh file: refusing it", one_line(value)));
  return shell_quote(value); // one line: shell_quote writes plain single quotes
}

void ShellWriter::word(std::string_view value) {
  out_ += bare_word(value) ? std::string(value) : quoted(value);
}

void ShellWriter::word_in_double_quotes(std::string_view value) {
  if (bare_word(value)) {
    out_ += value;
    return;
  }
  out_ += '"';
  out_ += quoted(value);
  out_ += '"';
}

void require_variable_name(std::string_view name) {
  const bool ok = !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                           (c >= '0' && c <= '9') || c == '_';
                  });
  if (!ok)
    throw InputError(
        fmt::format("'{}' is not a variable name: refusing to put it in a script", one_line(name)));
}

void ShellWriter::arg(std::string_view value) {
  out_ += shell_quote(value);
}

void ShellWriter::templ(Code name) {
  const std::string_view t = fix_template(name.text());
  if (t.empty()) throw std::logic_error("fix template missing: " + std::string(name.text()));
  out_ += t;
}

void ShellWriter::heredoc(const ShellWriter& body) {
  constexpr std::string_view kEnd = "HALO_EOF";
  const std::string& b = body.str();
  for (std::size_t start = 0; start <= b.size();) {
    const std::size_t nl = std::min(b.find('\n', start), b.size());
    if (std::string_view(b).substr(start, nl - start) == kEnd)
      throw std::logic_error("here-document body holds its terminator");
    start = nl + 1;
  }
  out_ += "cat <<'HALO_EOF'\n";
  out_ += b;
  if (!b.empty() && b.back() != '\n') out_ += '\n';
  out_ += "HALO_EOF\n";
}

std::string nix_string(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '$' && i + 1 < s.size() && s[i + 1] == '{') {
      out += "\\$";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  // What is left that one_line would change (other controls, invalid UTF-8, bidi) as \xNN text.
  return one_line(out + "\"");
}

std::string nix_indented_line(std::string_view s) {
  const std::string line = one_line(s);
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
      out += "'''";
      ++i;
    } else if (line[i] == '$' && i + 1 < line.size() && line[i + 1] == '{') {
      out += "''$";
    } else {
      out += line[i];
    }
  }
  return out;
}

void NixWriter::comment(std::string_view text, int indent) {
  out_.append(static_cast<std::size_t>(std::max(indent, 0)), ' ');
  out_ += text.empty() ? "#" : "# ";
  out_ += one_line(text);
  out_ += '\n';
}

void NixWriter::string(std::string_view value) {
  out_ += nix_string(value);
}

void NixWriter::indented_line(std::string_view value) {
  out_ += nix_indented_line(value);
  out_ += '\n';
}

void NixWriter::attr(std::string_view name) {
  // A Nix identifier: [a-zA-Z_][a-zA-Z0-9_'-]* (Nix manual, "Identifiers").
  const bool ident = !name.empty() &&
                     ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
                      name[0] == '_') &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '_' || c == '\'' || c == '-';
                     });
  if (ident)
    out_ += name;
  else
    out_ += nix_string(name);
}

} // namespace detail
} // namespace halo::fix
