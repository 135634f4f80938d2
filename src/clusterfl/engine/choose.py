"""Which kernel computes a model (`make_kernel`): the fastest that applies.

- Linear(-ReLU-Linear)* stacks: `BmmKernel` (1.7-3x faster than vmap on the DNN);
- conv blocks then a Linear-ReLU head (our `cnn`, `cnn6`): `ConvKernel`;
- anything else: `VmapKernel`.
Measured in docs/engine.md; `kind` forces one (tests, benchmarks).
"""

from typing import Literal

import torch
from torch import nn

from clusterfl.engine.conv import ConvKernel, conv_layers
from clusterfl.engine.kernels import BmmKernel, Kernel, VmapKernel, linear_relu_layers

KernelName = Literal["auto", "bmm", "conv", "vmap"]
KERNELS: tuple[str, ...] = ("auto", "bmm", "conv", "vmap")


def make_kernel(model: nn.Module, kind: KernelName = "auto", loss: str | None = None,
                matmul_dtype: torch.dtype | None = None) -> Kernel:
    """The kernel for `model` (see the module doc); `loss`: `losses.sample_loss`'s (None: by
    the labels' dtype); `matmul_dtype`: bf16 GEMMs, bmm only."""
    if kind not in KERNELS:
        raise ValueError(f"kernel {kind!r}: unknown; allowed: {', '.join(KERNELS)}")
    layers = linear_relu_layers(model)
    convs = conv_layers(model) if layers is None else None
    if kind == "bmm" and layers is None:
        raise ValueError("the bmm kernel needs a Sequential([Flatten], Linear, (ReLU, Linear)*)")
    if kind == "conv" and convs is None:
        raise ValueError("the conv kernel needs a Sequential of (Conv2d, ReLU[, MaxPool2d(2)]) "
                         "blocks, then Flatten, Linear, (ReLU, Linear)*")
    if matmul_dtype is not None and (kind in ("vmap", "conv") or layers is None):
        raise ValueError("precision bf16: only for the bmm kernel (Linear-ReLU stacks); "
                         "use fp32 or tf32 for other models")
    if layers is not None and kind in ("auto", "bmm"):
        return BmmKernel(layers, loss, matmul_dtype)
    if convs is not None and kind in ("auto", "conv"):
        return ConvKernel(*convs, loss)
    return VmapKernel(model, loss)


__all__ = ["KERNELS", "KernelName", "make_kernel"]
