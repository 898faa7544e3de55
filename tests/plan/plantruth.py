#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""plan's memory estimate against real training steps (issue 34).

  plantruth.py HALO_DOCTOR REPO_ROOT [--table]

Runs `halo-doctor plan --format json` for every case under tests/plan/plantruth/configs (the
repository's copy of ../shared/plantruth, tests/plan/plantruth/SOURCE.md) and compares its estimate
(memory.required_bytes: allocated + allocator reserve + GPU context) with the device-level peak
measured for the same run by the real transformers Trainer (`peak_device_estimate`, trainer mode, in
measured/h200-2026-11-27.jsonl: max_memory_reserved() + what the allocator does not see). The
measurements are read here, at test time; no number is copied into this file. Each case must be
within -5 % .. +10 %, and the measured peak must lie inside the estimate's band (low_bytes ..
high_bytes), both the default allocator's run and the expandable_segments run of the same case
(measured/h200-2026-11-27-expandable-segments.jsonl): the band covers both allocator settings.

Never skips: the files are part of the repository. A missing file or case is a failure.
"""
import json
import os
import subprocess
import sys
import tempfile

LOW, HIGH = -5.0, 10.0
MEASURED = "measured/h200-2026-11-27.jsonl"
EXPANDABLE = "measured/h200-2026-11-27-expandable-segments.jsonl"
DEPTH = "measured/depth-h200-2026-11-27.jsonl"
# Cases the estimate is known to miss, with the reason and the looser bounds (low %, high %) they must
# still meet (docs/plan.md "Checked against measurements"). Keep this list short and explained.
KNOWN = {
    "c04-qwen2.5-0.5b-full-b4-s2048-eager": (
        -10.0, HIGH, "the allocator replay matches step 1 (61.10 vs 61.18 GiB reserved) but not step 2, "
        "where the real run asked for one more fp32 loss block (4.64 GiB): a request inside an op that "
        "the replay does not see split a cached block; the band's high end covers it"),
}


def read_measured(path):
    """The trainer-mode rows of a measurement file by case, and its `_env` line."""
    rows, env = {}, {}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("case") == "_env":
                env = r
            elif r.get("mode") == "trainer" and r.get("status") == "ok":
                rows[r["case"]] = r
    return rows, env


def plan_args(case_dir):
    """The case's knobs as plan's options, the way plantruth/predict.sh passes them."""
    with open(os.path.join(case_dir, "case.json")) as f:
        c = json.load(f)
    args = ["--method", c["method"], "--batch", str(c["batch"]), "--seq", str(c["seq"]),
            "--gradient-checkpointing", "true" if c["gradient_checkpointing"] else "false",
            "--optim", c["optim"], "--load-dtype", c["load_dtype"]]
    if c["method"] != "full":
        args += ["--lora-r", str(c["lora_r"])]
    if "gradient_accumulation_steps" in c:
        args += ["--grad-accum", str(c["gradient_accumulation_steps"])]
    cfgs = ["--config", os.path.join(case_dir, "args.json")]
    adapter = os.path.join(case_dir, "adapter_config.json")
    if os.path.exists(adapter):
        cfgs += ["--config", adapter]
    return cfgs + args


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary, repo = sys.argv[1], sys.argv[2]
    table_only = "--table" in sys.argv[3:]
    truth = os.path.join(repo, "tests", "plan", "plantruth")
    measured, env = read_measured(os.path.join(truth, MEASURED))
    expandable, env_x = read_measured(os.path.join(truth, EXPANDABLE))
    if not measured or not expandable:
        print(f"FAIL: no trainer-mode measurement in {truth}/measured")
        return 1
    for e in (env, env_x):
        print("measured on: " + ", ".join(f"{k} {e[k]}" for k in ("device", "torch", "transformers", "peft",
                                                                  "alloc_conf") if k in e))
    fixture = os.path.join(repo, "tests", "fixtures", "strix-halo-fixed")
    fail = 0
    rows = 0
    print(f"{'case':44s} {'estimate':>9s} {'measured':>9s} {'err %':>7s} {'alloc est':>9s} {'alloc':>7s}  band (GiB)")
    gib = float(1 << 30)
    for name in sorted(os.listdir(os.path.join(truth, "configs"))):
        case_dir = os.path.join(truth, "configs", name)
        if not os.path.isfile(os.path.join(case_dir, "case.json")):
            continue
        if name not in measured:
            print(f"FAIL {name}: no trainer-mode measurement")
            fail = 1
            continue
        with tempfile.TemporaryFile() as out:
            cmd = [binary, "plan", "--root", fixture, "--no-runtime", "--format", "json", "--fail-on", "never",
                   "--model", os.path.join(case_dir, "config.json")] + plan_args(case_dir)
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, timeout=60).returncode
            out.seek(0)
            try:
                p = json.load(out)
            except ValueError:
                print(f"FAIL {name}: plan exit {rc}, no JSON")
                fail = 1
                continue
        m = measured[name]
        real = m["peak_device_estimate"]
        est = p["memory"]["required_bytes"]
        err = (est - real) / real * 100
        lo, hi = p["memory"]["low_bytes"], p["memory"]["high_bytes"]
        low, high = KNOWN.get(name, (LOW, HIGH, ""))[:2]
        if name not in expandable:
            print(f"FAIL {name}: no expandable_segments measurement")
            fail = 1
            continue
        real_x = expandable[name]["peak_device_estimate"]
        ok = low <= err <= high and lo <= real <= hi and lo <= real_x <= hi
        rows += 1
        note = f"  known: {KNOWN[name][2]}" if name in KNOWN else ""
        print(f"{'' if ok else 'FAIL '}{name:44s} {est / gib:9.2f} {real / gib:9.2f} {err:+7.1f} "
              f"{p['memory']['allocated_bytes'] / gib:9.2f} {m['peak_allocated'] / gib:7.2f}  "
              f"{lo / gib:.2f} .. {hi / gib:.2f} (width {(hi - lo) / gib:.2f}; expandable {real_x / gib:.2f})"
              f"  peak: {p['memory']['peak_phase']}{note}")
        if not ok and not table_only:
            fail = 1
    print(f"{rows} cases; target {LOW:+.0f} % .. {HIGH:+.0f} % of the measured device-level peak, "
          "measured peak inside the band")
    fail |= depth_check(binary, truth, measured)
    return fail


def depth_check(binary, truth, measured):
    """plan --measure's reduced-depth path on real numbers: an interpreter that answers with the 2- and
    4-layer runs of measured/depth-h200-2026-11-27.jsonl; plan's extrapolated allocated peak must be
    within 5 % of the full model's measured one (the issue's 0.0 .. -3.3 %)."""
    path = os.path.join(truth, DEPTH)
    depth = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line) if line.strip() else {}
            if r.get("mode") == "trainer" and r.get("status") == "ok":
                base, _, layers = r["case"].rpartition("-L")
                depth.setdefault(base, {})[int(layers)] = r
    fail = 0
    gib = float(1 << 30)
    for name, runs in sorted(depth.items()):
        if 2 not in runs or 4 not in runs or name not in measured:
            continue
        answer = {"status": "ok", "reduced": True, "torch": "replayed", "device": "replayed from " + DEPTH,
                  "runs": [{"layers": n, "peak_allocated": runs[n]["peak_allocated"],
                            "peak_reserved": runs[n]["peak_reserved"],
                            "non_allocator_bytes": runs[n]["non_allocator_bytes"],
                            "step_times_s": runs[n]["step_times_s"]} for n in (2, 4)]}
        with tempfile.TemporaryDirectory() as tmp:
            fake = os.path.join(tmp, "python")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\ncat <<'EOF'\n" + json.dumps(answer) + "\nEOF\n")
            os.chmod(fake, 0o755)
            case_dir = os.path.join(truth, "configs", name)
            # --measure measures this machine (--root is refused with it): probed live; only the
            # extrapolated allocated peak is read, which no fact of the machine changes.
            cmd = [binary, "plan", "--no-runtime", "--format", "json", "--fail-on", "never",
                   "--model", os.path.join(case_dir, "config.json"), "--measure", "--python", fake] + plan_args(case_dir)
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60).stdout
        m = json.loads(out)["memory"]["measured"]
        real = measured[name]["peak_allocated"]
        err = (m["peak_allocated_bytes"] - real) / real * 100
        ok = m["status"] == "ok" and m["reduced"] and abs(err) <= 5.0
        fail |= not ok
        print(f"{'' if ok else 'FAIL '}--measure 2/4 layers -> {name:40s} allocated {m['peak_allocated_bytes'] / gib:6.2f} "
              f"GiB, measured full {real / gib:6.2f} GiB ({err:+.1f} %); device {m['device_bytes'] / gib:6.2f} GiB "
              f"vs {measured[name]['peak_device_estimate'] / gib:6.2f}")
    return fail


if __name__ == "__main__":
    sys.exit(main())
