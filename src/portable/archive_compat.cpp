// SPDX-License-Identifier: MIT
// The portable release build only (HALO_PORTABLE, cmake/Portable.cmake): libarchive's internal
// __archive_write_entry_filetype_unsupported, defined here so the static link never takes
// libarchive.a's archive_write_set_format.o (issue 46).
//
// Every tar writer (archive_write_set_format_pax.c, _ustar.c, _gnutar.c, ...) calls that helper
// to refuse an entry type it cannot store, and libarchive keeps it in archive_write_set_format.c
// beside archive_write_set_format(), the by-code table that names every writer. Taking that
// object for the helper takes the whole table: the xar writer, and with it libxml2's text writer
// and ICU (31 MB of the 46 MB binary). With this definition in the executable the linker resolves
// the pax writer's reference here and never opens that member; were anything else to need the
// table, archive_write_set_format.o would come in and its second definition of this function
// would fail the link rather than silently bring libxml2 back.
//
// The behaviour is that of libarchive 3.6.2 (Debian 12; archive_write_set_format.c): an
// ARCHIVE_ERRNO_FILE_FORMAT error "PATH: FORMAT format cannot archive KIND" for a directory,
// symbolic link, device, FIFO or socket, "PATH: FORMAT format cannot archive files with mode
// 0MODE" for anything else. The
// doctor's capture (src/core/bundle.cpp) writes only regular files, directories and symbolic
// links, all of which pax stores, so the doctor never reaches it.
#include <archive.h>
#include <archive_entry.h>

#include <cerrno>

extern "C" {

// NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): libarchive's name.
__attribute__((visibility("hidden"))) void
__archive_write_entry_filetype_unsupported(struct archive* a, struct archive_entry* entry,
                                           const char* format) {
  const char* name = nullptr;
  switch (archive_entry_filetype(entry)) {
  case AE_IFDIR:
    name = "directories";
    break;
  case AE_IFLNK:
    name = "symbolic links";
    break;
  case AE_IFCHR:
    name = "character devices";
    break;
  case AE_IFBLK:
    name = "block devices";
    break;
  case AE_IFIFO:
    name = "named pipes";
    break;
  case AE_IFSOCK:
    name = "sockets";
    break;
  default:
    break;
  }
  // ARCHIVE_ERRNO_FILE_FORMAT is EFTYPE or EINVAL (archive_private.h; Linux has no EFTYPE).
  if (name != nullptr)
    archive_set_error(a, EINVAL, "%s: %s format cannot archive %s", archive_entry_pathname(entry),
                      format, name);
  else
    archive_set_error(a, EINVAL, "%s: %s format cannot archive files with mode 0%lo",
                      archive_entry_pathname(entry), format,
                      static_cast<unsigned long>(archive_entry_mode(entry)));
}

} // extern "C"
