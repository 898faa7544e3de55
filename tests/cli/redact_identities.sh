#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2016 # backquotes and $ in single quotes are literal text (Markdown, sed patterns)
# One redactor for every shared output (issue 44 item 6, docs/security.md guarantee 11): the
# capture bundle and the Markdown report of one machine hide the same identities and give each the
# same pseudonym. A copy of tests/fixtures/strix-halo-torch-rocm62-venv (a venv with torch under a
# home directory, active in VIRTUAL_ENV) becomes a diskless cluster node:
# - ldap-user:    a user from LDAP/SSSD (no passwd line; the passwd file has `dev` and
#                 `zbeeblebrox`, uid 1000 and 1001) in
#                 HOME, USER, LOGNAME, VIRTUAL_ENV and PATH, owning the venv;
# - cmdline-host: a PXE command line naming the host in `ip=<client-ip>:<server-ip>:<gw-ip>:
#                 <netmask>:<hostname>:<device>:<autoconf>` (its FQDN) and `nfsroot=<server>:<dir>/HOST`
#                 (the kernel's Documentation/admin-guide/nfs/nfsroot.rst);
# - machine-id:   /etc/machine-id, a Boot Loader Specification entry named
#                 `<machine-id>-<version>.conf` and `initrd=/<machine-id>/...` on the command line;
# - gpu-uuid:     on a copy of tests/fixtures/mi300x-host-tuned (8 GPUs, so gpu-device0-choice
#                 prints the environment), the first GPU's kfd unique_id and ROCr's GPU-<hex> of it
#                 in ROCR_VISIBLE_DEVICES.
# The command line also misspells amdgpu.gtt_size, so cmdline-unknown-param fails and the report
# prints the command line as evidence. `capture` and `check --format markdown` run through the real
# CLI; `/usr/bin/tar` unpacks and lists the bundle; `grep -F -r -a` looks for each identity as
# bytes in the members and their names. Usage: redact_identities.sh BIN FIXTURES CASE...
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
bin=$(realpath "$1")
fixtures=$(realpath "$2")
shift 2
cases=("$@")
TAR=/usr/bin/tar
GREP=/usr/bin/grep
fail=0
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
bad() { echo "FAIL $*"; fail=1; }
rand_hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }

root=$tmp/root
cp -a "$fixtures/strix-halo-torch-rocm62-venv" "$root"
rm -f "$root"/expected.* "$root/README.md"

ldap=ldapjdoe$(rand_hex 2)
host=gpunode$(rand_hex 2)
fqdn=$host.hpc.example.org
mid=$(rand_hex 16)
kver=6.17.4-200.fc42.x86_64
# The GPU's 64-bit unique_id with its high bits set (amdgpu reads it from the PSP/SMU).
hex=f1$(rand_hex 7)
dec=$(printf '%u' "0x$hex")

# --- the LDAP user: not in /etc/passwd, owns the venv.
$GREP -q "^$ldap:" "$root/etc/passwd" && { echo "FAIL: $ldap is in passwd"; exit 1; }
mv "$root/home/dev" "$root/home/$ldap"
# A second person with an account (uid 1001) whom no fact names: the bundle learns the passwd file,
# so a report that learnt only from its facts would number the LDAP user differently.
echo "zbeeblebrox:x:1001:1001:Zaphod Beeblebrox:/home/zbeeblebrox:/bin/bash" >>"$root/etc/passwd"
# --- host, machine-id, GPU.
printf '%s\n' "$host" >"$root/proc/sys/kernel/hostname"
printf '%s\n' "$mid" >"$root/etc/machine-id"
cmdline="BOOT_IMAGE=(hd0,gpt2)/vmlinuz-$kver initrd=/$mid/$kver/initrd root=/dev/nfs nfsroot=10.20.30.1:/srv/diskless/$host,vers=4 ip=10.20.30.17:10.20.30.1:10.20.30.254:255.255.255.0:$fqdn:eno1:off ro quiet ttm.pages_limit=31457280 ttm.page_pool_size=31457280 amdgpu.gtt_size=1"
printf '%s\n' "$cmdline" >"$root/proc/cmdline"
mkdir -p "$root/boot/loader/entries"
# A Fedora BLS entry as kernel-install writes it (Boot Loader Specification type #1).
cat >"$root/boot/loader/entries/$mid-$kver.conf" <<EOF
title Fedora Linux ($kver) 42 (Workstation Edition)
version $kver
linux /vmlinuz-$kver
initrd /initramfs-$kver.img
options $cmdline
grub_users \$grub_users
grub_arg --unrestricted
grub_class fedora
EOF
{
  echo "PATH=/home/$ldap/venv/bin:/usr/local/bin:/usr/bin:/bin"
  echo "HOME=/home/$ldap"
  echo "USER=$ldap"
  echo "LOGNAME=$ldap"
  echo "LANG=C.UTF-8"
  echo "VIRTUAL_ENV=/home/$ldap/venv"
} | tr '\n' '\0' >"$root/proc/self/environ"
# --- the GPU UUID, on a machine with eight GPUs.
groot=$tmp/groot
cp -a "$fixtures/mi300x-host-tuned" "$groot"
rm -f "$groot"/expected.* "$groot/README.md"
gpu_node=
for props in "$groot"/sys/class/kfd/kfd/topology/nodes/*/properties; do
  [ -z "$gpu_node" ] && $GREP -q '^gfx_target_version [1-9]' "$props" && gpu_node=$props
done
[ -n "$gpu_node" ] || { echo "FAIL: the fixture has no GPU node"; exit 1; }
echo "unique_id $dec" >>"$gpu_node"
printf 'ROCR_VISIBLE_DEVICES=GPU-%s\0' "$hex" >>"$groot/proc/self/environ"

# --- the two shared outputs of a root, into directory $2: b/ (the bundle unpacked), members
# (its member names), report.md, env.txt (its environment, a variable a line).
outputs() {
  local r=$1 d=$2
  mkdir -p "$d/b"
  "$bin" capture --root "$r" --no-runtime -o "$d/b.tar.gz" >"$d/out" 2>"$d/err" ||
    { echo "FAIL capture: $(cat "$d/err")"; exit 1; }
  "$TAR" -xzf "$d/b.tar.gz" -C "$d/b" || { echo "FAIL: tar cannot unpack the bundle"; exit 1; }
  "$TAR" -tzf "$d/b.tar.gz" >"$d/members" || bad "tar cannot list the bundle"
  "$bin" check --root "$r" --no-runtime --format markdown >"$d/report.md" 2>"$d/err"
  [ -s "$d/report.md" ] || { echo "FAIL check --format markdown wrote nothing: $(cat "$d/err")"; exit 1; }
  [ -f "$d/b/proc/self/environ" ] || bad "no proc/self/environ in the bundle"
  tr '\0' '\n' <"$d/b/proc/self/environ" >"$d/env.txt" 2>/dev/null
}

# absent VALUE WHAT DIR: VALUE is nowhere in the bundle (members and names) or the report.
absent() {
  if "$GREP" -F -r -a -l -- "$1" "$3/b" >"$3/hits"; then
    bad "$2 ('$1') is in the bundle: $(sed "s|$3/b/||" "$3/hits" | tr '\n' ' ')"
  fi
  "$GREP" -F -q -- "$1" "$3/members" && bad "$2 ('$1') names a bundle member: $("$GREP" -F -- "$1" "$3/members" | head -3 | tr '\n' ' ')"
  "$GREP" -F -q -- "$1" "$3/report.md" && bad "$2 ('$1') is in the markdown report: $("$GREP" -F -m2 -- "$1" "$3/report.md")"
}
# same WHAT IN_BUNDLE IN_REPORT: both outputs name the identity, by one non-empty pseudonym.
same() {
  if [ -z "$2" ] || [ -z "$3" ]; then
    bad "$1: the bundle names it '$2', the report '$3' (one is missing)"
  elif [ "$2" != "$3" ]; then
    bad "$1: the bundle calls it '$2', the report '$3'"
  fi
}
# The node's outputs, and the command line as its report prints it (the evidence of
# cmdline-unknown-param).
n=$tmp/node
outputs "$root" "$n"
report_cmdline=$("$GREP" -F -m1 '`kernel.cmdline` =' "$n/report.md")
[ -n "$report_cmdline" ] || bad "the report does not print the command line (cmdline-unknown-param did not fail)"

for c in "${cases[@]}"; do
  case $c in
  ldap-user)
    absent "$ldap" "the LDAP user's name" "$n"
    b=$(sed -n 's|^VIRTUAL_ENV=/home/\([^/]*\)/venv$|\1|p' "$n/env.txt")
    r=$("$GREP" -o -m1 '/home/[^/ ]*/venv' "$n/report.md" | head -1 | sed 's|/home/\(.*\)/venv|\1|')
    same "the LDAP user" "$b" "$r"
    # dev and zbeeblebrox (uid 1000 and 1001 in passwd) are user1 and user2; the LDAP user is
    # the third person learnt.
    [ "$b" = user3 ] || bad "the LDAP user is '$b' in the bundle, not user3"
    "$GREP" -qxF "HOME=/home/$b" "$n/env.txt" || bad "HOME is not /home/$b in the bundle: $("$GREP" ^HOME= "$n/env.txt")"
    ;;
  cmdline-host)
    absent "$host" "the host name" "$n"
    b_ip=$(sed -n 's/.* ip=[^:]*:[^:]*:[^:]*:[^:]*:\([^:]*\):.*/\1/p' "$n/b/proc/cmdline")
    r_ip=$(printf '%s\n' "$report_cmdline" | sed -n 's/.* ip=[^:]*:[^:]*:[^:]*:[^:]*:\([^:]*\):.*/\1/p')
    same "the ip= host name" "$b_ip" "$r_ip"
    b_nfs=$(sed -n 's|.*nfsroot=10.20.30.1:/srv/diskless/\([^,]*\),.*|\1|p' "$n/b/proc/cmdline")
    r_nfs=$(printf '%s\n' "$report_cmdline" | sed -n 's|.*nfsroot=10.20.30.1:/srv/diskless/\([^,]*\),.*|\1|p')
    same "the nfsroot= host name" "$b_nfs" "$r_nfs"
    [ "$b_nfs" = redacted-host ] || bad "nfsroot= names '$b_nfs', not the kernel host name's redacted-host"
    ;;
  machine-id)
    absent "$mid" "the machine-id" "$n"
    b=$(sed -n 's|.*initrd=/\([0-9a-f]*\)/.*|\1|p' "$n/b/proc/cmdline")
    r=$(printf '%s\n' "$report_cmdline" | sed -n 's|.*initrd=/\([0-9a-f]*\)/.*|\1|p')
    same "the machine-id" "$b" "$r"
    # The loader entry keeps its <machine-id>-<version>.conf form under the pseudonym.
    [ -f "$n/b/boot/loader/entries/$b-$kver.conf" ] ||
      bad "no loader entry boot/loader/entries/$b-$kver.conf in the bundle: $("$GREP" loader/entries/ "$n/members" | tr '\n' ' ')"
    [ "$(cat "$n/b/etc/machine-id" 2>/dev/null || echo "$b")" = "$b" ] || bad "etc/machine-id is not $b"
    ;;
  gpu-uuid)
    g=$tmp/gpus
    outputs "$groot" "$g"
    absent "$hex" "the GPU's unique_id (hex)" "$g"
    absent "$dec" "the GPU's unique_id (decimal)" "$g"
    b=$(sed -n 's/^ROCR_VISIBLE_DEVICES=GPU-\([0-9a-fA-F]*\)$/\1/p' "$g/env.txt")
    r=$("$GREP" -o 'env.rocr_visible_devices` = GPU-[0-9a-fA-F]*' "$g/report.md" | head -1 | sed 's/.*GPU-//')
    same "the GPU UUID" "$b" "$r"
    ;;
  *)
    echo "FAIL: unknown case $c"
    exit 2
    ;;
  esac
done
[ "$fail" = 0 ] && echo "ok: ${cases[*]}"
exit "$fail"
