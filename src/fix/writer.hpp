// SPDX-License-Identifier: MIT
// The one way text reaches a generated fix script or Nix snippet (issue 32). Facts come from files
// anyone may write (a host name, PRETTY_NAME, a file name under /etc/modprobe.d or
// /etc/default/grub.d, a bundle from another machine), so every string that is not code written
// in src/fix passes through one of the writers below:
//   - code: only a string literal (`Code` has a consteval constructor), never a runtime string;
//   - comments and messages: one line (halo::one_line: newline, CR, control and bidi characters
//     escaped as visible text), so a comment can never end early and a message never reaches a
//     terminal as an escape sequence;
//   - shell values: fix::shell_quote (single quotes, or bash's $'...' with \xNN escapes when the
//     value holds a control character or bytes that are not UTF-8);
//   - Nix values: one Nix string escaper (", \, ${; control characters as \n \r \t or refused).
// tests/source/fix_writers.py fails when src/fix/*.cpp builds text any other way (no ostream,
// no `+` of strings into an output), and tests/cli/fix_hostile.sh plants payloads in every field.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace halo::fix::detail {

/// A piece of script or snippet code written in src/fix: only a string literal converts to it
/// (the constructor is consteval), so no runtime string can become code.
class Code {
public:
  // A string literal binds to `const char (&)[N]`; nothing else does at compile time.
  // NOLINTNEXTLINE(google-explicit-constructor,hicpp-explicit-conversions,cppcoreguidelines-avoid-c-arrays,modernize-avoid-c-arrays,hicpp-avoid-c-arrays)
  template <std::size_t N> consteval Code(const char (&s)[N]) : text_(s, N - 1) {}
  [[nodiscard]] std::string_view text() const { return text_; }

private:
  std::string_view text_;
};

/// Builds a bash script, or (posix = true) the POSIX sh block GRUB's scripts source with /bin/sh
/// (dash on Debian, which has no $'...' quoting), from code and quoted values.
class ShellWriter {
public:
  explicit ShellWriter(bool posix = false) : posix_(posix) {}
  /// Code as written here.
  void code(Code c) { out_ += c.text(); }
  /// `# TEXT` and a newline; TEXT made one line (halo::one_line). An empty text writes `#`.
  void comment(std::string_view text);
  /// `#   LABEL TEXT` style comment: `# ` + prefix code + one_line(text).
  void comment(Code prefix, std::string_view text);
  /// `NAME='value'` and a newline.
  void assign(Code name, std::string_view value);
  /// `NAME=( 'a' 'b' )` and a newline.
  void array(Code name, const std::vector<std::string>& values);
  /// `say 'TEXT'` and a newline, TEXT made one line first (it is printed when the script runs).
  void say(std::string_view text);
  /// A shell word: `value` as it is when it holds only characters no shell treats specially
  /// (A-Z a-z 0-9 _ . , : / + @ = % -), else quoted: shell_quote in bash; in a POSIX writer
  /// single quotes, and a value that is not one line (halo::is_one_line) throws InputError, as
  /// POSIX sh has no quoting that keeps control characters visible.
  void word(std::string_view value);
  /// Inside a double-quoted word: `value` as it is when word() would leave it bare, else the
  /// quotes closed, the word quoted as word() does, and the quotes opened again.
  void word_in_double_quotes(std::string_view value);
  /// A case pattern that matches `value` literally (quoted as in word()).
  void literal_pattern(std::string_view value) { word(value); }
  /// One quoted shell argument (shell_quote), no newline.
  void arg(std::string_view value);
  /// The text of src/fix/templates/NAME.
  void templ(Code name);
  /// Another writer's text as a quoted here-document body: `cat <<'HALO_EOF'` ... `HALO_EOF`.
  /// Throws std::logic_error if a line of it is the terminator.
  void heredoc(const ShellWriter& body);
  [[nodiscard]] const std::string& str() const { return out_; }

private:
  std::string quoted(std::string_view value) const;
  bool posix_ = false;
  std::string out_;
};

/// Throws InputError unless `name` is a shell variable name ([A-Za-z_][A-Za-z0-9_]*, POSIX XBD
/// 3.235 "Name"): a name is written unquoted (`unset NAME`, `export NAME=...`).
void require_variable_name(std::string_view name);

/// Builds a Nix expression from code and escaped strings.
class NixWriter {
public:
  void code(Code c) { out_ += c.text(); }
  /// `# TEXT` and a newline (one_line), indented by `indent` spaces.
  void comment(std::string_view text, int indent = 0);
  /// A Nix double-quoted string literal (see nix_string).
  void string(std::string_view value);
  /// A line inside an indented string ''...'' (see nix_indented_line), then a newline.
  void indented_line(std::string_view value);
  /// An attribute name: bare when it is a Nix identifier, else a quoted string.
  void attr(std::string_view name);
  [[nodiscard]] const std::string& str() const { return out_; }

private:
  std::string out_;
};

/// A Nix double-quoted string: `"`, `\` and `${` escaped (Nix manual, "String literals"); newline,
/// CR and tab as \n \r \t; any other control character or non-UTF-8 byte as visible `\xNN` text
/// (Nix has no escape for them; only validated values and names reach here).
std::string nix_string(std::string_view s);

/// One line of a Nix indented string: `''` as `'''`, `${` as `''${` (Nix manual); the line is made
/// one line (halo::one_line) first, so it cannot close the string or add lines.
std::string nix_indented_line(std::string_view s);

} // namespace halo::fix::detail
