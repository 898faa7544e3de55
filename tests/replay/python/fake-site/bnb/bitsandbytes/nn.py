# SPDX-License-Identifier: MIT
"""The fake bitsandbytes.nn: Linear4bit, Linear8bitLt, Params4bit, Int8Params. As in bitsandbytes, the
layer's own weight is a parameter of the quantized class whose attributes hold the layer's settings."""
import torch
from torch import nn


class _Weight(nn.Parameter):
    def __init__(self, shape, **attrs):
        super().__init__(shape, torch.float32, False)
        self.__dict__.clear()
        self.__dict__.update(attrs)


class Linear4bit(nn.Module):
    def __init__(self, input_features, output_features, bias=True, compute_dtype=None, compress_statistics=True,
                 quant_type="fp4", quant_storage=torch.uint8, device=None):
        super().__init__()
        self.in_features, self.out_features = input_features, output_features
        self.weight = _Weight((output_features, input_features), blocksize=64, quant_type=quant_type,
                              compress_statistics=compress_statistics, quant_storage=quant_storage,
                              quant_state=None, module=self, bnb_quantized=False)
        torch.log("bnb.nn.Linear4bit", device=torch.current_device(), compute_dtype=compute_dtype,
                  compress_statistics=compress_statistics, quant_type=quant_type, quant_storage=quant_storage)


class Linear8bitLt(nn.Module):
    def __init__(self, input_features, output_features, bias=True, has_fp16_weights=True, threshold=0.0,
                 index=None, device=None):
        super().__init__()
        self.in_features, self.out_features = input_features, output_features
        self.weight = _Weight((output_features, input_features), has_fp16_weights=has_fp16_weights, CB=None,
                              SCB=None)
        torch.log("bnb.nn.Linear8bitLt", device=torch.current_device(), has_fp16_weights=has_fp16_weights,
                  threshold=threshold)


class Params4bit(nn.Parameter):
    def __init__(self, data=None, requires_grad=False, quant_state=None, blocksize=64, compress_statistics=True,
                 quant_type="fp4", quant_storage=torch.uint8, module=None, bnb_quantized=False):
        super().__init__(data.shape, quant_storage, requires_grad)
        torch.log("bnb.nn.Params4bit", quant_type=quant_type, compress_statistics=compress_statistics,
                  quant_storage=quant_storage, module=type(module).__name__, dtype=data.dtype)


class Int8Params(nn.Parameter):
    def __init__(self, data=None, requires_grad=True, has_fp16_weights=False, CB=None, SCB=None):
        super().__init__(data.shape, "int8", requires_grad)
        torch.log("bnb.nn.Int8Params", has_fp16_weights=has_fp16_weights, dtype=data.dtype)
