// SPDX-License-Identifier: MIT
// Rendering a fix plan as a NixOS configuration snippet: on NixOS /etc is generated from the
// configuration, so halo-doctor never edits it; the person adds the snippet and runs
// nixos-rebuild (reference/doctor-conventions.md section 5.1, NixOS options boot.kernelParams,
// boot.extraModprobeConfig, users.users.<name>.extraGroups, services.udev.extraRules,
// boot.kernel.sysctl, environment.variables).
#include "writer.hpp"

#include <halo/fix.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace halo::fix {
namespace {

std::string rules(const Plan& plan, const std::string& step) {
  auto it = plan.step_rules.find(step);
  if (it == plan.step_rules.end()) return {};
  std::string out;
  for (const auto& r : it->second)
    out += (out.empty() ? "" : ", ") + r;
  return out;
}

} // namespace

std::string render_nix(const Plan& plan, const ScriptOptions& opt) {
  detail::NixWriter s;
  std::string title =
      "halo-doctor fix for " + (opt.host.empty() ? std::string("this machine") : opt.host);
  if (!opt.os.empty()) title += " (" + opt.os + ")";
  s.comment(title);
  s.comment("Written by halo-doctor " + opt.tool_version + ". On NixOS /etc is built from the");
  s.code(
      "# configuration, so this is a snippet, not a script: merge it into\n"
      "# /etc/nixos/configuration.nix (or a module it imports), then run\n"
      "#   sudo nixos-rebuild boot && sudo reboot\n"
      "# (nixos-rebuild rebuilds the initrd with the modprobe options), then: halo-doctor check\n");
  std::string covered;
  for (std::size_t i = 0; i < plan.covered.size(); ++i)
    covered += (i > 0 ? ", " : "") + plan.covered[i];
  s.comment("Rules covered: " + covered);
  for (const auto& note : plan.notes)
    s.comment("Note: " + note);
  for (const auto& m : plan.manual)
    s.comment("Needs a person [" + m.rule + "]: " + m.text);
  s.code("{ config, lib, pkgs, ... }:\n{\n");
  // NixOS merges every module's boot.kernelParams into one list; a module cannot take a value
  // out of another's definition. lib.mkAfter puts these values after the others, and for a
  // parameter given twice the kernel (and kmod, for a loadable module) applies the last one
  // (reference/parsing-facts.md), so they win; the lines that define the old values are named so
  // that the person deletes them and the kernel gets one value.
  std::vector<std::string> keys;
  for (const auto& [k, v] : plan.kargs_set)
    keys.push_back(k);
  keys.insert(keys.end(), plan.kargs_remove.begin(), plan.kargs_remove.end());
  std::vector<std::string> replaced;
  for (const auto& line : opt.nixos_param_lines)
    for (const auto& k : keys)
      if (line.find("\"" + k + "=") != std::string::npos ||
          line.find("\"" + k + "\"") != std::string::npos) {
        replaced.push_back(line);
        break;
      }
  if (!replaced.empty()) {
    s.code("  # Delete these definitions from your configuration (this snippet replaces them):\n");
    for (const auto& l : replaced)
      s.comment("  " + l, 2);
  }
  if (!plan.kargs_set.empty()) {
    s.comment(rules(plan, "kernel_args"), 2);
    s.code("  boot.kernelParams = lib.mkAfter [");
    for (const auto& [k, v] : plan.kargs_set) {
      s.code(" ");
      s.string(fmt::format("{}={}", k, v));
    }
    s.code(" ];\n");
  }
  if (!plan.kargs_remove.empty()) {
    std::string names;
    for (const auto& k : plan.kargs_remove)
      names += " " + k;
    s.comment("Remove from boot.kernelParams wherever your configuration sets them:" + names, 2);
  }
  if (!plan.modprobe.empty()) {
    s.comment(rules(plan, "modprobe") + " (pages are 4 KiB: GiB x 262144)", 2);
    s.code("  boot.extraModprobeConfig = ''\n");
    for (const auto& m : plan.modprobe) {
      std::string line = "options " + m.module;
      for (const auto& [k, v] : m.options)
        line += fmt::format(" {}={}", k, v);
      s.code("    ");
      s.indented_line(line);
    }
    s.code("  '';\n");
  }
  if (!plan.groups.empty()) {
    const bool named = valid_user_name(opt.user) && opt.user != "root";
    s.comment(rules(plan, "groups") + " (log out and back in afterwards)", 2);
    s.code("  users.users.");
    s.string(named ? opt.user : "YOUR-USER");
    s.code(".extraGroups = [");
    for (const auto& g : plan.groups) {
      s.code(" ");
      s.string(g);
    }
    s.code(" ];\n");
  }
  if (!plan.udev.empty()) {
    s.comment(rules(plan, "udev"), 2);
    s.code("  services.udev.extraRules = ''\n");
    for (const auto& l : plan.udev) {
      s.code("    ");
      s.indented_line(l);
    }
    s.code("  '';\n");
  }
  for (const auto& [k, v] : plan.sysctl) {
    s.comment(rules(plan, "sysctl"), 2);
    s.code("  boot.kernel.sysctl.");
    s.string(k);
    s.code(" = ");
    s.string(v);
    s.code(";\n");
  }
  if (!plan.env_set.empty()) {
    s.comment(rules(plan, "env"), 2);
    for (const auto& [k, v] : plan.env_set) {
      s.code("  environment.variables.");
      s.attr(k);
      s.code(" = ");
      s.string(v);
      s.code(";\n");
    }
  }
  for (const auto& v : plan.env_unset)
    s.comment(rules(plan, "env") + ": remove " + v +
                  " from environment.variables, your shell profile and job scripts",
              2);
  s.code("}\n");
  return s.str();
}

} // namespace halo::fix
