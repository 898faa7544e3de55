#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# halo-doctor plan --measure (issue 34): the protocol with checks/plan/plan_measure.py, against recorded
# and misbehaving interpreters (tests/replay/python/plan-measure-*.sh, hangs.sh, crashes.sh) and
# Debian's real python3 (no transformers, no GPU here: "not measured" with the reason). The verdict is
# judged by the measurement when there is one. Usage: plan_measure.sh HALO_DOCTOR REPO_ROOT
set -u
bin=$(realpath "$1")
repo=$(realpath "$2")
cd "$repo" || exit 1
py=/usr/bin/python3
replay=$repo/tests/replay/python
M=tests/plan/models
F=tests/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# --measure runs on this machine only (--root, --facts and --bundle are refused, section 0), so the
# machine is probed live, with the Strix Halo fixture's facts merged over it (--add-facts: HIP device 0,
# an APU with 62.54 GiB usable at the default TTM limit; the derivations run again over the merge), so
# the verdict does not depend on the machine the test runs on.
"$bin" facts --root $F/strix-halo-default-ttm --no-runtime --format json >"$tmp/gpu.json" || exit 1
run() { # name, interpreter, extra args...
  local name=$1 interp=$2; shift 2
  "$bin" plan --add-facts "$tmp/gpu.json" --no-runtime --model $M/llama-3-8b --method lora --batch 1 \
    --seq 2048 --gradient-checkpointing true --measure --python "$interp" --format json "$@" >"$tmp/$name.json" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
}
check() { # name, python assertions on d (the report), m (its measured object), rc
  "$py" - "$tmp/$1.json" "$(cat "$tmp/$1.rc")" "$1" <<PY || fail=1
import json, sys
d = json.load(open(sys.argv[1])); rc = int(sys.argv[2]); name = sys.argv[3]
m = d["memory"]["measured"]
$2
print("ok", name + ":", m["status"], (m["reason"] or m["detail"])[:110])
PY
}

# 0. --measure measures this machine: a --root other than /, --facts or --bundle describes another
#    system, so the pair is a usage error (exit 2) that says why, and no interpreter is started
#    (the recorded one writes the spec it was given to HALO_FAKE_SPEC_OUT when it runs).
for how in "--root $F/strix-halo-default-ttm" "--facts $tmp/gpu.json" "--bundle $tmp/no-such.tar.gz"; do
  rm -f "$tmp/started"
  # shellcheck disable=SC2086 # $how is two words on purpose
  HALO_FAKE_SPEC_OUT=$tmp/started "$bin" plan $how --no-runtime --model $M/llama-3-8b --method lora --measure \
    --python "$replay/plan-measure-ok.sh" --format json >"$tmp/refused.out" 2>"$tmp/refused.err"
  rc=$?
  if [ $rc -ne 2 ] || ! grep -q "runs the training run on this machine's GPU" "$tmp/refused.err" ||
    ! grep -q -- "${how%% *}" "$tmp/refused.err" || [ -s "$tmp/refused.out" ] || [ -e "$tmp/started" ]; then
    echo "FAIL: plan --measure $how was not refused before anything ran (rc $rc)"; cat "$tmp/refused.err"; fail=1
  else
    echo "ok plan --measure $how refused: $(head -c 160 "$tmp/refused.err")"
  fi
done
# --root / is this machine: honoured (the recorded interpreter runs and its measurement is reported).
rm -f "$tmp/started"
HALO_FAKE_SPEC_OUT=$tmp/started "$bin" plan --root / --add-facts "$tmp/gpu.json" --no-runtime --model $M/llama-3-8b \
  --method lora --measure --python "$replay/plan-measure-ok.sh" --format json >"$tmp/root.json" 2>"$tmp/root.err"
if [ ! -s "$tmp/started" ] || ! grep -q '"device_bytes"' "$tmp/root.json"; then
  echo "FAIL: plan --measure --root / (this machine) was not measured"; cat "$tmp/root.err"; fail=1
fi

# 1. A GPU that ran the whole model: the measurement is shown beside the estimate and judges the
#    fit (the estimate of this LoRA run fits in 62.54 GiB; the measured 65.7 GiB does not).
HALO_FAKE_SPEC_OUT=$tmp/spec.json run ok "$replay/plan-measure-ok.sh"
check ok '
assert m["status"] == "ok" and not m["reduced"], m
assert m["device_bytes"] == 70000000000 + 536870912 and m["peak_allocated_bytes"] == 66000000000, m
assert m["hip"] is True and m["device"] == "AMD Radeon Graphics", m
assert d["memory"]["required_bytes"] < 62 * 2**30, "the estimate alone would fit"
assert d["verdict"] == "does not fit" and rc == 1, (d["verdict"], rc)
fit = [r for r in d["report"]["results"] if r["id"] == "plan-memory-fit"][0]
assert "65.7" in fit["message"] or "65.69" in fit["message"], fit["message"]'
"$py" - "$tmp/spec.json" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))
assert s["method"] == "lora" and s["micro_batch"] == 1 and s["seq_len"] == 2048, s
assert s["gradient_checkpointing"] is True and s["steps"] >= 2 and s["attention"] == "sdpa", s
assert s["config_dir"] == ".", s["config_dir"]  # the private directory holding a copy
assert s["estimate_bytes"] > 0, s
print("ok the spec carries the run's knobs:", {k: s[k] for k in ("method", "micro_batch", "seq_len", "optim")})
PY
"$bin" plan --add-facts "$tmp/gpu.json" --no-runtime --model $M/llama-3-8b --method lora --batch 1 --seq 2048 \
  --gradient-checkpointing true --measure --python "$replay/plan-measure-ok.sh" --color never >"$tmp/ok.txt" 2>&1
if ! grep -Eq 'device peak \(reserved \+ context\) +estimate +[0-9.]+ GiB +measured +65.69 GiB' "$tmp/ok.txt" ||
  ! grep -q "judged by the measurement" "$tmp/ok.txt"; then
  echo "FAIL: the text report does not show estimate and measurement side by side"; cat "$tmp/ok.txt"; fail=1
fi

# 2. 2- and 4-layer copies: allocated extrapolated linearly to 32 layers, the modelled reserve on top.
run reduced "$replay/plan-measure-reduced.sh"
check reduced '
assert m["status"] == "ok" and m["reduced"], m
gib = 2**30
assert m["peak_allocated_bytes"] == 10 * gib + (32 - 2) * gib, m["peak_allocated_bytes"]
reserve = [i["bytes"] for i in d["memory"]["items"] if i["key"] == "allocator_reserve"][0]
assert m["peak_reserved_bytes"] == m["peak_allocated_bytes"] + reserve, (m, reserve)
assert m["device_bytes"] == m["peak_reserved_bytes"] + 805306368, m
assert "extrapolated to 32 layers" in m["detail"], m["detail"]'

# 3. Out of memory, a hang (killed at the time limit), a crash, output that is not the protocol, a
#    missing interpreter: each a status with its reason, the estimate judges, never a crash.
run oom "$replay/plan-measure-oom.sh"
check oom 'assert m["status"] == "oom" and "out of memory" in m["reason"] and d["verdict"] == "does not fit (measured)", (m, d["verdict"])'
start=$(date +%s)
run hang "$replay/hangs.sh" --measure-timeout 5
[ $(( $(date +%s) - start )) -lt 30 ] || { echo "FAIL: the hanging interpreter was not killed in time"; fail=1; }
check hang 'assert m["status"] == "error" and "5 s time limit" in m["reason"], m'
run crash "$replay/crashes.sh"
check crash 'assert m["status"] == "error" and "signal 11" in m["reason"], m'
run garbage "$replay/plan-measure-garbage.sh"
check garbage 'assert m["status"] == "error" and "gave no answer" in m["reason"], m'
printf '#!/bin/sh\n' >"$tmp/not-executable" && chmod 644 "$tmp/not-executable"
run none "$tmp/not-executable"
check none 'assert m["status"] == "not_measured" and "is not an executable file" in m["reason"] and rc == 0, (m, rc)'
# An interpreter that does not exist on this machine is a usage error, as for check --python.
run missing "$tmp/no-such-python"
if [ "$(cat "$tmp/missing.rc")" != 2 ] || ! grep -q "no such file" "$tmp/missing.err"; then
  echo "FAIL: plan --measure --python MISSING is not exit 2"; cat "$tmp/missing.err"; fail=1
fi

# 4. Debian's real python3 here: no transformers/peft or no GPU, "not measured" and why.
if [ -x /usr/bin/python3 ]; then
  run real /usr/bin/python3
  check real '
assert m["status"] == "not_measured", m
assert "transformers" in m["reason"] or "torch" in m["reason"] or "no GPU" in m["reason"], m["reason"]
assert d["verdict"] == "fits" and rc == 0, (d["verdict"], rc)'
fi

# 5. Progress on a terminal: stderr a real terminal (script(1) from util-linux runs the doctor on a
#    pseudo-terminal), one line per progress message of the child, as the child writes it; a string
#    from the child reaches the terminal escaped (an ESC as \x1B, never the sequence itself). With
#    stderr not a terminal (a log, a pipe), no progress line at all.
cat >"$tmp/progress-py" <<'EOF'
#!/bin/sh
# A measuring child that reports progress: a depth, two steps 2 s apart, a phase holding an
# escape sequence (ESC ] 0 ; sets the terminal's title), the figures, then the answer.
[ "$1" = "-P" ] && shift
echo '{"progress": {"layers": 32, "phase": "building the model from config.json (random weights)"}}'
echo '{"progress": {"layers": 32, "step": 1, "steps": 3, "step_s": 9.12}}'
/bin/sleep 2
echo '{"progress": {"layers": 32, "step": 2, "steps": 3, "step_s": 2.5}}'
echo '{"progress": {"phase": "\u001b]0;owned\u0007 title"}}'
echo '{"progress": {"layers": 32, "peak_allocated": 66000000000, "peak_reserved": 70000000000}}'
echo '{"status": "ok", "reduced": false, "torch": "2.11.0", "device": "AMD Radeon Graphics", "runs": [{"layers": 32, "peak_allocated": 66000000000, "peak_reserved": 70000000000, "non_allocator_bytes": 536870912, "step_times_s": [9.1, 2.5, 2.4]}]}'
EOF
chmod 755 "$tmp/progress-py"
measure_cmd="'$bin' plan --add-facts '$tmp/gpu.json' --no-runtime --model $M/llama-3-8b --method lora --batch 1 --seq 2048 --measure --python '$tmp/progress-py' --format json"
# Each line of the terminal stamped with the time it arrived (seconds since the epoch).
[ -x /usr/bin/script ] || { echo "FAIL: /usr/bin/script (util-linux's bsdutils) is needed for a terminal"; fail=1; }
/usr/bin/script -qec "$measure_cmd -o '$tmp/tty.json'" /dev/null </dev/null |
  while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$tmp/tty.txt"
"$py" - "$tmp/tty.txt" "$tmp/tty.json" <<'PY' || fail=1
import json, sys
lines = [l.rstrip("\r\n").split(" ", 1) for l in open(sys.argv[1], encoding="utf-8", errors="replace")]
text = [t.rstrip("\r") for _, t in lines]
prefix = "halo-doctor plan --measure: "
prog = [t[len(prefix):] for t in text if t.startswith(prefix)]
want = ["running ", "32 layers: building the model", "32 layers: step 1 of 3 done (9.1 s)",
        "32 layers: step 2 of 3 done (2.5 s)", "\\x1B]0;owned\\x07 title",
        "32 layers: measured: peak 61.47 GiB allocated, 65.19 GiB reserved"]
assert len(prog) == len(want), text
for p, w in zip(prog, want):
    assert p.startswith(w), (p, w)
assert not any("\x1b" in t or "\x07" in t for t in text), "an escape sequence from the child reached the terminal"
t1 = [float(s) for s, t in lines if "step 1 of 3" in t][0]
t2 = [float(s) for s, t in lines if "step 2 of 3" in t][0]
assert t2 - t1 > 1.0, ("the lines came together, not as the child wrote them", t2 - t1)
m = json.load(open(sys.argv[2]))["memory"]["measured"]
assert m["status"] == "ok" and m["peak_allocated_bytes"] == 66000000000, m
print(f"ok on a terminal: {len(prog)} progress lines, step 2 {t2 - t1:.1f} s after step 1, the escape escaped")
PY
eval "$measure_cmd" >"$tmp/pipe.json" 2>"$tmp/pipe.err"
if [ -s "$tmp/pipe.err" ]; then
  echo "FAIL: progress written to a stderr that is not a terminal:"; cat "$tmp/pipe.err"; fail=1
elif ! grep -q '"peak_allocated_bytes": 66000000000' "$tmp/pipe.json"; then
  echo "FAIL: the measurement without a terminal"; fail=1
else
  echo "ok stderr not a terminal: no progress line"
fi

# 6. What the config asks for, built as asked (issue 47 section 5): Debian's python3 runs the real
#    measuring script against fake torch, transformers, peft and bitsandbytes packages
#    (tests/replay/python/fake-site: each records what was built in $HALO_FAKE_LOG), so the script's
#    decisions are checked end to end without a GPU: QLoRA quantizes every linear layer but lm_head to
#    bitsandbytes' Linear4bit (NF4, double quantization, bf16 compute, uint8 storage) on the way to the
#    GPU, then prepare_model_for_kbit_training; 8-bit and paged optimizers are bitsandbytes.optim's
#    with Trainer's optim_bits and is_paged; without bitsandbytes each is "not measured", and nothing
#    is built with another optimizer or dtype; a name the script does not build is refused.
fake=$replay/fake-site
bnbrun() { # name, PYTHONPATH, extra args...
  local name=$1 path=$2; shift 2
  : >"$tmp/$name.log"
  HALO_FAKE_LOG=$tmp/$name.log PYTHONPATH=$path "$bin" plan --add-facts "$tmp/gpu.json" --no-runtime \
    --model $M/llama-3-8b --batch 1 --seq 2048 --measure --python /usr/bin/python3 --format json "$@" \
    >"$tmp/$name.json" 2>"$tmp/$name.err"
}
bnbcheck() { # name, python assertions on m (the measurement) and ev (the recorded events)
  "$py" - "$tmp/$1.json" "$tmp/$1.log" "$1" <<PY || fail=1
import json, sys
m = json.load(open(sys.argv[1]))["memory"]["measured"]
ev = [json.loads(l) for l in open(sys.argv[2])]
names = [e["event"] for e in ev]
$2
print("ok", sys.argv[3] + ":", m["status"], (m["reason"] or m["detail"])[:150])
PY
}
cat >"$tmp/axolotl-8bit.yml" <<'EOF'
base_model: meta-llama/Meta-Llama-3-8B
adapter: lora
load_in_8bit: true
micro_batch_size: 1
sequence_len: 2048
EOF
if [ -x /usr/bin/python3 ]; then
  bnbrun qlora "$fake/base:$fake/bnb" --method qlora
  bnbcheck qlora '
assert m["status"] == "ok", m
built = [e for e in ev if e["event"] == "from_config"]
assert len(built) == 1 and built[0]["device"] == "cpu", built  # quantized on the way to the GPU
q = [e for e in ev if e["event"] == "bnb.nn.Linear4bit"]
assert len(q) == 32 * 7, len(q)  # q k v o gate up down of 32 layers; lm_head stays nn.Linear
assert all(e["quant_type"] == "nf4" and e["compute_dtype"] == "bfloat16" and e["compress_statistics"] is True
           and e["quant_storage"] == "uint8" and e["device"] == "meta" for e in q), q[0]
w = [e for e in ev if e["event"] == "bnb.nn.Params4bit"]  # each weight, with the settings of its layer
assert len(w) == len(q) and all(e["quant_type"] == "nf4" and e["compress_statistics"] is True and
                                e["quant_storage"] == "uint8" and e["module"] == "Linear4bit" and
                                e["dtype"] == "bfloat16" for e in w), w[:1]
order = [n for n in names if n in ("bnb.nn.Linear4bit", "model.to", "prepare_model_for_kbit_training", "get_peft_model")]
assert order[-3:] == ["model.to", "prepare_model_for_kbit_training", "get_peft_model"], order[-4:]
assert [e["device"] for e in ev if e["event"] == "model.to"] == ["cuda"]
assert names.count("torch.optim.AdamW") == 1, names  # adamw_torch, the default
assert "Linear4bit" in m["detail"] and "torch.optim.AdamW" in m["detail"], m["detail"]'
  bnbrun qlora-nobnb "$fake/base" --method qlora
  bnbcheck qlora-nobnb '
assert m["status"] == "not_measured" and "needs bitsandbytes" in m["reason"] and "4-bit" in m["reason"], m
assert "from_config" not in names and not any(n.startswith("torch.optim") for n in names), names'
  for o in adamw_bnb_8bit:8:False adamw_8bit:8:False paged_adamw_8bit:8:True paged_adamw_32bit:32:True; do
    IFS=: read -r name bits paged <<<"$o"
    bnbrun "$name" "$fake/base:$fake/bnb" --method lora --optim "$name"
    bnbcheck "$name" "
assert m['status'] == 'ok', m
opt = [e for e in ev if e['event'].startswith(('bnb.optim', 'torch.optim'))]
assert len(opt) == 1 and opt[0]['event'] == 'bnb.optim.AdamW', opt
assert opt[0]['optim_bits'] == $bits and opt[0]['is_paged'] is $paged, opt
assert [e['device'] for e in ev if e['event'] == 'from_config'] == ['cuda'], ev[:2]  # LoRA on a bf16 base
assert 'bnb.nn.Linear4bit' not in names and 'model.to' not in names
assert 'bitsandbytes.optim.AdamW(optim_bits=$bits, is_paged=$paged)' in m['detail'], m['detail']"
  done
  bnbrun paged-nobnb "$fake/base" --method lora --optim paged_adamw_8bit
  bnbcheck paged-nobnb '
assert m["status"] == "not_measured" and "optim paged_adamw_8bit needs bitsandbytes" in m["reason"], m
assert names == [], names  # refused before anything was built: no torch.optim.AdamW in its place'
  bnbrun torchao "$fake/base:$fake/bnb" --method lora --optim adamw_torch_4bit
  bnbcheck torchao '
assert m["status"] == "not_measured" and "adamw_torch_4bit" in m["reason"] and "different run" in m["reason"], m
assert names == [], names'
  bnbrun int8 "$fake/base:$fake/bnb" --config "$tmp/axolotl-8bit.yml"
  bnbcheck int8 '
assert m["status"] == "ok", m
q = [e for e in ev if e["event"] == "bnb.nn.Linear8bitLt"]
assert len(q) == 32 * 7 and all(e["has_fp16_weights"] is False and e["threshold"] == 6.0 for e in q), q[:1]
w = [e for e in ev if e["event"] == "bnb.nn.Int8Params"]
assert len(w) == len(q) and all(e["has_fp16_weights"] is False for e in w) and "bnb.nn.Linear4bit" not in names
assert "prepare_model_for_kbit_training" in names and "Linear8bitLt" in m["detail"], m["detail"]'
fi

# 7. The measuring script ships clean (pyflakes) and is the one compiled in.
if command -v pyflakes3 >/dev/null; then
  pyflakes3 checks/plan/plan_measure.py "$replay/fake-site" || { echo "FAIL: pyflakes3 checks/plan/plan_measure.py"; fail=1; }
fi
exit $fail
