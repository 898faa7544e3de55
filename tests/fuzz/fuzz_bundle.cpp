// The capture-bundle reader (`check --bundle`): the input is the archive file; extraction
// either succeeds under the private directory or is a clear error, and nothing is left behind.
#include "fuzz_common.hpp"

#include <halo/bundle.hpp>
#include <halo/error.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  static const std::string file =
      (std::filesystem::temp_directory_path() / ("halo-fuzz-bundle-" + std::to_string(::getpid())))
          .string();
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  std::filesystem::path dir;
  try {
    const ExtractedBundle b(file);
    dir = b.root();
    (void)b.runtime_facts_file();
  } catch (const InputError&) {
  }
  if (!dir.empty() && std::filesystem::exists(dir)) std::abort(); // left behind
  return 0;
}
