// SPDX-License-Identifier: MIT
// Rendering a fix plan as a bash script for one boot stack (docs/fix.md), and the stack names.
// The script is written for a person to read: a header per step says what and why, every value
// is a quoted literal, and every path is under ${HALO_FIX_ROOT} so the tests can run it for real.
#include "writer.hpp"

#include <halo/fix.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace halo::fix {

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
detail::ShellWriter grub_block(const Plan& plan) {
  detail::ShellWriter b(/*posix=*/true);
  b.comment("BEGIN halo-doctor (written by halo-doctor fix; rules: " +
            rules_of(plan, "kernel_args") + ")");
  b.comment("Drops " + join(filtered_keys(plan), ", ") +
            " from the command line and appends the values below to GRUB_CMDLINE_LINUX (every "
            "entry).");
  // halo_filter runs only inside $(...), a subshell, so its `set -f` (no pathname expansion of
  // an argument such as foo=*) does not leak into grub-mkconfig's shell.
  b.code("halo_filter() {\n  set -f\n  halo_out=\n  for halo_a in $1; do\n    case $halo_a in\n    "
         "  ");
  bool first = true;
  for (const auto& k : filtered_keys(plan)) {
    if (!first) b.code(" | ");
    first = false;
    b.literal_pattern(k);
    b.code(" | ");
    b.literal_pattern(k + "=");
    b.code("*");
  }
  b.code(") ;;\n");
  b.code("      *) halo_out=\"$halo_out $halo_a\" ;;\n    esac\n  done\n");
  b.code("  printf '%s' \"${halo_out# }\"\n}\n");
  b.code("GRUB_CMDLINE_LINUX_DEFAULT=\"$(halo_filter \"${GRUB_CMDLINE_LINUX_DEFAULT:-}\")\"\n");
  b.code("halo_d=\"$(halo_filter \"${GRUB_CMDLINE_LINUX:-}\")\"\n");
  const auto add = set_tokens(plan);
  if (add.empty()) {
    b.code("GRUB_CMDLINE_LINUX=\"$halo_d\"\n");
  } else {
    b.code("GRUB_CMDLINE_LINUX=\"${halo_d:+$halo_d }");
    for (std::size_t i = 0; i < add.size(); ++i) {
      if (i > 0) b.code(" ");
      b.word_in_double_quotes(add[i]);
    }
    b.code("\"\n");
  }
  b.code("unset -f halo_filter\nunset halo_out halo_a halo_d\n# END halo-doctor");
  return b;
}

void step_header(detail::ShellWriter& s, int n, const std::string& title,
                 const std::vector<std::string>& why) {
  s.code("\n# ---------------------------------------------------------------------------\n");
  s.comment(fmt::format("Step {}: {}", n, title));
  for (const auto& w : why)
    s.comment(w);
  s.say(fmt::format("== step {}: {}", n, title));
}

void kernel_args_step(detail::ShellWriter& s, const Plan& plan, const ScriptOptions& opt) {
  switch (opt.stack) {
  case Stack::grubby:
    s.templ("grubby.sh");
    break;
  case Stack::rpm_ostree:
    s.templ("rpm-ostree.sh");
    break;
  case Stack::kernelstub:
    s.templ("kernelstub.sh");
    break;
  case Stack::systemd_boot:
    s.templ("systemd-boot.sh");
    break;
  case Stack::grub_debian:
  case Stack::grub_arch:
    s.assign("GRUB_FLAVOUR", opt.stack == Stack::grub_debian ? "debian" : "plain");
    s.code("GRUB_BLOCK=$(\n  ");
    s.heredoc(grub_block(plan));
    s.code(")\n");
    s.templ("grub.sh");
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

std::string render_script(const Plan& plan, const ScriptOptions& opt) {
  detail::ShellWriter s;
  int n = 0;
  // The header: what, for whom, and how the stack was chosen. Every fact here (host name,
  // PRETTY_NAME, file names in the evidence and notes, rule text) is one line (issue 32).
  s.code("#!/usr/bin/env bash\n");
  std::string title =
      "halo-doctor fix for " + (opt.host.empty() ? std::string("this machine") : opt.host);
  if (!opt.os.empty()) title += " (" + opt.os + ")";
  s.comment(title);
  s.comment("Written by halo-doctor " + opt.tool_version +
            " from the failing rules' fixes. Read it before you run it.");
  s.comment("Boot stack: " + std::string(to_string(opt.stack)));
  for (const auto& e : opt.evidence)
    s.comment("  evidence: ", e);
  s.code("#\n# Usage: sudo bash THIS-SCRIPT [--dry-run]\n");
  s.code("#   --dry-run  print every command and every file change (as a diff), change nothing (no "
         "root\n#              needed)\n");
  s.code("# Each step checks the state it needs (the generated boot configuration, the loader "
         "entries,\n# the initramfs), so running it again after a failed tool finishes the job, "
         "and a run on a\n# configured machine changes nothing. Files are backed up to "
         "FILE.halo-doctor.bak before\n# their first edit; the end of a run prints the commands "
         "that undo it. Afterwards: reboot,\n# then halo-doctor check.\n");
  s.code("# HALO_FIX_ROOT=DIR fixes the system installed under DIR instead of this one: files are "
         "edited\n# under DIR and the boot tools run inside it (chroot DIR TOOL), never on the "
         "running host.\n#\n");
  s.comment("Rules covered: " + join(plan.covered, ", "));
  for (const auto& note : plan.notes)
    s.comment("Note: ", note);
  if (!plan.manual.empty()) {
    s.code("# Not done by this script (needs a person):\n");
    for (const auto& m : plan.manual)
      s.comment("  ", "[" + m.rule + "] " + m.text);
  }
  s.code("\n");
  s.templ("prelude.sh");
  // The wanted command line, read by args_hold/edit_args in every stack's step.
  s.code("\n");
  s.array("KARGS_SET", set_tokens(plan));
  s.array("KARGS_REMOVE", plan.kargs_remove);

  if (!plan.modprobe.empty()) {
    std::vector<std::string> why = {
        "Rules: " + rules_of(plan, "modprobe"),
        "modprobe reads /etc/modprobe.d when TTM and amdgpu load; both load from the initramfs,",
        "so the initramfs is rebuilt in a later step when it is older than this file."};
    step_header(s, ++n, "TTM options in /etc/modprobe.d", why);
    for (const auto& m : plan.modprobe) {
      // The file's lines are modprobe.d(5) directives: every fact in them is one line, so no
      // text can add a directive (an `install` line runs a command when the module loads).
      std::string content =
          fmt::format("# Written by halo-doctor fix (rules: {}).\n# Pages are 4 KiB: "
                      "GiB x 262144.\noptions {}",
                      one_line(join(m.rules, ", ")), one_line(m.module));
      for (const auto& [k, v] : m.options)
        content += one_line(fmt::format(" {}={}", k, v));
      s.code("put_file \"${ROOT}/etc/modprobe.d/");
      s.word_in_double_quotes(m.file);
      s.code("\" ");
      s.arg(content);
      s.code("\n");
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
    s.assign("INITRAMFS_TOOL", initramfs_tool_of(opt));
    s.array("INITRAMFS_CARRY", carry);
    s.templ("initramfs.sh");
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
      udev = "# Written by halo-doctor fix (rules: " + one_line(rules_of(plan, "udev")) + ").";
      for (const auto& l : plan.udev)
        udev += "\n" + one_line(l);
    }
    s.assign("UDEV_RULES", udev);
    const bool usermod = !plan.groups.empty() && valid_user_name(opt.user) && opt.user != "root";
    s.assign("FIX_USER", usermod ? opt.user : "");
    s.array("FIX_GROUPS", usermod ? plan.groups : std::vector<std::string>{});
    if (!plan.groups.empty() && !usermod)
      s.say("add the user who trains to the groups: usermod -aG " + join(plan.groups, ",") +
            " USER (then log out and back in)");
    s.templ("access.sh");
  }

  if (!plan.sysctl.empty()) {
    step_header(
        s, ++n, "sysctl",
        {"Rules: " + rules_of(plan, "sysctl"),
         "A drop-in in /etc/sysctl.d keeps the setting across reboots; it is loaded now too."});
    std::string content =
        "# Written by halo-doctor fix (rules: " + one_line(rules_of(plan, "sysctl")) + ").";
    std::vector<std::string> keys;
    std::vector<std::string> values;
    for (const auto& [k, v] : plan.sysctl) {
      content += "\n" + one_line(fmt::format("{} = {}", k, v));
      keys.push_back(k);
      values.push_back(v);
    }
    s.assign("SYSCTL_CONTENT", content);
    s.array("SYSCTL_KEYS", keys);
    s.array("SYSCTL_VALUES", values);
    s.templ("sysctl.sh");
  }

  if (!plan.env_unset.empty() || !plan.env_set.empty()) {
    step_header(s, ++n, "environment",
                {"Rules: " + rules_of(plan, "env"),
                 "A sourceable file: login shells read /etc/profile.d; source it in job scripts",
                 "and container entry points too, and remove the variables where they are set."});
    // A file that shells source: names are checked, values quoted (no raw control byte).
    std::string content =
        "# Written by halo-doctor fix (rules: " + one_line(rules_of(plan, "env")) +
        "). Source it: . /etc/profile.d/halo-doctor-rocm.sh";
    for (const auto& v : plan.env_unset) {
      detail::require_variable_name(v);
      content += "\nunset " + v;
    }
    for (const auto& [k, v] : plan.env_set) {
      detail::require_variable_name(k);
      content += "\nexport " + k + "=" + shell_word(v);
    }
    s.code("put_file \"${ROOT}/etc/profile.d/halo-doctor-rocm.sh\" ");
    s.arg(content);
    s.code("\n");
    if (!plan.env_unset.empty())
      s.say("also remove these where your shell profile, job script or image sets them: " +
            join(plan.env_unset, " "));
  }

  s.code("\n# ---------------------------------------------------------------------------\n");
  s.code("# Done: what is left to do.\n");
  for (const auto& m : plan.manual)
    s.say("needs a person [" + m.rule + "]: " + m.text);
  s.templ("finish.sh");
  if (plan.reboot || plan.initramfs || !plan.modprobe.empty())
    s.code("say \"next: reboot, then run: halo-doctor check\"\n");
  else
    s.code("say \"next: run: halo-doctor check\"\n");
  return s.str();
}

} // namespace halo::fix
