#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad input, as a user would give it: clear errors on stderr, exit code 2, nothing on stdout,
# never a crash. And the documented exit codes of a normal run.
set -u
bin=$1
fixtures=$2
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() { # expect CODE PATTERN -- command...
  local want=$1 pattern=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  if [ "$code" != "$want" ]; then echo "FAIL: '$*' exited $code, expected $want"; cat "$tmp/err"; fail=1; return; fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$tmp/err" "$tmp/out"; then
    echo "FAIL: '$*': output lacks /$pattern/"; cat "$tmp/err"; fail=1; return
  fi
  echo "ok: $* -> $code"
}

expect 2 "not a directory" -- "$bin" check --root /nonexistent/root
expect 2 "unknown rule id 'no-such-rule'" -- "$bin" check --root "$fixtures/no-amd-gpu" --only no-such-rule
expect 2 "" -- "$bin" check --format yaml
expect 2 "" -- "$bin" check --fail-on sometimes
expect 2 "" -- "$bin" check --reserve -3
expect 2 "" -- "$bin"
expect 2 "" -- "$bin" frobnicate
expect 2 "unknown rule id" -- "$bin" explain no-such-rule
expect 2 "only with --declared" -- "$bin" facts --root "$fixtures/no-amd-gpu" --format markdown

# The declared facts: the command the docs/facts.md test tells a developer to run prints that file.
expect 0 "" -- "$bin" facts --declared --format markdown -o "$tmp/facts.md"
if diff -q "$tmp/facts.md" "$fixtures/../../docs/facts.md" >/dev/null; then echo "ok: facts --declared is docs/facts.md"; else echo "FAIL: facts --declared --format markdown differs from docs/facts.md"; fail=1; fi
expect 0 "" -- "$bin" facts --declared --format json
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert any(f['pattern'] == 'mem.total_bytes' and f['type'] == 'int' and f['unit'] == 'bytes' for p in d for f in p['facts'])" "$tmp/out"; then echo "ok: facts --declared --format json"; else echo "FAIL: facts --declared --format json lacks mem.total_bytes (int, bytes)"; fail=1; fi

# A malformed rules file: the error names the file and the line.
mkdir -p "$tmp/rules"
printf '{\n  "rules": [\n    {"id": "x",,}\n  ]\n}\n' >"$tmp/rules/bad.json"
expect 2 "bad.json:3:" -- "$bin" check --root "$fixtures/no-amd-gpu" --rules "$tmp/rules"
printf '{"area": "a", "rules": [{"id": "x", "title": "t", "pass_message": "p", "why": "w", "sources": [],\n "fail": [{"severity": "error", "when": {"fact": "no.such.fact", "eq": 1}, "message": "m"}]}]}\n' >"$tmp/rules/bad.json"
expect 2 "no probe provides the fact 'no.such.fact'" -- "$bin" check --root "$fixtures/no-amd-gpu" --rules "$tmp/rules"
expect 2 "does not exist" -- "$bin" rules --rules "$tmp/none"

# A malformed facts file.
printf '{"schema_version": 1, "facts": {\n "a": {"status": "ok", "value": 1},\n}}\n' >"$tmp/facts.json"
expect 2 "facts.json:3:" -- "$bin" check --facts "$tmp/facts.json"
expect 2 "cannot be read" -- "$bin" check --facts "$tmp/missing.json"

# Exit codes of normal runs.
expect 0 "" -- "$bin" check --root "$fixtures/no-amd-gpu" --no-runtime
expect 1 "" -- "$bin" check --root "$fixtures/strix-halo-default-ttm" --no-runtime
expect 0 "" -- "$bin" check --root "$fixtures/strix-halo-default-ttm" --no-runtime --fail-on never
expect 1 "" -- "$bin" check --root "$fixtures/mi300x-numa-4021" --no-runtime --fail-on warning
expect 0 "" -- "$bin" check --root "$fixtures/mi300x-numa-4021" --no-runtime --skip instinct-numa-balancing,instinct-iommu-pt,instinct-pci-realloc-off --fail-on warning

# Facts saved and replayed give the same report; --add-facts merges.
"$bin" facts --root "$fixtures/strix-halo-default-ttm" --no-runtime --format json -o "$tmp/saved.json"
"$bin" check --root "$fixtures/strix-halo-default-ttm" --no-runtime --format json | grep -v '"root"' >"$tmp/a.json"
"$bin" check --facts "$tmp/saved.json" --format json | grep -v '"root"' >"$tmp/b.json"
if diff -q "$tmp/a.json" "$tmp/b.json" >/dev/null; then echo "ok: facts replay"; else echo "FAIL: replayed report differs"; diff "$tmp/a.json" "$tmp/b.json" | head; fail=1; fi

# Logs never go to stdout: the JSON report parses even with --debug.
"$bin" --debug check --root "$fixtures/kfd-no-access" --no-runtime --format json >"$tmp/r.json" 2>/dev/null
if python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/r.json"; then echo "ok: stdout is pure JSON"; else echo "FAIL: stdout is not JSON"; fail=1; fi

# NO_COLOR and --color.
if NO_COLOR=1 "$bin" check --root "$fixtures/kfd-no-access" --no-runtime --color auto | grep -q $'\033'; then echo "FAIL: colour despite NO_COLOR"; fail=1; else echo "ok: NO_COLOR"; fi
if "$bin" check --root "$fixtures/kfd-no-access" --no-runtime --color always | grep -q $'\033\['; then echo "ok: --color always"; else echo "FAIL: no colour with --color always"; fail=1; fi
exit $fail
