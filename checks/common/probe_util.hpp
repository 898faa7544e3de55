// SPDX-License-Identifier: MIT
// Helpers shared by the probe modules: turning reads into facts without losing the status.
#pragma once

#include <halo/fact.hpp>
#include <halo/root.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
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

/// The environment training will see, as every probe reads it (issue 42 item 3: one reader, one
/// bound, one rule for a repeated name): the variables of `/proc/self/environ` read through a
/// root whose names match one of `names` (exact names or `PREFIX*`, env_name_matches), each
/// name's first entry (environ_entries), keyed by name.
struct EnvironRead {
  std::string source;         ///< the path read (Root's view of /proc/self/environ)
  Status status = Status::ok; ///< not ok: the file could not be read (reason says why)
  std::string reason;         ///< why it could not be read; empty when it was
  std::map<std::string, std::string, std::less<>> vars; ///< the matching variables
  bool ok() const { return status == Status::ok; }
  /// The variable's value, or std::nullopt when it is not set.
  std::optional<std::string> get(std::string_view name) const;
};

/// /proc/self/environ is read up to 1 MiB: Linux passes at most MAX_ARG_STRLEN (32 pages) per
/// string and a quarter of the stack limit in all (execve(2), "Limits on size of arguments and
/// environment"), far above any environment a training shell has; more is cut, not trusted.
inline constexpr std::size_t kMaxEnvironBytes = std::size_t{1024} * 1024;

/// Reads `/proc/self/environ` through `root` (at most kMaxEnvironBytes) and keeps the variables
/// whose names match `names`. Never throws: an unreadable file is a status with its reason.
EnvironRead read_environ(const Root& root, std::span<const std::string> names);

/// Joins an absolute directory and a relative tail without a doubled '/' ("/a/" + "b" -> "/a/b").
std::string join_path(std::string_view dir, std::string_view tail);

/// The directory part of an absolute path ("/a/b/c" -> "/a/b"; "/a" -> "/").
std::string parent_dir(std::string_view path);

/// Splits text into lines without the newline characters.
std::vector<std::string> split_lines(std::string_view text);

} // namespace halo::probes
