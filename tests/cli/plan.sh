#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# halo-doctor plan, run the way a user runs it: real model configs and training configurations
# (tests/plan, each with its SOURCE.md) on fixture machines (tests/fixtures). Text reports are
# compared with goldens a person read (tests/plan/golden; HALO_UPDATE_GOLDEN=1 rewrites them), JSON
# reports are validated against docs/plan.schema.json and docs/report.schema.json, and bad input
# must exit 2 with the file and line.
set -u
bin=$(realpath "$1")
export COLUMNS=100 # the findings are wrapped to COLUMNS (else 100): the goldens are 100 wide
repo=$(realpath "$2")
cd "$repo" || exit 1
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
M=tests/plan/models
T=tests/plan/train
F=tests/fixtures

# name | expected exit | arguments
cases=(
  "strix-default-ttm-llama3-8b-full|1|--root $F/strix-halo-default-ttm --model $M/llama-3-8b --method full --load-dtype bfloat16 --batch 1 --seq 2048 --gradient-checkpointing true"
  "strix-fixed-llama3-8b-full|0|--root $F/strix-halo-fixed --model $M/llama-3-8b --method full --load-dtype bfloat16 --batch 1 --seq 2048 --gradient-checkpointing true"
  "strix-default-ttm-axolotl-qlora|0|--root $F/strix-halo-default-ttm --model $M/llama-3-8b --config $T/axolotl-llama3-qlora.yml"
  "mi300x-mixtral-axolotl-lora-8bit|0|--root $F/mi300x-numa-4021 --model $M/mixtral-8x7b-v0.1 --config $T/axolotl-llama3-lora-8b.yml"
  "mi300x-llama3-8b-hf-defaults|1|--root $F/mi300x-numa-4021 --model $M/llama-3-8b"
  "strix-default-ttm-torchtune-lora|0|--root $F/strix-halo-default-ttm --model $M/llama-3-8b --config $T/torchtune-llama3_1-8B_lora_single_device.yaml --seq 2048"
)
mkdir -p tests/plan/golden
for c in "${cases[@]}"; do
  IFS='|' read -r name want args <<<"$c"
  # shellcheck disable=SC2086 # the arguments are words
  "$bin" plan $args --no-runtime --color never >"$tmp/$name.txt" 2>&1
  code=$?
  # shellcheck disable=SC2086
  "$bin" plan $args --no-runtime --format json >"$tmp/$name.json" 2>/dev/null
  if [ "$code" != "$want" ]; then echo "FAIL $name: exit $code, expected $want"; fail=1; fi
  if [ "${HALO_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$tmp/$name.txt" "tests/plan/golden/$name.txt"; echo "updated $name"; continue
  fi
  if ! diff -u "tests/plan/golden/$name.txt" "$tmp/$name.txt" >"$tmp/diff"; then
    echo "FAIL $name: the text report differs from tests/plan/golden/$name.txt"; head -40 "$tmp/diff"; fail=1
  else
    echo "ok $name (exit $code)"
  fi
done

python3 - docs/plan.schema.json docs/report.schema.json "$tmp"/*.json <<'PY' || fail=1
import json, sys
import jsonschema
plan = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
report = jsonschema.Draft202012Validator(json.load(open(sys.argv[2])))
bad = 0
for path in sys.argv[3:]:
    doc = json.load(open(path))
    errors = list(plan.iter_errors(doc)) + list(report.iter_errors(doc.get("report", {})))
    for e in errors[:5]:
        print(f"FAIL {path}: {'/'.join(map(str, e.path))}: {e.message}")
    bad += bool(errors)
    # The items add up to the total the verdict is made on.
    if sum(i["bytes"] for i in doc["memory"]["items"]) != doc["memory"]["required_bytes"]:
        print(f"FAIL {path}: memory items do not add up"); bad += 1
print(f"schema: {len(sys.argv) - 3 - bad} of {len(sys.argv) - 3} plan reports valid")
sys.exit(1 if bad else 0)
PY

verdict() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['verdict'])" "$1"; }
[ "$(verdict "$tmp/strix-default-ttm-llama3-8b-full.json")" = "does not fit" ] || { echo "FAIL: default TTM verdict"; fail=1; }
[ "$(verdict "$tmp/strix-fixed-llama3-8b-full.json")" = "fits" ] || { echo "FAIL: fixed TTM verdict"; fail=1; }

# Bad input: exit 2, the file (and line) named, nothing probed.
expect_error() { # name, expected text, arguments...
  local name=$1 want=$2; shift 2
  "$bin" "$@" >"$tmp/out" 2>&1
  local code=$?
  if [ "$code" != 2 ] || ! grep -qF -- "$want" "$tmp/out"; then
    echo "FAIL $name: exit $code, output:"; cat "$tmp/out"; fail=1
  else
    echo "ok $name"
  fi
}
printf 'base_model: x\nsequence_len: 2048\ngradient_checkpoint: true\n' >"$tmp/typo.yml"
expect_error "misspelled axolotl key" "typo.yml:3: unknown axolotl key 'gradient_checkpoint' (did you mean 'gradient_checkpointing'?)" \
  plan --root $F/strix-halo-fixed --model $M/llama-3-8b --config "$tmp/typo.yml"
# A TrainingArguments file may hold the script's own arguments (HfArgumentParser): a near miss is a
# finding with its suggestion, not a refusal.
printf '{"per_device_train_batch_size": 4,\n "gradient_accumulation_step": 2}\n' >"$tmp/typo.json"
"$bin" plan --root $F/strix-halo-fixed --no-runtime --model $M/llama-3-8b --config "$tmp/typo.json" --format json >"$tmp/typo-out.json"
python3 - "$tmp/typo-out.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["run"]["ignored_keys"] == ["gradient_accumulation_step (did you mean gradient_accumulation_steps?)"], d["run"]["ignored_keys"]
r = [x for x in d["report"]["results"] if x["id"] == "plan-unknown-config-keys"][0]
assert r["status"] == "fail" and r["severity"] == "info", r
print("ok misspelled TrainingArguments key: " + r["message"])
PY
# Issue 32 section 4: a key given twice takes its LAST value, as PyYAML (axolotl's yaml.safe_load)
# and Python's json (HfArgumentParser) do, with a note naming both lines; YAML and JSON alike.
printf 'base_model: x\nsequence_len: 512\nmicro_batch_size: 2\nsequence_len: 4096\n' >"$tmp/dup.yml"
printf '{"per_device_train_batch_size": 2,\n "per_device_train_batch_size": 6}\n' >"$tmp/dup.json"
for f in dup.yml dup.json; do
  "$bin" plan --root $F/strix-halo-fixed --no-runtime --model $M/llama-3-8b --config "$tmp/$f" --format json >"$tmp/$f.out"
  python3 - "$tmp/$f.out" "$f" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1])); s = d["run"]["settings"]; notes = d["run"]["notes"]
if sys.argv[2] == "dup.yml":
    assert s["seq_len"]["value"] == 4096 and s["seq_len"]["origin"]["text"].endswith("dup.yml:4"), s["seq_len"]
    assert any("dup.yml:4: duplicate key 'sequence_len' (also at line 2)" in n for n in notes), notes
else:
    assert s["micro_batch"]["value"] == 6 and s["micro_batch"]["origin"]["text"].endswith("dup.json:2"), s["micro_batch"]
    assert any("dup.json:2: duplicate key 'per_device_train_batch_size' (also at line 1)" in n for n in notes), notes
print("ok duplicate key, last value wins: " + notes[0])
PY
done
"$bin" plan --root $F/strix-halo-fixed --no-runtime --model $M/llama-3-8b --config "$tmp/dup.yml" --color never >"$tmp/dup.txt" 2>&1
grep -qF "note: $tmp/dup.yml:4: duplicate key 'sequence_len'" "$tmp/dup.txt" || { echo "FAIL: duplicate-key note missing from the text report"; fail=1; }
# Bytes that are not UTF-8 in a YAML value: escaped as \xNN in the JSON report (never exit 70).
printf 'base_model: x\nsequence_len: 512\nweird_\xff\xfe_key: 1\n' >"$tmp/bytes.yml"
"$bin" plan --root $F/strix-halo-fixed --no-runtime --model $M/llama-3-8b --config "$tmp/bytes.yml" --format json >"$tmp/bytes.json" 2>"$tmp/bytes.err"
code=$?
if [ "$code" = 70 ] || ! python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert any('\\\\xFF\\\\xFE' in k for k in d['run']['ignored_keys']), d['run']['ignored_keys']" "$tmp/bytes.json"; then
  echo "FAIL: non-UTF-8 YAML: exit $code"; cat "$tmp/bytes.err"; fail=1
else
  echo "ok non-UTF-8 bytes in YAML escaped in the JSON report (exit $code)"
fi
mkdir -p "$tmp/tokenizer"; printf '{"do_lower_case": true, "vocab_size": 30522}\n' >"$tmp/tokenizer/config.json"
expect_error "not a model config" "neither model_type nor architectures" \
  plan --root $F/strix-halo-fixed --model "$tmp/tokenizer"
expect_error "missing model" "no such file or directory" plan --root $F/strix-halo-fixed --model "$tmp/nothing"
expect_error "missing config" "$tmp/nothing.yml" plan --root $F/strix-halo-fixed --model $M/gpt2 --config "$tmp/nothing.yml"
expect_error "config without model" "need --model" check --root $F/strix-halo-fixed --config $T/axolotl-llama3-qlora.yml
expect_error "a dataset as config" "not a training configuration" \
  plan --root $F/strix-halo-fixed --model $M/gpt2 --config tests/plan/models/gpt2/config.json

# check --model: the plan rules join the machine's rules in one gate; without it they are absent.
"$bin" check --root $F/strix-halo-default-ttm --no-runtime --format json \
  --model $M/llama-3-8b --method full --load-dtype bfloat16 --batch 1 --seq 2048 --gradient-checkpointing true >"$tmp/check.json"
code=$?
python3 - "$tmp/check.json" "$code" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
ids = {r["id"]: r for r in d["results"]}
fit = ids.get("plan-memory-fit")
assert fit and fit["status"] == "fail" and fit["severity"] == "error", fit
assert "ttm-limit-low" in ids, "the machine's rules are evaluated too"
assert sys.argv[2] == "1", sys.argv[2]
print("ok check --model: plan-memory-fit fails beside ttm-limit-low")
PY
"$bin" check --root $F/strix-halo-fixed --no-runtime --format json >"$tmp/plain.json"
if grep -q '"plan-' "$tmp/plain.json"; then echo "FAIL: check without --model reports plan rules"; fail=1; else echo "ok check without --model"; fi

# The framework layer joins the plan: QLoRA in a venv whose bitsandbytes 0.48.2 is PyPI's CUDA-only wheel.
"$bin" check --root $F/strix-halo-torch-rocm62-venv --no-runtime --format json --only plan-bitsandbytes \
  --model $M/llama-3-8b --config $T/axolotl-llama3-qlora.yml >"$tmp/bnb.json"
python3 - "$tmp/bnb.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["id"] == "plan-bitsandbytes" and r["status"] == "fail" and r["severity"] == "error", r
assert "no ROCm build" in r["message"], r["message"]
print("ok plan-bitsandbytes: " + r["message"])
PY

# A facts file saved on another machine replays with a plan.
"$bin" facts --root $F/strix-halo-default-ttm --no-runtime --format json >"$tmp/facts.json"
"$bin" plan --facts "$tmp/facts.json" --model $M/llama-3-8b --method full --load-dtype bfloat16 --batch 1 --seq 2048 \
  --gradient-checkpointing true --format json >"$tmp/replay.json"
if [ "$(verdict "$tmp/replay.json")" = "does not fit" ]; then echo "ok plan --facts"; else echo "FAIL: plan --facts"; fail=1; fi
# halo-doctor bench --model results merged into plan: the measured verdicts show beside the estimate
# (rule plan-bench-model-speed), only for the model they were measured for.
cat >"$tmp/bench.json" <<'JSON'
{"schema_version": 1, "tool": {"name": "halo-bench", "version": "0.1.0"}, "facts": {
"bench.model.name": {"status": "ok", "value": "llama-3-8b", "source": "halo-bench model part"},
"bench.model.training.nf4.speedup": {"status": "ok", "value": 0.53, "source": "halo-bench model part"},
"bench.model.training.verdict": {"status": "ok", "value": "training step GEMMs (M = 2048 tokens): NF4 (dequantize + rocblas) is 1.9x slower than BF16", "source": "halo-bench model part"},
"bench.model.generation.verdict": {"status": "ok", "value": "generation (M = 1): NF4 (fused 4-bit GEMV) is 2.7x faster than BF16", "source": "halo-bench model part"}}}
JSON
"$bin" plan --root $F/strix-halo-default-ttm --no-runtime --model $M/llama-3-8b --config $T/axolotl-llama3-qlora.yml \
  --add-facts "$tmp/bench.json" --format json >"$tmp/bench-plan.json"
"$bin" plan --root $F/strix-halo-default-ttm --no-runtime --model $M/mistral-7b-v0.1 --method qlora \
  --add-facts "$tmp/bench.json" --format json >"$tmp/bench-other.json"
python3 - "$tmp/bench-plan.json" "$tmp/bench-other.json" <<'PY' || fail=1
import json, sys
def rule(path):
    return {r["id"]: r for r in json.load(open(path))["report"]["results"]}["plan-bench-model-speed"]
r = rule(sys.argv[1])
assert r["status"] == "fail" and r["severity"] == "info", r
assert "1.9x slower" in r["message"] and "2.7x faster" in r["message"], r["message"]
other = rule(sys.argv[2])
assert other["status"] == "skip" and "another model" in other["message"], other
print("ok plan --add-facts bench.json: " + r["message"])
PY

# Issue 47 §4: -v is accepted (as check -v: the passing rules are listed), and --model ORG/NAME is
# read from the local Hugging Face cache (HF_HUB_CACHE), never downloaded.
if "$bin" plan -v --root $F/strix-halo-fixed --no-runtime --color never --model $M/llama-3.2-1b >"$tmp/v.txt" 2>&1 &&
  grep -qF "PASS" "$tmp/v.txt"; then echo "ok plan -v lists the passing rules"; else
  echo "FAIL plan -v:"; head -20 "$tmp/v.txt"; fail=1; fi
HF_HUB_CACHE="$repo/tests/plan/hubcache" "$bin" plan --root $F/strix-halo-fixed --no-runtime --format json \
  --model meta-llama/Llama-3.2-1B >"$tmp/hub.json" 2>"$tmp/hub.err"
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['parameters']['total'] == 1235814400 and 'models--meta-llama--Llama-3.2-1B' in d['model']['path'], d['model']" "$tmp/hub.json" 2>"$tmp/hub.py"; then
  echo "ok --model ORG/NAME from HF_HUB_CACHE"; else echo "FAIL --model ORG/NAME:"; cat "$tmp/hub.err" "$tmp/hub.py"; fail=1; fi
HF_HUB_CACHE="$tmp/empty" HF_HOME="$tmp/empty" HOME="$tmp" expect_error "uncached ORG/NAME" "Hugging Face cache" \
  plan --root $F/strix-halo-fixed --no-runtime --model meta-llama/Llama-3.2-1B
# Issue 47 §2: a model_type whose forward no table in docs/plan.md audits is estimated as a Llama-style
# decoder, and the report says so and widens the band (the same config as llama does not).
mkdir -p "$tmp/unaudited"
sed 's/"model_type": *"llama"/"model_type": "llama_next"/' $M/llama-3.2-1b/config.json >"$tmp/unaudited/config.json"
for m in "$M/llama-3.2-1b" "$tmp/unaudited"; do
  n=$(basename "$m")
  "$bin" plan --root $F/strix-halo-fixed --no-runtime --color never --model "$m" --method full \
    --load-dtype bfloat16 --batch 4 --seq 1024 >"$tmp/$n.txt" 2>&1
  "$bin" plan --root $F/strix-halo-fixed --no-runtime --format json --model "$m" --method full \
    --load-dtype bfloat16 --batch 4 --seq 1024 >"$tmp/$n.json" 2>/dev/null
done
if grep -qF "band widened, not measured: a model_type whose forward has not been audited" "$tmp/unaudited.txt" &&
  ! grep -qF "not been audited" "$tmp/llama-3.2-1b.txt" &&
  /usr/bin/python3 -c '
import json, sys
w = lambda p: (lambda m: m["high_bytes"] - m["required_bytes"])(json.load(open(p))["memory"])
assert w(sys.argv[1]) > w(sys.argv[2]), (w(sys.argv[1]), w(sys.argv[2]))' "$tmp/unaudited.json" "$tmp/llama-3.2-1b.json"; then
  echo "ok an unaudited model_type: the report says so and the band is wider"
else
  echo "FAIL an unaudited model_type:"; grep -F "band widened" "$tmp/unaudited.txt"; fail=1
fi
exit $fail
