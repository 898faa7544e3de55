# SPDX-License-Identifier: MIT
"""The fake bitsandbytes.nn: Linear4bit, Linear8bitLt, Params4bit, Int8Params."""
import torch
from torch import nn


class Linear4bit(nn.Module):
    def __init__(self, input_features, output_features, bias=True, compute_dtype=None, compress_statistics=True,
                 quant_type="fp4", quant_storage=torch.uint8, device=None):
        super().__init__()
        self.in_features, self.out_features = input_features, output_features
        torch.log("bnb.nn.Linear4bit", device=torch.current_device(), compute_dtype=compute_dtype,
                  compress_statistics=compress_statistics, quant_type=quant_type, quant_storage=quant_storage)


class Linear8bitLt(nn.Module):
    def __init__(self, input_features, output_features, bias=True, has_fp16_weights=True, threshold=0.0,
                 index=None, device=None):
        super().__init__()
        self.in_features, self.out_features = input_features, output_features
        torch.log("bnb.nn.Linear8bitLt", device=torch.current_device(), has_fp16_weights=has_fp16_weights,
                  threshold=threshold)


class Params4bit(nn.Parameter):
    def __init__(self, data=None, requires_grad=False, quant_type="fp4", compress_statistics=True,
                 quant_storage=torch.uint8, **kw):
        super().__init__(data.shape, quant_storage, requires_grad)
        torch.log("bnb.nn.Params4bit", quant_type=quant_type, compress_statistics=compress_statistics)


class Int8Params(nn.Parameter):
    def __init__(self, data=None, requires_grad=False, has_fp16_weights=False, **kw):
        super().__init__(data.shape, "int8", requires_grad)
        torch.log("bnb.nn.Int8Params", has_fp16_weights=has_fp16_weights)
