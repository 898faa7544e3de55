// SPDX-License-Identifier: MIT
// The decompressors the doctor's libarchive readers accept, named one by one (issue 46): never
// archive_read_support_filter_all or _format_all, whose tables pull every format into the static
// release binary (the xar reader and with it libxml2 and ICU) and offer filters that run an
// external program on untrusted input (lrzip, lzop, grzip without their libraries).
#pragma once

#include <initializer_list>

struct archive;

namespace halo {

/// A libarchive read-filter registration function (archive_read_support_filter_gzip, ...).
using ArchiveReadFilter = int (*)(archive*);

/// Registers on reader `a` each filter of `filters` that libarchive decodes in-process, and
/// none that it would decode by running an external program: such a registration returns
/// ARCHIVE_WARN instead of ARCHIVE_OK (archive_read_support_filter(3), "RETURN VALUES"), which
/// is tried on a throwaway reader first so `a` never holds one. Returns how many were
/// registered. Never throws.
int support_builtin_read_filters(archive* a, std::initializer_list<ArchiveReadFilter> filters);

} // namespace halo
