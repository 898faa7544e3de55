#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Guard for issue 10: no fact key and no rule id as a string literal in src/ outside src/rules/,
nor in the public headers (include/) outside the declarations (fact.hpp's halo::keys, rules.hpp's
halo::rule_ids).

Code outside the rule engine asks for facts by declared name (the constants and helpers of
`halo::keys` in include/halo/fact.hpp) and names rules through `halo::rule_ids`
(include/halo/rules.hpp); the probes (checks/) declare their own keys and are not scanned.

Every string literal of every .cpp/.hpp/.h file under src/ and include/ (src/rules/ and the two
declaring headers excepted) is read with
comments removed (// and /* */; raw strings R"d(...)d" understood). A literal is reported when
  - it looks like a fact key: one of the fact-key prefixes below, a dot, then only key
    characters (a-z, 0-9, _, *, {, }, .), e.g. "gpu.*.usable_bytes", "gpu.", "probe.{}.status";
  - or it is exactly the id of a rule in rules/*.json, e.g. "ttm-limit-low".
Literals that look like keys but are not fact keys are listed in ALLOWED with the reason; an
ALLOWED entry that no longer occurs fails too, so the list stays true.

Usage: key_literals.py SOURCE_DIR. Exit 0 when clean, 1 with file:line: literal per finding.
"""
import json
import pathlib
import re
import sys

# The first segment of every fact key (docs/facts.md; declared in checks/*/facts.json).
PREFIXES = [
    "access", "amd", "amdgpu", "apu", "bench", "boot", "drm", "env", "firmware", "framework",
    "fw", "gpu", "gpu_metrics", "group", "host", "hsa", "initramfs", "kernel", "kernel_log", "kfd",
    "libdrm", "mem", "modparam", "modprobe", "numa", "os", "pci", "plan", "probe", "ras", "rocm", "runenv",
    "ttm", "user", "xgmi",
]
KEY_RE = re.compile(r"(?:%s)\.[a-z0-9_*{}.]*" % "|".join(re.escape(p) for p in PREFIXES))

# (path relative to the source dir, literal, why it is not a fact key or rule id).
ALLOWED = [
    ("src/core/fact.cpp", "gpu.{}.{}",
     "the body of keys::gpu(), a helper include/halo/fact.hpp declares"),
    ("src/core/fact.cpp", "hsa.gpu.{}.{}",
     "the body of keys::hsa_gpu(), a helper include/halo/fact.hpp declares"),
    ("src/core/fact.cpp", "modprobe.options.{}.{}",
     "the body of keys::modprobe_option(), a helper include/halo/fact.hpp declares"),
    ("src/core/fact.cpp", "probe.{}.status",
     "the body of keys::probe_status(), a helper include/halo/fact.hpp declares"),
    ("src/fix/script.cpp", "access.sh", "a template file name under src/fix/templates"),
    ("src/fix/script.cpp", "initramfs.sh", "a template file name under src/fix/templates"),
    ("src/fix/merge.cpp", "env.unset",
     "the field path of a rule's fix object in an error message (docs/rules.md \"fix\")"),
    ("src/report/junit.cpp", "host.kernel",
     "a JUnit <property> name of the report (docs/fleet.md), not a fact key"),
    ("src/report/junit.cpp", "host.os",
     "a JUnit <property> name of the report (docs/fleet.md), not a fact key"),
]


def literals(text):
    """Yields (line, contents) of each string literal of C++ source `text`, comments skipped."""
    i, n, line = 0, len(text), 1

    def plain(i):
        # i is at the opening quote; returns (contents, index after the closing quote).
        j, buf = i + 1, []
        while j < n and text[j] != '"':
            step = 2 if text[j] == "\\" else 1
            buf.append(text[j:j + step])
            j += step
        return "".join(buf), j + 1

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif c.isalnum() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if j < n and text[j] == '"' and word in ("R", "u8R", "uR", "UR", "LR"):
                open_paren = text.index("(", j)
                delim = text[j + 1:open_paren]
                end = text.index(")" + delim + '"', open_paren)
                yield line, text[open_paren + 1:end]
                line += text.count("\n", i, end)
                i = end + len(delim) + 2
            elif j < n and text[j] == '"' and word in ("u8", "u", "U", "L"):
                lit, i = plain(j)
                yield line, lit
            elif j < n and text[j] == "'" and text[i].isdigit():
                i = j + 1  # a digit separator (1'000)
            else:
                i = j
        elif c == "'":
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif c == '"':
            lit, i = plain(i)
            yield line, lit
        else:
            i += 1


# The declarations themselves: halo::keys and halo::rule_ids.
DECLARATIONS = {"include/halo/fact.hpp", "include/halo/rules.hpp"}


def rule_ids(rules_dir):
    ids = set()
    for path in sorted(rules_dir.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict):
            for rule in doc.get("rules", []):
                if isinstance(rule, dict) and isinstance(rule.get("id"), str):
                    ids.add(rule["id"])
    return ids


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: key_literals.py SOURCE_DIR")
    root = pathlib.Path(sys.argv[1])
    ids = rule_ids(root / "rules")
    if len(ids) < 10:
        sys.exit(f"key_literals.py: only {len(ids)} rule ids in {root / 'rules'}: wrong directory?")
    allowed = {(p, lit): why for p, lit, why in ALLOWED}
    used = set()
    findings = []
    files = sorted(p for d in ("src", "include") for p in (root / d).rglob("*")
                   if p.suffix in (".cpp", ".hpp", ".h") and p.is_file())
    for path in files:
        rel = path.relative_to(root).as_posix()
        # The rule engine, and the two headers that declare the names everyone else uses.
        if rel.startswith("src/rules/") or rel in DECLARATIONS:
            continue
        for line, lit in literals(path.read_text(encoding="utf-8", errors="replace")):
            if KEY_RE.fullmatch(lit):
                kind = "fact key"
            elif lit in ids:
                kind = "rule id"
            else:
                continue
            if (rel, lit) in allowed:
                used.add((rel, lit))
                continue
            findings.append(f'{rel}:{line}: {kind} "{lit}"')
    stale = [f'{p}: "{lit}" is in ALLOWED but no longer occurs' for p, lit in allowed
             if (p, lit) not in used]
    if not files:
        sys.exit(f"key_literals.py: no source files under {root / 'src'}")
    for f in findings + stale:
        print(f)
    if findings:
        print(f"{len(findings)} fact key or rule id literal(s) outside src/rules/: use the "
              "constants of halo::keys (include/halo/fact.hpp) or halo::rule_ids "
              "(include/halo/rules.hpp), or add a false positive to ALLOWED with its reason")
    return 1 if findings or stale else 0


if __name__ == "__main__":
    sys.exit(main())
