// SPDX-License-Identifier: MIT
// The fix generator's pure parts (src/fix): merging structured fixes, --ttm-limit, validation and
// the rendered script's shape per stack. The scripts are run for real in tests/cli/fix.sh.
#include <halo/digest.hpp>
#include <halo/error.hpp>
#include <halo/fix.hpp>
#include <halo/units.hpp>

#include <catch2/catch.hpp>

using namespace halo;
using namespace halo::fix;

namespace {
Result failing(std::string id, nlohmann::json fix) {
  Result r;
  r.id = std::move(id);
  r.status = Outcome::fail;
  r.fix = std::move(fix);
  return r;
}

nlohmann::json ttm_fix(std::int64_t pages) {
  return {{"kernel_args", {{"set", {{"ttm.pages_limit", pages}, {"ttm.page_pool_size", pages}}}}},
          {"modprobe",
           {{{"module", "ttm"},
             {"file", "halo-doctor-ttm.conf"},
             {"options", {{"pages_limit", pages}, {"page_pool_size", pages}}}}}},
          {"initramfs", true},
          {"reboot", true}};
}
} // namespace

TEST_CASE("fix merge: duplicate TTM proposals collapse; ttm-limit-low wins a disagreement",
          "[fix]") {
  nlohmann::json pool = {
      {"kernel_args", {{"set", {{"ttm.page_pool_size", 16393924}}}}},
      {"modprobe",
       {{{"module", "ttm"},
         {"file", "halo-doctor-ttm.conf"},
         {"options", {{"pages_limit", 16393924}, {"page_pool_size", 16393924}}}}}}};
  const Plan p = merge_fixes({failing("ttm-page-pool-mismatch", pool),
                              failing("ttm-limit-low", ttm_fix(31719424)),
                              failing("ttm-wrong-module", ttm_fix(31719424))});
  REQUIRE(p.kargs_set.size() == 2);
  for (const auto& [k, v] : p.kargs_set)
    CHECK(v == "31719424");
  REQUIRE(p.modprobe.size() == 1);
  for (const auto& [k, v] : p.modprobe[0].options)
    CHECK(v == "31719424");
  CHECK(p.covered ==
        std::vector<std::string>{"ttm-page-pool-mismatch", "ttm-limit-low", "ttm-wrong-module"});
  REQUIRE_FALSE(p.notes.empty());
  CHECK(p.notes[0].find("ttm-limit-low's value") != std::string::npos);
}

TEST_CASE("fix merge: passing rules, null fixes and manual-only fixes", "[fix]") {
  Result pass = failing("ttm-limit-low", ttm_fix(1));
  pass.status = Outcome::pass;
  const Plan p = merge_fixes(
      {pass, failing("kfd-present", nullptr),
       failing("apu-carveout-large", {{"summary", "shrink"}, {"manual", {"BIOS: 512 MB"}}})});
  CHECK(p.kargs_set.empty());
  CHECK(p.covered.empty());
  REQUIRE(p.manual.size() == 1);
  CHECK(p.manual[0].rule == "apu-carveout-large");
}

TEST_CASE("fix merge: removals split list renderings and never remove what is set", "[fix]") {
  const Plan p = merge_fixes(
      {failing("cmdline-unknown-param",
               {{"kernel_args", {{"remove", {"amdgpu.gtt_size, ttm.pages_pool_size"}}}}}),
       failing("x", {{"kernel_args", {{"remove", {"ttm.pages_limit"}}}}}),
       failing("ttm-limit-low", ttm_fix(5))});
  CHECK(p.kargs_remove == std::vector<std::string>{"amdgpu.gtt_size", "ttm.pages_pool_size"});
}

TEST_CASE("fix merge: values that are unsafe in a script are refused", "[fix]") {
  CHECK_THROWS_AS(merge_fixes({failing(
                      "r", {{"kernel_args", {{"set", {{"ttm.pages_limit", "1; rm -rf /"}}}}}})}),
                  InputError);
  CHECK_THROWS_AS(merge_fixes({failing("r", {{"groups", {"render video"}}})}), InputError);
  CHECK_THROWS_AS(merge_fixes({failing("r", {{"env", {{"unset", {"A-B"}}}}})}), InputError);
  CHECK_THROWS_AS(merge_fixes({failing("r", {{"modprobe",
                                              {{{"module", "ttm"},
                                                {"file", "../../etc/passwd"},
                                                {"options", {{"pages_limit", 1}}}}}}})}),
                  InputError);
}

TEST_CASE("fix --ttm-limit: GiB x 262144 pages, bounded by MemTotal - 2 GiB as check judges",
          "[fix]") {
  Plan p = merge_fixes({failing("ttm-limit-low", ttm_fix(31719424))});
  // MemTotal 125.07 GiB; ttm.max_limit_bytes = MemTotal - 2 GiB = 123.07 GiB.
  const std::int64_t mem = 131151392LL * 1024 - halo::units::kTtmOsHeadroomBytes;
  apply_ttm_limit(p, 120, mem, "ttm");
  for (const auto& [k, v] : p.kargs_set)
    CHECK(v == "31457280");
  for (const auto& [k, v] : p.modprobe[0].options)
    CHECK(v == "31457280");
  CHECK_THROWS_AS(apply_ttm_limit(p, 124, mem, "ttm"), InputError); // leaves 1.07 GiB
  CHECK_NOTHROW(apply_ttm_limit(p, 123, mem, "ttm"));               // leaves 2.07 GiB
  CHECK_THROWS_AS(apply_ttm_limit(p, 0, mem, "ttm"), InputError);

  Plan empty;
  apply_ttm_limit(empty, 96, mem, "amdttm");
  REQUIRE(empty.kargs_set.size() == 2);
  CHECK(empty.kargs_set[0] ==
        std::pair<std::string, std::string>{"amdttm.pages_limit", "25165824"});
  Plan unknown;
  CHECK_THROWS_AS(apply_ttm_limit(unknown, 96, mem, ""), InputError);
}

/// The script without its comment lines (the code a shell runs).
std::string code_lines(const std::string& script) {
  std::string out;
  std::size_t pos = 0;
  while (pos < script.size()) {
    auto nl = script.find('\n', pos);
    if (nl == std::string::npos) nl = script.size();
    const std::string line = script.substr(pos, nl - pos);
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] != '#') out += line + "\n";
    pos = nl + 1;
  }
  return out;
}

TEST_CASE("fix machine tag: SHA-256 of 'halo-doctor fix:' and the machine-id's first line",
          "[fix]") {
  // printf 'halo-doctor fix:%s' 0123456789abcdef0123456789abcdef | sha256sum | cut -c1-16
  CHECK(machine_tag("0123456789abcdef0123456789abcdef\n") == "3adab40453f58bf3");
  CHECK(machine_tag("0123456789abcdef0123456789abcdef") == "3adab40453f58bf3");
  CHECK(machine_tag("") == "");
  // FIPS 180-4 example "abc".
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("fix render: each stack uses its own tool, run through tool/query", "[fix]") {
  Plan p = merge_fixes(
      {failing("ttm-limit-low", ttm_fix(31719424)),
       failing("cmdline-unknown-param", {{"kernel_args", {{"remove", {"amdgpu.gtt_size"}}}}})});
  ScriptOptions o;
  auto render = [&](Stack s) {
    o.stack = s;
    return render_script(p, o);
  };
  const std::string grubby = render(Stack::grubby);
  CHECK(grubby.rfind("#!/usr/bin/env bash\n", 0) == 0);
  CHECK(grubby.find("set -euo pipefail") != std::string::npos);
  CHECK(grubby.find("tool grubby --update-kernel=ALL --args=\"$kv\"") != std::string::npos);
  CHECK(grubby.find("KARGS_REMOVE=( 'amdgpu.gtt_size' )") != std::string::npos);
  CHECK(grubby.find("INITRAMFS_CMD=( 'dracut' '--regenerate-all' '--force' )") !=
        std::string::npos);
  CHECK(grubby.find("tool \"${INITRAMFS_CMD[@]}\"") != std::string::npos);
  CHECK(render(Stack::grub_debian).find("GRUB_FLAVOUR='debian'") != std::string::npos);
  CHECK(render(Stack::grub_debian).find("INITRAMFS_CMD=( 'update-initramfs' '-u' '-k' 'all' )") !=
        std::string::npos);
  CHECK(render(Stack::grub_arch).find("GRUB_FLAVOUR='plain'") != std::string::npos);
  CHECK(render(Stack::grub_arch).find("INITRAMFS_CMD=( 'mkinitcpio' '-P' )") != std::string::npos);
  // Only this stack's code (issue 46): no other builder's or boot tool's steps in grubby's script.
  for (const char* other :
       {"mkinitcpio", "update-initramfs", "rpm-ostree", "kernelstub", "update-grub"})
    CHECK(code_lines(grubby).find(other) == std::string::npos);
  // The summary names the file with its line and each command with its arguments.
  CHECK(grubby.find("#   1. writes /etc/modprobe.d/halo-doctor-ttm.conf:\n#        options ttm") !=
        std::string::npos);
  CHECK(grubby.find("runs: grubby --update-kernel=ALL --args=ttm.pages_limit=31719424") !=
        std::string::npos);
  CHECK(grubby.find("runs: grubby --update-kernel=ALL --remove-args=amdgpu.gtt_size") !=
        std::string::npos);
  CHECK(render(Stack::rpm_ostree).find("tool rpm-ostree initramfs-etc \"${OPS[@]}\"") !=
        std::string::npos);
  CHECK(render(Stack::kernelstub).find("tool kernelstub -o \"$NEW\"") != std::string::npos);
  // systemd-boot edits the entries and /etc/kernel/cmdline; no tool owns the entries.
  const std::string sdb = render(Stack::systemd_boot);
  CHECK(sdb.find("loader/entries/*.conf") != std::string::npos);
  CHECK(sdb.find("put_file \"$CMDLINE_FILE\"") != std::string::npos);
  // Every stack's script refers only to tools through tool/query, never a bare call on the host.
  for (Stack st : {Stack::grubby, Stack::grub_debian, Stack::grub_arch, Stack::rpm_ostree,
                   Stack::kernelstub, Stack::systemd_boot})
    CHECK(render(st).find("\n  run update-grub") == std::string::npos);
  o.stack = Stack::nixos;
  const std::string nix = render_nix(p, o);
  CHECK(nix.find("boot.kernelParams = lib.mkAfter [ \"ttm.page_pool_size=31719424\"") !=
        std::string::npos);
  CHECK(nix.find("options ttm page_pool_size=31719424 pages_limit=31719424") != std::string::npos);
}

TEST_CASE("fix: stack names and shell quoting", "[fix]") {
  for (const auto& n : stack_names())
    CHECK(to_string(*parse_stack(n)) == n);
  CHECK_FALSE(parse_stack("lilo"));
  CHECK(shell_quote("it's") == "'it'\\''s'");
}
