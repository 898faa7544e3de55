// SPDX-License-Identifier: MIT
// halo-doctor fix: the same probes and rules as `check`, then the failing rules' structured fixes
// merged and rendered as a script for this machine's boot stack (a Nix snippet on NixOS). The
// doctor stays read-only: it writes the script; a person reads it and runs it (docs/fix.md).
#include "commands.hpp"
#include "common.hpp"

#include <halo/error.hpp>
#include <halo/fix.hpp>
#include <halo/io.hpp>
#include <halo/sanitize.hpp>
#include <halo/version.hpp>

#include <fmt/format.h>

#include <memory>

namespace halo::cli {

namespace {
struct FixOptions {
  CommonOptions common;
  std::string stack = "auto";
  std::int64_t ttm_limit_gib = 0;
  bool ttm_limit_given = false;
  std::string user;
  std::string output;
};

std::string evidence_text(const FactSet& facts) {
  auto ev =
      facts.get<std::vector<std::string>>(keys::boot_evidence).value_or(std::vector<std::string>{});
  return ev.empty() ? std::string("none") : fmt::format("{}", fmt::join(ev, "; "));
}

fix::Stack choose_stack(const FixOptions& o, const FactSet& facts) {
  if (o.stack != "auto") {
    auto s = fix::parse_stack(o.stack);
    if (!s)
      throw InputError(fmt::format("--stack {}: unknown boot stack (one of: auto, {})", o.stack,
                                   fmt::join(fix::stack_names(), ", ")));
    return *s;
  }
  const Fact* f = facts.find(keys::boot_stack);
  if (f != nullptr && f->ok()) {
    if (auto s = fix::parse_stack(std::get<std::string>(f->value))) return *s;
  }
  const std::string why = f == nullptr ? std::string("boot stack not probed") : f->reason;
  // In a container without the host's /: the image's boot loader is not the host's; never
  // plan one from it (issue 19). --stack would still write a script for a stack named by hand.
  if (f != nullptr && f->not_probed())
    throw InputError(fmt::format("{}; or pass --stack {} to name the host's boot stack yourself",
                                 f->reason.substr(kNotProbedPrefix.size()),
                                 fmt::join(fix::stack_names(), "|")));
  throw InputError(fmt::format("cannot choose the boot stack: {} (evidence: {}); pass --stack {}",
                               why, evidence_text(facts), fmt::join(fix::stack_names(), "|")));
}

/// Who gets the groups: --user, else the sudo caller when running as root, else the user.
std::string choose_user(const FixOptions& o, const FactSet& facts) {
  if (!o.user.empty()) return o.user;
  const auto uid = facts.get_int(keys::user_uid);
  if (uid && *uid == 0) {
    if (auto s = facts.get<std::string>(keys::env_sudo_user)) return *s;
  }
  return facts.get<std::string>(keys::user_name).value_or("");
}

int run(const FixOptions& o) {
  const ProbeRegistry reg = builtin_probes();
  const DoctorOptions d = doctor_options(o.common);
  const RuleSet rules = load_rule_set(d, reg);
  const FactSet facts = gather_facts(d, reg);
  const std::string where = o.common.facts_file.empty() ? o.common.root : o.common.facts_file;
  // WSL2 runs Microsoft's kernel and reaches the GPU through the Windows driver (/dev/dxg): a
  // script for the Linux boot stack (kernel arguments, TTM, modprobe.d, initramfs) has nothing
  // to change there (checks/host/wsl.cpp, docs/wsl.md).
  if (facts.get<bool>(keys::wsl_wsl2) == true)
    throw InputError(fmt::format(
        "{}: WSL2: the Linux boot stack (GRUB, TTM, modprobe.d, initramfs) does not apply: the "
        "kernel is Microsoft's and the GPU belongs to the Windows driver (/dev/dxg); no script "
        "written. Run `halo-doctor check` for the WSL2 checks (wsl-*) and their remedies",
        where));
  if (!facts.get<std::string>(keys::os_id)) {
    const Fact* f = facts.find(keys::os_id);
    throw InputError(fmt::format(
        "{}: no /etc/os-release or /usr/lib/os-release ({}): the distribution, and so the boot "
        "stack, is unknown; no script written",
        where, f != nullptr && !f->reason.empty() ? f->reason : "missing"));
  }
  if (!o.user.empty() && !fix::valid_user_name(o.user))
    throw InputError(fmt::format("--user {}: not a valid user name", o.user));
  const fix::Stack stack = choose_stack(o, facts);

  const auto results = evaluate(rules, facts, rule_params(d));
  fix::Plan plan = fix::merge_fixes(results);
  if (o.ttm_limit_given)
    fix::apply_ttm_limit(plan, o.ttm_limit_gib, facts.get_int(keys::ttm_max_limit_bytes),
                         facts.get<std::string>(keys::ttm_module).value_or(""));

  // Settings elsewhere in modprobe.d that would fight the halo-doctor file.
  for (const auto& m : plan.modprobe)
    for (const auto& [k, v] : m.options)
      if (const Fact* f = facts.find(keys::modprobe_option(m.module, k));
          (f != nullptr) && f->ok()) {
        if (f->source.find("/" + m.file + ":") == std::string::npos)
          plan.notes.push_back(fmt::format(
              "{} also sets {}.{}={}: remove it there (modprobe applies every file, the last one "
              "read wins)",
              f->source, m.module, k, format_value(f->value)));
      }
  if (stack == fix::Stack::grub_debian) {
    for (const auto& name : facts.get<std::vector<std::string>>(keys::boot_grub_d_files)
                                .value_or(std::vector<std::string>{}))
      if (name > fix::kGrubDropIn)
        plan.notes.push_back(fmt::format("/etc/default/grub.d/{} is read after {} and may override "
                                         "GRUB_CMDLINE_LINUX_DEFAULT: check it",
                                         name, fix::kGrubDropIn));
  }

  fix::ScriptOptions so;
  so.stack = stack;
  so.nixos_param_lines = facts.get<std::vector<std::string>>(keys::boot_nixos_kernel_param_lines)
                             .value_or(std::vector<std::string>{});
  so.initramfs_tool = facts.get<std::string>(keys::boot_initramfs_tool).value_or("");
  so.user = choose_user(o, facts);
  so.os = facts.get<std::string>(keys::os_pretty_name).value_or("");
  so.tool_version = kVersion;
  if (o.stack == "auto")
    so.evidence = facts.get<std::vector<std::string>>(keys::boot_evidence)
                      .value_or(std::vector<std::string>{});
  else
    so.evidence = {"--stack " + o.stack};
  // The host the facts came from (--root, or the bundle's own host for --bundle), never the
  // machine running the doctor: host.name is read from the same root as every other fact.
  if (o.common.facts_file.empty()) so.host = facts.get<std::string>(keys::host_name).value_or("");

  write_stderr_text(
      fmt::format("halo-doctor fix: boot stack {} ({})\n", fix::to_string(stack),
                  o.stack == "auto" ? "detected: " + one_line(evidence_text(facts)) : "--stack"));
  if (plan.covered.empty()) {
    write_stderr_text(
        "halo-doctor fix: no failing rule has a fix a script can apply; no script written\n");
  } else {
    write_stderr_text(
        fmt::format("halo-doctor fix: the script covers: {}\n", fmt::join(plan.covered, ", ")));
  }
  for (const auto& m : plan.manual)
    write_stderr_text(
        fmt::format("halo-doctor fix: needs a person [{}]: {}\n", m.rule, one_line(m.text)));
  for (const auto& n : plan.notes)
    write_stderr_text(fmt::format("halo-doctor fix: note: {}\n", one_line(n)));
  // The script is for the host. Inside toolbox or distrobox, say how to run it there.
  if (const auto basis = facts.get<std::string>(keys::runenv_host_root);
      basis && basis->rfind("/run/host", 0) == 0)
    write_stderr_text(fmt::format(
        "halo-doctor fix: note: this script changes the host, not this container ({}): run it "
        "on the host, e.g. `flatpak-spawn --host sudo bash SCRIPT` in toolbox or "
        "`distrobox-host-exec sudo bash SCRIPT` in distrobox (SCRIPT under your home, which both "
        "share)\n",
        facts.get<std::string>(keys::host_runs_in).value_or("container")));
  if (plan.covered.empty()) return exit_code::ok;

  const std::string text =
      stack == fix::Stack::nixos ? fix::render_nix(plan, so) : fix::render_script(plan, so);
  write_output(o.output, text);
  if (!o.output.empty() && o.output != "-")
    write_stderr_text(fmt::format(
        "halo-doctor fix: wrote {}; read it, try it with --dry-run, then run "
        "it as root{}\n",
        o.output, stack == fix::Stack::nixos ? " (NixOS: merge it into your configuration)" : ""));
  return exit_code::ok;
}
} // namespace

Runner add_fix_command(CLI::App& app) {
  auto o = std::make_shared<FixOptions>();
  auto* sub = app.add_subcommand(
      "fix", "Write a script (a Nix snippet on NixOS) that applies the failing rules' fixes for "
             "this machine's boot stack; the doctor itself changes nothing");
  // The options are built only when this command is the one parsed (commands.hpp).
  sub->preparse_callback([sub, o](std::size_t) {
    add_probe_options(sub, o->common);
    add_rule_options(sub, o->common);
    std::vector<std::string> stacks = {"auto"};
    for (const auto& s : fix::stack_names())
      stacks.push_back(s);
    sub->add_option("--stack", o->stack,
                    "Boot stack that owns the kernel command line (auto: detect from the root)")
        ->check(CLI::IsMember(stacks));
    sub->add_option("--ttm-limit", o->ttm_limit_gib,
                    "TTM limit in whole GiB for pages_limit and page_pool_size (pages = GiB x "
                    "262144); default: MemTotal minus --reserve")
        ->option_text("GiB");
    sub->add_option("--user", o->user,
                    "User to add to the render and video groups (default: the sudo caller or the "
                    "current user)")
        ->option_text("NAME");
    sub->add_option("-o,--output", o->output, "Write the script to FILE instead of stdout")
        ->option_text("FILE");
  });
  return [sub, o]() {
    if (!*sub) return -1;
    o->ttm_limit_given = sub->get_option("--ttm-limit")->count() > 0;
    return run(*o);
  };
}

} // namespace halo::cli
