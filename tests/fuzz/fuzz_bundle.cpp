// SPDX-License-Identifier: MIT
// The capture-bundle reader (`check --bundle`): the input is the archive file; extraction
// either succeeds under the private directory or is a clear error, and nothing is left behind.
#include "fuzz_common.hpp"

#include <halo/bundle.hpp>
#include <halo/error.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  // The archive lives in memory: a memfd (a regular file) named through /proc/self/fd.
  static const int fd = ::memfd_create("halo-fuzz-bundle", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
    std::abort();
  static const std::string file = "/proc/self/fd/" + std::to_string(fd);
  std::filesystem::path dir;
  try {
    const ExtractedBundle b(file);
    dir = b.root();
    (void)b.runtime_facts_text(std::size_t{16} * 1024 * 1024);
  } catch (const InputError&) {
  }
  if (!dir.empty() && std::filesystem::exists(dir)) std::abort(); // left behind
  return 0;
}
