# SPDX-License-Identifier: MIT
"""halo-doctor plan --measure: a few real training steps of the user's model on the user's GPU.

Run by halo-doctor under the user's interpreter (--python) in a child process with a time limit:
    python plan_measure.py SPEC_JSON
SPEC_JSON (one argument) holds the directory of the model's config.json (".": the private working
directory halo-doctor copied the named file into), the method, micro-batch, sequence
length, optimizer, checkpointing, attention, LoRA rank/targets/dropout, the layer counts to run
and the number of steps. The model is built from its config with random weights
(AutoModelForCausalLM.from_config: nothing is downloaded), in the load dtype, on GPU 0; LoRA through
PEFT; the steps follow transformers' Trainer.training_step (autocast when bf16/fp16, the model's
own loss, backward, clip_grad_norm_, optimizer.step, zero_grad(set_to_none=True)).

Output: progress lines ({"progress": {"layers": L, "phase": "..."}} when a depth starts, {"progress":
{"layers": L, "step": k, "steps": n, "step_s": t}} after each optimizer step, and the run's figures after each
depth; halo-doctor shows them on a terminal), then one JSON object per line, the last one the answer:
  {"status": "ok", "runs": [{"layers": L, "peak_allocated": B, "peak_reserved": B,
   "non_allocator_bytes": B, "step_times_s": [...]}, ...], "torch": ..., "device": ...}
  {"status": "not_measured", "reason": "..."}   no torch / transformers / peft / GPU
  {"status": "oom", "layers": L, "reason": "..."}
  {"status": "error", "reason": "..."}
Only the standard library is imported before the checks, so a missing package is an answer, not
a traceback.
"""
import sys; sys.path[:1] = [p for p in sys.path[:1] if p]  # noqa: E702,I001 - first, see below
# halo-doctor runs this with `python -P -c SCRIPT` and PYTHONSAFEPATH=1 in a private directory; an
# interpreter older than 3.11 ignores both and puts '' (the working directory) first on sys.path,
# which the line above removes before any other import (sys is built in).
import contextlib
import json
import time


def say(obj):
    print(json.dumps(obj), flush=True)


def run(spec, layers, torch, dev_name):
    from transformers import AutoConfig, AutoModelForCausalLM

    # The config.json halo-doctor copied into the working directory: local files only (with
    # HF_HUB_OFFLINE=1 set too), and never code that a config's auto_map names.
    config = AutoConfig.from_pretrained(spec["config_dir"], local_files_only=True, trust_remote_code=False)
    if layers:
        config.num_hidden_layers = layers
        if hasattr(config, "layer_types") and isinstance(config.layer_types, list):
            config.layer_types = config.layer_types[:layers]
    depth = layers or config.num_hidden_layers
    say({"progress": {"layers": depth, "phase": "building the model from config.json (random weights)"}})
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(spec["load_dtype"], torch.float32)
    kw = {"attn_implementation": spec["attention"], "trust_remote_code": False}
    with torch.device(dev_name):
        try:
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, **kw)
        except TypeError:  # transformers 4.x
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype, **kw)
    if spec["method"] != "full":
        from peft import LoraConfig, get_peft_model

        targets = spec["lora_targets"]
        model = get_peft_model(model, LoraConfig(
            r=spec["lora_r"], lora_alpha=2 * spec["lora_r"], lora_dropout=spec["lora_dropout"],
            target_modules="all-linear" if targets == ["all-linear"] else targets, task_type="CAUSAL_LM"))
    if spec["gradient_checkpointing"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if spec["method"] != "full":
            model.enable_input_require_grads()
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optim = spec["optim"]
    if optim == "sgd":
        opt = torch.optim.SGD(params, lr=1e-5)
    elif optim == "adafactor":
        from transformers.optimization import Adafactor

        opt = Adafactor(params, lr=1e-5, scale_parameter=False, relative_step=False)
    else:
        opt = torch.optim.AdamW(params, lr=1e-5, fused=True if "fused" in optim else None)
    vocab = config.vocab_size
    b, s = spec["micro_batch"], spec["seq_len"]
    amp = spec["bf16"] or spec["fp16"]
    amp_dtype = torch.bfloat16 if spec["bf16"] else torch.float16
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    g = torch.Generator(device="cpu").manual_seed(0)
    for step in range(spec["steps"]):
        t0 = time.time()
        for _ in range(spec["grad_accum"]):
            ids = torch.randint(0, vocab, (b, s), generator=g).to(dev_name)
            ctx = torch.autocast(device_type="cuda", dtype=amp_dtype) if amp else contextlib.nullcontext()
            with ctx:
                out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids)
            loss = out.loss / spec["grad_accum"]
            del out
            loss.backward()
            del loss, ids
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(round(time.time() - t0, 4))
        say({"progress": {"layers": depth, "step": step + 1, "steps": spec["steps"], "step_s": times[-1]}})
    free, total = torch.cuda.mem_get_info()
    res = {"layers": depth,
           "peak_allocated": int(torch.cuda.max_memory_allocated()),
           "peak_reserved": int(torch.cuda.max_memory_reserved()),
           "non_allocator_bytes": int(total - free - torch.cuda.memory_reserved()),
           "step_times_s": times}
    del model, opt, params
    torch.cuda.empty_cache()
    return res


def main():
    try:
        spec = json.loads(sys.argv[1])
    except (IndexError, ValueError) as e:
        say({"status": "error", "reason": f"bad spec: {e}"})
        return 0
    missing = []
    try:
        import torch
    except BaseException as e:  # noqa: BLE001 - any import failure is the answer
        say({"status": "not_measured", "reason": f"import torch failed: {type(e).__name__}: {str(e)[:200]}"})
        return 0
    for mod in ["transformers"] + (["peft"] if spec.get("method") != "full" else []):
        try:
            __import__(mod)
        except BaseException as e:  # noqa: BLE001
            missing.append(f"{mod} ({type(e).__name__}: {str(e)[:120]})")
    if missing:
        say({"status": "not_measured", "reason": "cannot import " + ", ".join(missing), "torch": torch.__version__})
        return 0
    if not torch.cuda.is_available():
        say({"status": "not_measured", "reason": "torch.cuda.is_available() is False: no GPU PyTorch can use",
             "torch": torch.__version__})
        return 0
    env = {"torch": torch.__version__, "hip": getattr(torch.version, "hip", None),
           "device": torch.cuda.get_device_name(0)}
    free, total = torch.cuda.mem_get_info()
    env["device_total_bytes"] = int(total)
    env["device_free_bytes"] = int(free)
    # A run the estimate says would not fit in 85 % of what is free now (or would take long) is
    # measured as reduced-depth copies; halo-doctor extrapolates their allocated memory.
    depths = [0]
    if spec.get("estimate_bytes", 0) > 0.85 * free or spec.get("reduced"):
        depths = [2, 4]
    runs = []
    for layers in depths:
        try:
            runs.append(run(spec, layers, torch, "cuda"))
        except BaseException as e:  # noqa: BLE001
            oom = isinstance(e, getattr(torch.cuda, "OutOfMemoryError", ())) or "out of memory" in str(e).lower()
            say({"status": "oom" if oom else "error", "layers": layers,
                 "reason": f"{type(e).__name__}: {str(e)[:300]}", **env,
                 "peak_allocated_before_failure": int(torch.cuda.max_memory_allocated())})
            return 0
        say({"progress": runs[-1]})
    say({"status": "ok", "runs": runs, "reduced": depths != [0], **env})
    return 0


if __name__ == "__main__":
    sys.exit(main())
