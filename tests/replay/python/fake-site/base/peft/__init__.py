# SPDX-License-Identifier: MIT
"""The fake peft: LoRA adds one trainable parameter; prepare_model_for_kbit_training is recorded."""
import torch
from torch import nn

__version__ = "0.18.0+fake"


class LoraConfig:
    def __init__(self, **kw):
        self.kw = kw


def get_peft_model(model, config):
    torch.log("get_peft_model", r=config.kw.get("r"))
    model.lora_A = nn.Parameter((8, 8), torch.float32, requires_grad=True)
    return model


def prepare_model_for_kbit_training(model, use_gradient_checkpointing=True, gradient_checkpointing_kwargs=None):
    torch.log("prepare_model_for_kbit_training", use_gradient_checkpointing=use_gradient_checkpointing,
              kwargs=gradient_checkpointing_kwargs)
    return model
