// SPDX-License-Identifier: MIT
// The fix renderers (src/fix/script.cpp, nix.cpp) with every string input taken from the fuzzer:
// the bytes are split at NUL into the host name, PRETTY_NAME, evidence, a note, a manual step and
// its rule, a modprobe.d file name, a kernel-argument value, a variable value, the user and a NixOS
// configuration line. For every boot stack the text must hold no raw control byte but newline, and
// have exactly as many lines as the same plan with harmless values: a planted newline never adds a
// line of code (issue 32). InputError (a value POSIX sh cannot hold in the GRUB block) is allowed.
#include "fuzz_common.hpp"

#include <halo/error.hpp>
#include <halo/fix.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace halo;
using namespace halo::fix;

struct Inputs {
  std::vector<std::string> f;
  [[nodiscard]] std::string at(std::size_t i) const { return i < f.size() ? f[i] : "x"; }
};

Plan plan_of(const Inputs& in) {
  Plan p;
  p.kargs_set = {{"ttm.pages_limit", in.at(7)}};
  p.kargs_remove = {"amdgpu.gttsize"};
  p.modprobe = {ModprobeFile{in.at(6), "ttm", {{"pages_limit", "1024"}}, {in.at(5)}, ""}};
  p.initramfs = true;
  p.groups = {"render"};
  p.udev = {R"(KERNEL=="kfd", GROUP="render", MODE="0660")"};
  p.sysctl = {{"kernel.numa_balancing", "0"}};
  p.env_unset = {"HSA_OVERRIDE_GFX_VERSION"};
  p.env_set = {{"HSA_XNACK", in.at(8)}};
  p.covered = {in.at(5)};
  p.manual = {ManualStep{in.at(5), in.at(4)}};
  p.notes = {in.at(3)};
  for (const char* step :
       {"kernel_args", "modprobe", "initramfs", "groups", "udev", "sysctl", "env"})
    p.step_rules[step] = {in.at(5)};
  return p;
}

ScriptOptions options_of(const Inputs& in, Stack stack) {
  ScriptOptions o;
  o.stack = stack;
  o.host = in.at(0);
  o.os = in.at(1);
  o.evidence = {in.at(2)};
  o.user = in.at(9);
  o.tool_version = "0";
  o.nixos_param_lines = {in.at(10) + " \"ttm.pages_limit=1\""};
  return o;
}

void check(const std::string& text, const std::string& harmless) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7F) std::abort();
  }
  if (std::count(text.begin(), text.end(), '\n') !=
      std::count(harmless.begin(), harmless.end(), '\n'))
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = fuzz::text(data, size);
  Inputs in;
  std::size_t start = 0;
  while (in.f.size() < 11) {
    const std::size_t nul = bytes.find('\0', start);
    in.f.emplace_back(bytes.substr(start, nul == std::string_view::npos ? nul : nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  // The harmless plan takes the same branch for the user: a name usermod may get ("x") only where
  // the fuzzer's is one too; else none, and the script says how to add the user by hand.
  Inputs harmless;
  harmless.f.assign(11, "x");
  const std::string user = in.at(9);
  if (!valid_user_name(user) || user == "root") harmless.f[9] = "";
  for (const std::string& s : stack_names()) {
    const Stack stack = *parse_stack(s);
    const Plan hp = plan_of(harmless);
    const ScriptOptions ho = options_of(harmless, stack);
    const Plan p = plan_of(in);
    const ScriptOptions o = options_of(in, stack);
    if (stack == Stack::nixos) {
      check(render_nix(p, o), render_nix(hp, ho));
      continue;
    }
    try {
      check(render_script(p, o), render_script(hp, ho));
    } catch (const InputError&) {
      if (stack != Stack::grub_debian && stack != Stack::grub_arch) std::abort();
    }
  }
  // shell_word keeps every value on its line; shell_quote never writes a raw control byte.
  const std::string w = shell_word(bytes);
  if (w.find('\n') != std::string::npos) std::abort();
  for (char c : shell_quote(bytes)) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7F) std::abort();
  }
  return 0;
}
