// Rendering a fix plan as a bash script for one boot stack (docs/fix.md), and the stack names.
// The script is written for a person to read: a header per step says what and why, every value
// is a quoted literal, and every path is under ${HALO_FIX_ROOT} so the tests can run it for real.
#include <halo/fix.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <sstream>

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
    out.push_back(k + "=" + v);
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
/// appends the new ones, leaving every other argument alone.
std::string grub_block(const Plan& plan) {
  std::ostringstream b;
  b << "# BEGIN halo-doctor (written by halo-doctor fix; rules: " << rules_of(plan, "kernel_args")
    << ")\n";
  b << "# Drops " << join(filtered_keys(plan), ", ")
    << " from the command line and appends the values below.\n";
  b << "halo_filter() {\n  halo_out=\n  for halo_a in $1; do\n    case $halo_a in\n      ";
  std::vector<std::string> pats;
  for (const auto& k : filtered_keys(plan)) {
    pats.push_back(k);
    pats.push_back(k + "=*");
  }
  b << join(pats, " | ") << ") ;;\n";
  b << "      *) halo_out=\"$halo_out $halo_a\" ;;\n    esac\n  done\n";
  b << "  printf '%s' \"${halo_out# }\"\n}\n";
  b << "GRUB_CMDLINE_LINUX=\"$(halo_filter \"${GRUB_CMDLINE_LINUX:-}\")\"\n";
  b << "halo_d=\"$(halo_filter \"${GRUB_CMDLINE_LINUX_DEFAULT:-}\")\"\n";
  const std::string add = join(set_tokens(plan), " ");
  if (add.empty())
    b << "GRUB_CMDLINE_LINUX_DEFAULT=\"$halo_d\"\n";
  else
    b << "GRUB_CMDLINE_LINUX_DEFAULT=\"${halo_d:+$halo_d }" << add << "\"\n";
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

const char* const kPrelude = R"SH(set -euo pipefail

ROOT=${HALO_FIX_ROOT:-}
DRY_RUN=0
for arg in "$@"; do
  case $arg in
    --dry-run) DRY_RUN=1 ;;
    -h | --help)
      sed -n '2,/^set -euo pipefail$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "halo-doctor fix: unknown argument '$arg' (use --dry-run or --help)" >&2
      exit 2
      ;;
  esac
done

if [ "$DRY_RUN" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
  if [ -z "$ROOT" ] || [ "${HALO_FIX_ALLOW_NON_ROOT:-0}" != 1 ]; then
    echo "halo-doctor fix: run this as root (sudo bash $0), or look first with --dry-run" >&2
    exit 1
  fi
fi

CHANGED=0
WROTE=0
FILES_CHANGED=0

say() { printf '%s\n' "$*"; }

# run COMMAND ARGS...: prints the command, and runs it unless --dry-run.
run() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  if [ "$DRY_RUN" -eq 0 ]; then "$@"; fi
}

# backup FILE: copies FILE to FILE.halo-doctor.bak before its first edit (the original is kept).
backup() {
  if [ -e "$1" ] && [ ! -e "$1.halo-doctor.bak" ]; then run cp -p -- "$1" "$1.halo-doctor.bak"; fi
}

# put_file FILE CONTENT: makes FILE hold CONTENT and a final newline. Leaves it alone when it
# already does; sets WROTE=1 when it changed (or, with --dry-run, would change) the file.
put_file() {
  local file=$1 content=$2
  WROTE=0
  if [ -f "$file" ] && [ "$(cat -- "$file")" = "$content" ]; then
    say "unchanged: $file"
    return 0
  fi
  WROTE=1
  CHANGED=1
  FILES_CHANGED=$((FILES_CHANGED + WROTE))
  if [ "$DRY_RUN" -eq 1 ]; then
    say "would write $file:"
    printf '%s\n' "$content" | sed 's/^/    /'
    return 0
  fi
  mkdir -p -- "$(dirname -- "$file")"
  backup "$file"
  printf '%s\n' "$content" >"$file.halo-doctor.tmp"
  mv -f -- "$file.halo-doctor.tmp" "$file"
  say "wrote $file"
}

# has_token LINE TOKEN: the space-separated arguments in LINE include TOKEN exactly.
has_token() {
  local -a words
  local w
  read -r -a words <<<"$1"
  for w in "${words[@]}"; do [ "$w" = "$2" ] && return 0; done
  return 1
}

# tokens_of LINE KEY: prints the arguments in LINE named KEY (KEY or KEY=VALUE), one a line.
tokens_of() {
  local -a words
  local w
  read -r -a words <<<"$1"
  for w in "${words[@]}"; do
    case $w in "$2" | "$2"=*) printf '%s\n' "$w" ;; esac
  done
}
)SH";

void step_header(std::ostringstream& s, int n, const std::string& title,
                 const std::vector<std::string>& why) {
  s << "\n# ---------------------------------------------------------------------------\n";
  s << "# Step " << n << ": " << title << "\n";
  for (const auto& w : why)
    s << "# " << w << "\n";
  s << "say " << shell_quote(fmt::format("== step {}: {}", n, title)) << "\n";
}

void kernel_args_step(std::ostringstream& s, const Plan& plan, const ScriptOptions& opt) {
  const auto set = set_tokens(plan);
  if (opt.stack != Stack::grub_debian && opt.stack != Stack::grub_arch) {
    s << "KARGS_SET=" << bash_array(set) << "\n";
    s << "KARGS_REMOVE=" << bash_array(plan.kargs_remove) << "\n";
  }
  switch (opt.stack) {
  case Stack::grubby:
    s << R"SH(# grubby --info=ALL prints one args="..." line per installed kernel.
CURRENT=$(grubby --info=ALL | sed -n 's/^args="\(.*\)"$/\1/p')
for kv in "${KARGS_SET[@]}"; do
  need=0
  [ -n "$CURRENT" ] || need=1
  while IFS= read -r line; do
    [ -z "$line" ] || has_token "$line" "$kv" || need=1
  done <<<"$CURRENT"
  if [ "$need" -eq 1 ]; then
    run grubby --update-kernel=ALL --args="$kv"
    CHANGED=1
  else
    say "already set on every kernel: $kv"
  fi
done
for key in "${KARGS_REMOVE[@]}"; do
  if [ -n "$(tokens_of "$(tr '\n' ' ' <<<"$CURRENT")" "$key")" ]; then
    run grubby --update-kernel=ALL --remove-args="$key"
    CHANGED=1
  else
    say "not on the command line: $key"
  fi
done
)SH";
    break;
  case Stack::rpm_ostree:
    s << R"SH(# rpm-ostree kargs prints the kernel arguments of the current deployment; all changes go into
# one new deployment ("Changes queued for next boot").
CURRENT=$(rpm-ostree kargs)
OPS=()
for kv in "${KARGS_SET[@]}"; do
  key=${kv%%=*}
  if has_token "$CURRENT" "$kv"; then
    say "already set: $kv"
    continue
  fi
  mapfile -t old < <(tokens_of "$CURRENT" "$key")
  if [ "${#old[@]}" -eq 1 ]; then
    OPS+=("--replace=$kv")
  else
    for t in "${old[@]}"; do OPS+=("--delete-if-present=$t"); done
    OPS+=("--append-if-missing=$kv")
  fi
done
for key in "${KARGS_REMOVE[@]}"; do
  mapfile -t old < <(tokens_of "$CURRENT" "$key")
  if [ "${#old[@]}" -eq 0 ]; then say "not on the command line: $key"; fi
  for t in "${old[@]}"; do OPS+=("--delete-if-present=$t"); done
done
if [ "${#OPS[@]}" -gt 0 ]; then
  run rpm-ostree kargs "${OPS[@]}"
  CHANGED=1
fi
)SH";
    break;
  case Stack::kernelstub:
    s << R"SH(# kernelstub keeps the user's options in /etc/kernelstub/configuration ("user" -> "kernel_options").
KS_CONF="${ROOT}/etc/kernelstub/configuration"
CURRENT=""
if [ -f "$KS_CONF" ]; then
  CURRENT=$(sed -n '/"user"/,$p' "$KS_CONF" | sed -n '/"kernel_options"/,/\]/p' |
    grep -o '"[^"]*"' | tr -d '"' | grep -v '^kernel_options$' | tr '\n' ' ' || true)
fi
for kv in "${KARGS_SET[@]}"; do
  key=${kv%%=*}
  if has_token "$CURRENT" "$kv"; then
    say "already set: $kv"
    continue
  fi
  while IFS= read -r t; do
    [ -z "$t" ] || run kernelstub -d "$t"
  done < <(tokens_of "$CURRENT" "$key")
  run kernelstub -a "$kv"
  CHANGED=1
done
for key in "${KARGS_REMOVE[@]}"; do
  found=0
  while IFS= read -r t; do
    [ -z "$t" ] && continue
    run kernelstub -d "$t"
    found=1
    CHANGED=1
  done < <(tokens_of "$CURRENT" "$key")
  [ "$found" -eq 1 ] || say "not on the command line: $key"
done
)SH";
    break;
  case Stack::systemd_boot:
    s << R"SH(# kernel-install reads /etc/kernel/cmdline (and falls back to /proc/cmdline when it is missing, so
# a missing file is seeded from the running command line without BOOT_IMAGE= and initrd=).
CMDLINE_FILE="${ROOT}/etc/kernel/cmdline"
if [ -f "$CMDLINE_FILE" ]; then
  CURRENT=$(tr '\n' ' ' <"$CMDLINE_FILE")
else
  CURRENT=$(tr '\n' ' ' <"${ROOT}/proc/cmdline")
fi
read -r -a words <<<"$CURRENT"
NEW=()
for w in "${words[@]}"; do
  drop=0
  case $w in BOOT_IMAGE=* | initrd=*) drop=1 ;; esac
  for kv in "${KARGS_SET[@]}"; do
    case $w in "${kv%%=*}" | "${kv%%=*}"=*) drop=1 ;; esac
  done
  for key in "${KARGS_REMOVE[@]}"; do
    case $w in "$key" | "$key"=*) drop=1 ;; esac
  done
  [ "$drop" -eq 1 ] || NEW+=("$w")
done
NEW+=("${KARGS_SET[@]}")
put_file "$CMDLINE_FILE" "${NEW[*]}"
if [ "$WROTE" -eq 1 ]; then
  # Regenerate the loader entry (and initrd) of every installed kernel.
  found=0
  for img in "${ROOT}"/usr/lib/modules/*/vmlinuz; do
    [ -e "$img" ] || continue
    ver=$(basename -- "$(dirname -- "$img")")
    run kernel-install add "$ver" "$img"
    found=1
  done
  [ "$found" -eq 1 ] || say "warning: no kernel found in ${ROOT}/usr/lib/modules/*/vmlinuz; run kernel-install add VERSION IMAGE yourself"
fi
)SH";
    break;
  case Stack::grub_debian: {
    s << "# Debian's grub-mkconfig sources /etc/default/grub.d/*.cfg after /etc/default/grub, so "
         "the\n"
         "# drop-in below filters the old values out and appends the new ones; later drop-ins "
         "win.\n";
    s << "GRUB_DROPIN=\"${ROOT}/etc/default/grub.d/" << kGrubDropIn << "\"\n";
    s << "GRUB_BLOCK=$(\n  cat <<'HALO_EOF'\n" << grub_block(plan) << "\nHALO_EOF\n)\n";
    s << R"SH(put_file "$GRUB_DROPIN" "$GRUB_BLOCK"
if [ "$WROTE" -eq 1 ]; then run update-grub; fi
)SH";
    break;
  }
  case Stack::grub_arch: {
    s << "# grub-mkconfig sources /etc/default/grub; the block between the halo-doctor markers at "
         "its\n"
         "# end filters the old values out and appends the new ones (a second run replaces it).\n";
    s << "GRUB_FILE=\"${ROOT}/etc/default/grub\"\n";
    s << "GRUB_BLOCK=$(\n  cat <<'HALO_EOF'\n" << grub_block(plan) << "\nHALO_EOF\n)\n";
    s << R"SH(if [ ! -f "$GRUB_FILE" ]; then
  echo "halo-doctor fix: $GRUB_FILE does not exist; is this machine booted by GRUB? (see --stack)" >&2
  exit 1
fi
GRUB_BASE=$(sed '/^# BEGIN halo-doctor/,/^# END halo-doctor/d' "$GRUB_FILE")
put_file "$GRUB_FILE" "$GRUB_BASE
$GRUB_BLOCK"
if [ "$WROTE" -eq 1 ]; then run grub-mkconfig -o "${ROOT}/boot/grub/grub.cfg"; fi
)SH";
    break;
  }
  case Stack::nixos:
    break;
  }
}

std::string initramfs_command(const ScriptOptions& opt, const Plan& plan) {
  if (opt.stack == Stack::rpm_ostree) {
    std::vector<std::string> tracks;
    for (const auto& m : plan.modprobe)
      tracks.push_back("--track=\"${ROOT}/etc/modprobe.d/" + m.file + "\"");
    return "run rpm-ostree initramfs-etc " + join(tracks, " ");
  }
  std::string tool =
      opt.initramfs_tool.empty() ? default_initramfs_tool(opt.stack) : opt.initramfs_tool;
  if (tool == "update-initramfs") return "run update-initramfs -u -k all";
  if (tool == "mkinitcpio") return "run mkinitcpio -P";
  return "run dracut --regenerate-all --force";
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
  s << "#   --dry-run  print every command and file it would write, change nothing (no root "
       "needed)\n";
  s << "# Running it twice is safe: the second run changes nothing. Files are backed up to\n";
  s << "# FILE.halo-doctor.bak before their first edit. Afterwards: reboot, then halo-doctor "
       "check.\n";
  s << "# HALO_FIX_ROOT=DIR puts every path this script reads or writes, in files and in command\n";
  s << "# arguments, under DIR (default: the live system); HALO_FIX_ALLOW_NON_ROOT=1 (test-only)\n";
  s << "# lets it run without root when HALO_FIX_ROOT is set.\n#\n# Rules covered: "
    << join(plan.covered, ", ") << "\n";
  for (const auto& note : plan.notes)
    s << "# Note: " << note << "\n";
  if (!plan.manual.empty()) {
    s << "# Not done by this script (needs a person):\n";
    for (const auto& m : plan.manual)
      s << "#   [" << m.rule << "] " << m.text << "\n";
  }
  s << kPrelude;

  if (!plan.modprobe.empty()) {
    std::vector<std::string> why = {
        "Rules: " + rules_of(plan, "modprobe"),
        "modprobe reads /etc/modprobe.d when TTM and amdgpu load; both load from the initramfs,",
        "so the initramfs is rebuilt in the next step."};
    step_header(s, ++n, "TTM options in /etc/modprobe.d", why);
    s << "MODPROBE_WROTE=0\n";
    for (const auto& m : plan.modprobe) {
      std::string content =
          fmt::format("# Written by halo-doctor fix (rules: {}).\n# Pages are 4 KiB: "
                      "GiB x 262144.\noptions {}",
                      join(m.rules, ", "), m.module);
      for (const auto& [k, v] : m.options)
        content += " " + k + "=" + v;
      s << "put_file \"${ROOT}/etc/modprobe.d/" << m.file << "\" " << shell_quote(content) << "\n";
      s << "MODPROBE_WROTE=$((MODPROBE_WROTE + WROTE))\n";
    }
  }

  if (!plan.kargs_set.empty() || !plan.kargs_remove.empty()) {
    std::vector<std::string> why = {"Rules: " + rules_of(plan, "kernel_args")};
    if (!plan.kargs_set.empty()) why.push_back("Set: " + join(set_tokens(plan), " "));
    if (!plan.kargs_remove.empty()) why.push_back("Remove: " + join(plan.kargs_remove, " "));
    why.push_back("Through " + std::string(to_string(opt.stack)) +
                  "; arguments not named here are left as they are.");
    step_header(s, ++n, "kernel command line", why);
    kernel_args_step(s, plan, opt);
  }

  if (plan.initramfs || !plan.modprobe.empty()) {
    std::vector<std::string> why = {
        "Rules: " +
            rules_of(plan, plan.step_rules.count("initramfs") != 0U ? "initramfs" : "modprobe"),
        "The initramfs carries its own copy of /etc/modprobe.d; it is rebuilt only when the",
        "modprobe.d file changed in this run."};
    step_header(s, ++n, "rebuild the initramfs", why);
    // A rule that asks for a rebuild without a modprobe.d change (ttm-pending-reboot): rebuild.
    const bool always = plan.initramfs && plan.modprobe.empty();
    s << "if [ " << (always ? "1" : "\"${MODPROBE_WROTE:-0}\"") << " -gt 0 ]; then\n  "
      << initramfs_command(opt, plan) << "\n  CHANGED=1\nelse\n"
      << "  say \"modprobe.d unchanged: the initramfs is not rebuilt\"\nfi\n";
  }

  if (!plan.udev.empty() || !plan.groups.empty()) {
    std::vector<std::string> why = {
        "Rules: " + join(
                        [&] {
                          std::vector<std::string> r;
                          for (const char* k : {"groups", "udev"})
                            if (auto it = plan.step_rules.find(k); it != plan.step_rules.end())
                              for (const auto& x : it->second)
                                if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
                          return r;
                        }(),
                        ", "),
        "ROCr opens /dev/kfd and /dev/dri/renderD*: they belong to group render (mode 0660);",
        "the user joins render and video. Group changes apply after logging out and back in."};
    step_header(s, ++n, "access to /dev/kfd and the render nodes", why);
    if (!plan.udev.empty()) {
      std::string content = "# Written by halo-doctor fix (rules: " + rules_of(plan, "udev") + ").";
      for (const auto& l : plan.udev)
        content += "\n" + l;
      s << "put_file \"${ROOT}/etc/udev/rules.d/70-halo-doctor-gpu.rules\" " << shell_quote(content)
        << "\n";
      s << "if [ \"$WROTE\" -eq 1 ]; then\n  run udevadm control --reload-rules\n"
           "  run udevadm trigger --subsystem-match=kfd --subsystem-match=drm\nfi\n";
    }
    if (!plan.groups.empty()) {
      if (opt.user.empty() || opt.user == "root") {
        s << "say "
          << shell_quote("add the user who trains to the groups: usermod -aG " +
                         join(plan.groups, ",") + " USER (then log out and back in)")
          << "\n";
      } else {
        s << "FIX_USER=" << shell_quote(opt.user) << "\n";
        s << "FIX_GROUPS=" << bash_array(plan.groups) << "\n";
        s << R"SH(GROUP_FILE="${ROOT}/etc/group"
ADD=()
for g in "${FIX_GROUPS[@]}"; do
  if ! awk -F: -v g="$g" '$1 == g { f = 1 } END { exit f ? 0 : 1 }' "$GROUP_FILE"; then
    say "warning: group $g does not exist on this system; skipped"
  elif awk -F: -v g="$g" -v u="$FIX_USER" \
    '$1 == g { n = split($4, m, ","); for (i = 1; i <= n; i++) if (m[i] == u) f = 1 } END { exit f ? 0 : 1 }' \
    "$GROUP_FILE"; then
    say "$FIX_USER is already in $g"
  else
    ADD+=("$g")
  fi
done
if [ "${#ADD[@]}" -gt 0 ]; then
  backup "$GROUP_FILE"
  run usermod -aG "$(IFS=,; printf '%s' "${ADD[*]}")" "$FIX_USER"
  CHANGED=1
fi
say "note: $FIX_USER must log out and back in (or reboot) before the new groups apply"
)SH";
      }
    }
  }

  if (!plan.sysctl.empty()) {
    step_header(
        s, ++n, "sysctl",
        {"Rules: " + rules_of(plan, "sysctl"),
         "A drop-in in /etc/sysctl.d keeps the setting across reboots; it is loaded now too."});
    std::string content = "# Written by halo-doctor fix (rules: " + rules_of(plan, "sysctl") + ").";
    for (const auto& [k, v] : plan.sysctl)
      content += "\n" + k + " = " + v;
    s << "SYSCTL_FILE=\"${ROOT}/etc/sysctl.d/90-halo-doctor.conf\"\n";
    s << "put_file \"$SYSCTL_FILE\" " << shell_quote(content) << "\n";
    s << "if [ \"$WROTE\" -eq 1 ]; then run sysctl -p \"$SYSCTL_FILE\"; fi\n";
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
  s << R"SH(if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing was changed ($FILES_CHANGED file(s) would change)"
elif [ "$CHANGED" -eq 0 ]; then
  say "nothing to change: this machine is already configured as above"
fi
)SH";
  if (plan.reboot || plan.initramfs || !plan.modprobe.empty())
    s << "say \"next: reboot, then run: halo-doctor check\"\n";
  else
    s << "say \"next: run: halo-doctor check\"\n";
  return s.str();
}

} // namespace halo::fix
