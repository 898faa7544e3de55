// SPDX-License-Identifier: MIT
// The ELF readers of checks/framework/offload_bundle.cpp (libelf): any bytes as a library file,
// through a memfd as the framework probe reads torch/lib/libtorch_hip.so. find_elf_section must
// name a section inside the file; read_elf_dynamic must never crash, hang or allocate without
// bound.
#include "framework/offload_bundle.hpp"
#include "fuzz_common.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo::probes;
  static const int fd = ::memfd_create("fuzz_elf", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) std::abort();
  if (size > 0 && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  std::string why;
  if (const auto s = find_elf_section(fd, ".hip_fatbin", why))
    if (s->offset > size || s->size > size - s->offset) std::abort(); // inside the file
  why.clear();
  if (const auto d = read_elf_dynamic(fd, why)) {
    for (const auto& n : d->needed)
      if (n.size() > 4096) std::abort(); // the string limit holds
  } else if (why.empty()) {
    std::abort(); // a refusal always says why
  }
  return 0;
}
