#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Reads an `strace -f -y` log and fails if a system call created, changed or removed a path that
# does not start with one of the allowed prefixes (tests/cli/hardening.sh: the doctor writes only
# its named outputs and its private bundle directory).
# Usage: strace_writes.py LOG PREFIX...
import re, sys
log, allowed = sys.argv[1], sys.argv[2:]
call_re = re.compile(r'^(?:\d+\s+)?(open|openat|openat2|creat|rename|renameat|renameat2|unlink|unlinkat|rmdir|mkdir|mkdirat|mknod|mknodat|chmod|fchmodat|truncate|symlink|symlinkat|link|linkat)\((.*)\)\s+=\s+(-?\d+)')
arg_re = re.compile(r'(?:(AT_FDCWD(?:<[^>]*>)?|\d+<[^>]*>),\s*)?"((?:[^"\\]|\\.)*)"')
bad, n = [], 0
for line in open(log):
    m = call_re.match(line.strip())
    if not m or int(m.group(3)) < 0:
        continue
    call, args = m.group(1), m.group(2)
    if call in ("open", "openat", "openat2") and not re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", args):
        continue
    found = []
    for d, name in arg_re.findall(args):
        base = re.match(r"[^<]*<(.*)>$", d).group(1) if "<" in d else "."
        found.append(name if name.startswith("/") else base + "/" + name)
    if call in ("symlink", "symlinkat", "link", "linkat"):
        found = found[-1:]  # the new name; the first string is the link's target
    for p in found:
        n += 1
        if not any(p.startswith(a) for a in allowed):
            bad.append(line.strip())
for b in bad[:20]:
    print("unexpected write:", b)
print(f"{n} writes, {len(bad)} outside the named outputs and the bundle directory")
sys.exit(1 if bad else 0)
