# SPDX-License-Identifier: MIT
"""The fake transformers: AutoConfig reads the config.json it is given; AutoModelForCausalLM builds a
decoder of fake nn.Linear projections (q, k, v, o, gate, up, down per layer) and an lm_head, on the
current torch.device, and records where."""
import json
import os
import types

import torch
from torch import nn

__version__ = "5.0.0+fake"


class AutoConfig:
    @staticmethod
    def from_pretrained(path, local_files_only=False, trust_remote_code=False):
        with open(os.path.join(path, "config.json")) as f:
            return types.SimpleNamespace(**json.load(f))


class _Out:
    def __init__(self):
        self.loss = torch.Tensor()


class _Model(nn.Module):
    def __init__(self, config, dtype):
        super().__init__()
        h, i = config.hidden_size, config.intermediate_size
        self.layers = nn.Module()
        for n in range(config.num_hidden_layers):
            layer = nn.Module()
            for name, (a, b) in {"q_proj": (h, h), "k_proj": (h, h), "v_proj": (h, h), "o_proj": (h, h),
                                 "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}.items():
                setattr(layer, name, nn.Linear(a, b, bias=False, dtype=dtype))
            setattr(self.layers, str(n), layer)
        self.lm_head = nn.Linear(h, config.vocab_size, bias=False, dtype=dtype)

    def __call__(self, **kw):
        return _Out()

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        torch.log("gradient_checkpointing_enable", kwargs=gradient_checkpointing_kwargs)

    def enable_input_require_grads(self):
        pass


class AutoModelForCausalLM:
    @staticmethod
    def from_config(config, dtype=None, **kw):
        torch.log("from_config", device=torch.current_device(), dtype=dtype, layers=config.num_hidden_layers)
        return _Model(config, dtype)
