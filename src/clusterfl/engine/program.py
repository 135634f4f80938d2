"""Every client's local steps of one round as one program over buffers it owns (the GPU path).

On a GPU a round of small per-client steps is bound by kernel launches, not arithmetic: the
CPU path's cache-sized client chunks and step-by-step gathers only add launches there. A
`StepProgram` instead
- copies the round's inputs (the starting models, the plan's sample positions and weights,
  the proximal centers) into buffers it owns,
- gathers every step's batch of every client from the device-resident data at once, and
- runs the rule's S steps on all clients together.
A round of fixed shape is then a fixed sequence of kernels over fixed addresses: on CUDA
(`capture=True`) it is recorded once as a CUDA graph and each later round is one replay; with
`capture=False` (the CPU, and the CPU tests of this very code) the same function runs eagerly.

A program serves one shape: clients C, steps S, batch width B, with every client active at
every step (`local_steps` plans, or epochs with equal sizes), one rule (rules are frozen
dataclasses: equal values, equal program) and the proximal term's mu. `VectorizedEngine`
keeps a few per engine (`ProgramCache`). Only rules that declare `capturable = True` (no
host synchronisation inside `step_`) are captured; others run the program eagerly.
"""

import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import torch

from clusterfl.core.types import Tensors
from clusterfl.engine.base import ClientData, Prox
from clusterfl.engine.kernels import Batch, BmmKernel, BoundOracle, Kernel
from clusterfl.engine.rules import LocalRule, Sgd

# The lazy first layer pays a Gram matrix of the round's S*B samples (2 (S*B)^2 F flops a
# client) to read the first weight twice a round instead of three times a step: measured
# faster on an H100 at every S*B from 0.78 to 3.1 x the layer's width (docs/engine.md).
LAZY_MAX_RATIO = 3.0


@dataclass(frozen=True)
class ProgramShape:
    """What a program is specialised to; equal shapes share one program."""

    clients: int
    steps: int
    width: int
    rule: Hashable
    weighted: bool  # the plan carries per-sample weights
    prox_mu: float | None  # None: no proximal term


def can_capture(rule: LocalRule, kernel: Kernel) -> bool:
    """Whether a round of `rule` may be recorded as a CUDA graph: the rule says it makes no
    host synchronisation, and the kernel is the hand-written bmm one (vmap's functorch
    transforms are not checked under capture)."""
    return rule.capturable and isinstance(kernel, BmmKernel)


def lazy_first_layer(rule: LocalRule, kernel: Kernel, prox: Prox | None, params: Tensors,
                     samples: int) -> bool:
    """Whether a round may update the first layer's weight lazily: plain SGD (no weight
    decay, no proximal term) on the bmm kernel in float32 or TF32, and few enough samples
    (`samples` = S*B) against the first layer's width."""
    if type(rule) is not Sgd or rule.weight_decay or prox is not None:
        return False
    if not isinstance(kernel, BmmKernel) or kernel.matmul_dtype is not None:
        return False
    width = params[kernel.layers[0][0]].shape[1]
    return samples <= LAZY_MAX_RATIO * width


class StepProgram:
    def __init__(self, kernel: Kernel, rule: LocalRule, data: ClientData, shape: ProgramShape,
                 params: Tensors, prox: Prox | None, capture: bool) -> None:
        self.kernel, self.rule, self.data, self.shape = kernel, rule, data, shape
        dev = data.train_x.device
        c, s, b = shape.clients, shape.steps, shape.width
        # the buffers the program reads: filled by `run` before every replay
        self.params = {k: torch.empty_like(v) for k, v in params.items()}
        self.index = torch.zeros(s, c, b, dtype=torch.long, device=dev)
        self.sample_weight = torch.zeros(s, c, b, dtype=data.train_x.dtype, device=dev)
        self.rows = torch.zeros(c, dtype=torch.long, device=dev)  # first data row of a client
        self.prox = None if prox is None else Prox(
            prox.mu, {k: torch.empty_like(v) for k, v in prox.center.items()},
            torch.empty_like(prox.weight))
        self.capture = capture
        self.graph: torch.cuda.CUDAGraph | None = None
        self.state: Tensors = {}
        self.uniform = False  # whether `sample_weight` holds 1/B everywhere
        self.lazy = lazy_first_layer(rule, kernel, prox, params, s * b)

    def _load(self, params: Tensors, clients: torch.Tensor, index: torch.Tensor,
              sample_weight: torch.Tensor | None, prox: Prox | None) -> None:
        # One multi-tensor copy per group, not one launch per tensor: on a GPU the device
        # waits while the host launches a round's loads.
        copy_(list(self.params.values()), [params[k] for k in self.params])
        self.index.copy_(index)  # straight from the plan (host) into the device buffer
        if sample_weight is not None:
            self.sample_weight.copy_(sample_weight)
        elif not self.uniform:  # 1/B: the division the masked path does, 1 / mask.sum()
            self.sample_weight.fill_(1.0).div_(self.shape.width)
        self.uniform = sample_weight is None
        torch.mul(clients, self.data.train_x.shape[1], out=self.rows)
        if prox is not None and self.prox is not None:
            copy_([*self.prox.center.values(), self.prox.weight],
                  [*(prox.center[k] for k in self.prox.center), prox.weight])

    def _body(self) -> Tensors:
        """The round: the rule's fresh state, every batch gathered, S steps in place."""
        if self.lazy:
            return self._lazy_sgd_body()
        x_all, y_all = self.data.train_x, self.data.train_y
        s, c, b = self.index.shape
        flat = (self.index + self.rows.view(1, -1, 1)).flatten()
        xs = x_all.flatten(0, 1).index_select(0, flat).view(s, c, b, *x_all.shape[2:])
        ys = y_all.flatten().index_select(0, flat).view(s, c, b)
        state = self.rule.init_state(self.params)
        for step in range(s):
            batch = Batch(xs[step], ys[step], self.sample_weight[step])
            self.rule.step_(self.params, state, BoundOracle(self.kernel, batch), self.prox)
        return state

    def _lazy_sgd_body(self) -> Tensors:
        """Plain SGD with the first layer's weight W updated once, at the end of the round.

        With no decay, W after t steps is W_0 - lr * sum_{u<t} g_u^T x_u (g_u: the gradient
        at the layer's output for batch x_u), so the layer's output on batch x_t is
            x_t W_0^T - lr * sum_{u<t} (x_t x_u^T) g_u + b_t,
        the same SGD (other float rounding). The round reads W twice (x W_0^T for every
        sample, and the final update, a GEMM with S*B inner terms) where the step loop reads
        it three times a step in GEMMs of B inner terms: W is most of the bytes (a DNN's
        784 x 128). Every other layer and every bias steps as `Sgd` does."""
        kernel = self.kernel
        assert isinstance(kernel, BmmKernel) and isinstance(self.rule, Sgd)
        lr = self.rule.lr
        x_all, y_all = self.data.train_x, self.data.train_y
        s, c, b = self.index.shape
        flat = (self.index + self.rows.view(1, -1, 1)).transpose(0, 1).reshape(-1)
        xs = x_all.flatten(0, 1).index_select(0, flat).view(c, s * b, -1)  # client-major
        ys = y_all.flatten().index_select(0, flat).view(c, s * b)
        weight, bias = (self.params[name] for name in kernel.layers[0])
        start_out = torch.bmm(xs, weight.transpose(1, 2))  # x_t W_0^T, every t at once
        gram = torch.bmm(xs, xs.transpose(1, 2))  # x_t x_u^T
        grads = torch.empty_like(start_out)  # g_u, filled step by step
        for step in range(s):
            rows = slice(step * b, (step + 1) * b)
            first = start_out[:, rows] + bias.unsqueeze(1)
            if step:
                first.baddbmm_(gram[:, rows, : step * b], grads[:, : step * b], alpha=-lr)
            batch = Batch(xs[:, rows], ys[:, rows], self.sample_weight[step])
            kernel.descend_lazy_first_(self.params, batch, lr, first, grads[:, rows])
        weight.baddbmm_(grads.transpose(1, 2), xs, alpha=-lr)
        return {}

    def _record(self) -> None:
        """Warm up on a side stream (library handles, workspaces), then record the graph."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self._body()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.state = self._body()

    def run(self, params: Tensors, clients: torch.Tensor, index: torch.Tensor,
            sample_weight: torch.Tensor | None, prox: Prox | None) -> tuple[Tensors, Tensors]:
        """The round from `params` (rows = `clients`, on the data's device; `index` may be on
        the host): new params and the rule's final state, as tensors of the caller's own (the
        buffers are reused). `sample_weight` None: every sample weighs 1/B."""
        if self.capture and self.graph is None:
            self._load(params, clients, index, sample_weight, prox)
            try:
                self._record()  # recording runs nothing: load again, then replay
            except RuntimeError as err:  # a step that waits on the device: run it eagerly
                warnings.warn(f"CUDA graph capture failed, running eagerly: {err}",
                              RuntimeWarning, stacklevel=2)
                self.capture, self.graph = False, None
        self._load(params, clients, index, sample_weight, prox)
        if self.graph is not None:
            self.graph.replay()
        else:
            self.state = self._body()
        return _copies(self.params), _copies(self.state)


def copy_(targets: list[torch.Tensor], sources: list[torch.Tensor]) -> None:
    """targets[i] <- sources[i], as one multi-tensor kernel where the tensors allow it."""
    if not targets:
        return
    if all(s.device == t.device and s.dtype == t.dtype for s, t in zip(sources, targets,
                                                                       strict=True)):
        torch._foreach_copy_(targets, sources)  # private, but in every torch >= 2.1
        return
    for t, s in zip(targets, sources, strict=True):
        t.copy_(s)


def _copies(tensors: Tensors) -> Tensors:
    """Fresh tensors with `tensors`' values (the caller's own; the buffers are reused)."""
    out = {k: torch.empty_like(v) for k, v in tensors.items()}
    copy_(list(out.values()), list(tensors.values()))
    return out


class ProgramCache:
    """The last few programs of an engine, by shape (a round's shape rarely changes)."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self.programs: OrderedDict[ProgramShape, StepProgram] = OrderedDict()

    def get(self, shape: ProgramShape, build: Callable[[], StepProgram]) -> StepProgram:
        program = self.programs.pop(shape, None) or build()
        self.programs[shape] = program
        while len(self.programs) > self.size:
            self.programs.popitem(last=False)
        return program
