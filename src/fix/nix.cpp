// SPDX-License-Identifier: MIT
// Rendering a fix plan as a NixOS configuration snippet: on NixOS /etc is generated from the
// configuration, so halo-doctor never edits it; the person adds the snippet and runs
// nixos-rebuild (reference/doctor-conventions.md section 5.1, NixOS options boot.kernelParams,
// boot.extraModprobeConfig, users.users.<name>.extraGroups, services.udev.extraRules,
// boot.kernel.sysctl, environment.variables).
#include <halo/fix.hpp>

#include <fmt/format.h>

#include <sstream>
#include <string>
#include <vector>

namespace halo::fix {
namespace {

/// A Nix double-quoted string ("..." with \ " and ${ escaped).
std::string nix_string(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' || c == '\\') out += '\\';
    if (c == '$' && i + 1 < s.size() && s[i + 1] == '{') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// A line inside a Nix indented string (''...''), where '' and ${ must be escaped.
std::string nix_indented_line(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\'' && i + 1 < s.size() && s[i + 1] == '\'') {
      out += "'''";
      ++i;
    } else if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '{') {
      out += "''$";
    } else {
      out += s[i];
    }
  }
  return out;
}

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
  std::ostringstream s;
  s << "# halo-doctor fix for " << (opt.host.empty() ? "this machine" : opt.host);
  if (!opt.os.empty()) s << " (" << opt.os << ")";
  s << "\n# Written by halo-doctor " << opt.tool_version << ". On NixOS /etc is built from the\n"
    << "# configuration, so this is a snippet, not a script: merge it into\n"
    << "# /etc/nixos/configuration.nix (or a module it imports), then run\n"
    << "#   sudo nixos-rebuild boot && sudo reboot\n"
    << "# (nixos-rebuild rebuilds the initrd with the modprobe options), then: halo-doctor check\n"
    << "# Rules covered: ";
  for (std::size_t i = 0; i < plan.covered.size(); ++i)
    s << (i > 0 ? ", " : "") << plan.covered[i];
  s << "\n";
  for (const auto& note : plan.notes)
    s << "# Note: " << note << "\n";
  for (const auto& m : plan.manual)
    s << "# Needs a person [" << m.rule << "]: " << m.text << "\n";
  s << "{ config, lib, pkgs, ... }:\n{\n";
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
    s << "  # Delete these definitions from your configuration (this snippet replaces them):\n";
    for (const auto& l : replaced)
      s << "  #   " << l << "\n";
  }
  if (!plan.kargs_set.empty()) {
    s << "  # " << rules(plan, "kernel_args") << "\n  boot.kernelParams = lib.mkAfter [";
    for (const auto& [k, v] : plan.kargs_set)
      s << " " << nix_string(fmt::format("{}={}", k, v));
    s << " ];\n";
  }
  if (!plan.kargs_remove.empty()) {
    s << "  # Remove from boot.kernelParams wherever your configuration sets them:";
    for (const auto& k : plan.kargs_remove)
      s << " " << k;
    s << "\n";
  }
  if (!plan.modprobe.empty()) {
    s << "  # " << rules(plan, "modprobe") << " (pages are 4 KiB: GiB x 262144)\n";
    s << "  boot.extraModprobeConfig = ''\n";
    for (const auto& m : plan.modprobe) {
      std::string line = "options " + m.module;
      for (const auto& [k, v] : m.options)
        line += fmt::format(" {}={}", k, v);
      s << "    " << nix_indented_line(line) << "\n";
    }
    s << "  '';\n";
  }
  if (!plan.groups.empty()) {
    const std::string user = opt.user.empty() || opt.user == "root" ? "YOUR-USER" : opt.user;
    s << "  # " << rules(plan, "groups") << " (log out and back in afterwards)\n";
    s << "  users.users." << nix_string(user) << ".extraGroups = [";
    for (const auto& g : plan.groups)
      s << " " << nix_string(g);
    s << " ];\n";
  }
  if (!plan.udev.empty()) {
    s << "  # " << rules(plan, "udev") << "\n  services.udev.extraRules = ''\n";
    for (const auto& l : plan.udev)
      s << "    " << nix_indented_line(l) << "\n";
    s << "  '';\n";
  }
  for (const auto& [k, v] : plan.sysctl)
    s << "  # " << rules(plan, "sysctl") << "\n  boot.kernel.sysctl." << nix_string(k) << " = "
      << nix_string(v) << ";\n";
  if (!plan.env_set.empty()) {
    s << "  # " << rules(plan, "env") << "\n";
    for (const auto& [k, v] : plan.env_set)
      s << "  environment.variables." << k << " = " << nix_string(v) << ";\n";
  }
  for (const auto& v : plan.env_unset)
    s << "  # " << rules(plan, "env") << ": remove " << v
      << " from environment.variables, your shell profile and job scripts\n";
  s << "}\n";
  return s.str();
}

} // namespace halo::fix
