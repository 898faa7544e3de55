// SPDX-License-Identifier: MIT
// Helpers shared by the probe modules: turning reads into facts without losing the status.
#pragma once

#include <halo/fact.hpp>
#include <halo/root.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo::probes {

/// Parses a whole decimal integer (optionally signed, surrounding whitespace allowed).
std::optional<std::int64_t> parse_int(std::string_view s);

/// Parses a hexadecimal value written as "0x1586" (sysfs `vendor`, `device`, `class`).
std::optional<std::int64_t> parse_hex(std::string_view s);

/// Puts the trimmed text of `abs` under `key` (or its status when the read failed).
void put_text(FactSet& facts, const Root& root, const std::string& key, std::string_view abs);

/// Puts the integer in `abs` under `key`, times `scale`. Malformed text is an error fact that
/// quotes the text. Returns the value when ok.
std::optional<std::int64_t> put_int(FactSet& facts, const Root& root, const std::string& key,
                                    std::string_view abs, std::int64_t scale = 1);

/// Parses "key value" lines (KFD topology `properties`, `mem_banks/N/properties`). Lines that
/// do not have that shape are skipped.
std::map<std::string, std::string, std::less<>> parse_key_value_lines(std::string_view text);

/// Splits a sysfs list such as "SPX, DPX, QPX, CPX" at `sep`, trims each item and drops empty
/// ones; at most `max_items` items (the rest is ignored).
std::vector<std::string> split_list(std::string_view text, char sep, std::size_t max_items);

/// One `NAME=VALUE` entry of an environment block; the views point into the text parsed.
struct EnvironEntry {
  std::string_view name;
  std::string_view value;
};

/// The `NAME=VALUE` entries of a `/proc/PID/environ` text (NUL-separated, proc(5)), in order;
/// an entry without '=' is skipped. A name that stands twice (execve(2) passes the array as it
/// was given) keeps its first entry only: the one the process sees, since glibc's getenv(3)
/// returns the first match and CPython fills os.environ with PyDict_SetDefault
/// (Modules/posixmodule.c convertenviron). Views into `text`.
std::vector<EnvironEntry> environ_entries(std::string_view text);

/// Joins an absolute directory and a relative tail without a doubled '/' ("/a/" + "b" -> "/a/b").
std::string join_path(std::string_view dir, std::string_view tail);

/// The directory part of an absolute path ("/a/b/c" -> "/a/b"; "/a" -> "/").
std::string parent_dir(std::string_view path);

/// Splits text into lines without the newline characters.
std::vector<std::string> split_lines(std::string_view text);

} // namespace halo::probes
