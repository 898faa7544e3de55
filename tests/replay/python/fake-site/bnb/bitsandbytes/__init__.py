# SPDX-License-Identifier: MIT
"""A fake bitsandbytes: its quantized layers, parameters and optimizers record how they were built."""
from . import nn, optim

__all__ = ["nn", "optim"]

__version__ = "0.49.0+fake"
