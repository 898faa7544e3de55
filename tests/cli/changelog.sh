#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One changelog for both packages (issue 35): packaging/debian/changelog parses with dpkg's own
# parser (dpkg-parsechangelog, deb-changelog(5)), and the RPM %changelog cmake/RpmChangelog.cmake
# makes from it parses with rpm's (rpmspec) and says the same: version, date, maintainer, changes.
# Usage: changelog.sh SOURCE_DIR. Skipped (77) without dpkg-dev or rpm.
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
src=$(realpath "$1")
for tool in dpkg-parsechangelog rpmspec cmake; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
deb=$src/packaging/debian/changelog
cmake -DIN="$deb" -DOUT="$tmp/rpm-changelog" -P "$src/cmake/RpmChangelog.cmake"
version=$(dpkg-parsechangelog -l "$deb" -S Version)
maintainer=$(dpkg-parsechangelog -l "$deb" -S Maintainer)
date=$(dpkg-parsechangelog -l "$deb" -S Date)
changes=$(dpkg-parsechangelog -l "$deb" -S Changes | sed -n 's/^  \* //p' | head -1)
# A minimal spec around the generated %changelog: rpm parses it as it would the package's.
cat >"$tmp/t.spec" <<SPEC
Name: halo-doctor
Version: ${version}
Release: 1
Summary: changelog test
License: MIT
%description
changelog test
%files
%changelog
$(cat "$tmp/rpm-changelog")
SPEC
rpmspec -q --qf "[* %{CHANGELOGTIME:day} %{CHANGELOGNAME}\n%{CHANGELOGTEXT}\n]" "$tmp/t.spec" >"$tmp/rpm.txt" 2>"$tmp/rpm.err" || { cat "$tmp/rpm.err"; exit 1; }
[ ! -s "$tmp/rpm.err" ] || { echo "FAIL: rpmspec warns: $(cat "$tmp/rpm.err")"; exit 1; }
fail=0
want_date=$(LC_ALL=C date -u -d "$date" '+%a %b %d %Y')
head -1 "$tmp/rpm.txt" | grep -qxF "* $want_date $maintainer - $version-1" ||
  { echo "FAIL: RPM entry header '$(head -1 "$tmp/rpm.txt")', want '* $want_date $maintainer - $version-1'"; fail=1; }
grep -qF -- "- ${changes:0:60}" "$tmp/rpm.txt" || { echo "FAIL: the first change is not in the RPM changelog"; fail=1; }
[ "$(grep -c '^\*' "$tmp/rpm.txt")" = "$(dpkg-parsechangelog -l "$deb" --all -S Version | wc -l)" ] ||
  { echo "FAIL: the RPM changelog has another number of entries than the Debian one"; fail=1; }
[ "$fail" = 0 ] && echo "ok: one changelog: $version ($want_date, $maintainer) in both formats"
exit "$fail"
