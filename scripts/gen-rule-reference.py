#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes docs/rule-reference.md from rules/*.json (the catalogue users pin in CI).

    python3 scripts/gen-rule-reference.py            # rewrite docs/rule-reference.md
    python3 scripts/gen-rule-reference.py --check    # exit 1 if it is out of date (a CTest)
"""
import glob
import json
import os
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = os.path.join(root, "docs", "rule-reference.md")
lines = ["# Rule reference", "",
         "Generated from `rules/*.json` by `scripts/gen-rule-reference.py`; do not edit by hand.",
         "Rule ids are a public contract: CI users pin them with `--only`/`--skip` and policies.", ""]
for path in sorted(glob.glob(os.path.join(root, "rules", "*.json"))):
    if path.endswith("schema.json") or path.endswith("predicates.json"):
        continue
    doc = json.load(open(path))
    lines += [f"## {os.path.basename(path)} (area: {doc.get('area', '-')})", ""]
    for r in doc["rules"]:
        sev = " / ".join(dict.fromkeys(f["severity"] for f in r["fail"]))
        lines += [f"### `{r['id']}` ({sev})", "", f"**{r['title']}**", ""]
        if r.get("scope") == "gpu":
            lines.append("- judges each GPU (`gpu.this.*` is the GPU judged); one result per GPU")
            if "gpus" in r:
                lines.append(f"- judges only some GPUs; skipped when none: {r['gpus']['skip_reason']}")
        applies = r.get("applies")
        if isinstance(applies, dict):
            applies = [{"skip_reason": r["skip_reason"]}]
        for pre in applies or []:
            lines.append(f"- skipped when: {pre['skip_reason']}")
        if r.get("examples"):
            lines.append(f"- examples: {len(r['examples']['cases'])} (`halo-doctor rules --test`)")
        for f in r["fail"]:
            lines.append(f"- fails ({f['severity']}): {f['message']}")
        lines += ["", r["why"].replace("\n", " "), ""]
        if r.get("fix"):
            lines += [f"Fix: {r['fix'].get('summary', '')}", ""]
        lines += ["Sources: " + ", ".join(f"<{s}>" for s in r["sources"]), ""]
preds = os.path.join(root, "rules", "predicates.json")
if os.path.exists(preds):
    lines += ["## Predicates (rules/predicates.json)", "",
              "Named conditions that rules use as `{\"predicate\": NAME}`.", ""]
    for name, p in json.load(open(preds))["predicates"].items():
        lines += [f"### `{name}`", "", p["means"], ""]
text = "\n".join(lines)
if "--check" in sys.argv:
    current = open(out).read() if os.path.exists(out) else ""
    if current != text:
        print("docs/rule-reference.md is out of date: run python3 scripts/gen-rule-reference.py")
        sys.exit(1)
    print("docs/rule-reference.md is up to date")
else:
    open(out, "w").write(text)
