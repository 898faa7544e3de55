// SPDX-License-Identifier: MIT
// support_builtin_read_filters (include/halo/archive_read.hpp): the libarchive filters the doctor's
// readers register are libarchive's in-process decoders only. A filter libarchive would run as an
// external program (lzop without liblzo2, as Debian builds it; lrzip and grzip always) is never
// registered, so an image or bundle in that format is refused instead of handed to a program.
#include <halo/archive_read.hpp>

#include <catch2/catch.hpp>

#include <archive.h>
#include <archive_entry.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

using namespace std::string_view_literals;

namespace {

using Reader = std::unique_ptr<archive, decltype(&archive_read_free)>;

/// Whether libarchive decodes `add`'s format in-process (ARCHIVE_OK) rather than by a program.
bool builtin(halo::ArchiveReadFilter add) {
  Reader probe(archive_read_new(), archive_read_free);
  return add(probe.get()) == ARCHIVE_OK;
}

/// Opens `data` with the filters registered by support_builtin_read_filters and the raw format;
/// returns the first header's status.
int first_header(const std::string& data, std::initializer_list<halo::ArchiveReadFilter> filters,
                 int* registered) {
  Reader a(archive_read_new(), archive_read_free);
  *registered = halo::support_builtin_read_filters(a.get(), filters);
  archive_read_support_format_raw(a.get());
  if (archive_read_open_memory(a.get(), data.data(), data.size()) != ARCHIVE_OK)
    return ARCHIVE_FATAL;
  archive_entry* e = nullptr;
  return archive_read_next_header(a.get(), &e);
}

} // namespace

TEST_CASE("support_builtin_read_filters registers in-process decoders only", "[archive]") {
  // lrzip and grzip are always external programs in libarchive (archive_read_support_filter(3)).
  CHECK_FALSE(builtin(archive_read_support_filter_lrzip));
  CHECK_FALSE(builtin(archive_read_support_filter_grzip));
  int registered = -1;
  // "x" as Python's gzip.compress(b"x", mtime=0) writes it.
  const std::string gzip_of_x(
      "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\xab\x00\x00\x83\x16\xdc\x8c\x01\x00\x00\x00"sv);
  CHECK(first_header(gzip_of_x,
                     {archive_read_support_filter_gzip, archive_read_support_filter_lrzip,
                      archive_read_support_filter_grzip},
                     &registered) == ARCHIVE_OK);
  CHECK(registered == 1); // gzip; neither program filter
  // An lzop stream (its magic, lzop's file header) where libarchive has no liblzo2: refused as
  // unrecognised rather than piped to `lzop -d`; where it has liblzo2, decoded in-process.
  const std::string lzop_magic("\x89LZO\x00\r\n\x1a\n\x10\x30\x20\x80\x09\x40"sv);
  const bool lzop_builtin = builtin(archive_read_support_filter_lzop);
  first_header(lzop_magic, {archive_read_support_filter_lzop}, &registered);
  CHECK(registered == (lzop_builtin ? 1 : 0));
}
