# SPDX-License-Identifier: MIT
"""A fake torch for tests/cli/plan_measure.sh: just what checks/plan/plan_measure.py calls, no tensors.

Each call that decides what the measured run is (the device a module is built on, the optimizer, a
move to the GPU) is appended as one JSON line to $HALO_FAKE_LOG, for the test to read. The memory
figures are fixed: 5 GiB allocated, 6 GiB reserved at the peak, 128 GiB on the device.
"""
import json
import os
import types

__version__ = "2.11.0+fake"
version = types.SimpleNamespace(hip="7.1.fake")
bfloat16, float16, float32, uint8 = "bfloat16", "float16", "float32", "uint8"
GIB = 1 << 30
_device = ["cpu"]


def log(event, **kw):
    path = os.environ.get("HALO_FAKE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"event": event, **kw}) + "\n")


def current_device():
    return _device[-1]


class device:  # noqa: N801 - torch's spelling
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        _device.append(self.name)
        return self

    def __exit__(self, *exc):
        _device.pop()
        return False


class _Null:
    def __init__(self, *a, **kw):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


autocast = _Null


class Tensor:
    def __init__(self, shape=(), dtype=float32):
        self.shape, self.dtype, self.data = shape, dtype, self

    def to(self, *a, **kw):
        return self

    def __truediv__(self, other):
        return self

    def backward(self):
        pass


def randint(low, high, size, generator=None):
    return Tensor(size, "int64")


def ones_like(t):
    return Tensor(t.shape, t.dtype)


class Generator:
    def __init__(self, device="cpu"):
        pass

    def manual_seed(self, seed):
        return self


class cuda:  # noqa: N801 - a namespace, as torch.cuda is
    class OutOfMemoryError(RuntimeError):
        pass

    is_available = staticmethod(lambda: True)
    get_device_name = staticmethod(lambda i=0: "Fake GPU")
    mem_get_info = staticmethod(lambda: (128 * GIB - 6 * GIB - GIB // 2, 128 * GIB))
    synchronize = staticmethod(lambda: None)
    reset_peak_memory_stats = staticmethod(lambda: None)
    max_memory_allocated = staticmethod(lambda: 5 * GIB)
    max_memory_reserved = staticmethod(lambda: 6 * GIB)
    memory_reserved = staticmethod(lambda: 6 * GIB)
    empty_cache = staticmethod(lambda: None)


from . import nn, optim  # noqa: E402 - after the names they use

__all__ = ["nn", "optim"]
