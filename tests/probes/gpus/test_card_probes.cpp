// SPDX-License-Identifier: MIT
// The XGMI (checks/gpus/xgmi.cpp), GPU firmware (checks/gpus/gpu_firmware.cpp) and partition
// (checks/gpus/drm.cpp) reads on copies of the MI300X fixtures, edited into what the kernel can
// also show: a malformed or oversized xgmi_num_hops, a peer two hops away, a partition file refused
// during a GPU reset.
#include "derivation.hpp"
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string>

using namespace halo;
using halo::test::fixture;
using halo::test::probe_root;

namespace {
struct CopiedFixture {
  halo::test::FixtureTree tree;
  explicit CopiedFixture(const char* name) {
    std::filesystem::copy(fixture(name), tree.path(),
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::copy_symlinks |
                              std::filesystem::copy_options::overwrite_existing);
  }
  void write(const std::string& rel, const std::string& text) const {
    std::ofstream(tree.path() / rel, std::ios::trunc | std::ios::binary) << text;
  }
};
const std::string kGpu0 = "sys/bus/pci/devices/0000:0c:00.0/";
} // namespace

TEST_CASE("xgmi probe: the hive as amdgpu shows it", "[probe][xgmi]") {
  const FactSet f = probe_root(fixture("mi300x-host-tuned"));
  for (int i = 0; i < 8; ++i) {
    INFO(i);
    const std::string pre = "gpu." + std::to_string(i) + ".xgmi.";
    CHECK(f.get<bool>(pre + "member") == true);
    CHECK(f.get_int(pre + "hive_size") == 8);
    CHECK(f.get_int(pre + "physical_id") == i);
    CHECK(f.get<std::string>(pre + "hive_id") == "11638818706288400384");
  }
}

TEST_CASE("xgmi probe: hop counts are bits 2:0 of each byte; bad text is an error, not a size",
          "[probe][xgmi]") {
  CopiedFixture c("mi300x-host-tuned");
  // 0x42: xGMI3, two hops; 0x81: link type 2, one hop.
  c.write(kGpu0 + "xgmi_num_hops", "00 41 42 41 81 41 41 42 \n");
  FactSet f = probe_root(c.tree.path());
  CHECK(f.get_int("gpu.0.xgmi.far_peers") == 2);
  CHECK(f.get_int("gpu.0.xgmi.hive_size") == 8);
  c.write(kGpu0 + "xgmi_num_hops", "00 41 zz 41\n");
  f = probe_root(c.tree.path());
  CHECK(f.find("gpu.0.xgmi.hive_size")->status == Status::error);
  CHECK(f.find("gpu.0.xgmi.far_peers")->status == Status::error);
  std::string many;
  for (int i = 0; i < 65; ++i)
    many += "41 ";
  c.write(kGpu0 + "xgmi_num_hops", many + "\n");
  f = probe_root(c.tree.path());
  CHECK(f.find("gpu.0.xgmi.hive_size")->status == Status::error); // past the PSP's 64 nodes
}

TEST_CASE("gpu_firmware probe: every fw_version file, in the kernel's 0x%08x form", "[probe]") {
  CopiedFixture c("mi300x-host-tuned");
  FactSet f = probe_root(c.tree.path());
  CHECK(f.get<std::string>("fw.card1.mec") == "0x000080b1");
  CHECK(f.get<std::string>("fw.card1.vbios_version") == "113-M3000100-103");
  CHECK(f.get<std::vector<std::string>>("fw.card1.names") ==
        std::vector<std::string>{"mec", "smc", "sos"});
  CHECK(f.get<std::vector<std::string>>("gpu.firmware_mismatch")->empty());
  CHECK(f.get_int("gpu.firmware_compared") == 8);
  c.write(kGpu0 + "fw_version/sdma_fw_version", "garbage\n");
  f = probe_root(c.tree.path());
  CHECK(f.find("fw.card1.sdma")->status == Status::error);
  // A version that cannot be read on one GPU, absent on the others, is a difference too.
  REQUIRE(f.get<std::vector<std::string>>("gpu.firmware_mismatch")->size() == 1);
  CHECK(f.get<std::vector<std::string>>("gpu.firmware_mismatch")->at(0) ==
        "sdma (absent: GPUs 1, 2, 3, 4, 5, 6, 7; unreadable: GPU 0)");
}

TEST_CASE("drm probe: a partition query refused during a GPU reset is an error, not a permission",
          "[probe][partition]") {
  CopiedFixture c("mi300x-host-tuned");
  if (::geteuid() == 0) {
    WARN("running as root: permission bits do not deny reads, so the refusal cannot be made here");
    return;
  }
  // EACCES stands in for the kernel's EPERM here: both are 'denied' to the root reader.
  const auto p = c.tree.path() / (kGpu0 + "current_compute_partition");
  REQUIRE(::chmod(p.c_str(), 0) == 0);
  const FactSet f = probe_root(c.tree.path());
  const Fact* cp = f.find("gpu.0.compute_partition");
  REQUIRE(cp != nullptr);
  CHECK(cp->status == Status::error);
  CHECK_THAT(cp->reason, Catch::Contains("being reset"));
  CHECK(f.get<std::vector<std::string>>("drm.card1.available_compute_partition") ==
        std::vector<std::string>{"SPX", "DPX", "QPX", "CPX"});
}

TEST_CASE(
    "gpu_metrics probe: the v1.3 and v1.4 tables the fixtures lay out from the kernel's structs",
    "[probe][gpu_metrics]") {
  // v1.3 (an R9700), laid out by ctypes from struct gpu_metrics_v1_3 in build_fixtures.py.
  FactSet f = probe_root(fixture("r9700-thermal-throttle"));
  CHECK(f.get<std::string>("gpu.0.metrics.version") == "1.3");
  CHECK(f.get_int("gpu.0.metrics.temperature_edge_c") == 96);
  CHECK(f.get_int("gpu.0.metrics.temperature_hotspot_c") == 110);
  CHECK(f.get_int("gpu.0.metrics.temperature_mem_c") == 100);
  CHECK(f.get_int("gpu.0.metrics.socket_power_w") == 300);
  CHECK(f.get<std::vector<std::string>>("gpu.0.metrics.throttle_thermal") ==
        std::vector<std::string>{"TEMP_MEM", "TEMP_HOTSPOT"});
  CHECK(f.get<std::vector<std::string>>("gpu.0.metrics.throttle_power") ==
        std::vector<std::string>{"PPT0"});
  CHECK(f.get<std::vector<std::string>>("gpu.0.metrics.throttle_current")->empty());
  // v1.4 (MI300X): temperatures and power; no ASIC-independent throttle status in that layout.
  f = probe_root(fixture("mi300x-host-tuned"));
  CHECK(f.get<std::string>("gpu.3.metrics.version") == "1.4");
  CHECK(f.get_int("gpu.3.metrics.temperature_hotspot_c") == 38);
  CHECK(f.get_int("gpu.3.metrics.temperature_mem_c") == 33);
  CHECK(f.get_int("gpu.3.metrics.socket_power_w") == 142);
  CHECK(f.find("gpu.3.metrics.throttle_thermal")->status == Status::missing);
  CHECK(f.find("gpu.3.metrics.temperature_edge_c")->status == Status::missing);
}

TEST_CASE("gpu_metrics probe: truncated, inconsistent and unknown tables are errors or missing, "
          "never numbers",
          "[probe][gpu_metrics]") {
  CopiedFixture c("r9700-thermal-throttle");
  const std::string path = "sys/bus/pci/devices/0000:03:00.0/gpu_metrics";
  auto blob = [](std::uint16_t size, std::uint8_t format, std::uint8_t content, std::size_t len) {
    std::string b(len, '\0');
    if (len >= 4) {
      b[0] = static_cast<char>(size & 0xFF);
      b[1] = static_cast<char>(size >> 8);
      b[2] = static_cast<char>(format);
      b[3] = static_cast<char>(content);
    }
    return b;
  };
  // A copy of the fact: probe_root's FactSet is a temporary.
  const auto version = [&] { return *probe_root(c.tree.path()).find("gpu.0.metrics.version"); };
  c.write(path, std::string("\x78\x00", 2)); // two bytes: no header
  CHECK(version().status == Status::error);
  c.write(path, blob(120, 1, 3, 64)); // says 120 bytes, 64 read
  CHECK(version().status == Status::error);
  c.write(path, blob(64, 1, 3, 64)); // a v1.3 header on a 64-byte table
  FactSet f = probe_root(c.tree.path());
  CHECK(f.get<std::string>("gpu.0.metrics.version") == "1.3");
  CHECK(f.find("gpu.0.metrics.throttle_thermal")->status == Status::error);
  c.write(path, blob(80, 3, 0, 80)); // v3.0 (APUs): only the version
  f = probe_root(c.tree.path());
  CHECK(f.get<std::string>("gpu.0.metrics.version") == "3.0");
  CHECK(f.find("gpu.0.metrics.temperature_hotspot_c")->status == Status::missing);
  std::string all_ones = blob(120, 1, 3, 120);
  for (std::size_t i = 112; i < 120; ++i)
    all_ones[i] = '\xFF';
  c.write(path, all_ones); // every throttle bit set: "not reported", not "throttling everywhere"
  f = probe_root(c.tree.path());
  CHECK(f.find("gpu.0.metrics.throttle_thermal")->status == Status::missing);
}

// checks/common/derivation.hpp member_with: gpu_cards joins gpu.N to the render node the device
// access probe numbered its own way (access.render.M.*) and to libdrm's device (libdrm.dev.M.*)
// by the member M whose fact has GPU N's value, then names M's other facts by the generated
// functions (fact_keys::access::render_rw(M)): M must be the segment the pattern's * matched.
TEST_CASE("member_with: the member whose fact has the value, as the segment of the pattern's *",
          "[derived]") {
  FactSet f;
  f.put_ok("access.render.0.path", std::string("/dev/dri/renderD128"), "test");
  f.put_ok("access.render.1.path", std::string("/dev/dri/renderD129"), "test");
  f.put_status("access.render.2.path", Status::denied, "test", "not readable");
  f.put_ok("access.render.3.path", std::int64_t{130}, "test");
  f.put_ok("libdrm.dev.12.bus_id", std::string("0000:c5:00.0"), "test");
  CHECK(probes::member_with(f, "access.render.*.path", "/dev/dri/renderD129") ==
        std::optional<std::string>("1"));
  CHECK(probes::member_with(f, "libdrm.dev.*.bus_id", "0000:c5:00.0") ==
        std::optional<std::string>("12"));
  // No member has the value; a fact that is not ok, or not a string, is never a match.
  CHECK_FALSE(probes::member_with(f, "access.render.*.path", "/dev/dri/renderD131"));
  CHECK_FALSE(probes::member_with(f, "access.render.*.path", ""));
  CHECK_FALSE(probes::member_with(f, "access.render.*.path", "130"));
  CHECK_FALSE(probes::member_with(f, "libdrm.dev.*.bus_id", "/dev/dri/renderD128"));
}
