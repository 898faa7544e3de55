#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 44 item 3: a bundle whose symlinks chain out of it (`s -> ..`, `t -> s/..`, `u -> t/..`,
# `runtime-facts.json -> u/secret.json`: each link passes a count of its own `..`) must never make
# `check --bundle` read a host file. Extraction judges each link as the kernel resolves it and
# refuses the bundle naming the entry; the replay reads the tree only through the root's
# RESOLVE_IN_ROOT confinement. Captured bundles, whose sysfs links are relative and stay inside,
# still replay. Usage: bundle_links.sh HALO_DOCTOR FIXTURES_DIR
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
bin=$(realpath "$1")
fixtures=$(realpath "$2")
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tmp"

# The host files the chains lead to: $work/tmp is TMPDIR, the bundle extracts to
# $work/tmp/halo-bundle-XXXXXX, so B/.. is $work/tmp and B/../.. is $work.
"$bin" facts --root "$fixtures/strix-halo-fixed" --no-runtime --format json >"$work/real.json" || bad "facts"
/usr/bin/python3 - "$work/real.json" "$work/secret.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["facts"]["host.name"]["value"] = "HOST-SECRET-4242"
d["facts"]["os.pretty_name"]["value"] = "HOST-SECRET-4242"
json.dump(d, open(sys.argv[2], "w"))
PY
printf 'PRETTY_NAME="HOST-SECRET-4242"\nID=secret\n' >"$work/os-release"

for fx in strix-halo-default-ttm mi300x-ras-errors; do
  "$bin" capture --root "$fixtures/$fx" --no-runtime -o "$work/$fx.tar.gz" >/dev/null || bad "capture $fx"
done
/usr/bin/python3 - "$work" <<'PY'
import io, sys, tarfile
d = sys.argv[1]
good = tarfile.open(d + "/strix-halo-default-ttm.tar.gz")
members = [(m, good.extractfile(m).read() if m.isfile() else None) for m in good.getmembers()]
def link(name, target):
    m = tarfile.TarInfo(name)
    m.type, m.linkname = tarfile.SYMTYPE, target
    return (m, None)
def make(name, extra):
    drop = {m.name for m, _ in extra}
    with tarfile.open(d + "/" + name, "w:gz") as t:
        for m, data in [x for x in members if x[0].name not in drop] + extra:
            t.addfile(m, io.BytesIO(data) if data is not None else None)
chain = [link(".halo/s", ".."), link(".halo/t", "s/.."), link(".halo/u", "t/..")]
# The runtime facts (read by the replay itself) and a file a probe reads, each through the chain.
make("chain-runtime.tar.gz", chain + [link(".halo/runtime-facts.json", "u/secret.json")])
make("chain-os-release.tar.gz",
     [link("etc/s", ".."), link("etc/t", "s/.."), link("etc/u", "t/.."),
      link("etc/os-release", "u/os-release")])
# The links listed after the one that uses them: judged once the whole tree is there.
make("chain-reversed.tar.gz", [link(".halo/runtime-facts.json", "u/secret.json")] + chain[::-1])
# A chain that stays inside: replays.
make("chain-inside.tar.gz", [link(".halo/s", ".."), link(".halo/v", "s/etc"),
                             link("etc/issue.net", "../.halo/v/os-release")])
PY

check() { # BUNDLE: runs check --bundle with TMPDIR=$work/tmp, output in $work/out
  TMPDIR=$work/tmp timeout 60 "$bin" check --bundle "$work/$1" --no-runtime >"$work/out" 2>&1
  code=$?
}
for b in chain-runtime chain-os-release chain-reversed; do
  check "$b.tar.gz"
  if grep -q HOST-SECRET-4242 "$work/out"; then
    bad "$b: a host file's content reached the report"
  else
    ok "$b: no host file read"
  fi
  [ "$code" = 2 ] || bad "$b: exit $code, want 2 (a refused bundle)"
done
check chain-runtime.tar.gz
grep -q "chain-runtime.tar.gz: entry '.halo/t' is a symbolic link that leads outside the bundle" "$work/out" ||
  { bad "the error does not name the entry: $(head -c 400 "$work/out")"; }
check chain-os-release.tar.gz
grep -q "entry 'etc/t' is a symbolic link that leads outside the bundle" "$work/out" ||
  { bad "etc/os-release chain: $(head -c 400 "$work/out")"; }
for b in chain-inside strix-halo-default-ttm mi300x-ras-errors; do
  check "$b.tar.gz"
  [ "$code" = 1 ] || { bad "$b: exit $code, want 1 (replayed: rules fail on these fixtures): $(head -c 400 "$work/out")"; }
done
[ -z "$(ls -A "$work/tmp")" ] || bad "extraction directories left behind: $(ls "$work/tmp")"
[ $fail = 0 ] && echo "bundle links: all ok"
exit $fail
