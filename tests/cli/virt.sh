#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where the doctor runs, checked against the real systemd-detect-virt (systemd package) on this
# machine: a VM and a container kind that systemd sees must not be reported as bare metal, and
# "none" must stay none. The doctor reads only files (DMI, /proc/cpuinfo, container markers), so
# it may name a hypervisor less precisely ("vm-other" where systemd reads the CPUID vendor leaf),
# never wrongly. Skipped (77) without systemd-detect-virt.
set -u
bin=$1
command -v systemd-detect-virt >/dev/null || { echo "skip: no systemd-detect-virt"; exit 77; }
json=$("$bin" facts --format json --no-runtime) || { echo "FAIL: facts exited $?"; exit 1; }
fact() { printf '%s' "$json" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['facts'].get('$1',{}).get('value',''))"; }
fail=0
vm=$(systemd-detect-virt --vm || true)
ours=$(fact host.virtualization)
if [ "$vm" = none ] && [ "$ours" != none ] && [ -n "$ours" ]; then
  echo "FAIL: systemd-detect-virt --vm says none, halo-doctor says $ours"; fail=1
elif [ "$vm" != none ] && { [ "$ours" = none ] || [ -z "$ours" ]; }; then
  echo "FAIL: systemd-detect-virt --vm says $vm, halo-doctor says '$ours'"; fail=1
else
  echo "ok VM: systemd-detect-virt '$vm', halo-doctor '$ours'"
fi
ct=$(systemd-detect-virt --container || true)
runs_in=$(fact host.runs_in)
if [ "$ct" = none ] && [ "$runs_in" != host ]; then
  echo "FAIL: systemd-detect-virt --container says none, halo-doctor says $runs_in"; fail=1
elif [ "$ct" != none ] && [ "$runs_in" = host ]; then
  echo "FAIL: systemd-detect-virt --container says $ct, halo-doctor says host"; fail=1
else
  echo "ok container: systemd-detect-virt '$ct', halo-doctor '$runs_in'"
fi
exit $fail
