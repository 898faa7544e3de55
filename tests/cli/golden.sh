#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end golden test: the real binary over every fixture root, as a user runs it. Each root is
# judged by its verdict table (verdicts.tsv: the exit code and every result that is not a skip, with
# its key evidence); a few also keep full reports (expected.json, expected.txt, expected.md, each
# where it exists, stored without their skip results). HALO_UPDATE_GOLDEN=1 rewrites them; read the
# diff (docs/fixtures.md). The work is tests/cli/golden.py's, run by Debian's python3.
#   usage: golden.sh HALO_DOCTOR FIXTURES_DIR [CASE...]
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$1
fixtures=$2
shift 2
# The text report is wrapped to COLUMNS (else 100 columns): the full reports are 100 wide.
export COLUMNS=100
exec /usr/bin/python3 "$here/golden.py" "$bin" "$fixtures" "$here/../../rules" "$@"
