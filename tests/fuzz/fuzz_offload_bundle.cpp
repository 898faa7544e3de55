// SPDX-License-Identifier: MIT
// The offload-bundle reader (checks/framework/offload_bundle.cpp): any bytes as a .hip_fatbin
// section, compressed bundles included. No crash, no read outside the section, bounded memory and
// time.
#include "framework/offload_bundle.hpp"
#include "fuzz_common.hpp"

#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo::probes;
  const ReadAt read = [&](std::uint64_t offset, std::span<std::byte> out) -> std::size_t {
    if (offset > size) std::abort(); // the reader must stay inside the section it was given
    const std::size_t n = std::min<std::size_t>(out.size(), size - offset);
    std::memcpy(out.data(), data + offset, n);
    return n;
  };
  const FatbinTargets t = scan_fatbin(read, size);
  // What is common to every bundle is in some bundle.
  for (const auto& g : t.common)
    if (t.any.count(g) == 0) std::abort();
  (void)gfx_from_bundle_id(halo::fuzz::text(data, size));
  return 0;
}
