#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `halo-doctor fix` end to end, as a user runs it:
#  1. golden scripts per boot stack (tests/fix/golden/*.sh|.nix), each clean under shellcheck;
#  2. the generated scripts run against a copy of the fixture root (HALO_FIX_ROOT) whose boot
#     tools are recording doubles (tests/fix/doubles/double.sh, for the stacks whose tools Debian
#     does not ship; tests/cli/fix_real_tools.sh runs the real ones): the files written, the
#     commands called, --dry-run that changes nothing, a second run that changes nothing, a tool
#     that fails once and a rerun that finishes the job, a half-fixed machine, a wrong value;
#  3. a fix applied to a copy of strix-halo-default-ttm makes `check` exit 4 (pending reboot);
#  4. bad input: unknown --stack, --ttm-limit above the headroom check wants, no os-release,
#     conflicting evidence.
# Usage: fix.sh HALO-DOCTOR TESTS-DIR. HALO_UPDATE_GOLDEN=1 rewrites the golden scripts.
set -u
bin=$(realpath "$1")
tests=$(realpath "$2")
fixtures=$tests/fixtures
golden=$tests/fix/golden
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bad() {
  echo "FAIL $*"
  fail=1
}
ok() { echo "ok $*"; }

# The chroot double, first on PATH (the scripts run boot tools as `chroot ROOT TOOL`).
doubles=$work/bin
mkdir -p "$doubles"
ln -s "$tests/fix/doubles/double.sh" "$doubles/chroot"
# install_doubles ROOT [TOOL...]: every boot tool the root has (the fixtures' placeholders)
# becomes the recording double, and the named TOOLs are added in /usr/sbin.
install_doubles() {
  local r=$1 d t
  shift
  for d in usr/local/sbin usr/local/bin usr/sbin usr/bin sbin bin; do
    for t in grubby rpm-ostree kernelstub update-grub grub-mkconfig grub2-mkconfig kernel-install \
      dracut update-initramfs mkinitcpio usermod; do
      [ -e "$r/$d/$t" ] && ln -sf "$tests/fix/doubles/double.sh" "$r/$d/$t"
    done
  done
  mkdir -p "$r/usr/sbin"
  for t in "$@"; do ln -sf "$tests/fix/doubles/double.sh" "$r/usr/sbin/$t"; done
}

if ! command -v shellcheck >/dev/null; then
  bad "shellcheck is not installed (apt-get install shellcheck)"
fi

normalize() { sed -E 's/halo-doctor [0-9]+\.[0-9]+\.[0-9]+(-[A-Za-z0-9.]+)?/halo-doctor <version>/'; }

# --- 1. golden scripts -------------------------------------------------------------------------
# name | fixture | extra arguments
cases="grubby|stack-grubby|
grub-debian|stack-grub-debian|
grub-arch|stack-grub-arch|
grub-suse|stack-grub-suse|
rpm-ostree|stack-rpm-ostree|
kernelstub|stack-kernelstub|
systemd-boot|stack-systemd-boot|
nixos|stack-nixos|
gttsize-typo-grub-debian|gttsize-typo-5595|--stack grub-debian
amdttm-grub-debian|amdttm-on-inbox-5562|--stack grub-debian
kfd-no-access-grub-debian|kfd-no-access|--stack grub-debian
mi300x-grub-debian|mi300x-numa-4021|--stack grub-debian
strix-halo-fixed-grubby|strix-halo-fixed|--stack grubby
ttm-limit-100-grubby|stack-grubby|--ttm-limit 100"
while IFS='|' read -r name fixture extra; do
  ext="sh"
  [ "$name" = nixos ] && ext="nix"
  # shellcheck disable=SC2086
  if ! "$bin" fix --root "$fixtures/$fixture" --no-runtime $extra >"$work/$name.out" 2>"$work/$name.err"; then
    bad "$name: fix exited $? ($(cat "$work/$name.err"))"
    continue
  fi
  normalize <"$work/$name.out" >"$work/$name.$ext"
  if [ "${HALO_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$work/$name.$ext" "$golden/$name.$ext"
    echo "updated $name.$ext"
  elif ! diff -u "$golden/$name.$ext" "$work/$name.$ext" >"$work/diff"; then
    bad "$name: script differs from tests/fix/golden/$name.$ext"
    head -40 "$work/diff"
  else
    ok "golden $name.$ext"
  fi
  if [ "$ext" = sh ] && command -v shellcheck >/dev/null; then
    if shellcheck -s bash "$work/$name.$ext" >"$work/sc" 2>&1; then ok "shellcheck $name"; else
      bad "$name: shellcheck"
      head -30 "$work/sc"
    fi
  fi
done <<<"$cases"

# The NixOS snippet evaluates with Nix 2.8 (Debian nix-bin) as a module function, with lib.mkAfter
# stubbed as nixpkgs defines it (lib/modules.nix: mkOrder 1500), and names the lines it replaces.
if command -v nix-instantiate >/dev/null; then
  nixout=$(NIX_STATE_DIR=$work/nix nix-instantiate --readonly-mode --eval --strict -E \
    "let m = import $work/nixos.nix { config = {}; pkgs = {}; lib = { mkAfter = x: { _type = \"order\"; priority = 1500; content = x; }; }; };
     in [ m.boot.kernelParams.priority m.boot.kernelParams.content m.boot.extraModprobeConfig ]" 2>"$work/nix.err")
  if [ "$nixout" = '[ 1500 [ "ttm.page_pool_size=31719424" "ttm.pages_limit=31719424" ] "options ttm page_pool_size=31719424 pages_limit=31719424\n" ]' ]; then
    ok "the NixOS snippet evaluates with nix-instantiate"
  else
    bad "the NixOS snippet does not evaluate as expected: $nixout $(grep -v nixbld "$work/nix.err")"
  fi
else
  echo "note: nix-instantiate is not installed (apt-get install nix-bin): the NixOS snippet was not evaluated"
fi
if ! grep -qF '#   /etc/nixos/amd-gpu.nix:5:     "ttm.pages_limit=16393924"' "$work/nixos.nix" ||
  ! grep -qF '#   /etc/nixos/amd-gpu.nix:6:     "amdgpu.gttsize=122880"' "$work/nixos.nix" ||
  grep -qF 'amd_iommu=off' "$work/nixos.nix"; then
  bad "nixos: the snippet does not name exactly the configuration lines it replaces"
fi

# --- 2. run the scripts against a temporary root ----------------------------------------------
# snapshot DIR: every file with its checksum (the doubles' log and state excluded).
snapshot() { (cd "$1" && find . -path ./.doubles -prune -o -type f -print0 | sort -z | xargs -0 md5sum); }
# mutating LOG: the calls that change something (the reads grubby --info=ALL, rpm-ostree kargs and
# rpm-ostree initramfs-etc without arguments don't).
mutating() { grep -v -E '^(grubby --info=ALL|rpm-ostree kargs|rpm-ostree initramfs-etc)$' "$1" 2>/dev/null || true; }
run_env() { # ROOT LABEL SCRIPT ARGS...
  env PATH="$doubles:$PATH" HALO_FIX_ROOT="$1" HALO_FIX_ALLOW_NON_ROOT=1 \
    HALO_DOUBLE_LOG="$1/.doubles/$2.log" HALO_DOUBLE_STATE="$1/.doubles" \
    bash "$3" "${@:4}" >"$1/.doubles/$2.out" 2>&1
}

# seed_kernels ROOT: what an installed system has beside its boot images and the fixture roots
# leave out: /lib/modules/VERSION with depmod's modules.dep for each kernel whose image is in
# /boot (the builders work per kernel in /lib/modules), and for an Arch image
# /boot/initramfs-KERNEL.img the preset the kernel package installs (mkinitcpio's linux.preset).
seed_kernels() {
  local r=$1 img v
  for img in "$r"/boot/initrd.img-* "$r"/boot/initramfs-*.img "$r"/boot/initrd-*; do
    [ -f "$img" ] || continue
    v=${img##*/}
    v=${v#initrd.img-}
    v=${v#initramfs-}
    v=${v#initrd-}
    v=${v%.img}
    case $v in
      linux | linux-lts | linux-zen)
        mkdir -p "$r/etc/mkinitcpio.d"
        printf '%s\n' "ALL_kver=\"/boot/vmlinuz-$v\"" "PRESETS=('default' 'fallback')" \
          "default_image=\"/boot/initramfs-$v.img\"" "fallback_image=\"/boot/initramfs-$v-fallback.img\"" \
          'fallback_options="-S autodetect"' >"$r/etc/mkinitcpio.d/$v.preset"
        ;;
      *)
        mkdir -p "$r/lib/modules/$v"
        : >"$r/lib/modules/$v/modules.dep"
        ;;
    esac
  done
}

# run_stack NAME FIXTURE SEED [FAIL-ONCE-TOOL]: copies the fixture, seeds the doubles' state, runs
# the script with --dry-run on one copy and for real twice on another (three times when a tool is
# made to fail once: the first run must fail, the second finish the job, the third change nothing).
run_stack() {
  local name=$1 fixture=$2 seed=$3 failing=${4:-} r=$work/$1-root
  rm -rf "$r" "$r-dry"
  cp -a "$fixtures/$fixture" "$r"
  cp -a "$fixtures/$fixture" "$r-dry"
  for d in "$r" "$r-dry"; do
    mkdir -p "$d/.doubles"
    printf '%s\n' "$seed" >"$d/.doubles/args.txt"
    install_doubles "$d" usermod
    seed_kernels "$d"
  done
  "$bin" fix --root "$fixtures/$fixture" --no-runtime -o "$work/$name-fix.sh" 2>/dev/null ||
    bad "$name: fix failed"
  local before after
  before=$(snapshot "$r-dry")
  run_env "$r-dry" dry "$work/$name-fix.sh" --dry-run || bad "$name: --dry-run exited $?"
  after=$(snapshot "$r-dry")
  [ "$before" = "$after" ] || bad "$name: --dry-run changed files"
  [ -z "$(mutating "$r-dry/.doubles/dry.log")" ] ||
    bad "$name: --dry-run called $(mutating "$r-dry/.doubles/dry.log" | head -1)"
  grep -q 'dry run: nothing was changed' "$r-dry/.doubles/dry.out" || bad "$name: --dry-run message"
  grep -q '^+++ .*(new)$' "$r-dry/.doubles/dry.out" || bad "$name: --dry-run shows no diff"
  if [ -n "$failing" ]; then
    touch "$r/.doubles/fail-once-$failing"
    if run_env "$r" failed "$work/$name-fix.sh"; then bad "$name: the run where $failing failed exited 0"; fi
  fi
  run_env "$r" first "$work/$name-fix.sh" || {
    bad "$name: first run exited $?"
    cat "$r/.doubles/first.out"
  }
  before=$(snapshot "$r")
  run_env "$r" second "$work/$name-fix.sh" || bad "$name: second run exited $?"
  after=$(snapshot "$r")
  [ "$before" = "$after" ] || bad "$name: second run changed files"
  [ -z "$(mutating "$r/.doubles/second.log")" ] ||
    bad "$name: second run called: $(mutating "$r/.doubles/second.log" | tr '\n' ';')"
  grep -q 'nothing to change' "$r/.doubles/second.out" || bad "$name: second run message"
  ok "ran $name: dry run, first run${failing:+ after $failing failed once}, idempotent second run"
}

# expect_call NAME LINE [LOG]: the run (default: first) called exactly LINE.
expect_call() {
  grep -qxF -- "$2" "$work/$1-root/.doubles/${3:-first}.log" || {
    bad "$1: expected call '$2'; calls were:"
    sed 's/^/    /' "$work/$1-root/.doubles/${3:-first}.log"
  }
}
expect_no_call() { # NAME REGEX [LOG]
  if grep -qE -- "$2" "$work/$1-root/.doubles/${3:-first}.log"; then bad "$1: unexpected call matching '$2'"; fi
}
expect_file() { # NAME PATH EXPECTED-LINE
  grep -qxF -- "$3" "$work/$1-root$2" 2>/dev/null || bad "$1: $2 lacks '$3'"
}
expect_out() { # NAME TEXT [OUT]
  grep -qF -- "$2" "$work/$1-root/.doubles/${3:-first}.out" || bad "$1: output lacks '$2'"
}

P=31719424
MOD="options ttm page_pool_size=$P pages_limit=$P"
ARGS="ttm.page_pool_size=$P ttm.pages_limit=$P"

# grubby, with a wrong value and a duplicate already on the command line; dracut fails once.
run_stack grubby stack-grubby "root=UUID=0b9a7c1e-5d2f-4b8e-9f61-3c2d4e5f6a7b ro quiet ttm.pages_limit=4096 rhgb ttm.pages_limit=8192" dracut
expect_file grubby /etc/modprobe.d/halo-doctor-ttm.conf "$MOD"
expect_call grubby "grubby --update-kernel=ALL --remove-args=ttm.pages_limit=4096" failed
expect_call grubby "grubby --update-kernel=ALL --args=ttm.pages_limit=$P" failed
expect_call grubby "dracut --regenerate-all --force" failed
expect_no_call grubby '^grubby --update-kernel' first
expect_call grubby "dracut --regenerate-all --force"
grep -qxF "root=UUID=0b9a7c1e-5d2f-4b8e-9f61-3c2d4e5f6a7b ro quiet rhgb ttm.page_pool_size=$P ttm.pages_limit=$P" \
  "$work/grubby-root/.doubles/args.txt" || bad "grubby: kernel arguments $(cat "$work/grubby-root/.doubles/args.txt")"

# grub-debian: update-grub fails once; the rerun regenerates grub.cfg although the drop-in is
# already written (the state the next boot uses, not what this run changed).
run_stack grub-debian stack-grub-debian "" update-grub
expect_file grub-debian /etc/default/grub.d/90-halo-doctor.cfg "# END halo-doctor"
expect_call grub-debian "update-grub"
expect_call grub-debian "update-initramfs -u -k all"
expect_out grub-debian "unchanged: $work/grub-debian-root/etc/default/grub.d/90-halo-doctor.cfg"
expect_out grub-debian "checked: every kernel entry in /boot/grub/grub.cfg has the arguments"
grep -qF "ro $ARGS quiet splash" "$work/grub-debian-root/boot/grub/grub.cfg" ||
  bad "grub-debian: grub.cfg: $(cat "$work/grub-debian-root/boot/grub/grub.cfg")"

run_stack grub-arch stack-grub-arch ""
expect_file grub-arch /etc/default/grub 'GRUB_CMDLINE_LINUX_DEFAULT="loglevel=3 quiet"'
expect_file grub-arch /etc/default/grub "# END halo-doctor"
expect_file grub-arch /etc/default/grub.halo-doctor.bak 'GRUB_CMDLINE_LINUX_DEFAULT="loglevel=3 quiet"'
expect_call grub-arch "grub-mkconfig -o /boot/grub/grub.cfg"
expect_call grub-arch "mkinitcpio -P"
grep -qF "ro $ARGS loglevel=3 quiet" "$work/grub-arch-root/boot/grub/grub.cfg" ||
  bad "grub-arch: grub.cfg: $(cat "$work/grub-arch-root/boot/grub/grub.cfg")"

# openSUSE: only grub2-mkconfig and /boot/grub2 (no grub-mkconfig, no grub.d drop-ins).
run_stack grub-suse stack-grub-suse ""
expect_call grub-suse "grub2-mkconfig -o /boot/grub2/grub.cfg"
expect_call grub-suse "dracut --regenerate-all --force"
grep -qF "ro $ARGS splash=silent quiet" "$work/grub-suse-root/boot/grub2/grub.cfg" ||
  bad "grub-suse: grub2/grub.cfg: $(cat "$work/grub-suse-root/boot/grub2/grub.cfg")"

run_stack rpm-ostree stack-rpm-ostree "root=UUID=x ro rhgb ttm.pages_limit=16393924"
expect_call rpm-ostree "rpm-ostree kargs --append-if-missing=ttm.page_pool_size=$P --replace=ttm.pages_limit=$P"
expect_call rpm-ostree "rpm-ostree initramfs-etc --track=/etc/modprobe.d/halo-doctor-ttm.conf"

# kernelstub: the options are written back whole with -o, in their order (its -d reorders).
run_stack kernelstub stack-kernelstub ""
expect_call kernelstub "kernelstub -o quiet\\ splash\\ amdgpu.gttsize=122880\\ ${ARGS// /\\ }"
expect_call kernelstub "update-initramfs -u -k all"
grep -q "\"amdgpu.gttsize=122880\"" "$work/kernelstub-root/etc/kernelstub/configuration" ||
  bad "kernelstub: an argument it was not asked to change was dropped"

# systemd-boot: /etc/kernel/cmdline for kernels installed next, and every existing entry (the one
# kernel-install wrote and the hand-written one with two options lines). The entries load
# kernel-install's copy /efi/ENTRY-TOKEN/VERSION/initrd and a hand-written /efi image, which
# dracut --regenerate-all does not write (without an /efi/MACHINE-ID directory its output is
# /boot/initramfs-VERSION.img): after dracut the script stops naming both entries and images; a
# person refreshes them (kernel-install add), the rerun finishes, and the next changes nothing.
r=$work/systemd-boot-root
rm -rf "$r"
cp -a "$fixtures/stack-systemd-boot" "$r"
mkdir -p "$r/.doubles" "$r/usr/lib/modules/6.17.4-arch1-1" "$r/efi/0b9a7c1e/6.17.4-arch1-1"
install_doubles "$r" usermod
: >"$r/usr/lib/modules/6.17.4-arch1-1/modules.dep"
touch -d 2020-01-01 "$r/efi/0b9a7c1e/6.17.4-arch1-1/initrd" "$r/efi/initramfs-linux-lts.img" \
  "$r/boot/initramfs-6.17.4-arch1-1.img"
"$bin" fix --root "$fixtures/stack-systemd-boot" --no-runtime -o "$work/systemd-boot-fix.sh" 2>/dev/null ||
  bad "systemd-boot: fix failed"
if run_env "$r" first "$work/systemd-boot-fix.sh"; then
  bad "systemd-boot: the run exited 0 with the entries' initrds still older than the modprobe.d file"
fi
for want in "still older than /etc/modprobe.d/halo-doctor-ttm.conf" \
  "/efi/0b9a7c1e/6.17.4-arch1-1/initrd (entry /efi/loader/entries/0b9a7c1e-6.17.4-arch1-1.conf loads it)" \
  "/efi/initramfs-linux-lts.img (entry /efi/loader/entries/endeavouros-lts.conf loads it)"; do
  expect_out systemd-boot "$want"
done
if sed -n '/still older/,$p' "$r/.doubles/first.out" | grep -qF "/boot/initramfs-6.17.4-arch1-1.img ("; then
  bad "systemd-boot: dracut's own image reported stale after dracut"
fi
touch "$r/efi/0b9a7c1e/6.17.4-arch1-1/initrd" "$r/efi/initramfs-linux-lts.img"
run_env "$r" second "$work/systemd-boot-fix.sh" || bad "systemd-boot: the rerun after kernel-install exited $?"
before=$(snapshot "$r")
run_env "$r" third "$work/systemd-boot-fix.sh" || bad "systemd-boot: third run exited $?"
[ "$before" = "$(snapshot "$r")" ] || bad "systemd-boot: third run changed files"
[ -z "$(mutating "$r/.doubles/third.log")" ] || bad "systemd-boot: third run called $(mutating "$r/.doubles/third.log" | head -1)"
grep -q 'nothing to change' "$r/.doubles/third.out" || bad "systemd-boot: third run message"
ok "ran systemd-boot: stops on kernel-install's stale copy, finishes after it, then changes nothing"
expect_file systemd-boot /etc/kernel/cmdline \
  "root=UUID=0b9a7c1e-5d2f-4b8e-9f61-3c2d4e5f6a7b ro quiet nvme_load=YES $ARGS"
expect_file systemd-boot /efi/loader/entries/0b9a7c1e-6.17.4-arch1-1.conf \
  "options root=UUID=0b9a7c1e-5d2f-4b8e-9f61-3c2d4e5f6a7b ro quiet nvme_load=YES $ARGS"
expect_file systemd-boot /efi/loader/entries/endeavouros-lts.conf \
  "options root=UUID=0b9a7c1e-5d2f-4b8e-9f61-3c2d4e5f6a7b ro quiet nvme_load=YES $ARGS"
expect_file systemd-boot /efi/loader/entries/endeavouros-lts.conf "linux   /vmlinuz-linux-lts"
[ "$(grep -c '^options' "$work/systemd-boot-root/efi/loader/entries/endeavouros-lts.conf")" = 1 ] ||
  bad "systemd-boot: the hand-written entry keeps more than one options line"
expect_out systemd-boot "changed entry: /efi/loader/entries/endeavouros-lts.conf"
expect_call systemd-boot "dracut --regenerate-all --force"

# A half-fixed machine: the grub-debian drop-in is in place but grub.cfg was never regenerated
# and the initramfs predates the modprobe.d file.
half=$work/half-root
cp -a "$work/grub-debian-root" "$half"
rm -rf "$half/.doubles"
mkdir -p "$half/.doubles"
printf "menuentry 'Linux' {\n\tlinux\t/boot/vmlinuz root=UUID=x ro quiet splash\n}\n" >"$half/boot/grub/grub.cfg"
touch -d '2020-01-01' "$half/boot/initrd.img-6.17.0-19-generic"
run_env "$half" first "$work/grub-debian-fix.sh" || bad "half-fixed: exited $?"
grep -qxF "update-grub" "$half/.doubles/first.log" || bad "half-fixed: grub.cfg not regenerated"
grep -qxF "update-initramfs -u -k all" "$half/.doubles/first.log" || bad "half-fixed: stale initramfs not rebuilt"
ok "ran a half-fixed grub-debian machine: regenerated grub.cfg and the stale initramfs"

# Removal, groups, udev, sysctl and iommu=pt through grub-debian on the foundation's fixtures.
run_fixture_stack() { # NAME FIXTURE STACK
  local r=$work/$1-root
  rm -rf "$r"
  cp -a "$fixtures/$2" "$r"
  mkdir -p "$r/.doubles" "$r/boot"
  touch -d 2020-01-01 "$r/boot/initrd.img-6.17.0-19-generic"
  seed_kernels "$r"
  install_doubles "$r" update-grub grub-mkconfig update-initramfs usermod grubby dracut
  "$bin" fix --root "$fixtures/$2" --no-runtime --stack "$3" -o "$work/$1-fix.sh" 2>/dev/null || bad "$1: fix failed"
  run_env "$r" first "$work/$1-fix.sh" || bad "$1: run exited $?: $(tail -3 "$r/.doubles/first.out")"
  run_env "$r" second "$work/$1-fix.sh" || bad "$1: second run exited $?"
  [ -z "$(mutating "$r/.doubles/second.log")" ] || bad "$1: second run called $(mutating "$r/.doubles/second.log" | head -1)"
}
run_fixture_stack kfd kfd-no-access grub-debian
expect_call kfd 'usermod -aG render\,video imac'
expect_out kfd "not applied to the running system (HALO_FIX_ROOT is set): udevadm control --reload-rules"
expect_file kfd /etc/udev/rules.d/70-halo-doctor-gpu.rules 'SUBSYSTEM=="kfd", KERNEL=="kfd", GROUP="render", MODE="0660"'
expect_file kfd /etc/group "render:x:992:imac"
expect_file kfd /etc/group.halo-doctor.bak "render:x:992:"
ok "ran kfd-no-access: groups and udev"

run_fixture_stack mi300x mi300x-numa-4021 grub-debian
expect_file mi300x /etc/sysctl.d/90-halo-doctor.conf "kernel.numa_balancing = 0"
expect_out mi300x "not applied to the running system (HALO_FIX_ROOT is set): sysctl -p /etc/sysctl.d/90-halo-doctor.conf"
printf 'GRUB_CMDLINE_LINUX_DEFAULT="quiet iommu=soft"\n' >"$work/grub-test"
# shellcheck disable=SC1090,SC1091
(
  . "$work/grub-test"
  . "$work/mi300x-root/etc/default/grub.d/90-halo-doctor.cfg"
  [ "$GRUB_CMDLINE_LINUX_DEFAULT" = "quiet" ] && [ "$GRUB_CMDLINE_LINUX" = "pci=realloc=off iommu=pt" ]
) || bad "mi300x: the drop-in does not replace iommu=soft with iommu=pt"
ok "ran mi300x-numa-4021: sysctl, iommu=pt and pci=realloc=off"

# The drop-in's filter does not expand patterns: foo=* stays foo=* even where a file matches it.
mkdir -p "$work/globdir"
touch "$work/globdir/foo=bar"
printf 'GRUB_CMDLINE_LINUX_DEFAULT="quiet foo=* iommu=soft"\n' >"$work/grub-test"
# shellcheck disable=SC1090,SC1091
(
  cd "$work/globdir" || exit 1
  . "$work/grub-test"
  . "$work/mi300x-root/etc/default/grub.d/90-halo-doctor.cfg"
  [ "$GRUB_CMDLINE_LINUX_DEFAULT" = "quiet foo=*" ] && [ "$GRUB_CMDLINE_LINUX" = "pci=realloc=off iommu=pt" ]
) || bad "grub drop-in: an argument foo=* was glob-expanded"
ok "grub drop-in keeps foo=* as it is"

run_fixture_stack typo gttsize-typo-5595 grub-debian
printf 'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash amdgpu.gtt_size=122880 vt.handoff=7"\nGRUB_CMDLINE_LINUX="amdgpu.gttsize=1"\n' >"$work/grub-test"
# shellcheck disable=SC1090,SC1091
(
  . "$work/grub-test"
  . "$work/typo-root/etc/default/grub.d/90-halo-doctor.cfg"
  [ "$GRUB_CMDLINE_LINUX_DEFAULT" = "quiet splash vt.handoff=7" ] &&
    [ "$GRUB_CMDLINE_LINUX" = "ttm.page_pool_size=31457280 ttm.pages_limit=31457280" ]
) || bad "gttsize-typo: the drop-in does not remove amdgpu.gtt_size / amdgpu.gttsize and keep the rest"
ok "ran gttsize-typo-5595: misspelled and deprecated arguments removed"

run_fixture_stack env strix-halo-fixed grubby
expect_file env /etc/profile.d/halo-doctor-rocm.sh "unset HSA_OVERRIDE_GFX_VERSION"
(
  export HSA_OVERRIDE_GFX_VERSION=11.5.1
  # shellcheck disable=SC1091
  . "$work/env-root/etc/profile.d/halo-doctor-rocm.sh"
  [ -z "${HSA_OVERRIDE_GFX_VERSION+x}" ]
) || bad "env: sourcing the env file does not unset HSA_OVERRIDE_GFX_VERSION"
ok "ran strix-halo-fixed: env file"

# The undo commands a run prints restore the original files.
grep -q '^to undo this run' "$work/grub-arch-root/.doubles/first.out" || bad "grub-arch: no undo commands printed"
grep -qF "mv -f -- $work/grub-arch-root/etc/default/grub.halo-doctor.bak $work/grub-arch-root/etc/default/grub" \
  "$work/grub-arch-root/.doubles/first.out" || bad "grub-arch: the undo commands do not restore /etc/default/grub"

# The non-root refusal (honest check: no test override, a real unprivileged user).
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  cp "$work/grubby-fix.sh" "$work/refuse.sh"
  chmod 0755 "$work" "$work/refuse.sh"
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env PATH="$doubles:$PATH" bash "$work/refuse.sh" 2>&1)
  code=$?
else
  out=$(env -u HALO_FIX_ROOT PATH="$doubles:$PATH" bash "$work/grubby-fix.sh" 2>&1)
  code=$?
fi
if [ "$code" = 1 ] && grep -q 'run this as root' <<<"$out"; then ok "non-root refused"; else
  bad "non-root: exit $code: $out"
fi

# --- 3. end to end: the TTM failure becomes pending_reboot, exit 4 ------------------------------
e2e=$work/e2e-root
cp -a "$fixtures/strix-halo-default-ttm" "$e2e"
mkdir -p "$e2e/.doubles"
install_doubles "$e2e" grubby dracut
"$bin" fix --root "$e2e" --no-runtime --stack grubby -o "$work/e2e.sh" 2>/dev/null || bad "e2e: fix failed"
env PATH="$doubles:$PATH" HALO_FIX_ROOT="$e2e" HALO_DOUBLE_LOG="$e2e/.doubles/log" HALO_DOUBLE_STATE="$e2e/.doubles" \
  bash "$work/e2e.sh" >/dev/null 2>&1 || bad "e2e: the script failed"
"$bin" check --root "$e2e" --no-runtime --format json >"$work/e2e.json"
code=$?
if [ "$code" = 4 ] && grep -A12 '"id": "ttm-limit-low"' "$work/e2e.json" | grep -q '"pending_reboot": true'; then
  ok "e2e: ttm-limit-low pending_reboot after the fix, check exits 4"
else
  bad "e2e: check exited $code; ttm-limit-low: $(grep -A12 '"id": "ttm-limit-low"' "$work/e2e.json" | tr -d '\n' | head -c 400)"
fi

# --- 4. bad input: clear errors, no script -----------------------------------------------------
expect_error() { # NAME EXPECTED-MESSAGE ARGS...
  local name=$1 msg=$2
  shift 2
  rm -f "$work/bad.sh"
  "$bin" fix --no-runtime "$@" -o "$work/bad.sh" >"$work/bad.out" 2>"$work/bad.err"
  local code=$?
  if [ "$code" = 2 ] && [ ! -e "$work/bad.sh" ] && [ ! -s "$work/bad.out" ] && grep -q -- "$msg" "$work/bad.err"; then
    ok "bad input: $name"
  else
    bad "bad input $name: exit $code, stderr: $(cat "$work/bad.err")"
  fi
}
expect_error "unknown --stack" "stack" --root "$fixtures/stack-grubby" --stack lilo
expect_error "--ttm-limit above MemTotal" "above MemTotal" --root "$fixtures/stack-grubby" --ttm-limit 200
expect_error "--ttm-limit 0" "must be a whole number of GiB > 0" --root "$fixtures/stack-grubby" --ttm-limit 0
expect_error "--ttm-limit not whole" "ttm-limit" --root "$fixtures/stack-grubby" --ttm-limit 1.5
mkdir -p "$work/no-os"
cp -a "$fixtures/strix-halo-default-ttm/." "$work/no-os/"
rm -f "$work/no-os/etc/os-release"
expect_error "no os-release" "no /etc/os-release" --root "$work/no-os" --stack grubby
expect_error "conflicting evidence" "conflicting evidence: grubby (grubby) vs grub-debian (update-grub)" \
  --root "$fixtures/stack-conflict"
expect_error "docker without the host's /" "mount the host's / and pass --host-root" \
  --root "$fixtures/mi300x-docker-rocm-pytorch"
# WSL2 (issue 37): Microsoft's kernel, the Windows driver's GPU: no Linux boot script, even with
# --stack named by hand, and the reason says WSL2.
for wsl in wsl2-strix-halo-rocdxg wsl2-r9700-rocm721-dxg-detection-unset; do
  expect_error "WSL2 ($wsl)" "WSL2: the Linux boot stack (GRUB, TTM, modprobe.d, initramfs) does not apply" \
    --root "$fixtures/$wsl"
done
expect_error "WSL2 with --stack" "WSL2: " --root "$fixtures/wsl2-no-dxg" --stack grub-debian

# --- 5. inside a container: the host's stack, the same steps as on the host (issue 19) ---------
"$bin" fix --no-runtime --root "$fixtures/fedora-host-pending-ttm" -o "$work/host.sh" 2>/dev/null
for box in fedora-toolbox-on-pending-ttm:flatpak-spawn ubuntu-distrobox-on-fedora-pending-ttm:distrobox-host-exec; do
  name=${box%%:*}
  exec_tool=${box##*:}
  "$bin" fix --no-runtime --root "$fixtures/$name" -o "$work/box.sh" 2>"$work/box.err"
  code=$?
  if [ "$code" = 0 ] && cmp -s "$work/host.sh" "$work/box.sh" && grep -q "$exec_tool" "$work/box.err" &&
    grep -q ", boot stack grubby$" "$work/box.sh"; then
    ok "container $name: the host's grubby/dracut script, run with $exec_tool"
  else
    bad "container $name: exit $code, script differs from the host's or no $exec_tool: $(cat "$work/box.err")"
  fi
done
"$bin" fix --no-runtime --root "$fixtures/mi300x-docker-rocm-pytorch" \
  --host-root "$fixtures/mi300x-docker-rocm-pytorch/host" -o "$work/mi.sh" 2>"$work/mi.err"
code=$?
"$bin" fix --no-runtime --root "$fixtures/mi300x-host-tuned" -o "$work/mi-host.sh" 2>/dev/null
if [ "$code" = "$?" ] && { [ ! -e "$work/mi.sh" ] || cmp -s "$work/mi.sh" "$work/mi-host.sh"; }; then
  ok "docker with --host-root: the same plan as on the MI300X host (exit $code)"
else
  bad "docker with --host-root: exit $code: $(cat "$work/mi.err")"
fi

# --- 6. the script a person reads (issue 46) ----------------------------------------------------
# The seed case: one screen of summary naming the file and its line, each command with its
# arguments, the reboot and the undo; and no code for another stack's tools.
"$bin" fix --root "$fixtures/strix-halo-default-ttm" --no-runtime --stack grubby >"$work/seed.sh" 2>/dev/null
summary=$(sed -n '2,/^$/p' "$work/seed.sh" | sed '$d')
for want in "writes /etc/modprobe.d/halo-doctor-ttm.conf:" "options ttm page_pool_size=$P pages_limit=$P" \
  "runs: grubby --update-kernel=ALL --args=ttm.page_pool_size=$P" \
  "runs: grubby --update-kernel=ALL --args=ttm.pages_limit=$P" "runs: dracut --regenerate-all --force" \
  "Then: reboot" "# Undo:" "--force-other-machine" "--dry-run"; do
  grep -qF -- "$want" <<<"$summary" || bad "seed summary lacks '$want'"
done
[ "$(wc -l <<<"$summary")" -le 30 ] || bad "seed summary is $(wc -l <<<"$summary") lines, more than a screen"
for other in rpm-ostree mkinitcpio update-initramfs kernelstub update-grub edit_args udevadm; do
  grep -vE '^[[:space:]]*#' "$work/seed.sh" | grep -q -- "$other" && bad "the grubby script carries code for $other"
done
ok "seed script: summary of $(wc -l <<<"$summary") lines, only grubby and dracut ($(wc -l <"$work/seed.sh") lines)"

# Bound to the machine: another MemTotal or machine-id is refused (exit 3) with the reason and
# nothing changed; --force-other-machine goes on; --dry-run shows what it would do there.
b=$work/bind-root
rm -rf "$b"
cp -a "$fixtures/stack-grubby" "$b"
printf '0123456789abcdef0123456789abcdef\n' >"$b/etc/machine-id"
"$bin" fix --root "$b" --no-runtime -o "$work/bind.sh" 2>/dev/null || bad "bind: fix failed"
mkdir -p "$b/.doubles"
install_doubles "$b"
seed_kernels "$b"
grep -qF "FOR_MACHINE_TAG='$(printf 'halo-doctor fix:%s' 0123456789abcdef0123456789abcdef | sha256sum | cut -c1-16)'" \
  "$work/bind.sh" || bad "bind: the machine tag is not SHA-256 of the machine-id"
grep -q 0123456789abcdef0123456789abcdef "$work/bind.sh" && bad "bind: the script holds the machine-id itself"
printf 'fedcba9876543210fedcba9876543210\n' >"$b/etc/machine-id"
before=$(snapshot "$b")
run_env "$b" other "$work/bind.sh"
code=$?
if [ "$code" = 3 ] && grep -q "written for another machine" "$b/.doubles/other.out" &&
  grep -q "machine-id differs" "$b/.doubles/other.out" && [ "$before" = "$(snapshot "$b")" ] &&
  [ -z "$(mutating "$b/.doubles/other.log")" ]; then
  ok "bind: another machine-id is refused, nothing changed"
else
  bad "bind: another machine-id: exit $code: $(cat "$b/.doubles/other.out")"
fi
sed -i 's/^MemTotal:.*/MemTotal:       65536000 kB/' "$b/proc/meminfo"
run_env "$b" mem "$work/bind.sh"
code=$?
{ [ "$code" = 3 ] && grep -q "MemTotal is 62 GiB here" "$b/.doubles/mem.out"; } ||
  bad "bind: another MemTotal: exit $code: $(cat "$b/.doubles/mem.out")"
run_env "$b" forced "$work/bind.sh" --force-other-machine || bad "bind: --force-other-machine exited $?"
grep -qxF "grubby --update-kernel=ALL --args=ttm.pages_limit=$P" "$b/.doubles/forced.log" ||
  bad "bind: --force-other-machine did not run the fix"

# --dry-run where the stack's tool is missing: what is missing and what it would run, exit 3,
# never bash's "command not found" (127).
m=$work/missing-root
rm -rf "$m"
cp -a "$fixtures/stack-grubby" "$m"
rm -f "$m"/usr/*bin/grubby "$m"/*bin/grubby
mkdir -p "$m/.doubles"
run_env "$m" dry "$work/grubby-fix.sh" --dry-run
code=$?
if [ "$code" = 3 ] && grep -q "grubby is not installed here" "$m/.doubles/dry.out" &&
  grep -qF "grubby --update-kernel=ALL --args=ttm.pages_limit=$P" "$m/.doubles/dry.out" &&
  grep -q "not installed on this system: grubby" "$m/.doubles/dry.out" &&
  ! grep -q "command not found" "$m/.doubles/dry.out"; then
  ok "dry run without grubby: says what is missing and what it would run (exit 3)"
else
  bad "dry run without grubby: exit $code: $(cat "$m/.doubles/dry.out")"
fi
run_env "$m" real "$work/grubby-fix.sh" --force-other-machine
code=$?
{ [ "$code" = 3 ] && [ ! -e "$m/etc/modprobe.d/halo-doctor-ttm.conf" ]; } ||
  bad "without grubby a real run must stop before any change (exit $code)"

# Nothing to fix: says so and exits 0, without asking for --stack.
"$bin" fix --root "$fixtures/no-amd-gpu" --no-runtime >"$work/none.out" 2>"$work/none.err"
code=$?
if [ "$code" = 0 ] && [ ! -s "$work/none.out" ] && grep -q "nothing to fix" "$work/none.err"; then
  ok "nothing to fix: exit 0"
else
  bad "nothing to fix: exit $code: $(cat "$work/none.err")"
fi

# fix --apply and --undo through the binary, on a scratch root (HALO_FIX_ROOT, HALO_FIX_STATE_DIR:
# for tests) with the doubles: no terminal and no --yes is a refusal; --yes runs the very script
# `fix` writes, from a private file whose hash it shows, and keeps its undo; --undo reverses it.
a=$work/apply-root
st=$work/state
rm -rf "$a" "$st"
cp -a "$fixtures/strix-halo-default-ttm" "$a"
mkdir -p "$a/.doubles"
install_doubles "$a" grubby dracut
seed_kernels "$a"
printf '%s\n' "root=UUID=x ro quiet" >"$a/.doubles/args.txt"
apply() {
  env PATH="$doubles:$PATH" HALO_FIX_ROOT="$a" HALO_FIX_STATE_DIR="$st" HALO_FIX_ALLOW_NON_ROOT=1 \
    HALO_DOUBLE_LOG="$a/.doubles/apply.log" HALO_DOUBLE_STATE="$a/.doubles" \
    "$bin" fix --root "$a" --no-runtime --stack grubby "$@" </dev/null
}
"$bin" fix --root "$a" --no-runtime --stack grubby -o "$work/apply-expected.sh" 2>/dev/null
before=$(snapshot "$a")
apply --apply >"$work/apply.out" 2>&1
code=$?
{ [ "$code" = 2 ] && grep -q "no terminal to ask on; pass --yes" "$work/apply.out" &&
  [ "$before" = "$(snapshot "$a")" ]; } || bad "--apply without a terminal or --yes: exit $code: $(cat "$work/apply.out")"
"$bin" fix --root "$fixtures/strix-halo-default-ttm" --no-runtime --stack grubby --apply --yes >"$work/apply-root.out" 2>&1
code=$?
{ [ "$code" = 2 ] && grep -q -- "--apply runs the fix on this machine" "$work/apply-root.out"; } ||
  bad "--apply with --root: exit $code: $(cat "$work/apply-root.out")"
apply --apply --yes >"$work/apply.out" 2>&1 || bad "--apply --yes exited $?: $(tail -5 "$work/apply.out")"
cmp -s "$st/last-fix.sh" "$work/apply-expected.sh" || bad "--apply ran another script than fix writes"
grep -qF "(sha256 $(sha256sum <"$st/last-fix.sh" | cut -d' ' -f1))" "$work/apply.out" || bad "--apply: no hash of the script"
grep -qF "writes /etc/modprobe.d/halo-doctor-ttm.conf:" "$work/apply.out" || bad "--apply: no summary shown"
[ "$(stat -c %a "$st")" = 700 ] || bad "--apply: the state directory is not private"
expect_file apply /etc/modprobe.d/halo-doctor-ttm.conf "$MOD"
grep -qxF "root=UUID=x ro quiet ttm.page_pool_size=$P ttm.pages_limit=$P" "$a/.doubles/args.txt" ||
  bad "--apply: kernel arguments $(cat "$a/.doubles/args.txt")"
[ -f "$st/undo.sh" ] || bad "--apply kept no undo"
apply --undo --yes >"$work/undo.out" 2>&1 || bad "--undo exited $?: $(cat "$work/undo.out")"
[ ! -e "$a/etc/modprobe.d/halo-doctor-ttm.conf" ] || bad "--undo left the modprobe.d file"
grep -qxF "root=UUID=x ro quiet" "$a/.doubles/args.txt" || bad "--undo: kernel arguments $(cat "$a/.doubles/args.txt")"
apply --undo --yes >"$work/undo2.out" 2>&1
code=$?
{ [ "$code" = 2 ] && grep -q "nothing to undo" "$work/undo2.out"; } || bad "a second --undo: exit $code"
ok "--apply --yes ran the written script and kept its undo; --undo reversed it"

# --- 7. what the user already did (issue 46): amd-ttm's /etc/modprobe.d/ttm.conf ----------------
# A sound 120 GiB waiting for a reboot: no new value, no second file, no kernel arguments; only
# the initramfs and the reboot.
"$bin" fix --root "$fixtures/fedora-host-pending-ttm" --no-runtime >"$work/pending.sh" 2>/dev/null
if grep -q "halo-doctor-ttm.conf\|--args=\|edit_modprobe \"" "$work/pending.sh" ||
  ! grep -q "runs: dracut --regenerate-all --force" "$work/pending.sh" ||
  ! grep -qF "keep your ttm.pages_limit of 120.00 GiB" "$work/pending.sh"; then
  bad "pending 120 GiB: the fix changes the user's limit: $(sed -n '2,/^$/p' "$work/pending.sh")"
else
  ok "pending 120 GiB from amd-ttm: only the initramfs and the reboot"
fi
# A limit too low in ttm.conf: the fix edits that file, never writes a competing one.
u=$work/user-root
rm -rf "$u"
cp -a "$fixtures/fedora-host-pending-ttm" "$u"
printf '%s\n' "# mine" "options ttm pages_limit=8388608" >"$u/etc/modprobe.d/ttm.conf"
"$bin" fix --root "$u" --no-runtime -o "$work/user.sh" 2>/dev/null || bad "user file: fix failed"
mkdir -p "$u/.doubles"
install_doubles "$u"
seed_kernels "$u"
printf '%s\n' "root=UUID=x ro" >"$u/.doubles/args.txt"
run_env "$u" first "$work/user.sh" || bad "user file: run exited $?: $(tail -3 "$u/.doubles/first.out")"
expect_file user /etc/modprobe.d/ttm.conf "options ttm pages_limit=$P page_pool_size=$P"
expect_file user /etc/modprobe.d/ttm.conf "# mine"
[ ! -e "$u/etc/modprobe.d/halo-doctor-ttm.conf" ] || bad "user file: a competing halo-doctor-ttm.conf was written"
expect_no_call user '^grubby --update-kernel'
grep -q -- "--args=" "$work/user.sh" && bad "user file: kernel arguments would override the user's file"
ok "a limit in the user's ttm.conf is edited there"

exit $fail
