#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CI and fleet outputs of the real binary over every fixture root:
# - prometheus output passes `promtool check metrics` (Debian package prometheus); the alerting
#   rule example passes `promtool check rules` and its unit tests;
# - junit output is well-formed XML (xmllint, Debian package libxml2-utils) with one testcase per
#   result of the JSON report;
# - npd prints one line and exits 0 OK / 1 problem / 2 unknown;
# - --output FORMAT:PATH writes several reports in one run, at most one on stdout;
# - --policy waives, expires and reports errors with file:line.
# A missing promtool or xmllint FAILS: CI installs them.
set -u
bin=$(realpath "$1")
fixtures=$(realpath "$2")
docs=$(realpath "$3")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL $*"; fail=1; }

for tool in promtool xmllint; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed (apt-get install prometheus libxml2-utils)"; exit 1; }
done

for dir in "$fixtures"/*/; do
  [ -f "$dir/README.md" ] || continue
  name=$(basename "$dir")
  "$bin" check --root "$dir" --no-runtime --format json \
    --output "prometheus:$tmp/$name.prom" --output "junit:$tmp/$name.xml" >"$tmp/$name.json"
  code=$?
  want=$(sed -nE 's/^  "exit_code": ([0-9]+).*/\1/p' "$tmp/$name.json")
  [ "$code" = "$want" ] || bad "$name: exit code $code with --output, JSON says $want"
  promtool check metrics <"$tmp/$name.prom" >"$tmp/promtool.out" 2>&1 || { bad "$name: promtool check metrics"; cat "$tmp/promtool.out"; }
  grep -q '^halo_doctor_rule_failed{' "$tmp/$name.prom" || bad "$name: no halo_doctor_rule_failed samples"
  grep -q "^halo_doctor_exit_code $code\$" "$tmp/$name.prom" || bad "$name: halo_doctor_exit_code is not $code"
  xmllint --noout "$tmp/$name.xml" || bad "$name: junit is not well-formed XML"
  results=$(grep -c '^      "id": ' "$tmp/$name.json")
  cases=$(xmllint --xpath 'count(//testcase)' "$tmp/$name.xml")
  [ "$results" = "$cases" ] || bad "$name: $cases testcases for $results results"
  fails=$(grep -c '^      "status": "fail"' "$tmp/$name.json")
  failures=$(xmllint --xpath 'count(//testcase/failure)' "$tmp/$name.xml")
  [ "$fails" = "$failures" ] || bad "$name: $failures <failure> for $fails failed results"

  line=$("$bin" check --root "$dir" --no-runtime --format npd)
  npd=$?
  [ "$(printf '%s\n' "$line" | wc -l)" = 1 ] || bad "$name: npd printed more than one line"
  [ ${#line} -le 80 ] || bad "$name: npd line longer than 80 characters"
  case "$code:$npd" in
    1:1 | 4:1 | 0:0 | 0:2) ;;
    *) bad "$name: npd exit $npd for check exit $code" ;;
  esac
  [ $fail = 0 ] && echo "ok $name (check $code, npd $npd: $line)"
done

# Per-GPU rules (issue 10): on 8x MI300X, render-node-access gives one result per GPU in every
# format, each naming its GPU, in KFD node order (nodes 8..15), and the series stay distinct.
name=mi300x-nps4-16-kfd-nodes
python3 - "$tmp/$name.json" <<'PY' || bad "$name: per-GPU results in JSON"
import json, sys
rs = [r for r in json.load(open(sys.argv[1]))["results"] if r["id"] == "render-node-access"]
assert [r["gpu"]["index"] for r in rs] == list(range(8)), rs
assert [r["gpu"]["pci_slot"] for r in rs][2] == "0000:38:00.0", rs
assert [r["gpu"]["hip_device"] for r in rs] == [None] * 4 + [0, 1, 2, 3], rs
assert all(r["gpu"]["name"] == "Instinct MI300X" and r["gpu"]["gfx_target"] == "gfx942" for r in rs)
PY
junit_names=$(xmllint --xpath '//testcase[starts-with(@name, "render-node-access [GPU")]/@name' "$tmp/$name.xml" | grep -c 'GPU')
[ "$junit_names" = 8 ] || bad "$name: $junit_names JUnit testcases name a GPU, want 8"
grep -q '^halo_doctor_rule_failed{id="render-node-access",severity="error",area="access",gpu="7",pci_slot="0000:df:00.0"} 0$' \
  "$tmp/$name.prom" || bad "$name: no render-node-access sample for gpu 7"

# Fleet series (issue 16): each GPU's PCIe link as the AMD device metrics exporter's PCIE_* series.
name=mi300x-degraded-link
# Per-GPU series carry the GPU's PCI slot and gfx target, the labels a fleet dashboard joins on.
grep -q '^halo_doctor_gpu_pcie_width{gpu="5",pci_slot="0000:af:00.0",gfx="gfx942"} 8$' "$tmp/$name.prom" || bad "$name: no x8 width sample for gpu 5"
grep -q '^halo_doctor_gpu_pcie_max_width{gpu="5",pci_slot="0000:af:00.0",gfx="gfx942"} 16$' "$tmp/$name.prom" || bad "$name: no max width sample for gpu 5"
grep -q '^halo_doctor_gpu_pcie_speed_gts{gpu="2",pci_slot="0000:38:00.0",gfx="gfx942"} 16$' "$tmp/$name.prom" || bad "$name: no 16 GT/s sample for gpu 2"
grep -q '^halo_doctor_gpu_xgmi_hive_size{gpu="0",pci_slot="0000:0c:00.0",gfx="gfx942"} 8$' "$tmp/$name.prom" || bad "$name: no XGMI hive size for gpu 0"
grep -q '^halo_doctor_gpu_throttle_reasons{gpu="0",pci_slot="0000:03:00.0",gfx="gfx1201",kind="thermal"} 2$' "$tmp/r9700-thermal-throttle.prom" || bad "r9700-thermal-throttle: no thermal throttle sample"
grep -q '^halo_doctor_gpu_package_power_watts{gpu="0",pci_slot="0000:03:00.0",gfx="gfx1201"} 300$' "$tmp/r9700-thermal-throttle.prom" || bad "r9700-thermal-throttle: no package power sample"
grep -q '^halo_doctor_rule_failed{id="gpu-pcie-link",severity="error",area="gpu-health",gpu="5",pci_slot="0000:af:00.0"} 1$' \
  "$tmp/$name.prom" || bad "$name: gpu-pcie-link does not fail for gpu 5"

# The healthy and broken fixtures give the npd contract's 0 and 1.
"$bin" check --root "$fixtures/no-amd-gpu" --no-runtime --format npd >/dev/null || bad "npd: no-amd-gpu is not OK"
"$bin" check --root "$fixtures/strix-halo-default-ttm" --no-runtime --format npd >/dev/null; [ $? = 1 ] || bad "npd: default TTM is not a problem"

# Output destinations.
root="$fixtures/strix-halo-default-ttm"
"$bin" check --root "$root" --no-runtime --output "json:" --output "text:$tmp/out.txt" >"$tmp/stdout" 2>/dev/null
grep -q '"schema_version"' "$tmp/stdout" || bad "--output json: did not put JSON on stdout"
grep -q '^summary:' "$tmp/out.txt" || bad "--output text:FILE did not write the text report"
ls "$tmp"/*.tmp >/dev/null 2>&1 && bad "a temporary file was left behind"
"$bin" check --root "$root" --no-runtime --output "json:-" --output "npd:" >/dev/null 2>"$tmp/err"
code=$?
if [ "$code" != 2 ] || ! grep -q "only one report can go to stdout" "$tmp/err"; then bad "two stdout reports were accepted"; fi
"$bin" check --root "$root" --no-runtime --output "sarif:$tmp/x" >/dev/null 2>"$tmp/err"
code=$?
if [ "$code" != 2 ] || ! grep -q "unknown format 'sarif'" "$tmp/err"; then bad "an unknown --output format was accepted"; fi
"$bin" check --root "$root" --no-runtime --output "$tmp/plain.txt" >"$tmp/stdout"
[ -s "$tmp/stdout" ] && bad "-o FILE still printed the report on stdout"
grep -q '^summary:' "$tmp/plain.txt" || bad "-o FILE did not write the --format report"

# Site policy: a waiver in force passes the gate; an expired one fails and says so.
cat >"$tmp/waive.json" <<'EOF'
{"waivers": [{"rule": "ttm-limit-low", "reason": "maintenance window", "owner": "lab", "expires": "2999-12-31"}]}
EOF
"$bin" check --root "$root" --no-runtime --policy "$tmp/waive.json" --color never >"$tmp/waived.txt" ||
  bad "policy: a waived failure still failed the gate"
grep -qE 'WAIVED +ttm-limit-low' "$tmp/waived.txt" || bad "policy: text report does not show WAIVED"
"$bin" check --root "$root" --no-runtime --policy "$tmp/waive.json" --format json | grep -q '"owner": "lab"' || bad "policy: JSON has no waived object"
sed 's/2999-12-31/2001-01-01/' "$tmp/waive.json" >"$tmp/expired.json"
"$bin" check --root "$root" --no-runtime --policy "$tmp/expired.json" --color never >"$tmp/expired.txt"
[ $? = 1 ] || bad "policy: an expired waiver did not fail the gate"
grep -q 'expired on 2001-01-01' "$tmp/expired.txt" || bad "policy: expired waiver not reported"
printf '{\n  "severity": {\n    "ttm-limit-lo": "info"\n  }\n}\n' >"$tmp/typo.json"
"$bin" check --root "$root" --no-runtime --policy "$tmp/typo.json" >/dev/null 2>"$tmp/err"
code=$?
if [ "$code" != 2 ] || ! grep -q "typo.json:3: unknown rule id 'ttm-limit-lo'" "$tmp/err"; then
  bad "policy: typo not reported with file:line"
  cat "$tmp/err"
fi
"$bin" check --root "$root" --no-runtime --policy "$docs/examples/policy.json" >/dev/null
case $? in 0 | 1 | 4) ;; *) bad "policy: the shipped example policy is rejected" ;; esac

# The alerting rules example.
promtool check rules "$docs/examples/halo-doctor-alerts.yml" >/dev/null || bad "promtool check rules"
if [ -f "$docs/examples/halo-doctor-alerts.test.yml" ]; then
  (cd "$docs/examples" && promtool test rules halo-doctor-alerts.test.yml) >"$tmp/rt.out" 2>&1 || { bad "promtool test rules"; cat "$tmp/rt.out"; }
fi

[ $fail = 0 ] && echo "all report checks passed"
exit $fail
