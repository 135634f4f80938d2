"""How a group of stacked models computes: logits, batch gradients and fused SGD-like steps.

- `BmmKernel`: Linear(-ReLU-Linear)* stacks (our MLR and DNN) by hand with batched matmuls
  (`torch.baddbmm`), one GEMM per layer and pass for all clients together. Its `descend_`
  folds the update into the weight-gradient GEMM (`W.baddbmm_(d^T, h, beta, alpha=-lr)`), so a
  step reads and writes each weight once. On the 2-core CPU it runs the DNN at ~80% of a large
  GEMM's FLOP rate and 3-6x faster than `VmapKernel` (docs/engine.md).
- `VmapKernel`: any `nn.Module`, via `torch.func.vmap(grad(loss))` over the stacked models.
- `ConvKernel` (`conv.py`): conv blocks and a Linear-ReLU head; `choose.make_kernel` picks.

All see a batch as x[G, B, ...], y[G, B] and per-sample weights w[G, B] (1/count for real
samples, 0 for padding, times the plan's sample weights if it has any), so the loss each
client sees is the (weighted) mean over its real samples. The loss is `losses.sample_loss`:
by default cross-entropy for class labels, squared error for float regression targets; a
kernel built with `loss` (one of `losses.LOSSES`) uses that loss on class labels.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, cast

import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from clusterfl.core.types import Tensors
from clusterfl.engine.losses import loss_grad, sample_loss
from clusterfl.engine.rules import Coef, GradOracle, descend_unfused_, shrink_and_pull_

Visit = Callable[[int, torch.Tensor, torch.Tensor], None]  # (layer, dz, its input)
# Below this many floats a step's tensors hold (weights past the first layer and one
# activation), its ops run on one thread: waking a second costs more than the op (2 threads,
# OMP_WAIT_POLICY=PASSIVE: softmax of [20, 10, 10] 10-12 us against 5, a [20, 10, 100] bmm
# 13-16 against 8; docs/engine.md).
SMALL_OPS = 2**18


@contextmanager
def small_ops(floats: int) -> Iterator[None]:
    """One intra-op thread inside the block when its tensors hold under `SMALL_OPS` floats,
    the process's setting after."""
    threads = torch.get_num_threads()
    if threads == 1 or floats >= SMALL_OPS:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@dataclass(frozen=True)
class Batch:
    x: torch.Tensor  # [G, B, ...]
    y: torch.Tensor  # long [G, B] (class labels) or float [G, B] (regression targets)
    weight: torch.Tensor  # [G, B]


class Kernel(Protocol):
    def logits(self, params: Tensors, x: torch.Tensor) -> torch.Tensor:
        """[G, N, K] logits of model g on its samples x[g]."""
        ...

    def grads(self, params: Tensors, batch: Batch) -> Tensors: ...

    def descend_(
        self, params: Tensors, batch: Batch, lr: float, decay: Coef, anchor: Tensors | None,
        pull: Coef,
    ) -> None: ...


@dataclass(frozen=True)
class BoundOracle:
    """A kernel bound to one step's batch: what a `LocalRule` sees. `same_step`: every row
    has taken the same number of steps, as the vectorized engine guarantees (the clients
    active at a step are a prefix, so each has taken exactly that many steps)."""

    kernel: Kernel
    batch: Batch
    same_step: bool = True

    def grads(self, params: Tensors) -> Tensors:
        return self.kernel.grads(params, self.batch)

    def descend_(
        self, params: Tensors, lr: float, decay: Coef = 0.0, anchor: Tensors | None = None,
        pull: Coef = 0.0,
    ) -> None:
        self.kernel.descend_(params, self.batch, lr, decay, anchor, pull)

    def descend_repeated_(
        self, params: Tensors, steps: int, lr: float, decay: Coef = 0.0,
        anchor: Tensors | None = None, pull: Coef = 0.0,
    ) -> None:
        """`steps` calls of `descend_` on this batch (pFedMe's inner solver), as one call
        where the kernel has one (`BmmKernel.descend_repeated_`)."""
        repeated = getattr(self.kernel, "descend_repeated_", None)
        if repeated is not None:
            repeated(params, self.batch, steps, lr, decay, anchor, pull)
            return
        for _ in range(steps):
            self.kernel.descend_(params, self.batch, lr, decay, anchor, pull)


class VmapKernel:
    def __init__(self, model: nn.Module, loss_name: str | None = None) -> None:
        def loss(params: Tensors, x: torch.Tensor, y: torch.Tensor,
                 w: torch.Tensor) -> torch.Tensor:
            logits = functional_call(model, params, (x,))
            return (sample_loss(logits, y, loss_name) * w).sum()

        self._grads = vmap(grad(loss))
        self._logits = vmap(lambda p, x: functional_call(model, p, (x,)))

    def logits(self, params: Tensors, x: torch.Tensor) -> torch.Tensor:
        return cast(torch.Tensor, self._logits(params, x))  # vmap's result is untyped

    def grads(self, params: Tensors, batch: Batch) -> Tensors:
        return cast(Tensors, self._grads(params, batch.x, batch.y, batch.weight))

    def descend_(
        self, params: Tensors, batch: Batch, lr: float, decay: Coef, anchor: Tensors | None,
        pull: Coef,
    ) -> None:
        descend_unfused_(BoundOracle(self, batch), params, lr, decay, anchor, pull)


def linear_relu_layers(model: nn.Module) -> list[tuple[str, str]] | None:
    """(weight, bias) names of a `Sequential([Flatten], Linear, (ReLU, Linear)*)`, else None."""
    if not isinstance(model, nn.Sequential):
        return None
    return linear_relu_stack(list(model.named_children()))


def linear_relu_stack(mods: list[tuple[str, nn.Module]]) -> list[tuple[str, str]] | None:
    """(weight, bias) names of named modules `[Flatten], Linear, (ReLU, Linear)*`, else None."""
    if mods and isinstance(mods[0][1], nn.Flatten):
        mods = mods[1:]
    if len(mods) % 2 == 0:
        return None
    layers = []
    for i, (name, m) in enumerate(mods):
        if i % 2 == 1:
            if not isinstance(m, nn.ReLU):
                return None
        elif not isinstance(m, nn.Linear) or m.bias is None:
            return None
        else:
            layers.append((f"{name}.weight", f"{name}.bias"))
    return layers


class BmmKernel:
    """`matmul_dtype` (None: the parameters' float32): bf16 runs every GEMM on bf16 copies of
    the weights and activations while the weights, the update and the loss stay float32
    (the `bf16` precision of `VectorizedEngine`); the float32 path is untouched by it."""

    def __init__(self, layers: list[tuple[str, str]], loss: str | None = None,
                 matmul_dtype: torch.dtype | None = None) -> None:
        self.layers = layers
        self.loss = loss
        self.matmul_dtype = matmul_dtype

    def _mm(self, t: torch.Tensor) -> torch.Tensor:
        return t if self.matmul_dtype is None else t.to(self.matmul_dtype)

    def _forward(self, params: Tensors, x: torch.Tensor, first: torch.Tensor | None = None
                 ) -> list[torch.Tensor]:
        """Inputs of every layer, then the logits: [h_0 = x, relu(z_1), ..., z_L]; `first`:
        z_1 computed by the caller (a fresh tensor: it is rectified in place)."""
        hs = [self._mm(x.flatten(2))]
        for i, (wn, bn) in enumerate(self.layers):
            z = first if i == 0 and first is not None else torch.baddbmm(
                self._mm(params[bn]).unsqueeze(1), hs[-1], self._mm(params[wn]).transpose(1, 2))
            hs.append(z.relu_() if i < len(self.layers) - 1 else z)
        return hs

    def logits(self, params: Tensors, x: torch.Tensor) -> torch.Tensor:
        logits = self._forward(params, x)[-1]
        return logits if self.matmul_dtype is None else logits.float()

    def _backward(self, params: Tensors, batch: Batch, visit: Visit,
                  first: torch.Tensor | None = None, input_grad: bool = False
                  ) -> torch.Tensor | None:
        """Walk the layers last to first, calling visit(layer, dz, h_in) with the gradient
        dz [G, B, out] of the weighted loss at the layer's output and its input h_in.

        The gradient flowing to the layer below is computed before `visit`, so `visit` may
        overwrite the layer's weights (the fused update does). `input_grad`: also return the
        gradient at the input x (`ConvKernel`'s features; the data need none).
        """
        hs = self._forward(params, batch.x, first)
        logits = hs.pop()
        if self.matmul_dtype is not None:
            logits = logits.float()
        dz = loss_grad(logits, batch.y, batch.weight, self.loss)
        for i in range(len(self.layers) - 1, -1, -1):
            h_in = hs[i]
            below: torch.Tensor | None = None
            if i > 0:
                below = torch.bmm(self._mm(dz), self._mm(params[self.layers[i][0]]))
                below = torch.ops.aten.threshold_backward(below, h_in, 0)
            elif input_grad:  # float32 only: the conv kernel has no bf16 GEMMs
                below = torch.bmm(dz, params[self.layers[0][0]])
            visit(i, dz, h_in)
            if below is not None:
                dz = below
        return dz if input_grad else None

    def _weight_grad(self, dz: torch.Tensor, h_in: torch.Tensor, like: torch.Tensor
                     ) -> torch.Tensor:
        return torch.bmm(self._mm(dz).transpose(1, 2), h_in).to(like.dtype)

    @staticmethod
    def _bias_grad(dz: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        return dz.sum(1) if dz.dtype == like.dtype else dz.sum(1, dtype=like.dtype)

    def grads(self, params: Tensors, batch: Batch) -> Tensors:
        out: Tensors = {}
        self._backward(params, batch, self.grads_visit(params, out))
        return out

    def grads_visit(self, params: Tensors, out: Tensors) -> Visit:
        """A `_backward` visit that writes each layer's gradients into `out`."""

        def visit(i: int, dz: torch.Tensor, h_in: torch.Tensor) -> None:
            wn, bn = self.layers[i]
            out[wn] = self._weight_grad(dz, h_in, params[wn])
            out[bn] = self._bias_grad(dz, params[bn])

        return visit

    def descend_(
        self, params: Tensors, batch: Batch, lr: float, decay: Coef, anchor: Tensors | None,
        pull: Coef,
    ) -> None:
        self._backward(params, batch, self.descend_visit(params, lr, decay, anchor, pull))

    def descend_visit(self, params: Tensors, lr: float, decay: Coef, anchor: Tensors | None,
                      pull: Coef) -> Visit:
        """A `_backward` visit that applies `descend_`'s update to each layer in turn."""
        # A scalar shrink rides on baddbmm's beta; a per-client one needs its own pass.
        scalar = not isinstance(decay, torch.Tensor)
        beta = 1.0 if isinstance(decay, torch.Tensor) else 1.0 - decay
        fused = self.matmul_dtype is None  # bf16 products cannot accumulate into float32 w

        def visit(i: int, dz: torch.Tensor, h_in: torch.Tensor) -> None:
            for name, is_weight in zip(self.layers[i], (True, False), strict=True):
                w = params[name]
                if not scalar:
                    shrink_and_pull_(w, 1.0 - decay, None, 0.0)
                if is_weight and fused:
                    w.baddbmm_(dz.transpose(1, 2), h_in, beta=beta, alpha=-lr)
                else:
                    if beta != 1.0:
                        w.mul_(beta)
                    g = self._weight_grad(dz, h_in, w) if is_weight else self._bias_grad(dz, w)
                    w.sub_(g, alpha=lr)
                if anchor is not None:
                    shrink_and_pull_(w, 1.0, anchor[name], pull)

        return visit

    def descend_repeated_(
        self, params: Tensors, batch: Batch, steps: int, lr: float, decay: Coef,
        anchor: Tensors | None, pull: Coef,
    ) -> None:
        """`steps` calls of `descend_` on one batch x, with the first layer's weight W
        stepped once at the end (the same steps, other float rounding). With k = 1 - decay,
        p = pull and A = anchor's W, after t steps
            W_t = k^t W_0 + c_t A - lr * S_t^T x,  c_t = p (1 + k + ... + k^(t-1)),
            S_t = sum_{u<t} k^(t-1-u) g_u          (g_u: the gradient at W's output),
        so the layer's output on x is k^t x W_0^T + c_t x A^T - lr (x x^T) S_t + b_t: two
        GEMMs and a B x B Gram matrix for all steps, where the step loop reads W three times
        a step (forward, the fused update, the pull). Every other layer, and every bias,
        steps as `descend_` does. pFedMe's inner solver (K = 5 steps a batch) is the user:
        `bench round`'s pFedMe, docs/engine.md."""
        if (steps < 2 or isinstance(decay, torch.Tensor) or isinstance(pull, torch.Tensor)
                or self.matmul_dtype is not None):
            for _ in range(steps):
                self.descend_(params, batch, lr, decay, anchor, pull)
            return
        wn, bn = self.layers[0]
        weight, bias, keep = params[wn], params[bn], 1.0 - decay
        x = batch.x.flatten(2)
        start = torch.bmm(x, weight.transpose(1, 2))  # x W_0^T
        pulled = None if anchor is None or not pull else torch.bmm(
            x, anchor[wn].transpose(1, 2))  # x A^T
        gram = torch.bmm(x, x.transpose(1, 2))
        acc = torch.zeros_like(start)  # S_t
        others = self.descend_visit(params, lr, decay, anchor, pull)

        def visit(i: int, dz: torch.Tensor, h_in: torch.Tensor) -> None:
            if i:
                others(i, dz, h_in)
                return
            acc.mul_(keep).add_(dz)
            if keep != 1.0:  # the bias as `descend_visit` steps it
                bias.mul_(keep)
            bias.sub_(self._bias_grad(dz, bias), alpha=lr)
            if anchor is not None:
                shrink_and_pull_(bias, 1.0, anchor[bn], pull)

        scale, carried = 1.0, 0.0  # k^t and c_t
        with small_ops(sum(params[w].numel() for w, _ in self.layers[1:]) + start.numel()):
            for t in range(steps):
                first = torch.add(bias.unsqueeze(1), start, alpha=scale)
                if pulled is not None and t:
                    first.add_(pulled, alpha=carried)
                if t:
                    first.baddbmm_(gram, acc, alpha=-lr)
                self._backward(params, batch, visit, first)
                scale, carried = scale * keep, carried * keep + pull
        weight.baddbmm_(acc.transpose(1, 2), x, beta=scale, alpha=-lr)
        if pulled is not None and anchor is not None:
            weight.add_(anchor[wn], alpha=carried)

    def descend_lazy_first_(self, params: Tensors, batch: Batch, lr: float,
                            first: torch.Tensor, first_grad: torch.Tensor) -> None:
        """`descend_` with no decay and no anchor, except that the first layer's weight is
        left alone: `first` is that layer's output for this batch, computed by the caller
        from its lazily updated weight, and the gradient there goes into `first_grad` (the
        caller applies a round's first-layer updates at once: `program.py`'s lazy round).
        The first layer's bias and every other layer are updated as `descend_` does."""

        def visit(i: int, dz: torch.Tensor, h_in: torch.Tensor) -> None:
            wn, bn = self.layers[i]
            if i == 0:
                first_grad.copy_(dz)
            else:
                params[wn].baddbmm_(dz.transpose(1, 2), h_in, alpha=-lr)
            params[bn].sub_(self._bias_grad(dz, params[bn]), alpha=lr)

        self._backward(params, batch, visit, first)


__all__ = ["Batch", "BmmKernel", "BoundOracle", "GradOracle", "Kernel", "VmapKernel"]
