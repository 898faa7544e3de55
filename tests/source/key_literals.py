#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Guard for issues 10 and 42: no fact key and no rule id as a string literal in src/ outside
src/rules/, nor in the public headers (include/) outside the declarations (fact.hpp's halo::keys,
rules.hpp's halo::rule_ids), nor in checks/, whose code names facts by <halo/fact_keys.hpp> (the
names halo-facts-compile generates from checks/*/facts.json; what a probe reads is its facts.json
entry's `inputs`).

Code outside the rule engine asks for facts by declared name (the constants and helpers of
`halo::keys` in include/halo/fact.hpp) and names rules through `halo::rule_ids`
(include/halo/rules.hpp); the probes (checks/) name their keys by the generated header.

Every string literal of every .cpp/.hpp/.h file under src/, include/ and checks/ (src/rules/ and
DECLARATIONS excepted) is read with comments and #include lines removed (// and /* */; raw strings
R"d(...)d" understood). A literal is reported when
  - it looks like a fact key: a fact family of src/core/fact_families.cpp (or bench, probe), a dot, then only key
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

# The first segment of every fact key: the fact families of src/core/fact_families.cpp (the one
# table; read here as tests/source/families.py reads it), and two prefixes that are not a family
# of checks/: `bench` (the facts `bench --json` writes, declared by docs/bench.md) and `probe`
# (the registry's probe.<id>.status, src/core/registry.cpp).
FAMILY = re.compile(r'^\s*\{"([a-z_0-9]+)",\s*"([a-z_0-9]+)"\},', re.M)
NOT_FAMILIES = ["bench", "probe"]


def key_re(root):
    families = FAMILY.findall((root / "src/core/fact_families.cpp").read_text(encoding="utf-8"))
    if len(families) < 10:
        sys.exit("key_literals.py: could not read the family table of src/core/fact_families.cpp")
    prefixes = sorted({f for f, _ in families} | set(NOT_FAMILIES), key=len, reverse=True)
    return re.compile(r"(?:%s)\.[a-z0-9_*{}.]*" % "|".join(re.escape(p) for p in prefixes))



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
    ("checks/gpus/libdrm.cpp", "libdrm.so.2",
     "the soname of libdrm's DRM library, which dlopen loads (libdrm's ABI), not a fact key"),
    ("src/fix/script.cpp", "access.sh", "a template file name under src/fix/templates"),
    ("src/fix/script.cpp", "initramfs.sh", "a template file name under src/fix/templates"),
    ("src/fix/merge.cpp", "env.unset",
     "the field path of a rule's fix object in an error message (docs/rules.md \"fix\")"),
    ("src/report/junit.cpp", "host.kernel",
     "a JUnit <property> name of the report (docs/fleet.md), not a fact key"),
    ("src/report/junit.cpp", "host.os",
     "a JUnit <property> name of the report (docs/fleet.md), not a fact key"),
    ("checks/kernel_args/modprobe.cpp", "modprobe.d",
     "the configuration directory a fact's source names (modprobe.d(5)), not a fact key"),
    ("checks/kernel_args/suspects_derive.cpp", "amdgpu.gtt_size",
     "a misspelt kernel command-line parameter the derivation flags, not a fact key"),
    ("checks/kernel_args/suspects_derive.cpp", "ttm.pages_pool_size",
     "a misspelt kernel command-line parameter the derivation flags, not a fact key"),
    ("checks/kernel_args/suspects_derive.cpp", "ttm.page_limit",
     "a misspelt kernel command-line parameter the derivation flags, not a fact key"),
    ("checks/kernel_args/suspects_derive.cpp", "ttm.pool_size",
     "a misspelt kernel command-line parameter the derivation flags, not a fact key"),
    ("checks/kernel_args/suspects_derive.cpp", "amdgpu.gtt",
     "a misspelt kernel command-line parameter the derivation flags, not a fact key"),
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
        elif c == "#" and text.startswith("include", i + 1 + len(text[i + 1:]) - len(text[i + 1:].lstrip(" "))):
            j = text.find("\n", i)  # an #include "file.hpp" names a file, not a fact
            i = n if j < 0 else j
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


# The declarations themselves: halo::keys and halo::rule_ids, and the compile-time check that
# every key of halo::keys is declared (its `gpu.*.` and `hsa.gpu.*.` heads).
DECLARATIONS = {"include/halo/fact.hpp", "include/halo/rules.hpp", "checks/common/declarations.cpp"}


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
    key = key_re(root)
    allowed = {(p, lit): why for p, lit, why in ALLOWED}
    used = set()
    findings = []
    files = sorted(p for d in ("src", "include", "checks") for p in (root / d).rglob("*")
                   if p.suffix in (".cpp", ".hpp", ".h") and p.is_file())
    for path in files:
        rel = path.relative_to(root).as_posix()
        # The rule engine, and the two headers that declare the names everyone else uses.
        if rel.startswith("src/rules/") or rel in DECLARATIONS:
            continue
        for line, lit in literals(path.read_text(encoding="utf-8", errors="replace")):
            if key.fullmatch(lit):
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
              "constants of halo::keys (include/halo/fact.hpp) in src/, the generated names of "
              "<halo/fact_keys.hpp> in checks/, or halo::rule_ids (include/halo/rules.hpp), or "
              "add a false positive to ALLOWED with its reason")
    return 1 if findings or stale else 0


if __name__ == "__main__":
    sys.exit(main())
