// SPDX-License-Identifier: MIT
// The portable release build only (HALO_PORTABLE, cmake/Portable.cmake): definitions of the
// glibc functions newer than 2.34 that Debian 12's static libgcc and libstdc++ call, so that the
// binary runs on glibc 2.34 (RHEL/Rocky 9), which tests/cli/release.sh checks with objdump -T.
// Defined in the executable, they satisfy the static archives' references at link time; they are
// not exported, so libraries loaded later (ROCr, libdrm, libkmod) keep calling glibc's own.
//
// - _dl_find_object (glibc 2.35, dlfcn.h): GCC 12's unwinder (libgcc/unwind-dw2-fde-dip.c
//   _Unwind_Find_FDE) asks it for the PT_GNU_EH_FRAME segment of the object that holds a PC and
//   has no fallback when the call fails, so this one answers from dl_iterate_phdr (glibc 2.2.4),
//   which is how the unwinder itself did it before 2.35: the object whose PT_LOAD segment holds
//   the address, its first and last mapped byte, and its PT_GNU_EH_FRAME (dlfo_eh_frame). On
//   x86_64 the struct has no dlfo_eh_dbase (bits/dl_find_object.h DLFO_STRUCT_HAS_EH_DBASE 0).
// - arc4random and arc4random_buf (glibc 2.36, stdlib.h): libstdc++'s std::random_device
//   ("default" token, libstdc++-v3/src/c++11/random.cc) and libarchive (archive_random.c, which
//   uses arc4random_buf where the C library has it) draw from them; these use getrandom(2)
//   (glibc 2.25), retrying on EINTR, and abort when it fails otherwise, as glibc's own do.
// All are hidden: the static archives' references bind to them inside the executable, and
// nothing is exported that would interpose on glibc's own for libraries dlopen()ed later.
#include <dlfcn.h>
#include <link.h>
#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace {

struct FindObject {
  std::uintptr_t pc;
  dl_find_object* out;
  bool found;
};

int find_object(dl_phdr_info* info, std::size_t /*size*/, void* data) {
  auto* want = static_cast<FindObject*>(data);
  std::uintptr_t lo = UINTPTR_MAX;
  std::uintptr_t hi = 0;
  bool holds = false;
  const ElfW(Phdr)* eh_frame = nullptr;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_GNU_EH_FRAME) eh_frame = &ph;
    if (ph.p_type != PT_LOAD) continue;
    const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    const std::uintptr_t end = start + ph.p_memsz;
    lo = start < lo ? start : lo;
    hi = end > hi ? end : hi;
    if (want->pc >= start && want->pc < end) holds = true;
  }
  if (!holds) return 0;
  want->found = true;
  want->out->dlfo_flags = 0;
  want->out->dlfo_map_start = reinterpret_cast<void*>(lo); // NOLINT: addresses from the loader
  want->out->dlfo_map_end = reinterpret_cast<void*>(hi);   // NOLINT
  want->out->dlfo_link_map = nullptr;
  want->out->dlfo_eh_frame =
      eh_frame != nullptr ? reinterpret_cast<void*>(info->dlpi_addr + eh_frame->p_vaddr) // NOLINT
                          : nullptr;
  return 1;
}

} // namespace

#define HALO_HIDDEN __attribute__((visibility("hidden")))

extern "C" HALO_HIDDEN int _dl_find_object(void* address,
                                           dl_find_object* result) noexcept { // NOLINT
  FindObject want{reinterpret_cast<std::uintptr_t>(address), result, false};  // NOLINT
  dl_iterate_phdr(find_object, &want);
  return want.found ? 0 : -1;
}

extern "C" HALO_HIDDEN void arc4random_buf(void* buffer, std::size_t size) noexcept { // NOLINT
  auto* p = static_cast<unsigned char*>(buffer);
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = getrandom(p + got, size - got, 0);
    if (n > 0)
      got += static_cast<std::size_t>(n);
    else if (n < 0 && errno != EINTR)
      std::abort(); // no entropy source at all: glibc's arc4random aborts too
  }
}

extern "C" HALO_HIDDEN std::uint32_t arc4random() noexcept { // NOLINT
  std::uint32_t v = 0;
  arc4random_buf(&v, sizeof v);
  return v;
}
