#include "cmdline.hpp"

#include <catch2/catch.hpp>

using namespace halo::probes;

TEST_CASE("the command line splits like the kernel's next_arg", "[cmdline]") {
  auto a = parse_cmdline(
      "BOOT_IMAGE=/boot/vmlinuz-6.14.0-1014-oem ro quiet amdgpu.gtt_size=122880 vt.handoff=7\n");
  REQUIRE(a.size() == 5);
  CHECK(a[0].name == "BOOT_IMAGE");
  CHECK(a[1].name == "ro");
  CHECK_FALSE(a[1].value.has_value());
  CHECK(a[3].name == "amdgpu.gtt_size");
  CHECK(a[3].value == std::string("122880"));
}

TEST_CASE("quotes keep spaces and are removed", "[cmdline]") {
  auto a = parse_cmdline(R"(dyndbg="file drm_mm.c +p" "quoted=a b" root=/dev/sda1)");
  REQUIRE(a.size() == 3);
  CHECK(a[0].name == "dyndbg");
  CHECK(a[0].value == std::string("file drm_mm.c +p"));
  CHECK(a[1].name == "quoted");
  CHECK(a[1].value == std::string("a b"));
  CHECK(a[2].value == std::string("/dev/sda1"));
}

TEST_CASE("dashes equal underscores in names; init arguments after -- are not kernel arguments",
          "[cmdline]") {
  auto a = parse_cmdline("amd-ttm.pages-limit=1 ttm.page_pool_size=2 -- single amdgpu.gttsize=3");
  REQUIRE(a.size() == 2);
  CHECK(a[0].name == "amd_ttm.pages_limit");
  CHECK(a[0].raw_name == "amd-ttm.pages-limit");
  CHECK(a[1].name == "ttm.page_pool_size");
}

TEST_CASE("whitespace-only and empty command lines give no arguments", "[cmdline]") {
  CHECK(parse_cmdline("").empty());
  CHECK(parse_cmdline("  \t\n").empty());
  auto a = parse_cmdline("novalue= x");
  REQUIRE(a.size() == 2);
  CHECK(a[0].value == std::string(""));
}

TEST_CASE("kernel releases parse into version, Ubuntu ABI and flavour", "[cmdline]") {
  auto oem = parse_kernel_release("6.14.0-1018-oem");
  REQUIRE(oem);
  CHECK(oem->version == "6.14.0");
  CHECK(oem->ubuntu_abi == 1018);
  CHECK(oem->ubuntu_flavor == "oem");
  auto fedora = parse_kernel_release("6.17.4-200.fc42.x86_64");
  REQUIRE(fedora);
  CHECK(fedora->version == "6.17.4");
  CHECK_FALSE(fedora->ubuntu_abi);
  auto debian = parse_kernel_release("6.12.48+deb13-amd64");
  REQUIRE(debian);
  CHECK(debian->version == "6.12.48");
  CHECK_FALSE(debian->ubuntu_abi);
  CHECK(parse_kernel_release("6.18")->version == "6.18");
  CHECK_FALSE(parse_kernel_release("garbage"));
  CHECK_FALSE(parse_kernel_release(""));
}
