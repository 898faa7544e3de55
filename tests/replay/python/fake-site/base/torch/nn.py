# SPDX-License-Identifier: MIT
"""The fake torch.nn: Module, Parameter, Linear (built on the current torch.device), utils."""
import types

import torch


class Parameter(torch.Tensor):
    def __init__(self, shape=(), dtype=torch.float32, requires_grad=True):
        super().__init__(shape, dtype)
        self.requires_grad = requires_grad


class Module:
    def __init__(self):
        self._children = {}
        self.training = False

    def __setattr__(self, name, value):
        if isinstance(value, Module) and "_children" in self.__dict__:
            self._children[name] = value
        object.__setattr__(self, name, value)

    def named_children(self):
        return list(self._children.items())

    def parameters(self):
        for v in self.__dict__.values():
            if isinstance(v, Parameter):
                yield v
        for c in self._children.values():
            yield from c.parameters()

    def requires_grad_(self, flag=True):
        for p in self.parameters():
            p.requires_grad = flag
        return self

    def train(self, mode=True):
        self.training = mode
        return self

    def to(self, dev):
        torch.log("model.to", device=str(dev))
        return self


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, dtype=torch.float32):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.device = torch.current_device()
        self.weight = Parameter((out_features, in_features), dtype)
        self.bias = Parameter((out_features,), dtype) if bias else None


utils = types.SimpleNamespace(clip_grad_norm_=lambda params, max_norm: torch.Tensor())
