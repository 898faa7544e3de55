#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The license is stated where the ecosystem looks for it: LICENSE (MIT) at the top, the packages'
# copyright file in Debian's machine-readable format, and an SPDX-License-Identifier line at the
# top of every C++ source and header (first line) and every shell, Python and CMake file (first
# line, or the line after the shebang). Generated and embedded texts (fix templates, golden
# outputs, fixtures, test doubles) are data, not sources, and carry none; so is the byte copy of the
# plan measurements and their harness (tests/plan/plantruth, SOURCE.md there: kept verbatim).
# Usage: spdx.sh SOURCE_DIR
set -u
cd "$1" || exit 2
fail=0
grep -q '^MIT License$' LICENSE || { echo "FAIL: LICENSE is not the MIT license"; fail=1; }
grep -q '^Copyright (c) [0-9]* the halo-doctor authors$' LICENSE || { echo "FAIL: LICENSE names no copyright holder"; fail=1; }
grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/$' packaging/debian/copyright &&
  grep -q '^License: MIT$' packaging/debian/copyright || { echo "FAIL: packaging/debian/copyright"; fail=1; }
n=0
while IFS= read -r -d '' f; do
  n=$((n + 1))
  case "$f" in
  *.cpp | *.hpp | *.h | *.c | *.cu | *.hip | *.hpp.in) want='// SPDX-License-Identifier: MIT' line=1 ;;
  *) want='# SPDX-License-Identifier: MIT' line=1
     [ "$(head -c 2 "$f")" = '#!' ] && line=2 ;;
  esac
  [ "$(sed -n "${line}p" "$f")" = "$want" ] || { echo "FAIL: $f: line $line is not '$want'"; fail=1; }
done < <(find src include checks bench tests scripts cmake .ci packaging CMakeLists.txt \
  \( -path tests/fixtures -o -path tests/fix/golden -o -path src/fix/templates -o -path tests/replay/python \
  -o -path tests/fix/doubles -o -path tests/replay/captures -o -path tests/plan/plantruth \) -prune -o -type f \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' -o -name '*.cu' -o -name '*.hip' \
  -o -name '*.hpp.in' -o -name '*.sh' -o -name '*.py' -o -name '*.cmake' -o -name CMakeLists.txt \
  -o -name run -o -name halo-doctor-slurm \) -print0)
[ "$n" -gt 200 ] || { echo "FAIL: only $n source files found"; fail=1; }
[ $fail = 0 ] && echo "ok: LICENSE, debian/copyright and $n files with SPDX-License-Identifier: MIT"
exit $fail
