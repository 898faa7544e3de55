// SPDX-License-Identifier: MIT
// Bounded reads of user-named input files and safe writes of the named outputs (issue 12).
// Inputs are untrusted: only regular files are read, never more than a fixed number of bytes, and
// a FIFO or a device never blocks the run. Outputs replace regular files atomically and never
// replace anything else (a device node stays a device node).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace halo {

/// Default cap on an input file the user names (--facts, --add-facts, --policy, a rules file):
/// 16 MiB, far above any real one (the largest shipped rules file is about 40 KiB).
inline constexpr std::size_t kMaxInputBytes = std::size_t{16} * 1024 * 1024;

/// Reads the whole of `path`, which must be a regular file (after following symlinks) of at most
/// `max_bytes` bytes. Opened with O_NONBLOCK and checked with fstat(2) before the first read, so a
/// FIFO or /dev/zero never blocks or runs forever. Throws InputError naming `path` (exit 2) when
/// it is missing, unreadable, not a regular file or too long.
std::string read_input_file(const std::string& path, std::size_t max_bytes = kMaxInputBytes);

/// Deepest nesting of arrays and objects accepted in an input JSON document. Real facts, rules
/// and policy files nest at most 6 levels; the bound keeps recursive walks of the document (and
/// the policy's line finder) far from the stack limit.
inline constexpr std::size_t kMaxJsonDepth = 64;

/// Parses an untrusted JSON document named `origin`: nesting is checked first (a linear scan;
/// deeper than `max_depth` is an error naming the line), then nlohmann::json parses it (with
/// comments when `comments`). Every parser failure, a number too large for a double (`1e400`:
/// out_of_range 406) included, becomes an InputError "ORIGIN:LINE: not valid JSON: ..." (exit 2).
/// `callback`, when given, is nlohmann's parser callback (returning false drops a value).
nlohmann::json parse_json_input(std::string_view text, std::string_view origin,
                                bool comments = false, std::size_t max_depth = kMaxJsonDepth,
                                const nlohmann::json::parser_callback_t& callback = nullptr);

/// Writes `text` to `path`, the way every report, fix script and bundle is written:
/// - a missing path or a regular file (not a symlink: the last component is never followed) is
///   replaced atomically by a new file: created with O_CREAT|O_EXCL|O_NOFOLLOW in the same
///   directory with mode 0644 less the umask (never the replaced file's mode, owner or set-ID
///   bits), written, fsync(2)ed, then rename(2)d over `path` (rename(2): atomic within one file
///   system), so a reader sees the old or the new file, never half of one;
/// - in a sticky directory others can write (/tmp), a regular file, FIFO or symlink owned by
///   another user (neither this effective uid nor the directory's owner) is refused with
///   InputError (exit 2), as the kernel's fs.protected_regular=2, protected_fifos=2 and
///   protected_symlinks do (Documentation/admin-guide/sysctl/fs.rst);
/// - a character device or a FIFO (`/dev/null`, `/dev/stdout` on a pipe), also through a
///   symlink, is written in place and never replaced (a FIFO nobody reads for 10 s is an
///   OutputError, not a hang);
/// - a directory, a symlink to a regular file or directory, a socket or a block device is refused
///   with InputError (exit 2) naming it.
/// A failed write (ENOSPC, EFBIG, EIO) throws OutputError (exit 70) with the reason; the
/// temporary file is removed, so no partial file is left at `path`.
void write_output_file(const std::string& path, std::string_view text);

/// Writes all of `text` to standard output (write(2), retrying on EINTR and short writes);
/// throws OutputError when stdout cannot take it (`> /dev/full`, a closed pipe).
void write_stdout(std::string_view text);

/// Text for a person on standard output: halo::terminal_safe(text, keep_sgr = true) first, so no
/// escape sequence from a fact (OSC 52 clipboard writes, OSC 0 titles, CSI screen clears) reaches
/// the terminal; the reporter's own SGR colours stay. Throws OutputError like write_stdout.
void write_stdout_text(std::string_view text);

/// Text for a person on standard error (messages, notes, log lines): halo::terminal_safe first.
/// Errors writing stderr are ignored: there is nowhere left to report them.
void write_stderr_text(std::string_view text);

} // namespace halo
