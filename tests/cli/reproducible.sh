#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Reproducible release builds (issue 46): scripts/release.sh run twice on the same tree, in two
# directories of different names and lengths, gives byte-identical artifacts: the unstripped
# portable binary, the .deb, the .rpm, the tarball, the wheel and SHA256SUMS. Neither build
# directory's path appears in the binary, in the tarball's files or in the wheel's.
# Each tree is a clone of SRC's commit with SRC's working tree (tracked and untracked, not
# ignored files, and .deps) laid over it, so what is tested is what would be committed.
# SOURCE_DATE_EPOCH is left to release.sh (the last commit's time).
# The two trees live at two fixed paths (HALO_REPRO_DIR, default /var/tmp/halo-doctor-reproducible,
# held with flock(1) so two runs never share it), and the builds go through ccache where it is
# installed, with ccache's own keys: no CCACHE_BASEDIR and no CCACHE_NOHASHDIR (the CI exports
# them for its other builds), so each compile's key holds its tree's absolute paths (the -I and
# -ffile-prefix-map arguments; ccache(1), "How ccache works": the direct mode hashes the command
# line, the preprocessor mode the output with its line markers). A hit is then a compile of the
# same source at the same path, never the other tree's object: an output that depends on the
# directory still differs between the two builds. What changed since the last run compiles again;
# the rest is read from the cache (cold, this test is two full portable builds: about 20 minutes
# on two cores; warm, a few).
# Usage: reproducible.sh SRC [KEEP]
# (KEEP: a directory that receives the first build's dist/ for tests/cli/release.sh).
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C
src=$(realpath "$1")
keep=${2:-}
fail=0
bad() { echo "FAIL $*"; fail=1; }
work=${HALO_REPRO_DIR:-/var/tmp/halo-doctor-reproducible}
mkdir -p "$work" || { echo "FAIL: cannot make $work"; exit 1; }
exec 9>"$work.lock"
flock 9
clean() { find "$work" -mindepth 1 -maxdepth 1 -exec rm -rf {} +; }
clean
# HALO_KEEP_WORK=1 keeps the two trees and their logs for a look at what differs.
if [ "${HALO_KEEP_WORK:-0}" = 1 ]; then echo "trees kept in $work"; else trap clean EXIT; fi
rev=$(git -C "$src" rev-parse HEAD) || { echo "FAIL: $src is not a git checkout"; exit 1; }

# tree DIR: SRC's commit checked out in DIR, SRC's working tree over it.
tree() {
  git clone -q --shared --no-checkout "$src" "$1" && git -C "$1" checkout -q "$rev" || return 1
  (cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$1" -xf - || return 1
  if [ -d "$src/.deps" ]; then cp -a "$src/.deps" "$1/"; fi
}
a=$work/a
b=$work/second-build-in-a-longer-path
# build DIR: scripts/release.sh in DIR, its output in DIR.log.
build() {
  local start=$SECONDS
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  env -u CMAKE_CXX_COMPILER_LAUNCHER -u CMAKE_C_COMPILER_LAUNCHER -u CCACHE_BASEDIR \
    -u CCACHE_NOHASHDIR -u CCACHE_DISABLE "${launcher[@]}" JOBS="${JOBS:-2}" \
    bash "$1/scripts/release.sh" "$1/dist" >"$1.log" 2>&1 || return 1
  echo "built in $1 ($((SECONDS - start)) s)"
}
for d in "$a" "$b"; do
  tree "$d" || { echo "FAIL: could not copy the tree to $d"; exit 1; }
done
# The two builds run side by side (the same wall time as one on a machine with cores to spare).
build "$a" &
pid_a=$!
build "$b" &
pid_b=$!
wait $pid_a
st_a=$?
wait $pid_b
st_b=$?
for d in "$a:$st_a" "$b:$st_b"; do
  if [ "${d##*:}" != 0 ]; then
    tail -30 "${d%:*}.log"
    echo "FAIL: scripts/release.sh in ${d%:*}"
    exit 1
  fi
done

# The same artifacts, byte for byte.
(cd "$a/dist" && ls) >"$work/list-a"
(cd "$b/dist" && ls) >"$work/list-b"
cmp -s "$work/list-a" "$work/list-b" || bad "the two builds made different files: $(diff "$work/list-a" "$work/list-b" | tr '\n' ' ')"
for want in '\.deb$' '\.tar\.gz$' '\.whl$' '^SHA256SUMS$'; do
  grep -q "$want" "$work/list-a" || bad "no $want among the artifacts: $(tr '\n' ' ' <"$work/list-a")"
done
while read -r f; do
  if cmp -s "$a/dist/$f" "$b/dist/$f"; then
    echo "ok identical: $f ($(stat -c %s "$a/dist/$f") bytes, sha256 $(sha256sum "$a/dist/$f" | cut -c1-16)...)"
  else
    bad "$f differs between the two builds: $(cmp "$a/dist/$f" "$b/dist/$f" | head -1)"
  fi
done <"$work/list-a"
if cmp -s "$a/build-release/halo-doctor" "$b/build-release/halo-doctor"; then
  echo "ok identical: the unstripped binary ($(stat -c %s "$a/build-release/halo-doctor") bytes)"
else
  bad "the unstripped binaries differ: $(cmp "$a/build-release/halo-doctor" "$b/build-release/halo-doctor" | head -1)"
fi

# No build directory's path in what ships (the compressed packages hold the tarball's files).
for d in "$a" "$b"; do
  if grep -a -q -F "$d" "$d/build-release/halo-doctor"; then
    bad "the binary holds its build path $d: $(strings "$d/build-release/halo-doctor" | grep -F "$d" | head -3 | tr '\n' ' ')"
  fi
  mkdir -p "$d.x/tar" "$d.x/whl"
  tar -C "$d.x/tar" -xzf "$d"/dist/*.tar.gz
  /usr/bin/python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$d"/dist/*.whl "$d.x/whl"
  hits=$(grep -r -a -l -F "$d" "$d.x" | head -5)
  [ -z "$hits" ] || bad "packaged files hold the build path $d: $hits"
done
if [ -n "$keep" ] && [ $fail = 0 ]; then
  rm -rf "$keep"
  mkdir -p "$(dirname "$keep")"
  cp -a "$a/dist" "$keep"
fi
[ $fail = 0 ] && echo "PASS: two release builds in different directories are byte-identical"
exit $fail
