"""All selected clients trained together on stacked parameters `[C, ...]`.

How a step runs:
- Clients are sorted by their number of steps (most first), so the clients active at step s
  are a prefix `[:n_s]`: a step works on views of that prefix, inactive clients are never
  touched, and no `torch.where` or copying is needed (epochs mode, unequal sizes). With
  `local_steps` every client is active and the views are the full tensors.
- Clients are independent, so they train a chunk at a time (~8 MiB of weights, 20 DNN
  clients): a chunk's weights stay in cache from the forward pass to the fused update.
- Batches are gathered ahead, a few steps at a time, into contiguous `[T, C, B, ...]` blocks.
- The kernel (see `kernels.py`) computes the gradients, a `LocalRule` applies them in place.

That is the CPU layout (`layout="chunked"`). On a GPU (`layout="auto"` there, or "whole")
every selected client of a step runs in one batched program: no chunks, a round's batches
gathered on the device at once, and a round whose clients all take every step runs as one
`StepProgram` (`program.py`), recorded as a CUDA graph and replayed (`capture`). `precision`:
"fp32" (default), "tf32" (CUDA's TF32 matmuls) or "bf16" (bf16 GEMMs, float32 weights;
bmm kernel only); see docs/engine.md for their effect on the papers' numbers.
"""

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Literal, TypeVar, cast

import torch
from torch import nn

from clusterfl.core.types import Tensors
from clusterfl.engine.base import ClientData, Prox, Split
from clusterfl.engine.choose import KernelName, make_kernel
from clusterfl.engine.kernels import Batch, BoundOracle
from clusterfl.engine.losses import check_loss, num_correct, sample_loss
from clusterfl.engine.plan import BatchPlan
from clusterfl.engine.program import ProgramCache, ProgramShape, StepProgram, can_capture
from clusterfl.engine.rules import LocalRule

EVAL_CHUNK = 2048  # samples per client per evaluation chunk, to bound memory
CHUNK_BYTES = 8 * 2**20  # parameters per client chunk (measured best for the DNN, docs/engine.md)
GATHER_BYTES = 4 * 2**20  # one block of pre-gathered batches: fresh pages are slow, keep it small
DEVICE_GATHER_BYTES = 2 * 2**30  # the whole layout gathers a round at once up to this size

Layout = Literal["auto", "chunked", "whole"]
Precision = Literal["fp32", "tf32", "bf16"]
LAYOUTS: tuple[str, ...] = ("auto", "chunked", "whole")
PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "bf16")
T = TypeVar("T")


@contextmanager
def _matmul_precision(precision: str) -> Iterator[None]:
    """TF32 for CUDA matmuls and convolutions inside the block, as it was after."""
    if precision != "tf32":
        yield
        return
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _rows(tensors: Tensors, start: int, stop: int, full: int) -> Tensors:
    """Rows start:stop as views (in-place updates reach `tensors`), or `tensors` if all."""
    if start == 0 and stop == full:
        return tensors
    return {k: v[start:stop] for k, v in tensors.items()}


def _reorder(tensors: Tensors, order: torch.Tensor) -> Tensors:
    return {k: v.index_select(0, order) for k, v in tensors.items()}


def _client_rows(x: torch.Tensor, clients: torch.Tensor) -> torch.Tensor:
    """x[clients] without a copy when `clients` are all clients in order (evaluation usually)."""
    if len(clients) == len(x) and bool((clients.cpu() == torch.arange(len(x))).all()):
        return x
    return x.index_select(0, clients.to(x.device))


def _unsort(tensors: Tensors, order: torch.Tensor) -> Tensors:
    out = {}
    for k, v in tensors.items():
        out[k] = torch.empty_like(v).index_copy_(0, order, v)
    return out


class VectorizedEngine:
    def __init__(self, model: nn.Module, data: ClientData, kernel: KernelName = "auto",
                 loss: str | None = None, layout: Layout = "auto", capture: bool = True,
                 precision: Precision = "fp32") -> None:
        check_loss(loss, data.is_regression)
        for name, value, allowed in (("layout", layout, LAYOUTS),
                                     ("precision", precision, PRECISIONS)):
            if value not in allowed:
                raise ValueError(f"{name}: unknown value {value!r}; allowed: "
                                 f"{', '.join(allowed)}")
        self.model = model
        self.data = data
        self.loss = loss  # `losses.sample_loss`'s: None picks it from the labels' dtype
        self.precision = precision
        self.kernel = make_kernel(model, kernel, loss,
                                  torch.bfloat16 if precision == "bf16" else None)
        on_cuda = data.train_x.device.type == "cuda"
        self.whole = layout == "whole" or (layout == "auto" and on_cuda)
        self.capture = capture and on_cuda  # CUDA graphs; the CPU runs the same program
        self.programs = ProgramCache()

    def _in_precision(self, fn: Callable[[], T]) -> T:
        with _matmul_precision(self.precision):
            return fn()

    def train(
        self, params: Tensors, clients: torch.Tensor, rule: LocalRule, plan: BatchPlan,
        prox: Prox | None = None,
    ) -> Tensors:
        return self.train_with_state(params, clients, rule, plan, prox)[0]

    def train_with_state(
        self, params: Tensors, clients: torch.Tensor, rule: LocalRule, plan: BatchPlan,
        prox: Prox | None = None,
    ) -> tuple[Tensors, Tensors]:
        return self._in_precision(lambda: self._train(params, clients, rule, plan, prox))

    def _train(
        self, params: Tensors, clients: torch.Tensor, rule: LocalRule, plan: BatchPlan,
        prox: Prox | None,
    ) -> tuple[Tensors, Tensors]:
        dev = self.data.train_x.device
        if self.whole and plan.weight is None and self._full_batches(plan):
            # The GPU's usual round: every client takes every step with a full batch, so
            # there is nothing to sort or mask; each host-side operation skipped here is GPU
            # time saved (the device idles while the host prepares a round).
            return self._run_program(params, clients.to(dev), rule, plan, prox, uniform=True)
        active = plan.active.cpu()  # the plan's bookkeeping stays on the CPU
        order = torch.argsort(active.sum(0), descending=True, stable=True)
        n_active = active.sum(1).tolist()
        position = torch.arange(active.shape[1]).view(1, -1)
        if not torch.equal(active[:, order], position < torch.tensor(n_active).view(-1, 1)):
            raise ValueError("with clients sorted by step count, the clients active at each step "
                             "must be a prefix of them (make_plan's plans are)")
        identity = bool((order == position[0]).all())
        plan = BatchPlan(plan.index[:, order].to(dev), plan.mask[:, order].to(dev),
                         None if plan.weight is None else plan.weight[:, order].to(dev))
        order = order.to(dev)
        if self.whole and self._fits_one_program(plan, n_active):
            return self._run_program(params, clients.to(dev), rule, plan, prox)
        # our own copy, updated in place (with local_steps every client takes every step)
        work = {k: v.clone() for k, v in params.items()} if identity else _reorder(params, order)
        state = rule.init_state(work)
        if prox is not None:
            prox = Prox(prox.mu, _reorder(prox.center, order), prox.weight.index_select(0, order))
        full = len(order)
        sorted_clients = clients.to(dev)[order]
        # Clients are independent: train them a cache-sized chunk at a time (all steps), so a
        # chunk's weights stay in cache between the forward and the fused update.
        per_client = sum(v[:1].numel() * v.element_size() for v in work.values())
        chunk = full if self.whole else max(1, CHUNK_BYTES // max(per_client, 1))
        for a in range(0, full, chunk):
            b = min(a + chunk, full)
            counts = [min(max(n - a, 0), b - a) for n in n_active]  # chunk's actives per step
            weight = None if plan.weight is None else plan.weight[:, a:b]
            blocks = self._batches(sorted_clients[a:b], plan.index[:, a:b], plan.mask[:, a:b],
                                   counts, weight)
            for s, batch in blocks:
                stop = a + counts[s]
                p_prox = prox
                if prox is not None:
                    p_prox = Prox(prox.mu, _rows(prox.center, a, stop, full),
                                  prox.weight[a:stop])
                oracle = BoundOracle(self.kernel, batch)
                rule.step_(_rows(work, a, stop, full), _rows(state, a, stop, full), oracle,
                           p_prox)
        if identity:
            return work, state
        return _unsort(work, order), _unsort(state, order)

    def _fits_one_program(self, plan: BatchPlan, n_active: list[int]) -> bool:
        """Every client takes every step (fixed shapes), and the round's batches fit."""
        s, c, b = plan.index.shape
        x = self.data.train_x
        gathered = s * c * b * x.shape[2:].numel() * x.element_size()
        return s > 0 and c > 0 and all(n == c for n in n_active) and gathered <= DEVICE_GATHER_BYTES

    def _full_batches(self, plan: BatchPlan) -> bool:
        """No padding anywhere (so every client is active at every step), and it fits."""
        s, c = plan.index.shape[:2]
        return bool(plan.mask.all()) and self._fits_one_program(plan, [c] * s)

    def _run_program(
        self, params: Tensors, clients: torch.Tensor, rule: LocalRule, plan: BatchPlan,
        prox: Prox | None, uniform: bool = False,
    ) -> tuple[Tensors, Tensors]:
        """A round whose clients all take every step, as one `StepProgram`: every client
        is active, so no reordering is needed (the sort above is the identity). `uniform`:
        every batch is full and unweighted, so every sample weighs 1/B (the program fills
        that itself instead of receiving a [S, C, B] tensor of it)."""
        s, c, b = plan.index.shape
        weight = None
        if not uniform:
            mask = plan.mask.to(self.data.train_x.dtype)
            weight = mask / mask.sum(2, keepdim=True).clamp(min=1)
            if plan.weight is not None:
                weight = weight * plan.weight.to(weight.dtype)
        key: Hashable
        try:  # rules are frozen dataclasses: equal values share a program
            hash(rule)
            key, hashable = cast(Hashable, rule), True
        except TypeError:  # a program of its own (it keeps the rule alive: the id stays unique)
            key, hashable = ("unhashable", id(rule)), False
        shape = ProgramShape(c, s, b, key, plan.weight is not None,
                             None if prox is None else prox.mu)
        capture = self.capture and hashable and can_capture(rule, self.kernel)
        program = self.programs.get(shape, lambda: StepProgram(
            self.kernel, rule, self.data, shape, params, prox, capture))
        return program.run(params, clients, plan.index, weight, prox)

    def _batches(
        self, clients: torch.Tensor, index: torch.Tensor, mask: torch.Tensor, counts: list[int],
        sample_weight: torch.Tensor | None = None,
    ) -> Iterator[tuple[int, Batch]]:
        """(s, batch of step s's `counts[s]` active clients) for steps with any, gathered a
        block of steps at a time; `index`/`mask`/`sample_weight` columns are `clients`."""
        x_all, y_all = self.data.train_x, self.data.train_y
        c, b = index.shape[1:]
        sample = x_all.shape[2:]
        per_step = max(c * b * sample.numel() * x_all.element_size(), 1)
        block = max(1, (DEVICE_GATHER_BYTES if self.whole else GATHER_BYTES) // per_step)
        # Rows of the flattened [clients * N_max, ...] data: index_select copies whole rows,
        # several times faster than two-dimensional advanced indexing.
        offset = (clients * x_all.shape[1]).view(1, -1, 1)
        x_rows, y_rows = x_all.flatten(0, 1), y_all.flatten()
        for start in range(0, index.shape[0], block):
            flat = (index[start : start + block] + offset).flatten()
            weight = mask[start : start + block].to(x_all.dtype)
            xs = x_rows.index_select(0, flat).view(*weight.shape, *sample)
            ys = y_rows.index_select(0, flat).view(weight.shape)
            ws = weight / weight.sum(2, keepdim=True).clamp(min=1)
            if sample_weight is not None:
                ws = ws * sample_weight[start : start + block].to(ws.dtype)
            for t in range(weight.shape[0]):
                n = counts[start + t]
                if n:
                    yield start + t, Batch(xs[t, :n], ys[t, :n], ws[t, :n])

    def evaluate(
        self, params: Tensors, clients: torch.Tensor, split: Split
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self._in_precision(lambda: self._evaluate(params, clients, split))

    def sample_losses(
        self, models: Tensors, clients: torch.Tensor, split: Split
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self._in_precision(lambda: self._sample_losses(models, clients, split))

    @torch.no_grad()
    def _evaluate(
        self, params: Tensors, clients: torch.Tensor, split: Split
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x, y, _ = self.data.split(split)
        n_sel, n_max = self.data.selected_sizes(clients, split)
        x, y = _client_rows(x[:, :n_max], clients), _client_rows(y[:, :n_max], clients)
        loss_sum = torch.zeros(len(clients), dtype=x.dtype, device=x.device)
        correct = torch.zeros_like(loss_sum)
        for start in range(0, n_max, EVAL_CHUNK):
            stop = min(start + EVAL_CHUNK, n_max)
            pos = torch.arange(start, stop, device=x.device)
            mask = (pos.view(1, -1) < n_sel.view(-1, 1)).to(x.dtype)
            yc = y[:, start:stop]
            logits = self.kernel.logits(params, x[:, start:stop])
            loss_sum += (sample_loss(logits, yc, self.loss) * mask).sum(1)
            correct += (num_correct(logits, yc) * mask).sum(1)
        return loss_sum, correct

    @torch.no_grad()
    def _sample_losses(
        self, models: Tensors, clients: torch.Tensor, split: Split
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x, y, _ = self.data.split(split)
        n_sel, n_max = self.data.selected_sizes(clients, split)
        mask = torch.arange(n_max, device=x.device).view(1, -1) < n_sel.view(-1, 1)
        x, y = _client_rows(x[:, :n_max], clients), _client_rows(y[:, :n_max], clients)
        n_models, c = next(iter(models.values())).shape[0], len(clients)
        out = torch.zeros(n_models, c, n_max, dtype=x.dtype, device=x.device)
        # Every model sees all clients' samples as one long batch: one large GEMM per layer.
        for start in range(0, n_max, EVAL_CHUNK):
            stop = min(start + EVAL_CHUNK, n_max)
            flat_x = x[:, start:stop].flatten(0, 1).unsqueeze(0)
            flat_y = y[:, start:stop].flatten()
            for m in range(n_models):
                logits = self.kernel.logits({k: v[m : m + 1] for k, v in models.items()}, flat_x)
                losses = sample_loss(logits[0], flat_y, self.loss)
                out[m, :, start:stop] = losses.view(c, stop - start)
        return out * mask, mask
