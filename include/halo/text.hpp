// SPDX-License-Identifier: MIT
#pragma once
/// Splitting the text the doctor reads (sysfs and procfs files, /proc/<pid>/environ, command
/// output) into its records.

#include <string_view>
#include <vector>

namespace halo {

/// The records of `text` between separators `sep`, as views into `text` (which must outlive
/// them), in order: "a\nb\n" and "a\nb" both give {"a", "b"} (a trailing separator ends the last
/// record, it does not start an empty one), "a\n\nb" gives {"a", "", "b"}, "" gives {}. Lines
/// with sep '\n'; /proc/<pid>/environ's entries with sep '\0' (proc(5)).
inline std::vector<std::string_view> split_records(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

} // namespace halo
