// SPDX-License-Identifier: MIT
// The libdrm_amdgpu probe: skipped off the live root, and on this machine (no /dev/dri) it
// reports drmGetDevices2's -ENOENT in its own words.
#include "fixture_tree.hpp"
#include "probes.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <filesystem>

using namespace halo;

namespace {

FactSet run_libdrm(const Root& root, const ProbeOptions& opt) {
  FactSet facts;
  probes::make_libdrm_probe()->collect(ProbeContext{root, opt}, facts);
  return facts;
}

} // namespace

TEST_CASE("libdrm: skipped with --no-runtime and on a fixture root (no replay)", "[libdrm]") {
  ProbeOptions opt;
  opt.no_runtime = true;
  FactSet f = run_libdrm(Root("/"), opt);
  REQUIRE(f.find("libdrm.status") != nullptr);
  CHECK(f.find("libdrm.status")->status == Status::missing);
  CHECK(f.find("libdrm.status")->reason == "skipped: --no-runtime");

  ProbeOptions with_library;
  with_library.hsa_library = "/some/replay.so"; // does not make libdrm run on a fixture
  f = run_libdrm(Root(test::fixture("strix-halo-fixed")), with_library);
  CHECK(f.find("libdrm.device_count")->status == Status::missing);
  CHECK(f.find("libdrm.device_count")->reason.find("--root is not /") != std::string::npos);
}

TEST_CASE("libdrm: on this machine the facts say what drmGetDevices2 said", "[libdrm][live]") {
  ProbeOptions opt;
  FactSet f = run_libdrm(Root("/"), opt);
  REQUIRE(f.get_int("libdrm.get_devices_ret").has_value());
  REQUIRE(f.get_int("libdrm.device_count").has_value());
  if (!std::filesystem::exists("/dev/dri")) {
    CHECK(*f.get_int("libdrm.get_devices_ret") == -ENOENT);
    CHECK(f.get<std::string>("libdrm.status") == "no_device");
    CHECK(f.get<std::string>("libdrm.detail").value_or("").find("-ENOENT") != std::string::npos);
    CHECK(*f.get_int("libdrm.device_count") == 0);
    return;
  }
  // With DRM devices, every AMD device has its MES and memory facts with some status.
  const auto n = *f.get_int("libdrm.device_count");
  for (std::int64_t i = 0; i < n; ++i) {
    CHECK(f.find("libdrm.dev." + std::to_string(i) + ".mes_fw_version") != nullptr);
    CHECK(f.find("libdrm.dev." + std::to_string(i) + ".gtt_total_bytes") != nullptr);
  }
}
