// SPDX-License-Identifier: MIT
// Rendering a fix plan as a bash script for one boot stack (docs/fix.md), and the stack names.
// The script is written for a person to read: a header per step says what and why, every value
// is a quoted literal, and every path is under ${HALO_FIX_ROOT} so the tests can run it for real.
#include <halo/fix.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <stdexcept>

namespace halo::fix {

/// The text of one src/fix/templates/*.sh file (generated/fix_templates.cpp); empty if none.
std::string_view fix_template(std::string_view name);

namespace {

struct StackName {
  Stack stack;
  std::string_view name;
};
constexpr std::array<StackName, 7> kStacks = {{{Stack::grubby, "grubby"},
                                               {Stack::grub_debian, "grub-debian"},
                                               {Stack::grub_arch, "grub-arch"},
                                               {Stack::rpm_ostree, "rpm-ostree"},
                                               {Stack::kernelstub, "kernelstub"},
                                               {Stack::systemd_boot, "systemd-boot"},
                                               {Stack::nixos, "nixos"}}};

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string rules_of(const Plan& plan, const std::string& step) {
  auto it = plan.step_rules.find(step);
  return it == plan.step_rules.end() ? std::string() : join(it->second, ", ");
}

std::vector<std::string> set_tokens(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& [k, v] : plan.kargs_set)
    out.push_back(fmt::format("{}={}", k, v));
  return out;
}

/// Keys whose old values are filtered out of a GRUB command line: the ones set and removed.
std::vector<std::string> filtered_keys(const Plan& plan) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : plan.kargs_set)
    keys.push_back(k);
  for (const auto& k : plan.kargs_remove)
    keys.push_back(k);
  return keys;
}

/// The POSIX sh block GRUB's scripts source (/etc/default/grub.d/*.cfg on Debian, the end of
/// /etc/default/grub elsewhere): drops the named arguments from both command-line variables and
/// appends the new ones to GRUB_CMDLINE_LINUX, leaving every other argument alone. GRUB's 10_linux
/// puts GRUB_CMDLINE_LINUX into every entry, recovery mode included, and GRUB_CMDLINE_LINUX_DEFAULT
/// only into the default ones (GRUB manual, "Simple configuration"); a memory limit belongs in all.
std::string grub_block(const Plan& plan) {
  std::ostringstream b;
  b << "# BEGIN halo-doctor (written by halo-doctor fix; rules: " << rules_of(plan, "kernel_args")
    << ")\n";
  b << "# Drops " << join(filtered_keys(plan), ", ")
    << " from the command line and appends the values below to GRUB_CMDLINE_LINUX (every entry).\n";
  // halo_filter runs only inside $(...), a subshell, so its `set -f` (no pathname expansion of
  // an argument such as foo=*) does not leak into grub-mkconfig's shell.
  b << "halo_filter() {\n  set -f\n  halo_out=\n  for halo_a in $1; do\n    case $halo_a in\n     "
       " ";
  std::vector<std::string> pats;
  for (const auto& k : filtered_keys(plan)) {
    pats.push_back(k);
    pats.push_back(k + "=*");
  }
  b << join(pats, " | ") << ") ;;\n";
  b << "      *) halo_out=\"$halo_out $halo_a\" ;;\n    esac\n  done\n";
  b << "  printf '%s' \"${halo_out# }\"\n}\n";
  b << "GRUB_CMDLINE_LINUX_DEFAULT=\"$(halo_filter \"${GRUB_CMDLINE_LINUX_DEFAULT:-}\")\"\n";
  b << "halo_d=\"$(halo_filter \"${GRUB_CMDLINE_LINUX:-}\")\"\n";
  const std::string add = join(set_tokens(plan), " ");
  if (add.empty())
    b << "GRUB_CMDLINE_LINUX=\"$halo_d\"\n";
  else
    b << "GRUB_CMDLINE_LINUX=\"${halo_d:+$halo_d }" << add << "\"\n";
  b << "unset -f halo_filter\nunset halo_out halo_a halo_d\n# END halo-doctor";
  return b.str();
}

/// Bash array literal of quoted words: ( 'a' 'b' ).
std::string bash_array(const std::vector<std::string>& v) {
  std::string out = "(";
  for (const auto& s : v) {
    out += ' ';
    out += shell_quote(s);
  }
  return out + " )";
}

/// `NAME=( 'a' 'b' )` and a newline.
std::string array_var(std::string_view name, const std::vector<std::string>& v) {
  return std::string(name) + "=" + bash_array(v) + "\n";
}

/// `NAME='value'` and a newline.
std::string scalar_var(std::string_view name, std::string_view v) {
  return std::string(name) + "=" + shell_quote(v) + "\n";
}

/// The text of src/fix/templates/NAME (compiled in by cmake/EmbedFixTemplates.cmake).
std::string_view templ(std::string_view name) {
  std::string_view t = fix_template(name);
  if (t.empty()) throw std::logic_error("fix template missing: " + std::string(name));
  return t;
}

void step_header(std::ostringstream& s, int n, const std::string& title,
                 const std::vector<std::string>& why) {
  s << "\n# ---------------------------------------------------------------------------\n";
  s << "# Step " << n << ": " << title << "\n";
  for (const auto& w : why)
    s << "# " << w << "\n";
  s << "say " << shell_quote(fmt::format("== step {}: {}", n, title)) << "\n";
}

void kernel_args_step(std::ostringstream& s, const Plan& plan, const ScriptOptions& opt) {
  switch (opt.stack) {
  case Stack::grubby:
    s << templ("grubby.sh");
    break;
  case Stack::rpm_ostree:
    s << templ("rpm-ostree.sh");
    break;
  case Stack::kernelstub:
    s << templ("kernelstub.sh");
    break;
  case Stack::systemd_boot:
    s << templ("systemd-boot.sh");
    break;
  case Stack::grub_debian:
  case Stack::grub_arch:
    s << scalar_var("GRUB_FLAVOUR", opt.stack == Stack::grub_debian ? "debian" : "plain");
    s << "GRUB_BLOCK=$(\n  cat <<'HALO_EOF'\n" << grub_block(plan) << "\nHALO_EOF\n)\n";
    s << templ("grub.sh");
    break;
  case Stack::nixos:
    break;
  }
}

std::string initramfs_tool_of(const ScriptOptions& opt) {
  if (opt.stack == Stack::rpm_ostree) return "rpm-ostree";
  return opt.initramfs_tool.empty() ? default_initramfs_tool(opt.stack) : opt.initramfs_tool;
}

} // namespace

std::string_view to_string(Stack s) {
  for (const auto& x : kStacks)
    if (x.stack == s) return x.name;
  return "?";
}

std::optional<Stack> parse_stack(std::string_view s) {
  for (const auto& x : kStacks)
    if (x.name == s) return x.stack;
  return std::nullopt;
}

std::vector<std::string> stack_names() {
  std::vector<std::string> out;
  out.reserve(kStacks.size());
  for (const auto& x : kStacks)
    out.emplace_back(x.name);
  return out;
}

std::string default_initramfs_tool(Stack s) {
  switch (s) {
  case Stack::grubby:
    return "dracut";
  case Stack::grub_debian:
  case Stack::kernelstub:
    return "update-initramfs";
  case Stack::grub_arch:
  case Stack::systemd_boot:
    return "mkinitcpio";
  case Stack::rpm_ostree:
  case Stack::nixos:
    return "";
  }
  return "";
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string render_script(const Plan& plan, const ScriptOptions& opt) {
  std::ostringstream s;
  int n = 0;
  // The header: what, for whom, and how the stack was chosen.
  s << "#!/usr/bin/env bash\n";
  s << "# halo-doctor fix for " << (opt.host.empty() ? "this machine" : opt.host);
  if (!opt.os.empty()) s << " (" << opt.os << ")";
  s << "\n# Written by halo-doctor " << opt.tool_version
    << " from the failing rules' fixes. Read it before you run it.\n";
  s << "# Boot stack: " << to_string(opt.stack) << "\n";
  for (const auto& e : opt.evidence)
    s << "#   evidence: " << e << "\n";
  s << "#\n# Usage: sudo bash THIS-SCRIPT [--dry-run]\n";
  s << "#   --dry-run  print every command and every file change (as a diff), change nothing (no "
       "root\n#              needed)\n";
  s << "# Each step checks the state it needs (the generated boot configuration, the loader "
       "entries,\n# the initramfs), so running it again after a failed tool finishes the job, "
       "and a run on a\n# configured machine changes nothing. Files are backed up to "
       "FILE.halo-doctor.bak before\n# their first edit; the end of a run prints the commands "
       "that undo it. Afterwards: reboot,\n# then halo-doctor check.\n";
  s << "# HALO_FIX_ROOT=DIR fixes the system installed under DIR instead of this one: files are "
       "edited\n# under DIR and the boot tools run inside it (chroot DIR TOOL), never on the "
       "running host.\n#\n# Rules covered: "
    << join(plan.covered, ", ") << "\n";
  for (const auto& note : plan.notes)
    s << "# Note: " << note << "\n";
  if (!plan.manual.empty()) {
    s << "# Not done by this script (needs a person):\n";
    for (const auto& m : plan.manual)
      s << "#   [" << m.rule << "] " << m.text << "\n";
  }
  s << "\n" << templ("prelude.sh");
  // The wanted command line, read by args_hold/edit_args in every stack's step.
  s << "\n"
    << array_var("KARGS_SET", set_tokens(plan)) << array_var("KARGS_REMOVE", plan.kargs_remove);

  if (!plan.modprobe.empty()) {
    std::vector<std::string> why = {
        "Rules: " + rules_of(plan, "modprobe"),
        "modprobe reads /etc/modprobe.d when TTM and amdgpu load; both load from the initramfs,",
        "so the initramfs is rebuilt in a later step when it is older than this file."};
    step_header(s, ++n, "TTM options in /etc/modprobe.d", why);
    for (const auto& m : plan.modprobe) {
      std::string content =
          fmt::format("# Written by halo-doctor fix (rules: {}).\n# Pages are 4 KiB: "
                      "GiB x 262144.\noptions {}",
                      join(m.rules, ", "), m.module);
      for (const auto& [k, v] : m.options)
        content += fmt::format(" {}={}", k, v);
      s << "put_file \"${ROOT}/etc/modprobe.d/" << m.file << "\" " << shell_quote(content) << "\n";
    }
  }

  if (!plan.kargs_set.empty() || !plan.kargs_remove.empty()) {
    std::vector<std::string> why = {"Rules: " + rules_of(plan, "kernel_args")};
    if (!plan.kargs_set.empty()) why.push_back("Set: " + join(set_tokens(plan), " "));
    if (!plan.kargs_remove.empty()) why.push_back("Remove: " + join(plan.kargs_remove, " "));
    why.push_back("Through " + std::string(to_string(opt.stack)) +
                  "; arguments not named here are left as they are, in their order.");
    step_header(s, ++n, "kernel command line", why);
    kernel_args_step(s, plan, opt);
  }

  if (plan.initramfs || !plan.modprobe.empty()) {
    std::vector<std::string> why = {
        "Rules: " +
            rules_of(plan, plan.step_rules.contains("initramfs") ? "initramfs" : "modprobe"),
        "The initramfs carries its own copy of /etc/modprobe.d; it is rebuilt when an image is",
        "older than the modprobe.d files it must carry."};
    step_header(s, ++n, "rebuild the initramfs", why);
    std::vector<std::string> carry;
    for (const auto& m : plan.modprobe)
      carry.push_back("/etc/modprobe.d/" + m.file);
    s << scalar_var("INITRAMFS_TOOL", initramfs_tool_of(opt)) << array_var("INITRAMFS_CARRY", carry)
      << templ("initramfs.sh");
  }

  if (!plan.udev.empty() || !plan.groups.empty()) {
    std::vector<std::string> step_rule_ids;
    for (const char* k : {"groups", "udev"})
      if (auto it = plan.step_rules.find(k); it != plan.step_rules.end())
        for (const auto& x : it->second)
          if (std::find(step_rule_ids.begin(), step_rule_ids.end(), x) == step_rule_ids.end())
            step_rule_ids.push_back(x);
    std::vector<std::string> why = {
        "Rules: " + join(step_rule_ids, ", "),
        "ROCr opens /dev/kfd and /dev/dri/renderD*: they belong to group render (mode 0660);",
        "the user joins render and video. Group changes apply after logging out and back in."};
    step_header(s, ++n, "access to /dev/kfd and the render nodes", why);
    std::string udev;
    if (!plan.udev.empty()) {
      udev = "# Written by halo-doctor fix (rules: " + rules_of(plan, "udev") + ").";
      for (const auto& l : plan.udev)
        udev += "\n" + l;
    }
    s << scalar_var("UDEV_RULES", udev);
    const bool usermod = !plan.groups.empty() && !opt.user.empty() && opt.user != "root";
    s << scalar_var("FIX_USER", usermod ? opt.user : "")
      << array_var("FIX_GROUPS", usermod ? plan.groups : std::vector<std::string>{});
    if (!plan.groups.empty() && !usermod)
      s << "say "
        << shell_quote("add the user who trains to the groups: usermod -aG " +
                       join(plan.groups, ",") + " USER (then log out and back in)")
        << "\n";
    s << templ("access.sh");
  }

  if (!plan.sysctl.empty()) {
    step_header(
        s, ++n, "sysctl",
        {"Rules: " + rules_of(plan, "sysctl"),
         "A drop-in in /etc/sysctl.d keeps the setting across reboots; it is loaded now too."});
    std::string content = "# Written by halo-doctor fix (rules: " + rules_of(plan, "sysctl") + ").";
    std::vector<std::string> keys;
    std::vector<std::string> values;
    for (const auto& [k, v] : plan.sysctl) {
      content += fmt::format("\n{} = {}", k, v);
      keys.push_back(k);
      values.push_back(v);
    }
    s << scalar_var("SYSCTL_CONTENT", content) << array_var("SYSCTL_KEYS", keys)
      << array_var("SYSCTL_VALUES", values) << templ("sysctl.sh");
  }

  if (!plan.env_unset.empty() || !plan.env_set.empty()) {
    step_header(s, ++n, "environment",
                {"Rules: " + rules_of(plan, "env"),
                 "A sourceable file: login shells read /etc/profile.d; source it in job scripts",
                 "and container entry points too, and remove the variables where they are set."});
    std::string content = "# Written by halo-doctor fix (rules: " + rules_of(plan, "env") +
                          "). Source it: . /etc/profile.d/halo-doctor-rocm.sh";
    for (const auto& v : plan.env_unset)
      content += "\nunset " + v;
    for (const auto& [k, v] : plan.env_set)
      content += "\nexport " + k + "=" + shell_quote(v);
    s << "put_file \"${ROOT}/etc/profile.d/halo-doctor-rocm.sh\" " << shell_quote(content) << "\n";
    if (!plan.env_unset.empty())
      s << "say "
        << shell_quote(
               "also remove these where your shell profile, job script or image sets them: " +
               join(plan.env_unset, " "))
        << "\n";
  }

  s << "\n# ---------------------------------------------------------------------------\n";
  s << "# Done: what is left to do.\n";
  for (const auto& m : plan.manual)
    s << "say " << shell_quote("needs a person [" + m.rule + "]: " + m.text) << "\n";
  s << templ("finish.sh");
  if (plan.reboot || plan.initramfs || !plan.modprobe.empty())
    s << "say \"next: reboot, then run: halo-doctor check\"\n";
  else
    s << "say \"next: run: halo-doctor check\"\n";
  return s.str();
}

} // namespace halo::fix
