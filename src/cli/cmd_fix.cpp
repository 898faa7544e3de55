// SPDX-License-Identifier: MIT
// halo-doctor fix: the same probes and rules as `check`, then the failing rules' structured fixes
// merged and rendered as a script for this machine's boot stack (a Nix snippet on NixOS). The
// doctor stays read-only: it writes the script; a person reads it and runs it (docs/fix.md).
#include "commands.hpp"
#include "common.hpp"

#include <halo/digest.hpp>
#include <halo/error.hpp>
#include <halo/fix.hpp>
#include <halo/io.hpp>
#include <halo/sanitize.hpp>
#include <halo/version.hpp>

#include <fmt/format.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

namespace halo::cli {

namespace {
struct FixOptions {
  CommonOptions common;
  std::string stack = "auto";
  std::int64_t ttm_limit_gib = 0;
  bool ttm_limit_given = false;
  std::string user;
  std::string output;
  bool apply = false; ///< --apply: run the script now (root, this machine only)
  bool undo = false;  ///< --undo: run the undo of the last --apply
  bool yes = false;   ///< --yes: do not ask (automation)
};

/// Where --apply keeps the script it ran and its undo: /var/lib/halo-doctor, or
/// HALO_FIX_STATE_DIR (for tests, with HALO_FIX_ROOT naming the root the script fixes).
std::filesystem::path state_dir() {
  const char* d = std::getenv("HALO_FIX_STATE_DIR");
  return (d != nullptr && *d != '\0') ? std::filesystem::path(d)
                                      : std::filesystem::path("/var/lib/halo-doctor");
}

/// HALO_FIX_ROOT (tests): the root the script fixes instead of /, "" when unset.
std::string fix_root_env() {
  const char* r = std::getenv("HALO_FIX_ROOT");
  return r == nullptr ? std::string() : std::string(r);
}

/// Root is required to change the machine; HALO_FIX_ALLOW_NON_ROOT=1 with HALO_FIX_ROOT set
/// (tests) lets the script run on a scratch root, as the script itself allows (docs/fix.md).
void require_root(std::string_view what) {
  if (geteuid() == 0) return;
  const char* allow = std::getenv("HALO_FIX_ALLOW_NON_ROOT");
  if (!fix_root_env().empty() && allow != nullptr && std::string_view(allow) == "1") return;
  throw InputError(
      fmt::format("{} changes this machine: run it as root (sudo halo-doctor fix {})", what, what));
}

/// Asks on the terminal; --yes answers for automation; no terminal and no --yes is a refusal.
bool confirm(const FixOptions& o, std::string_view question) {
  if (o.yes) return true;
  if (isatty(STDIN_FILENO) == 0)
    throw InputError(
        fmt::format("{}: no terminal to ask on; pass --yes to go ahead without asking", question));
  write_stderr_text(fmt::format("{} [y/N] ", question));
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes";
}

/// Runs /bin/bash FILE with this process's stdio and environment (plus `extra`, NAME=VALUE);
/// returns its exit status (128 + signal when killed).
int run_bash(const std::filesystem::path& file, const std::vector<std::string>& extra) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e)
    env_strings.emplace_back(*e);
  for (const auto& x : extra)
    env_strings.push_back(x);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& e : env_strings)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string bash = "/bin/bash";
  std::string path = file.string();
  std::vector<char*> argv = {bash.data(), path.data(), nullptr};
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    execve(bash.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/// A private directory for the state: created 0700, never a symlink.
void make_state_dir(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw InputError(fmt::format("{}: not a directory", dir.string()));
  if (chmod(dir.c_str(), 0700) != 0)
    throw InputError(fmt::format("{}: chmod: {}", dir.string(), std::strerror(errno)));
}

/// The script's summary: its comment lines after the shebang, up to the first blank line.
std::string summary_of(const std::string& script) {
  std::string out;
  std::size_t pos = script.find('\n');
  while (pos != std::string::npos && pos + 1 < script.size()) {
    const auto nl = script.find('\n', pos + 1);
    const std::string line =
        script.substr(pos + 1, nl == std::string::npos ? std::string::npos : nl - pos - 1);
    if (line.empty() || line[0] != '#') break;
    out += line;
    out += '\n';
    pos = nl;
  }
  return out;
}

/// fix --undo: runs the undo the last --apply kept, then retires it.
int run_undo(const FixOptions& o) {
  const auto dir = state_dir();
  const auto undo = dir / "undo.sh";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(undo, ec))
    throw InputError(fmt::format("nothing to undo: {} does not exist (halo-doctor fix --apply "
                                 "keeps the undo of its last run that changed something there)",
                                 undo.string()));
  require_root("--undo");
  const std::string text = read_input_file(undo.string());
  write_stdout_text(
      fmt::format("The undo of the last halo-doctor fix --apply ({}):\n{}", undo.string(), text));
  if (!confirm(o, "Run it?")) {
    write_stderr_text("halo-doctor fix: not undone\n");
    return exit_code::failed;
  }
  const int rc = run_bash(undo, {});
  if (rc != 0) {
    write_stderr_text(
        fmt::format("halo-doctor fix: the undo exited {}; {} is kept\n", rc, undo.string()));
    return exit_code::failed;
  }
  std::filesystem::rename(undo, dir / "undo.sh.done");
  write_stderr_text("halo-doctor fix: undone; reboot, then run halo-doctor check\n");
  return exit_code::ok;
}

/// fix --apply: shows the summary, asks, writes the script to a private file, shows its hash,
/// runs it with /bin/bash, and keeps it with its undo in the state directory.
int run_apply(const FixOptions& o, const std::string& script) {
  require_root("--apply");
  write_stdout_text(summary_of(script));
  if (!confirm(o, "Apply these changes to this machine?")) {
    write_stderr_text("halo-doctor fix: not applied\n");
    return exit_code::failed;
  }
  const auto dir = state_dir();
  make_state_dir(dir);
  const auto file = dir / "last-fix.sh";
  write_output_file(file.string(), script);
  write_stderr_text(
      fmt::format("halo-doctor fix: running {} (sha256 {})\n", file.string(), sha256_hex(script)));
  const auto undo_new = dir / "undo.sh.new";
  std::filesystem::remove(undo_new);
  const int rc = run_bash(file, {"HALO_FIX_UNDO_FILE=" + undo_new.string()});
  std::error_code ec;
  if (std::filesystem::is_regular_file(undo_new, ec)) {
    std::filesystem::rename(undo_new, dir / "undo.sh");
    write_stderr_text(fmt::format("halo-doctor fix: its undo is kept in {}; halo-doctor fix "
                                  "--undo runs it\n",
                                  (dir / "undo.sh").string()));
  }
  if (rc != 0) {
    write_stderr_text(fmt::format("halo-doctor fix: the script exited {}; fix the cause and run "
                                  "halo-doctor fix --apply again\n",
                                  rc));
    return exit_code::failed;
  }
  return exit_code::ok;
}

/// machine_tag of the machine the facts describe: /etc/machine-id of the host's root (--host-root,
/// toolbox's /run/host), "" for a facts file or bundle or where there is none.
std::string machine_tag_of(const FixOptions& o, const FactSet& facts) {
  if (!o.common.facts_file.empty()) return "";
  const Root base(o.common.probe.host_root.empty() ? o.common.root : o.common.probe.host_root);
  std::string path = "/etc/machine-id";
  if (o.common.probe.host_root.empty())
    if (const auto h = facts.get<std::string>(keys::runenv_host_root);
        h && h->rfind("/run/host", 0) == 0)
      path = "/run/host/etc/machine-id";
  const ReadResult r = base.read(path, 4096);
  return r.ok() ? fix::machine_tag(r.text) : std::string();
}

/// Where the user already set `module.param` in a modprobe.d file halo-doctor did not write
/// (amd-ttm --set: /etc/modprobe.d/ttm.conf): that file, else "". Only a plain file directly in
/// /etc/modprobe.d qualifies (a vendor file in /usr/lib/modprobe.d is overridden, never edited).
std::string user_modprobe_file(const fix::ModprobeFile& m, const FactSet& facts) {
  for (const auto& [k, v] : m.options) {
    const Fact* f = facts.find(keys::modprobe_option(m.module, k));
    if (f == nullptr || !f->ok()) continue;
    const auto colon = f->source.rfind(':');
    std::string path = f->source.substr(0, colon);
    constexpr std::string_view dir = "/etc/modprobe.d/";
    if (path.rfind(dir, 0) != 0 || path.size() <= dir.size() + 5 ||
        path.find('/', dir.size()) != std::string::npos || !path.ends_with(".conf") ||
        !is_one_line(path) || path == std::string(dir) + m.file)
      continue;
    return path;
  }
  return "";
}

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
  if (o.undo) return run_undo(o);
  if (o.apply) {
    // --apply changes the machine it runs on: the facts must be this machine's (HALO_FIX_ROOT,
    // for tests, names the scratch root the script fixes; then --root must be that root).
    const std::string target = fix_root_env().empty() ? std::string("/") : fix_root_env();
    std::error_code ec;
    const bool same = std::filesystem::equivalent(o.common.root, target, ec);
    if (!o.common.facts_file.empty() || !same)
      throw InputError(fmt::format(
          "--apply runs the fix on this machine, so it takes the facts of / (not --root {} or a "
          "facts file); write the script with -o and run it on the machine it is for",
          o.common.facts_file.empty() ? o.common.root : o.common.facts_file));
  }
  const ProbeRegistry& reg = probe_set();
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
  const auto results = evaluate(rules, facts, rule_params(d));
  fix::Plan plan = fix::merge_fixes(results);
  if (o.ttm_limit_given)
    fix::apply_ttm_limit(plan, o.ttm_limit_gib, facts.get_int(keys::ttm_max_limit_bytes),
                         facts.get<std::string>(keys::ttm_module).value_or(""));
  // Nothing a script can do: say so and succeed, whatever the boot stack (it is not asked for).
  // In a container without the host's / the host was not judged: that stays an error (issue 19).
  if (const Fact* f = facts.find(keys::boot_stack);
      plan.covered.empty() && o.stack == "auto" && f != nullptr && f->not_probed())
    (void)choose_stack(o, facts);
  if (plan.covered.empty()) {
    write_stderr_text("halo-doctor fix: nothing to fix: no failing rule has a fix a script can "
                      "apply; no script written\n");
    for (const auto& m : plan.manual)
      write_stderr_text(
          fmt::format("halo-doctor fix: needs a person [{}]: {}\n", m.rule, one_line(m.text)));
    return exit_code::ok;
  }
  const fix::Stack stack = choose_stack(o, facts);
  if (o.apply && stack == fix::Stack::nixos)
    throw InputError("--apply: on NixOS the fix is a snippet to merge into your configuration "
                     "(then nixos-rebuild boot); run halo-doctor fix without --apply");

  // A limit or option the user set in a modprobe.d file halo-doctor did not write (amd-ttm
  // --set writes /etc/modprobe.d/ttm.conf) is edited there, never overridden by a second file.
  for (auto& m : plan.modprobe) {
    m.edit_path = user_modprobe_file(m, facts);
    if (m.edit_path.empty()) continue;
    plan.notes.push_back(fmt::format("{} already sets {} options: the script edits it there "
                                     "instead of writing /etc/modprobe.d/{}",
                                     m.edit_path, m.module, m.file));
    // That file stays the one place of these options: the same values on the kernel command
    // line would override every later edit of it (kmod applies the command line's module
    // options after modprobe.d's; modprobe.d(5)), so they are not added there.
    std::erase_if(plan.kargs_set, [&](const auto& kv) {
      return std::any_of(m.options.begin(), m.options.end(),
                         [&](const auto& opt) { return kv.first == m.module + "." + opt.first; });
    });
  }

  // Settings elsewhere in modprobe.d that would fight the halo-doctor file.
  for (const auto& m : plan.modprobe)
    for (const auto& [k, v] : m.options)
      if (const Fact* f = facts.find(keys::modprobe_option(m.module, k));
          (f != nullptr) && f->ok()) {
        if (f->source.find("/" + m.file + ":") == std::string::npos &&
            (m.edit_path.empty() || f->source.rfind(m.edit_path + ":", 0) != 0))
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
  if (const auto mem = facts.get_int(keys::mem_total_bytes); mem && *mem > 0)
    so.mem_gib = *mem / (std::int64_t{1} << 30);
  so.machine_tag = machine_tag_of(o, facts);
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
  write_stderr_text(
      fmt::format("halo-doctor fix: the script covers: {}\n", fmt::join(plan.covered, ", ")));
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
  const std::string text =
      stack == fix::Stack::nixos ? fix::render_nix(plan, so) : fix::render_script(plan, so);
  if (o.apply) return run_apply(o, text);
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
    sub->add_flag("--apply", o->apply,
                  "Run the fix on this machine now (as root): show its summary, ask, run the "
                  "script, keep it and its undo in /var/lib/halo-doctor");
    sub->add_flag("--undo", o->undo, "Undo the last --apply that changed something (as root)");
    sub->add_flag("-y,--yes", o->yes,
                  "With --apply or --undo: do not ask (without a terminal, required)");
  });
  return [sub, o]() {
    if (!*sub) return -1;
    o->ttm_limit_given = sub->get_option("--ttm-limit")->count() > 0;
    return run(*o);
  };
}

} // namespace halo::cli
