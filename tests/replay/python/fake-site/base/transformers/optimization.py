# SPDX-License-Identifier: MIT
"""The fake transformers.optimization.Adafactor."""
from torch.optim import _Optimizer


class Adafactor(_Optimizer):
    pass
