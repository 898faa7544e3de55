// SPDX-License-Identifier: MIT
// What a modprobe.d `install MODULE COMMAND` line does when kmod loads MODULE.
//
// kmod (libkmod/libkmod-module.c, kmod_module_probe_insert_module and command_do) runs COMMAND
// with system(3), that is `/bin/sh -c COMMAND`, instead of inserting the module, after replacing
// every "$CMDLINE_OPTS" with the module's options (module_do_install_commands) and with
// MODPROBE_MODULE set to the module's name. The module then loads only if COMMAND loads it:
// modprobe.d(5) gives the wrapper `/sbin/modprobe --ignore-install fred $CMDLINE_OPTS`, where
// --ignore-install keeps the inner modprobe from running the same install line again.
// A non-zero exit status makes kmod report the load failed; for a dependency (ttm under
// amdgpu) it also stops kmod before it inserts the module that needed it.
#pragma once

#include <string>
#include <string_view>

namespace halo::probes {

/// The judgement of one install command for one module.
enum class InstallEffect {
  loads,  ///< on every path the shell takes, the command loads the module
  blocks, ///< on no path does it load the module
  unknown ///< it runs something the doctor cannot follow (a script, a variable, a loop)
};

/// `effect` for the module itself (loaded at the end, whatever the exit status), and
/// `effect_as_dependency` when kmod runs it for a dependency (loaded and exit status 0: a
/// failing status stops kmod before the module that needs it). `why` is one sentence.
struct InstallJudgement {
  InstallEffect effect = InstallEffect::unknown;
  InstallEffect effect_as_dependency = InstallEffect::unknown;
  std::string why;
};

/// Judges `command` (the text after `install MODULE`) for `module` (kmod's name, '-' turned to
/// '_') as /bin/sh would run it: words and quotes (POSIX Shell Command Language 2.2-2.6),
/// lists joined by `;`, `&`, `&&`, `||`, pipelines, `!`, redirections (dropped), `exec`, `env`
/// and `command` prefixes, `sh -c`/`bash -c` strings (judged in turn), `exit N`, `true`, `:`,
/// `false`, `echo`/`printf`/`logger` (exit 0), and modprobe (kmod's tools/modprobe.c options:
/// GNU getopt_long, so options may follow the module name; the first non-option word is the
/// module and the rest its parameters unless -a; -n/-D/-r/-c/-R/-V/-h load nothing; -i or
/// --ignore-install skips the install line) and insmod (the file's base name, less .ko and a
/// compression suffix, is the module). `$CMDLINE_OPTS` becomes nothing (module parameters
/// never change which module loads), `$MODPROBE_MODULE` the module's name; any other expansion,
/// compound command or unknown program makes the answer `unknown`.
InstallJudgement judge_install_command(std::string_view command, std::string_view module);

/// "loads", "blocks" or "unknown".
std::string_view to_string(InstallEffect e);

} // namespace halo::probes
