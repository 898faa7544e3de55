#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every report the binary writes for the fixture roots validates against the published schema
# docs/report.schema.json, and every facts file (`facts --format json`) against docs/facts.schema.json
# (python3-jsonschema, installed by .ci/run). A missing validator fails.
set -u
bin=$1
fixtures=$2
schema=$3
python=""
for candidate in ${HALO_PYTHON:-} python3 /usr/bin/python3; do
  if "$candidate" -c "import jsonschema" 2>/dev/null; then python=$candidate; break; fi
done
if [ -z "$python" ]; then
  echo "FAIL: no python3 with jsonschema (apt-get install python3-jsonschema)"; exit 1
fi
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for dir in "$fixtures"/*/; do
  [ -f "$dir/README.md" ] || continue
  name=$(basename "$dir")
  "$bin" check --root "$dir" --format json --no-runtime >"$tmp/$name.json"
  mkdir -p "$tmp/facts"
  "$bin" facts --root "$dir" --format json --no-runtime >"$tmp/facts/$name.json"
done
"$bin" check --format json >"$tmp/live-machine.json"
"$bin" facts --format json >"$tmp/facts/live-machine.json"
# Two --python: an array of two reports (the schema's oneOf).
"$bin" check --root "$fixtures/strix-halo-torch-rocm62-venv" --format json --no-runtime \
  --python /usr/bin/python3 --python /home/dev/venv/bin/python >"$tmp/two-environments.json"
"$python" - "$schema" "$tmp"/*.json <<'PY' || fail=1
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
bad = 0
for path in sys.argv[2:]:
    errors = sorted(validator.iter_errors(json.load(open(path))), key=lambda e: list(e.path))
    for e in errors[:5]:
        print(f"FAIL {path}: {'/'.join(map(str, e.path))}: {e.message}")
    bad += bool(errors)
    if not errors:
        print(f"ok {path.rsplit('/', 1)[-1]}")
# Every rules file validates against rules/schema.json.
import glob, os
rules_dir = os.path.join(os.path.dirname(os.path.dirname(sys.argv[1])), "rules")
rschema = json.load(open(os.path.join(rules_dir, "schema.json")))
rvalidator = jsonschema.Draft202012Validator(rschema)
# rules/predicates.json: each named condition is a condition of the rule language.
cvalidator = jsonschema.Draft202012Validator({"$defs": rschema["$defs"], "$ref": "#/$defs/condition"})
for name, pred in json.load(open(os.path.join(rules_dir, "predicates.json")))["predicates"].items():
    errors = list(cvalidator.iter_errors(pred["when"]))
    for e in errors[:5]:
        print(f"FAIL predicates.json: {name}: {e.message[:200]}")
    bad += bool(errors)
for path in sorted(glob.glob(os.path.join(rules_dir, "*.json"))):
    if path.endswith("schema.json") or path.endswith("predicates.json"):
        continue
    errors = list(rvalidator.iter_errors(json.load(open(path))))
    for e in errors[:5]:
        print(f"FAIL {path}: {'/'.join(map(str, e.path))}: {e.message[:200]}")
    bad += bool(errors)
    if not errors:
        print(f"ok {os.path.basename(path)} against rules/schema.json")
# Every facts file against docs/facts.schema.json, and the schema rejects what facts_from_json_text
# refuses or no probe writes.
fschema = json.load(open(os.path.join(os.path.dirname(sys.argv[1]), "facts.schema.json")))
jsonschema.Draft202012Validator.check_schema(fschema)
fvalidator = jsonschema.Draft202012Validator(fschema)
facts_files = sorted(glob.glob(os.path.join(os.path.dirname(sys.argv[2]), "facts", "*.json")))
if len(facts_files) < 10:
    print(f"FAIL: only {len(facts_files)} facts files were written"); bad += 1
for path in facts_files:
    errors = list(fvalidator.iter_errors(json.load(open(path))))
    for e in errors[:5]:
        print(f"FAIL facts {path}: {'/'.join(map(str, e.path))}: {e.message[:200]}")
    bad += bool(errors)
    if not errors:
        print(f"ok facts/{os.path.basename(path)} against docs/facts.schema.json")
good = json.load(open(facts_files[0]))
key, fact = next((k, f) for k, f in good["facts"].items() if f["status"] == "ok")
for label, change in [("status 'maybe'", {"status": "maybe"}), ("ok without a value", {"value": None}),
                      ("missing with a value", {"status": "missing", "reason": "x"}),
                      ("an object value", {"value": {"a": 1}}), ("an unknown field", {"unit": "GiB"})]:
    broken = json.loads(json.dumps(good))
    broken["facts"][key].update(change)
    if fvalidator.is_valid(broken):
        print(f"FAIL: the facts schema accepted {label}"); bad += 1
for label, doc in [("schema_version 2", dict(good, schema_version=2)),
                   ("a key with a space", dict(good, facts={"gpu 0": fact}))]:
    if fvalidator.is_valid(doc):
        print(f"FAIL: the facts schema accepted {label}"); bad += 1
# The report schema's promise (its description): additive changes keep schema_version 1, so a
# report with a property this schema does not list still validates: no object may be closed with
# additionalProperties false (issue 46: gpu, fix and fix.kernel_args were), and a report with a new
# property in each of those objects and at the top validates.
def closed(node, where):
    if isinstance(node, dict):
        if node.get("additionalProperties") is False or node.get("unevaluatedProperties") is False:
            yield where
        for k, v in node.items():
            yield from closed(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from closed(v, f"{where}/{i}")
for where in closed(schema, "#"):
    print(f"FAIL: report.schema.json closes {where} (additionalProperties false) though additive changes keep version 1")
    bad += 1
if "Additive changes keep schema_version 1" not in schema.get("description", ""):
    print("FAIL: report.schema.json no longer states its versioning promise"); bad += 1
added = set()
for path in sys.argv[2:]:
    doc = json.load(open(path))
    for report in doc if isinstance(doc, list) else [doc]:
        report["added_later"] = 1
        for r in report["results"]:
            r["added_later"] = 1
            for key in ("gpu", "fix"):
                if isinstance(r.get(key), dict):
                    r[key]["added_later"] = 1
                    added.add(key)
            if isinstance(r.get("fix"), dict) and isinstance(r["fix"].get("kernel_args"), dict):
                r["fix"]["kernel_args"]["added_later"] = 1
                added.add("kernel_args")
    errors = list(validator.iter_errors(doc))
    for e in errors[:3]:
        print(f"FAIL {path} with an added property: {'/'.join(map(str, e.path))}: {e.message[:200]}")
    bad += bool(errors)
if added != {"gpu", "fix", "kernel_args"}:
    print(f"FAIL: no report had each of gpu, fix and fix.kernel_args to add a property to: {sorted(added)}"); bad += 1
# The validator itself must reject a broken report.
broken = json.load(open(sys.argv[2]))
broken["results"][0]["status"] = "maybe"
if validator.is_valid(broken):
    print("FAIL: the schema accepted status 'maybe'"); bad += 1
sys.exit(1 if bad else 0)
PY
exit $fail
