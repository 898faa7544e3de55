#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The committed fixture roots are what their generator writes (DESIGN.md "Tests that change with
the change"; docs/fixtures.md).

Runs tests/fixtures/build_fixtures.py into a temporary directory and compares every root with the
committed one under tests/fixtures, as git keeps a tree: the same paths, each a regular file with
the same bytes and the same executable bit (git keeps 100644 or 100755), or a symbolic link with
the same target; the /dev sidecar (ROOT/.halo/nodes.json) is one of the files. A directory the
generator leaves empty is a difference too: git keeps no empty directory, so the checkout the tests
read would lack it. The outputs of the tests (expected.*, verdicts.tsv) are golden.sh's, not the
generator's, and are left out. Fails with the first difference, then counts the rest.

usage: fixture_roots.py FIXTURES_DIR [PYTHON]
"""
import os
import stat
import subprocess
import sys
import tempfile

# Files a fixture root holds that the generator does not write: tests/cli/golden.sh writes them.
TEST_OUTPUTS = ("expected.json", "expected.txt", "expected.md", "verdicts.tsv")


def entries(root):
    """path -> ("file", bytes, executable) | ("link", target) | ("empty dir",) under root."""
    out = {}
    for top, dirs, files in os.walk(root):
        rel_top = os.path.relpath(top, root)
        if not dirs and not files and rel_top != ".":
            out[rel_top] = ("empty dir",)
        for name in dirs + files:
            path = os.path.join(top, name)
            rel = os.path.normpath(os.path.join(rel_top, name))
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                if rel_top == "." and name in TEST_OUTPUTS:
                    continue
                with open(path, "rb") as f:
                    out[rel] = ("file", f.read(), bool(st.st_mode & stat.S_IXUSR))
            elif not stat.S_ISDIR(st.st_mode):
                out[rel] = ("special", stat.S_IFMT(st.st_mode))
        # os.walk does not enter a symbolic link to a directory (followlinks=False): it is a link.
    return out


def describe(e):
    if e is None:
        return "absent"
    if e[0] == "file":
        return f"{'an executable' if e[2] else 'a'} file of {len(e[1])} bytes"
    if e[0] == "link":
        return f"a link to {e[1]!r}"
    return e[0]


def first_byte_difference(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def compare(case, want, got):
    """Differences of one root, sorted by path: (path, message)."""
    out = []
    for path in sorted(set(want) | set(got)):
        w, g = want.get(path), got.get(path)
        if w == g:
            continue
        where = f"{case}/{path}"
        if w is not None and g is not None and w[0] == g[0] == "file" and w[1] != g[1]:
            i = first_byte_difference(w[1], g[1])
            line = w[1][:i].count(b"\n") + 1
            out.append((where, f"bytes differ from offset {i} (line {line}): generator writes "
                        f"{w[1][i:i + 40]!r}, committed {g[1][i:i + 40]!r}"))
        elif w is not None and g is not None and w[0] == g[0] == "file":
            out.append((where, f"mode differs: generator writes {describe(w)}, committed {describe(g)}"))
        elif w is not None and w[0] == "empty dir":
            out.append((where, "the generator writes an empty directory, which git does not keep: "
                        "the checkout lacks it (write a file into it, or leave it out)"))
        else:
            out.append((where, f"generator writes {describe(w)}, committed is {describe(g)}"))
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    fixtures = os.path.abspath(sys.argv[1])
    python = sys.argv[2] if len(sys.argv) > 2 else sys.executable
    generator = os.path.join(fixtures, "build_fixtures.py")
    with tempfile.TemporaryDirectory(prefix="halo-fixture-roots-") as tmp:
        out = os.path.join(tmp, "roots")
        run = subprocess.run([python, generator, "--out", out], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                                            "LC_ALL": "C.UTF-8"})
        if run.returncode != 0:
            print(run.stdout.decode(errors="replace")[-4000:])
            print(f"FAIL: {generator} exited {run.returncode}")
            return 1
        generated = sorted(os.listdir(out))
        # A committed root is a directory with a README.md (golden.sh reads the same ones).
        committed = sorted(d for d in os.listdir(fixtures)
                           if os.path.isfile(os.path.join(fixtures, d, "README.md")))
        diffs = []
        for case in sorted(set(generated) - set(committed)):
            diffs.append((case, "the generator writes this root; it is not committed"))
        for case in sorted(set(committed) - set(generated)):
            diffs.append((case, "committed, but the generator does not write this root"))
        for case in sorted(set(generated) & set(committed)):
            diffs += compare(case, entries(os.path.join(out, case)), entries(os.path.join(fixtures, case)))
        if diffs:
            path, message = diffs[0]
            print(f"FAIL {path}: {message}")
            if len(diffs) > 1:
                print(f"... and {len(diffs) - 1} more difference(s) after it:")
                for path, message in diffs[1:20]:
                    print(f"  {path}: {message}")
            print("Change the case in tests/fixtures/build_fixtures.py and rerun it "
                  "(docs/fixtures.md), or commit what it writes.")
            return 1
        print(f"ok: {len(generated)} fixture roots are what {os.path.basename(generator)} writes")
        return 0


if __name__ == "__main__":
    sys.exit(main())
