// SPDX-License-Identifier: MIT
// The RAS probe (checks/gpus/ras.cpp) on the mi300x-ras-errors fixture (formats from amdgpu_ras.c
// and docs.kernel.org/gpu/amdgpu/ras.html) and on edits of it: the two-line format of older
// kernels, "Query currently inaccessible" during a reset, a GPU without RAS.
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace halo;
using halo::test::fixture;
using halo::test::probe_root;

namespace {
/// A copy of a fixture root that a test may change.
struct CopiedFixture {
  halo::test::FixtureTree tree;
  explicit CopiedFixture(const char* name) {
    std::filesystem::copy(fixture(name), tree.path(),
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::copy_symlinks |
                              std::filesystem::copy_options::overwrite_existing);
  }
};
const char* kGpu3Ras = "/sys/bus/pci/devices/0000:5c:00.0/ras";
} // namespace

TEST_CASE("ras probe: per-GPU counters and bad pages of an 8x MI300X", "[probe][ras]") {
  const FactSet f = probe_root(fixture("mi300x-ras-errors"));
  CHECK(f.get<bool>("gpu.3.ras.supported") == true);
  CHECK(f.get_int("gpu.3.ras.ue_count") == 1);
  CHECK(f.get_int("gpu.3.ras.ce_count") == 14);
  CHECK(f.get_int("gpu.3.ras.de_count") == 0);
  CHECK(f.get<std::vector<std::string>>("gpu.3.ras.ue_blocks") ==
        std::vector<std::string>{"umc (1)"});
  CHECK(f.get_int("gpu.3.ras.bad_pages_retired") == 1);
  CHECK(f.get_int("gpu.3.ras.bad_pages_pending") == 1);
  CHECK(f.get_int("gpu.3.ras.bad_pages_failed") == 0);
  CHECK(f.get_int("gpu.6.ras.ue_count") == 0);
  CHECK(f.get_int("gpu.6.ras.ce_count") == 3);
  // The facts come from the GPU's own card (card4 is GPU 3's).
  CHECK(f.find("gpu.3.ras.ue_count")->source == "/sys/class/drm/card4/device/ras/*_err_count");
}

TEST_CASE("ras probe: a GPU without ras/ is 'not supported', never a clean count", "[probe][ras]") {
  const FactSet f = probe_root(fixture("strix-halo-default-ttm"));
  CHECK(f.get<bool>("gpu.0.ras.supported") == false);
  CHECK(f.find("gpu.0.ras.ue_count")->status == Status::missing);
}

TEST_CASE("ras probe: older two-line counters, a reset in progress, a malformed page list",
          "[probe][ras]") {
  CopiedFixture c("mi300x-ras-errors");
  const std::string dir = c.tree.path().string() + kGpu3Ras;
  // Kernels before the deferred count print two lines.
  c.tree.file(std::string(kGpu3Ras) + "/umc_err_count", "ue: 2\nce: 5\n");
  FactSet f = probe_root(c.tree.path());
  CHECK(f.get_int("gpu.3.ras.ue_count") == 2);
  CHECK(f.get_int("gpu.3.ras.de_count") == 0);
  // While RAS is not ready the driver answers a sentence: the totals are unknown, not zero.
  c.tree.file(std::string(kGpu3Ras) + "/umc_err_count", "Query currently inaccessible\n");
  f = probe_root(c.tree.path());
  const Fact* ue = f.find("gpu.3.ras.ue_count");
  REQUIRE(ue != nullptr);
  CHECK(ue->status == Status::error);
  CHECK_THAT(ue->reason, Catch::Contains("Query currently inaccessible"));
  // Lines that are not "pfn : size : flag" are not counted.
  c.tree.file(std::string(kGpu3Ras) + "/gpu_vram_bad_pages",
              "garbage\n0x00000001 : 0x00001000 : F\n0x2 : 0x1000 : X\n");
  f = probe_root(c.tree.path());
  CHECK(f.get_int("gpu.3.ras.bad_pages_failed") == 1);
  CHECK(f.get_int("gpu.3.ras.bad_pages_retired") == 0);
  // No bad page list: retirement is off; the counters are still read.
  std::filesystem::remove(dir + "/gpu_vram_bad_pages");
  f = probe_root(c.tree.path());
  CHECK(f.find("gpu.3.ras.bad_pages_retired")->status == Status::missing);
  CHECK(f.find("gpu.3.ras.ue_count")->status == Status::error);
}
