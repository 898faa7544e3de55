// SPDX-License-Identifier: MIT
// The libarchive read filters the doctor registers (include/halo/archive_read.hpp).
#include <halo/archive_read.hpp>

#include <archive.h>

namespace halo {

int support_builtin_read_filters(archive* a, std::initializer_list<ArchiveReadFilter> filters) {
  int registered = 0;
  for (ArchiveReadFilter add : filters) {
    // ARCHIVE_OK: libarchive was built with the library and decodes in-process; ARCHIVE_WARN: it
    // would run the external program (archive_read_support_filter(3)).
    archive* probe = archive_read_new();
    const bool builtin = probe != nullptr && add(probe) == ARCHIVE_OK;
    archive_read_free(probe);
    if (builtin && add(a) == ARCHIVE_OK) ++registered;
  }
  return registered;
}

} // namespace halo
