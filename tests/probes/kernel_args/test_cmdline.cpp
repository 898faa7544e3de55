// SPDX-License-Identifier: MIT
#include "kernel_args/cmdline.hpp"

#include <catch2/catch.hpp>

#include <limits>

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
  // kernel.ubuntu.com mainline builds: upstream code, not an Ubuntu ABI (6.17.5 mainline lacks
  // the gfx1151 fixes that Ubuntu's 6.17.0-19 carries).
  auto mainline = parse_kernel_release("6.17.5-061705-generic");
  REQUIRE(mainline);
  CHECK(mainline->version == "6.17.5");
  CHECK_FALSE(mainline->ubuntu_abi);
  CHECK(mainline->ubuntu_flavor.empty());
  CHECK_FALSE(parse_kernel_release("6.18.0-061800rc5-generic")->ubuntu_abi);
  CHECK(parse_kernel_release("6.17.0-19-generic")->ubuntu_abi == 19);
  CHECK(parse_kernel_release("6.18")->version == "6.18");
  CHECK_FALSE(parse_kernel_release("garbage"));
  CHECK_FALSE(parse_kernel_release(""));
}

// kernel/params.c next_arg(): the cases the kernel treats in its own way.
TEST_CASE("next_arg: quotes, '=' at the start, no-break space, NUL", "[cmdline]") {
  auto a = split_kernel_args("\"a=b c\" x=\"y z\" =abc =a=b p=\" q\"=r");
  REQUIRE(a.size() == 5);
  CHECK(a[0].name == "a");
  CHECK(a[0].value == std::string("b c"));
  CHECK(a[1].value == std::string("y z"));
  CHECK(a[2].name == "=abc"); // '=' at offset 0 is not recorded as the separator
  CHECK_FALSE(a[2].value);
  CHECK(a[3].name == "=a");
  CHECK(a[3].value == std::string("b"));
  CHECK(a[4].name == "p");
  CHECK(a[4].value == std::string(" q\"=r")); // only a quote that ends the argument is removed
  // An unbalanced quote runs to the end; a lone quote as the value leaves it empty.
  auto e = split_kernel_args("x=\" y=");
  REQUIRE(e.size() == 1);
  CHECK(e[0].value == std::string(" y="));
  REQUIRE(split_kernel_args("x=\"").size() == 1);
  CHECK(split_kernel_args("x=\"")[0].value == std::string(""));
  // lib/ctype.c counts 0xA0 as a space: a pasted UTF-8 no-break space leaves 0xC2 in the value.
  auto nb = split_kernel_args("ttm.pages_limit=123\xC2\xA0"
                              "456");
  REQUIRE(nb.size() == 2);
  CHECK(nb[0].value == std::string("123\xC2"));
  CHECK(split_kernel_args(std::string_view("a=1\0b=2", 7)).size() == 1);
  std::string rest;
  auto m = split_kernel_args("pages_limit=1 -- page_pool_size=2", true, &rest);
  REQUIRE(m.size() == 1);
  CHECK(rest == "page_pool_size=2");
  CHECK(cmdline_init_args("ro -- single x=1") == std::vector<std::string>{"single", "x=1"});
}

// libkmod-config.c kmod_config_parse_kcmdline(): checked against real kmod in cli.kmod_diff.
TEST_CASE("kmod reads module options from the whole command line", "[cmdline]") {
  auto k = parse_kmod_cmdline("ro amd-ttm.pages_limit=1 -- amdgpu.gttsize=7 \"ttm.x=a b\" "
                              "amdgpu.a.b=1 amdgpu.c=\"d e\" nomodeset amdgpu.flag "
                              "modprobe.blacklist=amdgpu_top,amdgpu modprobe.blacklist=ttm");
  REQUIRE(k.options.size() == 5);
  CHECK(k.options[0].module == "amd_ttm");
  CHECK(k.options[0].option == "pages_limit=1");
  CHECK(k.options[1].module == "amdgpu");
  CHECK(k.options[1].option == "gttsize=7"); // after `--`: kmod has no such rule
  CHECK(k.options[2].option == "x=\"a b\""); // re-quoted
  CHECK(k.options[3].option == "c=\"d e\"");
  CHECK(k.options[4].option == "flag");
  CHECK(k.blacklist == std::vector<std::string>{"amdgpu_top", "amdgpu", "ttm"});
  CHECK_FALSE(k.truncated);
  CHECK(parse_kmod_cmdline(std::string(5000, 'x')).truncated);
}

TEST_CASE("kstrtoul/kstrtoint: base 0, one newline, nothing else", "[cmdline]") {
  CHECK(kstrtoull("0x1E00000") == 0x1E00000U);
  CHECK(kstrtoull("010") == 8U);
  CHECK(kstrtoull("00") == 0U);
  CHECK(kstrtoull("+5") == 5U);
  CHECK(kstrtoull("7\n") == 7U);
  CHECK(kstrtoull("18446744073709551615") == 18446744073709551615ULL);
  CHECK_FALSE(kstrtoull("18446744073709551616"));
  for (const char* bad : {"", "09", "0x", "120G", "abc", "-1", "1 ", "7\n\n", " 1"})
    CHECK_FALSE(kstrtoull(bad));
  CHECK(kstrtoint("-1") == -1);
  CHECK(kstrtoint("0x7fffffff") == 2147483647);
  CHECK_FALSE(kstrtoint("0x80000000"));
  CHECK(kstrtoll("-9223372036854775808") == std::numeric_limits<std::int64_t>::min());
  CHECK_FALSE(kstrtoll("9223372036854775808"));
}

// Issue 21: distribution suffixes in kernel releases, each read by the same rule.
TEST_CASE("kernel releases of the distributions the doctor meets", "[cmdline]") {
  struct Case {
    const char* release;
    const char* version;
    std::optional<long long> abi;
    const char* flavor;
  };
  for (const Case& c :
       {Case{"6.17.0-19-generic", "6.17.0", 19, "generic"},
        Case{"6.14.0-1018-oem", "6.14.0", 1018, "oem"},
        Case{"6.8.0-31-lowlatency", "6.8.0", 31, "lowlatency"},
        Case{"6.17.7-300.fc43.x86_64", "6.17.7", std::nullopt, ""},
        Case{"6.12.48+deb13-amd64", "6.12.48", std::nullopt, ""},
        Case{"6.18.4-arch1-1", "6.18.4", std::nullopt, ""},
        Case{"6.12.30", "6.12.30", std::nullopt, ""}, Case{"7.1.0", "7.1.0", std::nullopt, ""},
        Case{"6.4.0-150600.23.25-default", "6.4.0", std::nullopt, ""}}) {
    INFO(c.release);
    auto r = parse_kernel_release(c.release);
    REQUIRE(r);
    CHECK(r->version == c.version);
    CHECK(r->ubuntu_abi == c.abi);
    if (c.abi) CHECK(r->ubuntu_flavor == c.flavor);
  }
  // CachyOS uses the same X.Y.Z-N-flavor shape; only the version matters for the rules, whose
  // Ubuntu branches name the flavors they mean (generic, lowlatency, oem).
  CHECK(parse_kernel_release("6.18.2-2-cachyos")->version == "6.18.2");
}
