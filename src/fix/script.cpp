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

/// `options MODULE k=v ...`, one line (halo::one_line on every fact in it).
std::string modprobe_options_line(const ModprobeFile& m) {
  std::string line = "options " + one_line(m.module);
  for (const auto& [k, v] : m.options)
    line += one_line(fmt::format(" {}={}", k, v));
  return line;
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
                 const std::string& rules) {
  s.code("\n# ---------------------------------------------------------------------------\n");
  s.comment(fmt::format("Step {}: {} (rules: {})", n, title, rules));
  s.say(fmt::format("== step {}: {}", n, title));
}

/// What the script holds besides the always-present prelude (only what this plan needs).
struct Steps {
  bool kargs = false;     ///< a kernel command-line step
  bool initramfs = false; ///< an initramfs step
  bool entries = false;   ///< the initramfs step judges BLS entries' initrds
  bool live = false;      ///< a change to the running system (udevadm, sysctl)
  bool usermod = false;   ///< usermod for opt.user
  bool reboot = false;
};

Steps plan_steps(const Plan& plan, const ScriptOptions& opt) {
  Steps st;
  st.kargs = !plan.kargs_set.empty() || !plan.kargs_remove.empty();
  st.initramfs = plan.initramfs || !plan.modprobe.empty();
  // The stacks whose kernels boot from Boot Loader Specification entries (grubby: Fedora's
  // GRUB with blscfg; systemd-boot): their initrds are judged too.
  st.entries = opt.stack == Stack::grubby || opt.stack == Stack::systemd_boot;
  st.live = !plan.udev.empty() || !plan.sysctl.empty();
  st.usermod = !plan.groups.empty() && valid_user_name(opt.user) && opt.user != "root";
  st.reboot = plan.reboot || st.initramfs || st.kargs;
  return st;
}

/// The tool whose absence means the script is on a machine with another boot stack ("" where the
/// step itself finds the tool: GRUB's generator, kernel-install's entries).
std::string stack_tool(Stack s) {
  switch (s) {
  case Stack::grubby:
    return "grubby";
  case Stack::grub_debian:
    return "update-grub";
  case Stack::rpm_ostree:
    return "rpm-ostree";
  case Stack::kernelstub:
    return "kernelstub";
  case Stack::grub_arch:
  case Stack::systemd_boot:
  case Stack::nixos:
    return "";
  }
  return "";
}

std::string initramfs_tool_of(const ScriptOptions& opt) {
  if (opt.stack == Stack::rpm_ostree) return "rpm-ostree";
  return opt.initramfs_tool.empty() ? default_initramfs_tool(opt.stack) : opt.initramfs_tool;
}

/// The builder's command: update-initramfs -u -k all (initramfs-tools), mkinitcpio -P (every
/// preset), else dracut --regenerate-all --force (every kernel in /lib/modules).
std::vector<std::string> initramfs_command(const ScriptOptions& opt) {
  const std::string tool = initramfs_tool_of(opt);
  if (tool == "update-initramfs") return {"update-initramfs", "-u", "-k", "all"};
  if (tool == "mkinitcpio") return {"mkinitcpio", "-P"};
  return {"dracut", "--regenerate-all", "--force"};
}

/// The lines of a modprobe.d(5) file the fix writes: every fact in them is one line, so no text
/// can add a directive (an `install` line runs a command when the module loads).
std::string modprobe_content(const ModprobeFile& m) {
  std::string content = fmt::format("# Written by halo-doctor fix (rules: {}).\n# Pages are 4 KiB: "
                                    "GiB x 262144.\n",
                                    one_line(join(m.rules, ", ")));
  return content + modprobe_options_line(m);
}

std::string udev_content(const Plan& plan) {
  if (plan.udev.empty()) return "";
  std::string udev =
      "# Written by halo-doctor fix (rules: " + one_line(rules_of(plan, "udev")) + ").";
  for (const auto& l : plan.udev)
    udev += "\n" + one_line(l);
  return udev;
}

std::string sysctl_content(const Plan& plan) {
  std::string content =
      "# Written by halo-doctor fix (rules: " + one_line(rules_of(plan, "sysctl")) + ").";
  for (const auto& [k, v] : plan.sysctl)
    content += "\n" + one_line(fmt::format("{} = {}", k, v));
  return content;
}

/// A file that shells source: names are checked, values quoted (no raw control byte).
std::string env_content(const Plan& plan) {
  std::string content = "# Written by halo-doctor fix (rules: " + one_line(rules_of(plan, "env")) +
                        "). Source it: . /etc/profile.d/halo-doctor-rocm.sh";
  for (const auto& v : plan.env_unset) {
    detail::require_variable_name(v);
    content += "\nunset " + v;
  }
  for (const auto& [k, v] : plan.env_set) {
    detail::require_variable_name(k);
    content += "\nexport " + k + "=" + shell_word(v);
  }
  return content;
}

/// The lines of `content` that are not comments, as summary lines indented under their file.
void summary_lines(detail::ShellWriter& s, const std::string& content) {
  std::size_t pos = 0;
  while (pos <= content.size()) {
    auto nl = content.find('\n', pos);
    if (nl == std::string::npos) nl = content.size();
    const std::string line = content.substr(pos, nl - pos);
    if (!line.empty() && line[0] != '#') s.comment("       ", line);
    pos = nl + 1;
  }
}

/// What the kernel-arguments step runs or writes, in the summary.
void summary_kargs(detail::ShellWriter& s, int n, const Plan& plan, const ScriptOptions& opt) {
  const std::string set = join(set_tokens(plan), " ");
  const std::string rm = join(plan.kargs_remove, " ");
  switch (opt.stack) {
  case Stack::grubby: {
    std::vector<std::string> calls;
    for (const auto& t : set_tokens(plan))
      calls.push_back("grubby --update-kernel=ALL --args=" + t);
    for (const auto& k : plan.kargs_remove)
      calls.push_back("grubby --update-kernel=ALL --remove-args=" + k);
    for (std::size_t i = 0; i < calls.size(); ++i)
      s.comment(i == 0 ? fmt::format("  {}. runs: {}", n, calls[i])
                       : fmt::format("     runs: {}", calls[i]));
    if (!plan.kargs_set.empty())
      s.comment("     (first --remove-args of any other value of these arguments)");
    break;
  }
  case Stack::rpm_ostree:
    s.comment(fmt::format("  {}. runs: {}", n,
                          "rpm-ostree kargs" +
                              (set.empty() ? "" : " --replace/--append-if-missing=" + set) +
                              (rm.empty() ? "" : " --delete-if-present=" + rm)));
    break;
  case Stack::kernelstub:
    s.comment(fmt::format("  {}. runs: {}", n,
                          "kernelstub -o 'CURRENT OPTIONS'" + (set.empty() ? "" : ", with " + set) +
                              (rm.empty() ? "" : ", without " + rm)));
    break;
  case Stack::systemd_boot:
    s.comment(
        fmt::format("  {}. edits /etc/kernel/cmdline and the options of every entry in {}", n,
                    "/boot, /efi, /boot/efi loader/entries:" + (set.empty() ? "" : " sets " + set) +
                        (rm.empty() ? "" : " removes " + rm)));
    break;
  case Stack::grub_debian:
  case Stack::grub_arch:
    s.comment(fmt::format(
        "  {}. writes {}", n,
        opt.stack == Stack::grub_debian
            ? "/etc/default/grub.d/90-halo-doctor.cfg, which GRUB reads after /etc/default/grub:"
            : "a block between # BEGIN/# END halo-doctor at the end of /etc/default/grub:"));
    s.comment("       ", "drops " + join(filtered_keys(plan), ", ") + " from the command line" +
                             (set.empty() ? "" : " and appends " + set));
    s.comment(fmt::format(
        "  {}. runs: {}", n,
        opt.stack == Stack::grub_debian
            ? "update-grub"
            : "grub-mkconfig -o /boot/grub/grub.cfg (grub2-mkconfig -o /boot/grub2/grub.cfg "
              "where that is the one installed)"));
    break;
  case Stack::nixos:
    break;
  }
}

/// The summary a person checks in one screen: every file with the lines it adds, every command
/// with its arguments, the reboot, the undo, and the machine it is for.
void write_summary(detail::ShellWriter& s, const Plan& plan, const ScriptOptions& opt,
                   const Steps& st) {
  std::string title =
      "halo-doctor fix for " + (opt.host.empty() ? std::string("this machine") : opt.host);
  if (!opt.os.empty()) title += " (" + opt.os + ")";
  s.comment(title + ", boot stack " + std::string(to_string(opt.stack)));
  s.comment("Written by halo-doctor " + opt.tool_version + ". Read this summary; run it with " +
            "--dry-run first to see each change as a diff.");
  s.code("#\n# What it does (a step already done is skipped):\n");
  int n = 0;
  for (const auto& m : plan.modprobe) {
    ++n;
    if (!m.edit_path.empty()) {
      // The user's file keeps its other lines and options: only these values change there.
      s.comment(fmt::format("  {}. edits {}", n,
                            fmt::format("{} (yours; no second file competes with it), setting on "
                                        "its `options {}` line:",
                                        m.edit_path, m.module)));
      std::vector<std::string> kv;
      for (const auto& [k, v] : m.options)
        kv.emplace_back(fmt::format("{}={}", k, v));
      s.comment("       ", join(kv, " "));
    } else {
      s.comment(fmt::format("  {}. writes {}", n, "/etc/modprobe.d/" + m.file + ":"));
      s.comment("       ", modprobe_options_line(m));
    }
  }
  if (st.kargs) summary_kargs(s, ++n, plan, opt);
  if (st.initramfs) {
    ++n;
    if (opt.stack == Stack::rpm_ostree) {
      s.comment(fmt::format(
          "  {}. runs: {}", n,
          "rpm-ostree initramfs-etc --track=FILE for each modprobe.d file not yet tracked"));
    } else {
      std::string carry =
          plan.modprobe.empty() ? "a file in /etc/modprobe.d" : "the modprobe.d file";
      s.comment(fmt::format("  {}. runs: {}", n,
                            fmt::format("{}, if an initramfs image is older than {}",
                                        join(initramfs_command(opt), " "), carry)));
    }
  }
  if (!plan.udev.empty()) {
    s.comment(fmt::format("  {}. writes {}", ++n, "/etc/udev/rules.d/70-halo-doctor-gpu.rules:"));
    summary_lines(s, udev_content(plan));
    s.comment("     then runs: udevadm control --reload-rules; udevadm trigger "
              "--subsystem-match=kfd --subsystem-match=drm");
  }
  if (st.usermod)
    s.comment(fmt::format("  {}. runs: {}", ++n,
                          "usermod -aG " + join(plan.groups, ",") + " " + opt.user +
                              " (the groups it lacks; then log out and back in)"));
  if (!plan.sysctl.empty()) {
    s.comment(fmt::format("  {}. writes {}", ++n, "/etc/sysctl.d/90-halo-doctor.conf:"));
    summary_lines(s, sysctl_content(plan));
    s.comment("     then runs: sysctl -p /etc/sysctl.d/90-halo-doctor.conf");
  }
  if (!plan.env_unset.empty() || !plan.env_set.empty()) {
    s.comment(fmt::format("  {}. writes {}", ++n, "/etc/profile.d/halo-doctor-rocm.sh:"));
    summary_lines(s, env_content(plan));
  }
  s.comment(st.reboot ? "  Then: reboot, and run halo-doctor check."
                      : "  Then: run halo-doctor check.");
  for (const auto& [rule, text] : plan.summaries)
    s.comment("Why: ", fmt::format("[{}] {}", rule, text));
  for (const auto& note : plan.notes)
    s.comment("Note: ", note);
  if (!plan.manual.empty()) {
    s.code("# Not done here (needs a person):\n");
    for (const auto& m : plan.manual)
      s.comment("  ", "[" + m.rule + "] " + m.text);
  }
  s.code("# Undo: each file is backed up to FILE.halo-doctor.bak before its first edit; a run "
         "prints\n#   the commands that undo it (after halo-doctor fix --apply: halo-doctor fix "
         "--undo).\n");
  std::vector<std::string> bound;
  if (opt.mem_gib > 0) bound.push_back(fmt::format("MemTotal {} GiB", opt.mem_gib));
  if (!opt.machine_tag.empty()) bound.emplace_back("its /etc/machine-id");
  if (!stack_tool(opt.stack).empty()) bound.emplace_back(stack_tool(opt.stack) + " installed");
  if (!bound.empty())
    s.comment("Only for this machine (" + join(bound, ", ") +
              "): elsewhere it stops, unless run with --force-other-machine.");
  s.code("# Usage: sudo bash THIS-SCRIPT [--dry-run] [--force-other-machine]\n");
  if (!opt.evidence.empty()) s.comment("Boot stack evidence: ", join(opt.evidence, "; "));
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
  const Steps st = plan_steps(plan, opt);
  detail::ShellWriter s;
  s.code("#!/usr/bin/env bash\n");
  write_summary(s, plan, opt, st);
  s.code("\n");
  s.templ("prelude.sh");
  // The machine it was written for (bind.sh refuses another one).
  s.assign("FOR_MEM_GIB", opt.mem_gib > 0 ? std::to_string(opt.mem_gib) : std::string());
  s.assign("FOR_MACHINE_TAG", opt.machine_tag);
  s.assign("FOR_STACK", std::string(to_string(opt.stack)));
  s.assign("FOR_STACK_TOOL", stack_tool(opt.stack));
  s.templ("bind.sh");
  if (st.live) s.templ("live.sh");
  if (st.kargs) {
    s.array("KARGS_SET", set_tokens(plan));
    s.array("KARGS_REMOVE", plan.kargs_remove);
    s.templ("args.sh");
    if (opt.stack == Stack::kernelstub || opt.stack == Stack::systemd_boot) s.templ("edit-args.sh");
  }
  int n = 0;

  if (!plan.modprobe.empty()) {
    step_header(s, ++n, "module options in /etc/modprobe.d", rules_of(plan, "modprobe"));
    bool edits = false;
    for (const auto& m : plan.modprobe)
      edits = edits || !m.edit_path.empty();
    if (edits) s.templ("modprobe-edit.sh");
    for (const auto& m : plan.modprobe) {
      if (!m.edit_path.empty()) {
        s.code("edit_modprobe \"${ROOT}");
        s.word_in_double_quotes(m.edit_path);
        s.code("\" ");
        s.arg(m.module);
        for (const auto& [k, v] : m.options) {
          s.code(" ");
          s.arg(fmt::format("{}={}", k, v));
        }
        s.code("\n");
        continue;
      }
      s.code("put_file \"${ROOT}/etc/modprobe.d/");
      s.word_in_double_quotes(m.file);
      s.code("\" ");
      s.arg(modprobe_content(m));
      s.code("\n");
    }
  }

  if (st.kargs) {
    step_header(s, ++n, "kernel command line", rules_of(plan, "kernel_args"));
    kernel_args_step(s, plan, opt);
  }

  if (st.initramfs) {
    step_header(s, ++n, "initramfs",
                rules_of(plan, plan.step_rules.contains("initramfs") ? "initramfs" : "modprobe"));
    std::vector<std::string> carry;
    for (const auto& m : plan.modprobe)
      carry.push_back(m.edit_path.empty() ? "/etc/modprobe.d/" + m.file : m.edit_path);
    s.array("INITRAMFS_CARRY", carry);
    if (opt.stack == Stack::rpm_ostree) {
      s.templ("initramfs-ostree.sh");
    } else {
      s.array("INITRAMFS_CMD", initramfs_command(opt));
      s.templ("initramfs.sh");
      const std::string tool = initramfs_tool_of(opt);
      if (tool == "update-initramfs")
        s.templ("initramfs-update-initramfs.sh");
      else if (tool == "mkinitcpio")
        s.templ("initramfs-mkinitcpio.sh");
      else
        s.templ("initramfs-dracut.sh");
      if (st.entries) s.templ("initramfs-entries.sh");
      s.templ("initramfs-rebuild.sh");
    }
  }

  if (!plan.udev.empty() || !plan.groups.empty()) {
    std::vector<std::string> step_rule_ids;
    for (const char* k : {"groups", "udev"})
      if (auto it = plan.step_rules.find(k); it != plan.step_rules.end())
        for (const auto& x : it->second)
          if (std::find(step_rule_ids.begin(), step_rule_ids.end(), x) == step_rule_ids.end())
            step_rule_ids.push_back(x);
    step_header(s, ++n, "access to /dev/kfd and the render nodes", join(step_rule_ids, ", "));
    s.assign("UDEV_RULES", udev_content(plan));
    s.assign("FIX_USER", st.usermod ? opt.user : "");
    s.array("FIX_GROUPS", st.usermod ? plan.groups : std::vector<std::string>{});
    if (!plan.groups.empty() && !st.usermod)
      s.say("add the user who trains to the groups: usermod -aG " + join(plan.groups, ",") +
            " USER (then log out and back in)");
    s.templ("access.sh");
  }

  if (!plan.sysctl.empty()) {
    step_header(s, ++n, "sysctl", rules_of(plan, "sysctl"));
    std::vector<std::string> keys;
    std::vector<std::string> values;
    for (const auto& [k, v] : plan.sysctl) {
      keys.push_back(k);
      values.push_back(v);
    }
    s.assign("SYSCTL_CONTENT", sysctl_content(plan));
    s.array("SYSCTL_KEYS", keys);
    s.array("SYSCTL_VALUES", values);
    s.templ("sysctl.sh");
  }

  if (!plan.env_unset.empty() || !plan.env_set.empty()) {
    step_header(s, ++n, "environment", rules_of(plan, "env"));
    s.code("put_file \"${ROOT}/etc/profile.d/halo-doctor-rocm.sh\" ");
    s.arg(env_content(plan));
    s.code("\n");
    if (!plan.env_unset.empty())
      s.say("also remove these where your shell profile, job script or image sets them: " +
            join(plan.env_unset, " "));
  }

  s.code("\n# --- Done: what is left to do.\n");
  for (const auto& m : plan.manual)
    s.say("needs a person [" + m.rule + "]: " + m.text);
  s.templ("finish.sh");
  if (st.reboot)
    s.code("say \"next: reboot, then run: halo-doctor check\"\n");
  else
    s.code("say \"next: run: halo-doctor check\"\n");
  return s.str();
}

} // namespace halo::fix
