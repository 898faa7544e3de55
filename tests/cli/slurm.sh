#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# halo-doctor slurm against a real Slurm (Debian 12: slurm-wlm 22.05 and munge): a single-node
# cluster on localhost (munged with its own key and socket; slurmctld and slurmd with a generated
# slurm.conf, their own ports and state in a temporary directory), the installed wrappers as
# HealthCheckProgram and Prolog over fixture roots, and `scontrol show node` as the judge:
#   1. an unhealthy root drains the node with a reason naming the failing rule;
#   2. a healthy root resumes it;
#   3. a node an admin drained stays drained, with the admin's reason, unhealthy or healthy;
#   4. a doctor that cannot run (a bad policy) or cannot judge (ROCr hangs) leaves the node alone;
#   5. with the prolog wrapper a job on a healthy root runs (and the epilog wrapper runs after it),
#      and a job on a failing root never runs: the node drains with halo-doctor's reason and the
#      job is requeued held;
#   6. srun runs `halo-doctor capture -o DIR/%N.tar.gz` on the node, and the bundle replays.
# Every daemon is started here and stopped by its pid on every exit path. Skips (77) when not
# root or without slurm-wlm/munge. Fixed budget: every wait is bounded and the test stops at 170 s. Usage: slurm.sh BUILD_DIR HSA_REPLAY_LIBRARY FIXTURES_DIR
# The functions below run from traps and through wait_until, which shellcheck cannot follow.
# shellcheck disable=SC2317
set -u
build=$(realpath "$1")
replay=$(realpath "$2")
fixtures=$(realpath "$3")
skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "not root: slurmd runs HealthCheckProgram and Prolog as root"
for p in munged slurmctld slurmd scontrol sbatch srun; do
  command -v "$p" >/dev/null || skip "$p is not installed (apt-get install slurm-wlm munge)"
done

fail=0
bad() {
  echo "FAIL $*"
  fail=1
}
tmp=$(mktemp -d /tmp/halo-slurm.XXXXXX)
pids=()
stop_daemons() {
  local pid n
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for ((n = 0; n < 50; n++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  pids=()
}
cleanup() {
  stop_daemons
  if [ "$fail" != 0 ] && [ -d "$tmp" ]; then
    echo "--- slurmctld.log (tail)"
    tail -n 15 "$tmp/slurmctld.log" 2>/dev/null
    echo "--- slurmd.log (tail)"
    tail -n 25 "$tmp/slurmd.log" 2>/dev/null
    echo "--- health checks that failed, by time"
    grep 'health_check failed' "$tmp/slurmd.log" 2>/dev/null | cut -c1-160
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# A fixed time budget: every wait below is bounded, and the whole test gives up at 170 s.
start=$SECONDS
budget=170
over_budget() { [ $((SECONDS - start)) -ge $budget ]; }

# Two free TCP ports on localhost.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports=()
for ((p = 20000 + ($$ % 20000); ${#ports[@]} < 2 && p < 65000; p++)); do
  port_free "$p" && ports+=("$p")
done

# The installed layout: the wrappers find the binary and etc/halo-doctor/slurm.env from their place.
cmake --install "$build" --prefix "$tmp/usr" >"$tmp/install.log" 2>&1 || {
  cat "$tmp/install.log"
  bad "cmake --install"
  exit 1
}
hc="$tmp/usr/libexec/halo-doctor/slurm-health-check"
prolog="$tmp/usr/libexec/halo-doctor/slurm-prolog"
epilog="$tmp/usr/libexec/halo-doctor/slurm-epilog"
bin="$tmp/usr/bin/halo-doctor"
mkdir -p "$tmp/usr/etc/halo-doctor" "$tmp/state" "$tmp/spool" "$tmp/reports" "$tmp/captures"
env_file="$tmp/usr/etc/halo-doctor/slurm.env"
node=halonode
host=$(hostname -s)

# The options of each wrapper for the next runs (read by the wrapper at every run).
configure() { # HEALTH_CHECK_OPTIONS PROLOG_AND_EPILOG_OPTIONS [EXTRA SHELL LINE]
  cat >"$env_file.tmp" <<EOF
SLURM_CONF=$tmp/slurm.conf
HALO_DOCTOR_SLURM_OPTIONS="--no-syslog --report-dir $tmp/reports --node $node"
HALO_DOCTOR_SLURM_HEALTH_CHECK_OPTIONS="$1"
HALO_DOCTOR_SLURM_PROLOG_OPTIONS="$2"
HALO_DOCTOR_SLURM_EPILOG_OPTIONS="$2"
${3:-}
EOF
  mv "$env_file.tmp" "$env_file"
}
unhealthy="--root $fixtures/strix-halo-default-ttm --no-runtime" # ttm-limit-low fails (error)
healthy="--root $fixtures/strix-halo-fixed --no-runtime"         # warnings and info only
no_access="--root $fixtures/kfd-no-access --no-runtime"          # kfd-access, render-node-access fail
configure "--dry-run $healthy" "$healthy"

# munge: its own key, socket, pid and log files; -F keeps it in the foreground, so $! is its pid.
dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$tmp/munge.key"
munged -F -f --socket="$tmp/munge.sock" --key-file="$tmp/munge.key" --pid-file="$tmp/munged.pid" \
  --log-file="$tmp/munged.log" --seed-file="$tmp/munged.seed" >/dev/null 2>&1 &
pids+=($!)

# slurm.conf for one node on localhost. In a container or sandbox without cgroups and systemd:
# proctrack/linuxproc, task/none, no accounting, root as SlurmUser and SlurmdUser (docs/slurm.md).
cat >"$tmp/slurm.conf" <<EOF
ClusterName=halotest
SlurmctldHost=localhost
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SchedulerType=sched/builtin
ReturnToService=2
HealthCheckProgram=$hc
HealthCheckInterval=2
Prolog=$prolog
Epilog=$epilog
NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$tmp/slurm.conf"
for ((n = 0; n < 50; n++)); do
  [ -S "$tmp/munge.sock" ] && break
  sleep 0.1
done
slurmctld -D -f "$SLURM_CONF" >"$tmp/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$tmp/slurmd.out" 2>&1 &
pids+=($!)

# scontrol show node's State= and Reason= (without the [user@time] stamp).
state() { scontrol -o show node "$node" 2>/dev/null | grep -o 'State=[^ ]*' | cut -d= -f2; }
reason() { scontrol -o show node "$node" 2>/dev/null | sed -n 's/.* Reason=\(.*\) \[[^]]*\]$/\1/p'; }
wait_until() { # SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds
  local limit=$1 what=$2 n
  shift 2
  for ((n = 0; n < limit * 5; n++)); do
    "$@" && return 0
    over_budget && break
    sleep 0.2
  done
  bad "$what (after ${limit} s: state $(state), reason '$(reason)')"
  return 1
}
# Health checks that ran since the last mark, counted in slurmd's log: a non-zero status is
# logged as "health_check failed: rc:N output:SUMMARY" (src/slurmd/slurmd/slurmd.c).
mark() { mark_at=$(grep -c 'health_check failed' "$tmp/slurmd.log" 2>/dev/null); }
ran_since_mark() { # PATTERN: a failed health check whose output matches, after the mark
  [ "$(grep 'health_check failed' "$tmp/slurmd.log" 2>/dev/null | tail -n +$((mark_at + 1)) | grep -c -- "$1")" -ge 2 ]
}
is_drained_by_us() { [[ $(state) == *DRAIN* ]] && [[ $(reason) == "halo-doctor: "* ]]; }
is_idle() { [ "$(state)" = IDLE ] && [ -z "$(reason)" ]; }

if ! wait_until 20 "the node registers" is_idle; then
  cat "$tmp/slurmctld.out" "$tmp/slurmd.out" | tail -20
  exit 1
fi
echo "cluster up in $((SECONDS - start)) s: $(scontrol -o show node "$node" | grep -o 'State=[^ ]*')"

# 1. Unhealthy -> drained, the reason names the rule; the full report is in --report-dir.
configure "$unhealthy" "$healthy"
if wait_until 15 "unhealthy root drains the node" is_drained_by_us; then
  [ "$(reason)" = "halo-doctor: ttm-limit-low" ] || bad "drain reason '$(reason)', expected 'halo-doctor: ttm-limit-low'"
  echo "ok 1: $(state) Reason=$(reason)"
fi
grep -q 'FAIL  ttm-limit-low' "$tmp/reports/slurm-health-check.txt" 2>/dev/null || bad "no full report in --report-dir"

# 2. Healthy -> resumed.
configure "$healthy" "$healthy"
wait_until 15 "healthy root resumes the node" is_idle && echo "ok 2: $(state)"

# 3. An admin's drain stays, on an unhealthy and then a healthy root.
scontrol update nodename="$node" state=drain reason="admin: bad DIMM slot 3"
mark
configure "$unhealthy" "$healthy"
if wait_until 15 "health checks run on the admin-drained node" ran_since_mark "set by someone else"; then
  [ "$(reason)" = "admin: bad DIMM slot 3" ] || bad "the admin's reason was replaced by '$(reason)'"
  [[ $(state) == *DRAIN* ]] || bad "the admin's drain was undone: $(state)"
fi
configure "$healthy" "$healthy"
sleep 5 # two health-check intervals; a clean run logs nothing in slurmd.log
if [ "$(reason)" != "admin: bad DIMM slot 3" ] || [[ $(state) != *DRAIN* ]]; then
  bad "a healthy check resumed the admin's drain: $(state) '$(reason)'"
fi
echo "ok 3: $(state) Reason=$(reason)"
scontrol update nodename="$node" state=resume
wait_until 10 "the admin resumes the node" is_idle

# 4a. A bad policy on an unhealthy root: the node is not drained.
printf '{"thresholds": {"reserve_gib": "lots"}}\n' >"$tmp/bad-policy.json"
mark
configure "$unhealthy --policy $tmp/bad-policy.json" "$healthy"
if wait_until 15 "health checks run with the bad policy" ran_since_mark "policy or rules error"; then
  is_idle || bad "a bad policy changed the node: $(state) '$(reason)'"
  echo "ok 4a: $(state) after $(grep -c 'policy or rules error' "$tmp/slurmd.log") bad-policy runs"
fi
# ... and with --drain-on-internal-error a strict site drains it.
configure "$unhealthy --policy $tmp/bad-policy.json --drain-on-internal-error" "$healthy"
if wait_until 15 "--drain-on-internal-error drains" is_drained_by_us; then
  [ "$(reason)" = "halo-doctor: could not check: policy or rules error" ] || bad "internal-error reason '$(reason)'"
fi
configure "$healthy" "$healthy"
wait_until 15 "a healthy run resumes the internal-error drain" is_idle

# 4b. ROCr hangs (a replay library that never answers): the node is not drained.
mark
configure "--root $fixtures/strix-halo-default-ttm --hsa-library $replay --runtime-timeout 1" "$healthy" \
  "export HALO_REPLAY_MODE=hang HALO_REPLAY_CAPTURE=$fixtures/../replay/captures/strix-halo-120g.json"
if wait_until 20 "health checks run with a hanging ROCr" ran_since_mark "a probe did not finish"; then
  is_idle || bad "a hanging runtime probe changed the node: $(state) '$(reason)'"
  echo "ok 4b: $(state) with a hanging ROCr"
fi

# 5. Prolog. The health check only looks (--dry-run), so the prolog alone acts.
configure "--dry-run $healthy" "$healthy"
sbatch -o "$tmp/job-ok.out" --wrap "touch $tmp/job-ok-ran" >/dev/null || bad "sbatch"
wait_until 20 "a job on a healthy node runs" test -e "$tmp/job-ok-ran" && echo "ok 5a: the job ran"
wait_until 10 "the epilog wrapper runs after the job" test -s "$tmp/reports/slurm-epilog.txt"
wait_until 10 "the node is idle after the job" is_idle
configure "--dry-run $healthy" "$no_access"
job=$(sbatch --parsable -o "$tmp/job-bad.out" --wrap "touch $tmp/job-bad-ran")
held() { squeue -h -j "$job" -o '%r' 2>/dev/null | grep -qi held; }
if wait_until 20 "the prolog drains the node" is_drained_by_us; then
  [ "$(reason)" = "halo-doctor: kfd-access,render-node-access" ] || bad "prolog drain reason '$(reason)'"
fi
wait_until 15 "the job is requeued held" held
[ -e "$tmp/job-bad-ran" ] && bad "the job ran on a failing node"
grep -q 'Error running slurm prolog' "$tmp/job-bad.out" 2>/dev/null ||
  bad "the job output does not show the prolog failure: $(cat "$tmp/job-bad.out" 2>/dev/null)"
grep -q 'FAIL  kfd-access' "$tmp/reports/slurm-prolog.txt" 2>/dev/null || bad "no prolog report in --report-dir"
# The epilog that follows the failed prolog judges the same node: it must not resume it.
sleep 3
is_drained_by_us || bad "the node did not stay drained after the failed prolog: $(state) '$(reason)'"
echo "ok 5b: job $job $(squeue -h -j "$job" -o '%T %r'), node $(state) Reason=$(reason)"
scancel "$job" 2>/dev/null
configure "--dry-run $healthy" "$healthy"
[[ $(state) == *DRAIN* ]] && scontrol update nodename="$node" state=resume

# 6. One capture bundle per node through srun into a shared directory, then replayed.
if wait_until 10 "the node is idle for srun" is_idle; then
  if timeout 30 srun --nodes=1 --ntasks-per-node=1 "$bin" capture --root "$fixtures/strix-halo-default-ttm" \
    --no-runtime -o "$tmp/captures/%N.tar.gz" >"$tmp/srun.out" 2>&1; then
    if [ -s "$tmp/captures/$node.tar.gz" ]; then
      "$bin" check --bundle "$tmp/captures/$node.tar.gz" --no-runtime --format json >"$tmp/replay.json"
      code=$?
      [ "$code" = 1 ] || bad "replayed bundle: exit $code, expected 1"
      grep -q '"id": "ttm-limit-low"' "$tmp/replay.json" || bad "replayed bundle lacks ttm-limit-low"
      echo "ok 6: srun wrote $(ls "$tmp/captures")"
    else
      bad "srun capture wrote no $node.tar.gz: $(ls "$tmp/captures")"
    fi
  else
    bad "srun capture failed: $(cat "$tmp/srun.out")"
  fi
fi

echo "took $((SECONDS - start)) s"
[ $fail = 0 ] && echo "slurm: all ok"
exit $fail
