# SPDX-License-Identifier: MIT
"""The fake bitsandbytes.optim: AdamW and Lion record optim_bits and is_paged."""
import torch


class _Optimizer:
    def __init__(self, params, lr=1e-3, optim_bits=32, is_paged=False, **kw):
        torch.log("bnb.optim." + type(self).__name__, optim_bits=optim_bits, is_paged=is_paged,
                  params=len(list(params)))

    def step(self):
        pass

    def zero_grad(self, set_to_none=True):
        pass


class AdamW(_Optimizer):
    pass


class Lion(_Optimizer):
    pass
