"""`ConvKernel`: stacked convolutional clients, forward and backward written by hand.

It takes a `Sequential` of conv blocks, each Conv2d (stride 1, no dilation or groups, a bias,
zero padding), ReLU and optionally MaxPool2d(2), then Flatten and a Linear(-ReLU-Linear)*
head: our `cnn` (P1's CIFAR-10 CNN, P2's letters CNN; with padding 0 PFLlib's FedAvgCNN) and
`cnn6`. The head is a `BmmKernel` (batched GEMMs, the update fused into the weight-gradient
GEMM); the convolutions run in one of two layouts:

- **per client** (the CPU): each client's convolutions are oneDNN calls on its own batch, in
  channels-last layout. oneDNN runs one client's 5x5 convolution at about the core's peak
  already, and its grouped convolution over all clients measured slower (docs/engine.md);
  channels-last because ATen's NCHW max-pool is ~15x slower than its channels-last one.
- **grouped** (CUDA): clients stacked on the channel axis, `[B, G*C, H, W]`, one grouped
  convolution (groups = G) per layer and pass: one launch for every client.

The loss and its gradient are `losses.py`'s, as in the other kernels. A convolution's weight
gradient comes from `aten.convolution_backward` as a tensor; its update is a separate pass over
the (small) conv weights, the same arithmetic as `descend_unfused_`.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from clusterfl.core.types import Tensors
from clusterfl.engine.kernels import Batch, BmmKernel, linear_relu_stack
from clusterfl.engine.rules import Coef, shrink_and_pull_

aten = torch.ops.aten
CHANNELS_LAST = torch.channels_last
POOL = ([2, 2], [2, 2])  # max-pool kernel and stride
# `logits` puts at most this many samples (over all clients) through the convolutions at
# once: evaluation hands it up to 2,048 samples a client (a 32x32x32 activation is 128 KiB).
LOGIT_SAMPLES = 1024


@dataclass(frozen=True)
class ConvLayer:
    weight: str
    bias: str
    padding: tuple[int, int]
    pool: bool  # a 2x2 max-pool (stride 2) after the ReLU


# (layer's input, its ReLU output, the max-pool's indices or None): what backward reads
Tape = list[tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]]


def conv_layers(model: nn.Module) -> tuple[list[ConvLayer], list[tuple[str, str]]] | None:
    """The conv blocks and the head's (weight, bias) names of a model `ConvKernel` can run
    (see the module doc), else None."""
    if not isinstance(model, nn.Sequential):
        return None
    mods = list(model.named_children())
    convs, i = [], 0
    while i < len(mods) and isinstance(conv := mods[i][1], nn.Conv2d):
        if not _plain(conv) or i + 1 == len(mods) or not isinstance(mods[i + 1][1], nn.ReLU):
            return None
        name, i = mods[i][0], i + 2
        pool = i < len(mods) and isinstance(mods[i][1], nn.MaxPool2d)
        if pool and not _pool2(mods[i][1]):  # type: ignore[arg-type]  # a MaxPool2d
            return None
        i += pool
        padding = (int(conv.padding[0]), int(conv.padding[1]))
        convs.append(ConvLayer(f"{name}.weight", f"{name}.bias", padding, pool))
    flat = mods[i][1] if i < len(mods) else None
    if not convs or not isinstance(flat, nn.Flatten) or (flat.start_dim, flat.end_dim) != (1, -1):
        return None
    head = linear_relu_stack(mods[i:])
    return None if head is None else (convs, head)


def _plain(conv: nn.Conv2d) -> bool:
    return (tuple(conv.stride) == (1, 1) and tuple(conv.dilation) == (1, 1)
            and conv.groups == 1 and conv.bias is not None and conv.padding_mode == "zeros"
            and not isinstance(conv.padding, str))


def _pool2(pool: nn.MaxPool2d) -> bool:
    def pair(v: object) -> tuple[object, ...]:
        return tuple(v) if isinstance(v, tuple | list) else (v, v)

    return (pair(pool.kernel_size) == (2, 2) and pair(pool.stride) == (2, 2)
            and pair(pool.padding) == (0, 0) and pair(pool.dilation) == (1, 1)
            and not pool.ceil_mode and not pool.return_indices)


def _block_output(tape: Tape) -> torch.Tensor:
    """The last block's output, or a tensor of its shape (the max-pool's indices)."""
    _, relu_out, indices = tape[-1]
    return relu_out if indices is None else indices


class ConvKernel:
    """`grouped`: None picks by device (grouped on CUDA, per client elsewhere); the tests
    run both layouts on the CPU."""

    def __init__(self, convs: list[ConvLayer], head: list[tuple[str, str]],
                 loss: str | None = None, grouped: bool | None = None) -> None:
        self.convs = convs
        self.head = BmmKernel(head, loss)
        self.grouped = grouped

    def _is_grouped(self, x: torch.Tensor) -> bool:
        return x.is_cuda if self.grouped is None else self.grouped

    # -- forward ---------------------------------------------------------------------------
    def _trunk(self, params: Tensors, x: torch.Tensor) -> tuple[torch.Tensor, list[Tape]]:
        """Features [G, B, F] (flattened as nn.Flatten does) of every client's batch
        x[G, B, C, H, W], and what backward needs: one tape per client, or one for all."""
        if self._is_grouped(x):
            return self._grouped_trunk(params, x)
        tapes = []
        feats: torch.Tensor | None = None
        for g in range(x.shape[0]):
            h, tape = self._client_trunk(params, g, x[g])
            if feats is None:
                feats = h.new_empty(x.shape[0], h.shape[0], h[0].numel())
            feats[g].view(h.shape).copy_(h)  # into nn.Flatten's (C, H, W) order
            tapes.append(tape)
        assert feats is not None
        return feats, tapes

    def _client_trunk(self, params: Tensors, g: int, x: torch.Tensor
                      ) -> tuple[torch.Tensor, Tape]:
        # channels-last strides even for one channel, where `contiguous` keeps NCHW's (both
        # fit) and oneDNN then answers in NCHW, which ATen's max-pool runs ~15x slower
        h = torch.empty_like(x, memory_format=CHANNELS_LAST).copy_(x)
        tape: Tape = []
        for layer in self.convs:
            r = F.conv2d(h, params[layer.weight][g], params[layer.bias][g],
                         padding=layer.padding).relu_()
            out, idx = aten.max_pool2d_with_indices(r, *POOL) if layer.pool else (r, None)
            tape.append((h, r, idx))
            h = out
        return h, tape

    def _grouped_trunk(self, params: Tensors, x: torch.Tensor
                       ) -> tuple[torch.Tensor, list[Tape]]:
        clients, batch = x.shape[:2]
        h = x.transpose(0, 1).reshape(batch, -1, *x.shape[3:])  # [B, G*C, H, W]
        tape: Tape = []
        for layer in self.convs:
            r = F.conv2d(h, params[layer.weight].flatten(0, 1), params[layer.bias].flatten(),
                         padding=layer.padding, groups=clients).relu_()
            out, idx = aten.max_pool2d_with_indices(r, *POOL) if layer.pool else (r, None)
            tape.append((h, r, idx))
            h = out
        return h.reshape(batch, clients, -1).transpose(0, 1).contiguous(), [tape]

    def logits(self, params: Tensors, x: torch.Tensor) -> torch.Tensor:
        clients, n = x.shape[:2]
        step = max(1, LOGIT_SAMPLES // max(clients, 1))
        out = [self.head.logits(params, self._trunk(params, x[:, a : a + step])[0])
               for a in range(0, n, step)]
        return torch.cat(out, 1) if out else x.new_zeros(clients, 0, self._classes(params))

    def _classes(self, params: Tensors) -> int:
        return int(params[self.head.layers[-1][0]].shape[1])

    # -- backward --------------------------------------------------------------------------
    def _trunk_grads(self, params: Tensors, dfeat: torch.Tensor, tapes: list[Tape]
                     ) -> Tensors:
        """Gradients of every conv weight and bias, stacked [G, ...], from the gradient
        dfeat [G, B, F] at the features."""
        if len(tapes) == 1 and self._is_grouped(dfeat):
            return self._grouped_grads(params, dfeat, tapes[0])
        out = {name: torch.empty_like(params[name])
               for layer in self.convs for name in (layer.weight, layer.bias)}
        for g, tape in enumerate(tapes):
            d = dfeat[g].view(_block_output(tape).shape)
            for j in range(len(self.convs) - 1, -1, -1):
                layer, (h, r, idx) = self.convs[j], tape[j]
                w = params[layer.weight][g]
                d = self._relu_pool_backward(d.contiguous(memory_format=CHANNELS_LAST), r, idx)
                d_in, d_w, d_b = aten.convolution_backward(
                    d, h, w, [w.shape[0]], [1, 1], list(layer.padding), [1, 1], False, [0, 0],
                    1, [j > 0, True, True])
                out[layer.weight][g].copy_(d_w)
                out[layer.bias][g].copy_(d_b)
                d = d_in
        return out

    def _grouped_grads(self, params: Tensors, dfeat: torch.Tensor, tape: Tape) -> Tensors:
        clients = dfeat.shape[0]
        d = dfeat.transpose(0, 1).reshape(_block_output(tape).shape)  # [B, G*C, H, W]
        out: Tensors = {}
        for j in range(len(self.convs) - 1, -1, -1):
            layer, (h, r, idx) = self.convs[j], tape[j]
            w = params[layer.weight]
            d = self._relu_pool_backward(d, r, idx)
            d_in, d_w, d_b = aten.convolution_backward(
                d, h, w.flatten(0, 1), [w.shape[0] * w.shape[1]], [1, 1], list(layer.padding),
                [1, 1], False, [0, 0], clients, [j > 0, True, True])
            out[layer.weight] = d_w.view(w.shape)
            out[layer.bias] = d_b.view(clients, -1)
            d = d_in
        return out

    @staticmethod
    def _relu_pool_backward(d: torch.Tensor, r: torch.Tensor, idx: torch.Tensor | None
                            ) -> torch.Tensor:
        """From the gradient at a block's output to the gradient at its convolution's."""
        if idx is not None:
            d = aten.max_pool2d_with_indices_backward(d, r, *POOL, [0, 0], [1, 1], False, idx)
        out: torch.Tensor = aten.threshold_backward(d, r, 0)
        return out

    def grads(self, params: Tensors, batch: Batch) -> Tensors:
        feats, tapes = self._trunk(params, batch.x)
        out: Tensors = {}
        dfeat = self.head._backward(params, Batch(feats, batch.y, batch.weight),
                                    self.head.grads_visit(params, out), input_grad=True)
        assert dfeat is not None
        return out | self._trunk_grads(params, dfeat, tapes)

    def descend_(
        self, params: Tensors, batch: Batch, lr: float, decay: Coef, anchor: Tensors | None,
        pull: Coef,
    ) -> None:
        feats, tapes = self._trunk(params, batch.x)
        # the head steps (fused) while its backward runs; the gradient at the features was
        # taken before its first layer changed
        visit = self.head.descend_visit(params, lr, decay, anchor, pull)
        dfeat = self.head._backward(params, Batch(feats, batch.y, batch.weight), visit,
                                    input_grad=True)
        assert dfeat is not None
        for name, g in self._trunk_grads(params, dfeat, tapes).items():
            w = params[name]
            shrink_and_pull_(w, 1.0 - decay, None if anchor is None else anchor[name], pull)
            w.sub_(g, alpha=lr)


__all__ = ["ConvKernel", "ConvLayer", "conv_layers"]
