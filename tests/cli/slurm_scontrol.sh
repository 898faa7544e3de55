#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# halo-doctor slurm with recording scontrol doubles (no Slurm, no root; the real Slurm is
# tests/cli/slurm.sh): which scontrol commands it runs for which verdict and node state, the node
# name it picks, the prolog's rule selection, and what it does when scontrol hangs or fails or the
# doctor cannot judge. Usage: slurm_scontrol.sh HALO_DOCTOR FIXTURES_DIR HSA_REPLAY_LIBRARY
set -u
bin=$(realpath "$1")
fixtures=$(realpath "$2")
replay=$(realpath "$3")
fail=0
bad() {
  echo "FAIL $*"
  fail=1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The double: `-o show node [NAME]` prints $tmp/node (NAME must match, like scontrol's "Node X not
# found" exit 1); `update ...` is recorded in $tmp/calls and exits $UPDATE_STATUS; with HANG set
# it never answers.
cat >"$tmp/scontrol" <<'EOF'
#!/bin/sh
dir=$(dirname "$0")
printf '%s\n' "$*" >>"$dir/calls"
[ -n "${HANG:-}" ] && exec sleep 60
if [ "$1" = -o ] && [ "$2" = show ]; then
  if [ $# -ge 4 ] && ! grep -q "^NodeName=$4 " "$dir/node"; then
    echo "Node $4 not found"
    exit 1
  fi
  cat "$dir/node"
  exit 0
fi
exit "${UPDATE_STATUS:-0}"
EOF
chmod +x "$tmp/scontrol"
idle='NodeName=n1 Arch=x86_64 NodeAddr=10.0.0.1 NodeHostName=n1 State=IDLE ThreadsPerCore=1 Partitions=gpu'
set_node() { printf '%s\n' "$1" >"$tmp/node"; }
common=(--scontrol "$tmp/scontrol" --no-syslog --report-dir "$tmp/reports" --no-runtime)
unhealthy=(--root "$fixtures/strix-halo-default-ttm")
healthy=(--root "$fixtures/strix-halo-fixed")
no_access=(--root "$fixtures/kfd-no-access")
run() { # EXPECTED_EXIT DESCRIPTION ARGS...: runs halo-doctor slurm ARGS, output in $tmp/out
  local want=$1 what=$2
  shift 2
  : >"$tmp/calls"
  "$bin" slurm "$@" >"$tmp/out" 2>"$tmp/err"
  code=$?
  [ "$code" = "$want" ] || bad "$what: exit $code, expected $want: $(cat "$tmp/out" "$tmp/err")"
}
updates() { grep '^update' "$tmp/calls"; }

# Drain with the failing rule's id; the report goes to --report-dir.
set_node "$idle"
run 1 "unhealthy health-check" health-check --node n1 "${common[@]}" "${unhealthy[@]}"
[ "$(updates)" = "update nodename=n1 state=drain reason=halo-doctor: ttm-limit-low" ] || bad "drain call: $(updates)"
grep -q 'FAIL  ttm-limit-low' "$tmp/reports/slurm-health-check.txt" || bad "no text report"
grep -q '"id": "ttm-limit-low"' "$tmp/reports/slurm-health-check.json" || bad "no JSON report"

# Already drained by us with this reason: nothing to write. Drained by an admin: left alone.
set_node "NodeName=n1 State=IDLE+DRAIN Reason=halo-doctor: ttm-limit-low [root@2026-11-24T08:25:13]"
run 1 "already drained" health-check --node n1 "${common[@]}" "${unhealthy[@]}"
[ -z "$(updates)" ] || bad "rewrote its own reason: $(updates)"
set_node "NodeName=n1 State=IDLE+DRAIN Reason=ops: RMA [alice@2026-11-24T08:25:13]"
run 1 "admin-drained, unhealthy" health-check --node n1 "${common[@]}" "${unhealthy[@]}"
[ -z "$(updates)" ] || bad "touched an admin's drain: $(updates)"
grep -q 'set by someone else' "$tmp/out" || bad "no word about the admin's drain: $(cat "$tmp/out")"
run 0 "admin-drained, healthy" health-check --node n1 "${common[@]}" "${healthy[@]}"
[ -z "$(updates)" ] || bad "resumed an admin's drain: $(updates)"

# Resume only our own drain.
set_node "NodeName=n1 State=IDLE+DRAIN Reason=halo-doctor: ttm-limit-low [root@2026-11-24T08:25:13]"
run 0 "healthy after our drain" health-check --node n1 "${common[@]}" "${healthy[@]}"
[ "$(updates)" = "update nodename=n1 state=resume" ] || bad "resume call: $(updates)"

# Issue 44 item 5: a run lifts only the drains it judged. The epilog evaluates the volatile rules
# only, so a health check's ttm-limit-low drain stays, whether TTM is still low or not; an epilog
# that evaluated amdgpu-gpu-hang and found it passing lifts that drain; a "could not check" drain
# names no rule, so only a health check of every rule lifts it.
set_node "NodeName=n1 State=IDLE+DRAIN Reason=halo-doctor: ttm-limit-low [root@2026-11-24T08:25:13]"
for root in unhealthy healthy; do
  declare -n r=$root
  run 0 "epilog, $root, health check's drain" epilog --node n1 "${common[@]}" "${r[@]}"
  [ -z "$(updates)" ] || bad "the epilog ($root) lifted a drain it did not judge: $(updates)"
  grep -q 'kept drained: this epilog did not evaluate and pass ttm-limit-low' "$tmp/out" ||
    bad "the epilog ($root) did not say why the drain stays: $(cat "$tmp/out")"
  unset -n r
done
run 0 "prolog, healthy, health check's drain" prolog --node n1 "${common[@]}" "${healthy[@]}"
[ -z "$(updates)" ] || bad "the prolog lifted a drain it did not judge: $(updates)"
run 0 "health-check --only another rule" health-check --node n1 --only kfd-access "${common[@]}" "${healthy[@]}"
[ -z "$(updates)" ] || bad "a health check of another rule lifted the drain: $(updates)"
set_node "NodeName=n1 State=IDLE+DRAIN Reason=halo-doctor: amdgpu-gpu-hang [root@2026-11-24T08:25:13]"
# strix-halo-fixed has no kernel log in its root, so there amdgpu-gpu-hang skips, and a skip lifts
# nothing: a copy with a clean captured kernel log (ROOT/.halo/dmesg.txt, amdgpu's boot lines) is a
# root where the epilog judges the rule and finds it passing.
cp -a "$fixtures/strix-halo-fixed" "$tmp/clean-log"
printf '%s\n' '[    0.000000] Linux version 6.17.4-200.fc42.x86_64' \
  '[    4.112233] [drm] amdgpu kernel modesetting enabled.' >"$tmp/clean-log/.halo/dmesg.txt"
run 0 "epilog, clean kernel log, its own drain" epilog --node n1 "${common[@]}" --root "$tmp/clean-log"
[ "$(updates)" = "update nodename=n1 state=resume" ] || bad "the epilog kept a drain it judged passing: $(updates) $(cat "$tmp/out")"
set_node "NodeName=n1 State=IDLE+DRAIN Reason=halo-doctor: could not check: timed out [root@2026-11-24T08:25:13]"
run 0 "prolog, healthy, could-not-check drain" prolog --node n1 "${common[@]}" "${healthy[@]}"
[ -z "$(updates)" ] || bad "the prolog lifted a could-not-check drain: $(updates)"
run 0 "health check, healthy, could-not-check drain" health-check --node n1 "${common[@]}" "${healthy[@]}"
[ "$(updates)" = "update nodename=n1 state=resume" ] || bad "a full health check kept a could-not-check drain: $(updates)"

# --dry-run reads but never writes.
set_node "$idle"
run 1 "dry run" health-check --node n1 --dry-run "${common[@]}" "${unhealthy[@]}"
[ -z "$(updates)" ] || bad "--dry-run ran $(updates)"
grep -q 'dry run: not running .*state=drain reason=halo-doctor: ttm-limit-low' "$tmp/out" || bad "dry run said: $(cat "$tmp/out")"

# The node name: SLURMD_NODENAME, else the node whose NodeHostName is this host's short name.
set_node "NodeName=gpu42 NodeHostName=$(hostname -s) State=IDLE"
SLURMD_NODENAME=gpu42 run 1 "SLURMD_NODENAME" health-check "${common[@]}" "${unhealthy[@]}"
grep -q '^update nodename=gpu42 ' "$tmp/calls" || bad "SLURMD_NODENAME not used: $(cat "$tmp/calls")"
run 1 "node from the host name" health-check "${common[@]}" "${unhealthy[@]}"
grep -qx -- '-o show node' "$tmp/calls" || bad "did not list the nodes to find this host's"
grep -q '^update nodename=gpu42 ' "$tmp/calls" || bad "NodeHostName not matched: $(cat "$tmp/calls")"

# The prolog evaluates the volatile rules only: ttm-limit-low (boot-time) does not stop a job,
# kfd-access does; --only and the policy's slurm.prolog choose others.
set_node "$idle"
run 0 "prolog, boot-time failure only" prolog --node n1 "${common[@]}" "${unhealthy[@]}"
[ -z "$(updates)" ] || bad "prolog acted on a boot-time rule: $(updates)"
run 1 "prolog, no device access" prolog --node n1 "${common[@]}" "${no_access[@]}"
[ "$(updates)" = "update nodename=n1 state=drain reason=halo-doctor: kfd-access,render-node-access" ] || bad "prolog drain: $(updates)"
run 1 "prolog --only" prolog --node n1 --only ttm-limit-low "${common[@]}" "${unhealthy[@]}"
printf '{"slurm": {"prolog": ["ttm-limit-low"]}}\n' >"$tmp/policy.json"
run 1 "prolog, policy's slurm.prolog" prolog --node n1 --policy "$tmp/policy.json" "${common[@]}" "${unhealthy[@]}"
run 0 "epilog, boot-time failure only" epilog --node n1 "${common[@]}" "${unhealthy[@]}"
# A job hung the GPU (ring timeout and reset in the kernel log): the epilog drains the node.
run 1 "epilog after a GPU hang" epilog --node n1 "${common[@]}" --root "$fixtures/strix-halo-gpu-hang"
[ "$(updates)" = "update nodename=n1 state=drain reason=halo-doctor: amdgpu-gpu-hang" ] || bad "epilog drain after a hang: $(updates)"

# Pending reboot: the TTM fix is in modprobe.d but not active yet (check exits 4).
cp -a "$fixtures/strix-halo-default-ttm" "$tmp/pending-root"
mkdir -p "$tmp/pending-root/etc/modprobe.d"
echo "options ttm pages_limit=31719424 page_pool_size=31719424" >"$tmp/pending-root/etc/modprobe.d/halo-doctor-ttm.conf"
pending=(--root "$tmp/pending-root")
"$bin" check "${pending[@]}" --no-runtime >/dev/null 2>&1
code=$?
[ "$code" = 4 ] || bad "the pending-reboot root: check exits $code, expected 4"
run 4 "pending reboot" health-check --node n1 "${common[@]}" "${pending[@]}"
[ "$(updates)" = "update nodename=n1 state=drain reason=halo-doctor: reboot pending: ttm-limit-low" ] || bad "pending drain: $(updates)"
run 4 "pending reboot, leave" health-check --node n1 --pending-reboot leave "${common[@]}" "${pending[@]}"
[ -z "$(updates)" ] || bad "--pending-reboot leave drained: $(updates)"

# The doctor cannot judge (bad policy): the node is left alone; a strict site drains it.
printf '{"thresholds": {"reserve_gib": "lots"}}\n' >"$tmp/bad.json"
run 70 "bad policy, health-check" health-check --node n1 --policy "$tmp/bad.json" "${common[@]}" "${unhealthy[@]}"
[ -z "$(updates)" ] || bad "a bad policy changed the node: $(updates)"
grep -q 'reserve_gib' "$tmp/out" || bad "the policy error is not in the summary: $(cat "$tmp/out")"
run 0 "bad policy, prolog" prolog --node n1 --policy "$tmp/bad.json" "${common[@]}" "${unhealthy[@]}"
run 70 "bad policy, --drain-on-internal-error" health-check --node n1 --policy "$tmp/bad.json" \
  --drain-on-internal-error "${common[@]}" "${unhealthy[@]}"
[ "$(updates)" = "update nodename=n1 state=drain reason=halo-doctor: could not check: policy or rules error" ] || bad "strict drain: $(updates)"

# ROCr hangs or crashes (the replay library): the doctor cannot judge the runtime, so the node is
# left alone although hsa-runtime-init fails; the prolog lets the job run.
export HALO_REPLAY_CAPTURE="$fixtures/../replay/captures/strix-halo-120g.json"
rocr=(--root "$fixtures/strix-halo-fixed" --hsa-library "$replay" --runtime-timeout 0.5)
for mode in hang crash; do
  HALO_REPLAY_MODE=$mode run 70 "ROCr $mode" health-check --node n1 --scontrol "$tmp/scontrol" \
    --no-syslog --report-dir "$tmp/reports" "${rocr[@]}"
  [ -z "$(updates)" ] || bad "a ROCr $mode changed the node: $(updates)"
  grep -q 'a probe did not finish' "$tmp/out" || bad "ROCr $mode: $(cat "$tmp/out")"
  grep -q 'probe hsa: the ROCr child process' "$tmp/out" || bad "ROCr $mode not in the summary: $(cat "$tmp/out")"
  HALO_REPLAY_MODE=$mode run 0 "ROCr $mode, prolog" prolog --node n1 --scontrol "$tmp/scontrol" \
    --no-syslog --report-dir "$tmp/reports" "${rocr[@]}"
done
HALO_REPLAY_MODE=hang run 70 "ROCr hangs, strict site" health-check --node n1 --scontrol "$tmp/scontrol" \
  --no-syslog --report-dir "$tmp/reports" --drain-on-internal-error "${rocr[@]}"
[ "$(updates)" = "update nodename=n1 state=drain reason=halo-doctor: could not check: a probe did not finish" ] ||
  bad "strict drain on a hung ROCr: $(updates)"

# scontrol that fails or hangs: nothing changed, exit 70, and the hang is cut at its limit.
UPDATE_STATUS=1 run 70 "scontrol update fails" health-check --node n1 "${common[@]}" "${unhealthy[@]}"
grep -q 'scontrol update failed' "$tmp/out" || bad "update failure not reported: $(cat "$tmp/out")"
t0=$SECONDS
HANG=1 run 70 "scontrol hangs" health-check --node n1 --timeout 6 --scontrol-timeout 1 "${common[@]}" "${unhealthy[@]}"
[ $((SECONDS - t0)) -le 5 ] || bad "a hanging scontrol held the run $((SECONDS - t0)) s"
HANG=1 run 1 "scontrol hangs in the prolog: the job is still kept off" prolog --node n1 --scontrol-timeout 0.5 "${common[@]}" "${no_access[@]}"
run 70 "scontrol missing" health-check --node n1 --scontrol /nonexistent/scontrol --no-syslog --no-runtime "${unhealthy[@]}"

[ $fail = 0 ] && echo "slurm (scontrol doubles): all ok"
exit $fail
