#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Which translation units clang-tidy must look at again (.ci/lint.sh).

A translation unit that clang-tidy found clean once stays clean while nothing it reads changes:
its source and every header it includes (the preprocessor's output, comments kept, so a NOLINT
added or removed counts), its compile flags, the .clang-tidy configuration, the clang-tidy
version and the lint scripts themselves. This keeps one empty file per such key in a cache
directory; lint.sh gives clang-tidy only the units without one, and marks them after a run with
no finding (a run with findings marks none).

The key is the same in any clone: the clone's and the build directory's absolute paths are
replaced by placeholders in the flags and in the preprocessor's line markers, so a developer's
clean run on this machine spares the CI run of the same sources.

  tidy-cache.py pending BUILD_DIR FILE_REGEX CACHE_DIR LIST   writes LIST: "key<TAB>file" lines
                                                                for the units to check
  tidy-cache.py mark CACHE_DIR LIST                           marks LIST's keys clean
"""
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Marks unused for this long are removed (each hit renews its mark).
MAX_AGE_S = 60 * 24 * 3600


def tool_digest():
    h = hashlib.sha256()
    h.update(subprocess.run(["clang-tidy", "--version"], capture_output=True, check=True).stdout)
    for f in (".clang-tidy", ".ci/lint.sh", ".ci/tidy-cache.py"):
        with open(os.path.join(ROOT, f), "rb") as fh:
            h.update(f.encode() + b"\0" + fh.read() + b"\0")
    return h.digest()


def unit_key(entry, build, base):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        if a in ("-MF", "-MT", "-MQ"):
            skip = True
            continue
        out.append(a)
    pre = subprocess.run(out + ["-E", "-C"], cwd=entry["directory"], capture_output=True,
                         timeout=300)
    if pre.returncode != 0:
        return None  # clang-tidy will report the compile error itself
    h = hashlib.sha256(base)

    def norm(b):
        return b.replace(build.encode(), b"<build>").replace(ROOT.encode(), b"<root>")

    h.update(norm("\0".join(out).encode()) + b"\0")
    h.update(norm(os.path.relpath(entry["file"], ROOT).encode()) + b"\0")
    h.update(norm(pre.stdout))
    return h.hexdigest()


def pending(build, regex, cache, listfile):
    build = os.path.realpath(build)
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as fh:
        entries = [e for e in json.load(fh) if re.search(regex, e["file"])]
    os.makedirs(cache, exist_ok=True)
    now = time.time()
    for name in os.listdir(cache):
        p = os.path.join(cache, name)
        if now - os.path.getmtime(p) > MAX_AGE_S:
            os.unlink(p)
    base = tool_digest()
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        keys = list(pool.map(lambda e: unit_key(e, build, base), entries))
    todo = []
    for e, k in zip(entries, keys):
        mark = os.path.join(cache, k) if k else None
        if mark and os.path.exists(mark):
            os.utime(mark)
        else:
            todo.append((k or "-", e["file"]))
    with open(listfile, "w", encoding="utf-8") as fh:
        for k, f in todo:
            fh.write(f"{k}\t{f}\n")
    print(f"{len(entries) - len(todo)} of {len(entries)} translation units unchanged since a "
          f"clean clang-tidy run ({cache}); {len(todo)} to check")


def mark(cache, listfile):
    with open(listfile, encoding="utf-8") as fh:
        for line in fh:
            k = line.split("\t", 1)[0]
            if k != "-":
                with open(os.path.join(cache, k), "w", encoding="utf-8"):
                    pass


def main(argv):
    if len(argv) == 6 and argv[1] == "pending":
        pending(*argv[2:])
    elif len(argv) == 4 and argv[1] == "mark":
        mark(*argv[2:])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
