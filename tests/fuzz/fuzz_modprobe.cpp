// SPDX-License-Identifier: MIT
// The modprobe.d parser (checks/kernel_args/modprobe.cpp) through its probe: the input is a file in
// etc/modprobe.d of a scratch root.
#include "fuzz_common.hpp"
#include "probes.hpp"

#include <halo/probe.hpp>
#include <halo/root.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  static const std::filesystem::path root = [] {
    std::string templ = (std::filesystem::temp_directory_path() / "halo-fuzz-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    std::filesystem::create_directories(std::filesystem::path(templ) / "etc/modprobe.d");
    return std::filesystem::path(templ);
  }();
  static const auto probe = probes::make_modprobe_probe();
  {
    std::ofstream out(root / "etc/modprobe.d/fuzz.conf", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const Root r(root);
  const ProbeOptions opt;
  const ProbeContext ctx{r, opt};
  FactSet facts;
  probe->collect(ctx, facts);
  return 0;
}
