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
  {"status": "not_measured", "reason": "..."}   no torch / transformers / peft / GPU, no bitsandbytes for
                                                an 8-bit or paged optimizer or 4-/8-bit loading, an
                                                optimizer the script does not build
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


# The optimizers the script builds as transformers' Trainer builds them for TrainingArguments.optim
# (trainer.py get_optimizer_cls_and_kwargs): adamw_torch is torch.optim.AdamW, adamw_torch_fused
# the same with fused=True, sgd torch.optim.SGD, adafactor transformers' Adafactor with
# scale_parameter=False, relative_step=False; and the bitsandbytes ones, for which Trainer imports
# bitsandbytes.optim.AdamW or Lion and passes optim_bits=8 when the name holds "8bit" (else 32) and
# is_paged=True when it holds "paged" (bitsandbytes.optim.AdamW(params, lr, betas, eps, weight_decay,
# amsgrad, optim_bits=32, args, min_8bit_size=4096, is_paged=False):
# https://huggingface.co/docs/bitsandbytes/reference/optim/adamw; AdamW8bit, PagedAdamW8bit and
# PagedAdamW32bit are the same class with those arguments fixed). Any other name is refused.
TORCH_OPTIMS = ("adamw_torch", "adamw_torch_fused", "sgd", "adafactor")
BNB_OPTIMS = {  # name: (bitsandbytes.optim class, optim_bits, is_paged)
    "adamw_bnb_8bit": ("AdamW", 8, False),
    "adamw_8bit": ("AdamW", 8, False),
    "paged_adamw_8bit": ("AdamW", 8, True),
    "paged_adamw_32bit": ("AdamW", 32, True),
    "lion_8bit": ("Lion", 8, False),
    "lion_32bit": ("Lion", 32, False),
    "paged_lion_8bit": ("Lion", 8, True),
    "paged_lion_32bit": ("Lion", 32, True),
}


class NotMeasured(Exception):
    """The run as configured cannot be reproduced here; the message says why."""


def quantized_loading(spec):
    """'4bit' (QLoRA), '8bit' (LoRA on an LLM.int8 base) or None."""
    if spec["method"] == "qlora":
        return "4bit"
    if spec.get("load_in_8bit") and spec["method"] != "full":
        return "8bit"
    return None


def refusal(spec):
    """Why this run cannot be measured as configured, or None (before anything is imported)."""
    optim = spec["optim"]
    if optim not in TORCH_OPTIMS and optim not in BNB_OPTIMS:
        return (f"optim {optim[:60]!r} is not one the measuring script builds as Trainer does (torch's AdamW "
                "and SGD, Adafactor, bitsandbytes' 8-bit and paged AdamW and Lion); measuring another "
                "optimizer would measure a different run")
    if spec.get("load_in_8bit") and spec["method"] == "full":
        return ("load_in_8bit with full fine-tuning: Trainer refuses to train a purely quantized model, "
                "so there is no such run to measure")
    return None


def needs_bitsandbytes(spec):
    """What of the run needs bitsandbytes, in words, or None."""
    what = []
    if spec["optim"] in BNB_OPTIMS:
        what.append(f"optim {spec['optim']}")
    q = quantized_loading(spec)
    if q:
        what.append("4-bit (QLoRA) loading" if q == "4bit" else "8-bit loading (load_in_8bit)")
    return " and ".join(what) or None


def make_optimizer(spec, params, torch):
    """The optimizer Trainer would build for spec["optim"] (see TORCH_OPTIMS, BNB_OPTIMS), and how."""
    optim = spec["optim"]
    if optim in BNB_OPTIMS:
        import bitsandbytes.optim as bnb_optim

        cls, bits, paged = BNB_OPTIMS[optim]
        return (getattr(bnb_optim, cls)(params, lr=1e-5, optim_bits=bits, is_paged=paged),
                f"bitsandbytes.optim.{cls}(optim_bits={bits}, is_paged={paged})")
    if optim == "sgd":
        return torch.optim.SGD(params, lr=1e-5), "torch.optim.SGD"
    if optim == "adafactor":
        from transformers.optimization import Adafactor

        return (Adafactor(params, lr=1e-5, scale_parameter=False, relative_step=False),
                "transformers Adafactor(scale_parameter=False, relative_step=False)")
    fused = "fused" in optim
    return (torch.optim.AdamW(params, lr=1e-5, fused=True if fused else None),
            "torch.optim.AdamW" + ("(fused=True)" if fused else ""))


def quantize_linears(module, torch, bnb, kind, prefix=""):
    """Replaces every nn.Linear under `module` but lm_head with bitsandbytes' quantized layer holding
    the same (random) weight, as transformers' src/transformers/integrations/bitsandbytes.py
    (huggingface/transformers 01ae98ae: replace_with_bnb_linear, _replace_with_bnb_linear,
    set_module_quantized_tensor_to_device) does for from_pretrained (modules_to_not_convert defaults to ["lm_head"]; the new module built on
    the meta device, as under init_empty_weights; requires_grad_(False)):
      4 bit: bnb.nn.Linear4bit(in, out, bias, compute_dtype, compress_statistics=bnb_4bit_use_double_quant,
             quant_type=bnb_4bit_quant_type, quant_storage=bnb_4bit_quant_storage), here NF4 with double
             quantization and a bfloat16 compute dtype (the QLoRA recipe, arXiv:2305.14314 section 3,
             which plan's estimate counts) and BitsAndBytesConfig's default quant_storage, torch.uint8;
      8 bit: bnb.nn.Linear8bitLt(in, out, bias, has_fp16_weights=False, threshold=6.0)
             (BitsAndBytesConfig's llm_int8_has_fp16_weight and llm_int8_threshold defaults).
    The weights are quantized when the model moves to the GPU (Params4bit / Int8Params .to(device)),
    as from_pretrained quantizes each weight it loads onto the GPU. Returns how many were replaced."""
    n = 0
    for name, child in list(module.named_children()):
        full = prefix + name
        if isinstance(child, torch.nn.Linear) and name != "lm_head":
            bias = child.bias is not None
            with torch.device("meta"):
                if kind == "4bit":
                    new = bnb.nn.Linear4bit(child.in_features, child.out_features, bias, torch.bfloat16,
                                            compress_statistics=True, quant_type="nf4", quant_storage=torch.uint8)
                else:
                    new = bnb.nn.Linear8bitLt(child.in_features, child.out_features, bias,
                                              has_fp16_weights=False, threshold=6.0)
            # The weight, as transformers' set_module_quantized_tensor_to_device makes it for a weight it
            # loads: the new module's parameter class with that parameter's own attributes (quant_type,
            # compress_statistics, quant_storage, blocksize, module / has_fp16_weights), quantized by .to().
            cls = bnb.nn.Params4bit if kind == "4bit" else bnb.nn.Int8Params
            new.weight = cls(child.weight.data, requires_grad=False, **new.weight.__dict__)
            if bias:
                new.bias = child.bias
            new.requires_grad_(False)
            setattr(module, name, new)
            n += 1
        else:
            n += quantize_linears(child, torch, bnb, kind, full + ".")
    return n


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
    quant = quantized_loading(spec)
    # A quantized base is built on the CPU and quantized on its way to the GPU (quantize_linears).
    with torch.device("cpu" if quant else dev_name):
        try:
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, **kw)
        except TypeError:  # transformers 4.x
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype, **kw)
    measured_as = {}
    if quant:
        import bitsandbytes as bnb
        from peft import prepare_model_for_kbit_training

        replaced = quantize_linears(model, torch, bnb, quant)
        if not replaced:
            raise NotMeasured("no nn.Linear to quantize in this model")
        # What from_pretrained sets on a model it quantized, and PEFT reads (prepare_model_for_kbit_training).
        model.is_quantized = True
        setattr(model, "is_loaded_in_4bit" if quant == "4bit" else "is_loaded_in_8bit", True)
        model = model.to(dev_name)
        torch.cuda.empty_cache()
        # What TRL's SFTTrainer and axolotl do with a quantized base before LoRA (peft utils/other.py
        # prepare_model_for_kbit_training: the parameters that are not quantized in fp32, input
        # gradients, checkpointing as configured).
        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=spec["gradient_checkpointing"],
            gradient_checkpointing_kwargs={"use_reentrant": False})
        measured_as["weights"] = (f"{replaced} linear layers bitsandbytes Linear4bit (nf4, double quantization, "
                                  "compute bfloat16, quant_storage uint8)" if quant == "4bit" else
                                  f"{replaced} linear layers bitsandbytes Linear8bitLt (threshold 6.0)")
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
    opt, measured_as["optimizer"] = make_optimizer(spec, params, torch)
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
           "step_times_s": times, "measured_as": measured_as}
    del model, opt, params
    torch.cuda.empty_cache()
    return res


def main():
    try:
        spec = json.loads(sys.argv[1])
    except (IndexError, ValueError) as e:
        say({"status": "error", "reason": f"bad spec: {e}"})
        return 0
    why = refusal(spec)
    if why:
        say({"status": "not_measured", "reason": why})
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
    # 8-bit and paged optimizers and 4-/8-bit loading are bitsandbytes': without it the run is not
    # measured, never measured with another optimizer or dtype.
    what = needs_bitsandbytes(spec)
    if what:
        try:
            __import__("bitsandbytes")
        except BaseException as e:  # noqa: BLE001 - any import failure is the answer
            say({"status": "not_measured", "torch": torch.__version__,
                 "reason": f"{what} needs bitsandbytes, which cannot be imported here "
                           f"({type(e).__name__}: {str(e)[:120]})"})
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
        except NotMeasured as e:
            say({"status": "not_measured", "reason": str(e)[:300], **env})
            return 0
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
