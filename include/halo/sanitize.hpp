// SPDX-License-Identifier: MIT
// Escaping of untrusted text for each output format (issue 12). Facts come from files anyone may
// have written (/proc/cmdline, environ, os-release, modprobe.d, a capture bundle), so they may hold
// bytes that are not UTF-8, control characters and terminal escape sequences. Reports keep those
// bytes visible as `\xNN` text instead of passing them on or failing.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace halo {

/// `s` with every byte that is not part of a well-formed UTF-8 sequence (RFC 3629 section 4:
/// no overlong forms, no surrogates, nothing above U+10FFFF) replaced by the four characters
/// `\xNN` (NN: upper-case hex). Valid UTF-8 is returned unchanged.
std::string escape_invalid_utf8(std::string_view s);

/// Text safe for a terminal: invalid UTF-8 as in escape_invalid_utf8, and every C0 control
/// character except newline and tab, DEL, and the C1 controls U+0080..U+009F (ECMA-48 section 5,
/// which terminals also act on: CSI is U+009B) written as `\xNN` of their bytes, so no escape
/// sequence from a fact can move the cursor, change the title or hide text. With `keep_sgr`, the
/// colour sequences the text reporter adds itself stay: exactly `ESC [ P m` (ECMA-48 SGR) with P
/// one of 0, 1, 2, 31, 32, 33; every other ESC is escaped on its own. Reports without colours
/// (fleet compare) pass false, so no sequence from a node's file reaches the terminal.
std::string terminal_safe(std::string_view s, bool keep_sgr = false);

/// One line of text safe to place anywhere a person reads it and a program may parse it: a `#`
/// comment of a generated script or Nix snippet, a message on stderr, a terminal. Invalid UTF-8
/// as in escape_invalid_utf8; newline, carriage return and tab as the two characters `\n`, `\r`,
/// `\t`; every other C0 control, DEL and the C1 controls U+0080..U+009F (ECMA-48 section 5) as
/// `\xNN` of their bytes; the Unicode line and paragraph separators U+2028/U+2029 and the
/// bidirectional formatting characters U+200E/U+200F, U+202A..U+202E and U+2066..U+2069 (Unicode
/// UAX #9; "Trojan Source", CVE-2021-42574: they reorder what a reader sees) as `\xNN` of their
/// bytes. The result holds no byte below 0x20 and no byte 0x7F, so it can never end a comment,
/// start a command or reach a terminal as an escape sequence (issue 32).
std::string one_line(std::string_view s);

/// True when one_line(s) == s: nothing in `s` would be escaped.
bool is_one_line(std::string_view s);

/// Text allowed in XML 1.0 character data and attribute values (XML 1.0 section 2.2, `Char`):
/// invalid UTF-8 and the C0 controls other than tab, newline and carriage return, and
/// U+FFFE/U+FFFF, as `\xNN` text. (Markup characters are the XML writer's business.)
std::string xml_safe(std::string_view s);

/// A copy of `j` whose strings and object keys are valid UTF-8 (escape_invalid_utf8).
nlohmann::json utf8_safe_json(const nlohmann::json& j);

/// `j.dump(indent)` that never throws on bytes that are not UTF-8 (nlohmann::json's type_error
/// 316): strings are made valid with escape_invalid_utf8 first, so the raw bytes stay visible
/// as `\xNN` in the JSON text.
std::string dump_json(const nlohmann::json& j, int indent = -1);

/// Writes JSON text piece by piece, byte for byte what dump_json(tree, indent) writes for the
/// tree those pieces describe, without building the tree (issue 33: the JSON report's tree cost
/// a check some 4 M instructions to build and free). The caller keeps dump_json's order: the
/// members of an object in nlohmann::json's order (keys sorted bytewise, each key once), and
/// keys that are valid UTF-8 (dump_json renames the others, which changes their order: give
/// such an object to value() as a tree instead). Empty objects and arrays come out as `{}` and
/// `[]`, as dump_json writes them.
class JsonStream {
public:
  /// Appends to `out`; `indent` as dump_json's (-1: compact).
  JsonStream(std::string& out, int indent);
  ~JsonStream();
  JsonStream(const JsonStream&) = delete;
  JsonStream& operator=(const JsonStream&) = delete;
  JsonStream(JsonStream&&) = delete;
  JsonStream& operator=(JsonStream&&) = delete;

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  /// The next member's key, inside an object; its value follows. `k` must be key_ok().
  void key(std::string_view k);
  /// True when `k` is valid UTF-8, a key dump_json writes as it is (and in the same place).
  static bool key_ok(std::string_view k);
  /// A value as dump_json writes it: a whole tree, or a string, number, bool or null.
  void value(const nlohmann::json& j);
  void string(std::string_view s);
  void integer(std::int64_t n);
  void boolean(bool b);
  void null();

private:
  /// Writes what comes before a value: the pending `{`/`[` of its container, a comma, the
  /// indent (a member's value follows its key on the same line).
  void before_value();
  struct Impl;
  struct Frame {
    bool object = false;
    bool empty = true;
  };
  std::string& out_;
  std::unique_ptr<Impl> impl_;
  std::vector<Frame> frames_;
  bool pretty_;
  unsigned step_;
  bool after_key_ = false;
};

} // namespace halo
