# SPDX-License-Identifier: MIT
"""The fake torch.optim: records which optimizer the script built and with what."""
import torch


class _Optimizer:
    def __init__(self, params, **kw):
        self.params = list(params)
        torch.log("torch.optim." + type(self).__name__, params=len(self.params),
                  **{k: v for k, v in kw.items() if k != "lr"})

    def step(self):
        pass

    def zero_grad(self, set_to_none=True):
        pass


class AdamW(_Optimizer):
    pass


class SGD(_Optimizer):
    pass
