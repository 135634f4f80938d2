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
"""

from collections.abc import Iterator

import torch
from torch import nn

from clusterfl.engine.base import ClientData, Prox, Split
from clusterfl.engine.kernels import Batch, BoundOracle, KernelName, make_kernel
from clusterfl.engine.losses import check_loss, num_correct, sample_loss
from clusterfl.engine.plan import BatchPlan
from clusterfl.engine.rules import LocalRule
from clusterfl.types import Tensors

EVAL_CHUNK = 2048  # samples per client per evaluation chunk, to bound memory
CHUNK_BYTES = 8 * 2**20  # parameters per client chunk (measured best for the DNN, docs/engine.md)
GATHER_BYTES = 4 * 2**20  # one block of pre-gathered batches: fresh pages are slow, keep it small


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
                 loss: str | None = None) -> None:
        check_loss(loss, data.is_regression)
        self.model = model
        self.data = data
        self.loss = loss  # `losses.sample_loss`'s: None picks it from the labels' dtype
        self.kernel = make_kernel(model, kernel, loss)

    def train(
        self, params: Tensors, clients: torch.Tensor, rule: LocalRule, plan: BatchPlan,
        prox: Prox | None = None,
    ) -> Tensors:
        return self.train_with_state(params, clients, rule, plan, prox)[0]

    def train_with_state(
        self, params: Tensors, clients: torch.Tensor, rule: LocalRule, plan: BatchPlan,
        prox: Prox | None = None,
    ) -> tuple[Tensors, Tensors]:
        active = plan.active.cpu()  # the plan's bookkeeping stays on the CPU
        order = torch.argsort(active.sum(0), descending=True, stable=True)
        n_active = active.sum(1).tolist()
        position = torch.arange(active.shape[1]).view(1, -1)
        if not torch.equal(active[:, order], position < torch.tensor(n_active).view(-1, 1)):
            raise ValueError("with clients sorted by step count, the clients active at each step "
                             "must be a prefix of them (make_plan's plans are)")
        identity = bool((order == position[0]).all())
        dev = self.data.train_x.device
        plan = BatchPlan(plan.index[:, order].to(dev), plan.mask[:, order].to(dev),
                         None if plan.weight is None else plan.weight[:, order].to(dev))
        order = order.to(dev)
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
        chunk = max(1, CHUNK_BYTES // max(per_client, 1))
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
        block = max(1, GATHER_BYTES // per_step)
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

    @torch.no_grad()
    def evaluate(
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
    def sample_losses(
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
