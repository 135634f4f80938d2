"""All selected clients trained together: stacked parameters and `vmap(grad(loss))`.

Each step gathers every client's batch into one contiguous `[C, B, ...]` tensor; vmap turns
the per-client matmuls into batched ones. Clients that take no step at s (epochs mode, small
clients) keep their parameters and optimizer state through a `torch.where`.
"""

from functools import partial

import torch
from torch import nn
from torch.func import grad, vmap

from clusterfl.engine.base import ClientData, Params, Prox, Split
from clusterfl.engine.functional import loss_and_correct, masked_mean_loss
from clusterfl.engine.plan import BatchPlan

EVAL_CHUNK = 2048  # samples per client per evaluation chunk, to bound memory


def _select(active: torch.Tensor, new: Params, old: Params) -> Params:
    out = {}
    for k, v in new.items():
        keep = active.view(-1, *([1] * (v.dim() - 1)))
        out[k] = torch.where(keep, v, old[k])
    return out


class VectorizedEngine:
    def __init__(self, model: nn.Module, data: ClientData) -> None:
        self.model = model
        self.data = data
        self._batched_grad = vmap(grad(partial(masked_mean_loss, model)))
        self._batched_eval = vmap(partial(loss_and_correct, model))

    def train(
        self, params: Params, clients: torch.Tensor, rule, plan: BatchPlan,
        prox: Prox | None = None,
    ) -> Params:
        rows = clients.view(-1, 1)
        state = rule.init_state(params)
        active = plan.active
        x_all, y_all = self.data.train_x, self.data.train_y
        for s in range(plan.num_steps):
            idx = plan.index[s]
            xb, yb = x_all[rows, idx], y_all[rows, idx]
            mb = plan.mask[s].to(xb.dtype)

            def grad_fn(p: Params, xb=xb, yb=yb, mb=mb) -> Params:
                return self._batched_grad(p, xb, yb, mb)

            new_params, new_state = rule.step(params, state, grad_fn, prox)
            if bool(active[s].all()):
                params, state = new_params, new_state
            else:
                params = _select(active[s], new_params, params)
                state = _select(active[s], new_state, state)
        return params

    @torch.no_grad()
    def evaluate(
        self, params: Params, clients: torch.Tensor, split: Split
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x, y, n = self.data.split(split)
        n_sel = n[clients]
        loss_sum = torch.zeros(len(clients), dtype=x.dtype, device=x.device)
        correct = torch.zeros_like(loss_sum)
        n_max = int(n_sel.max()) if len(n_sel) else 0
        for start in range(0, n_max, EVAL_CHUNK):
            pos = torch.arange(start, min(start + EVAL_CHUNK, x.shape[1]), device=x.device)
            mask = (pos.view(1, -1) < n_sel.view(-1, 1)).to(x.dtype)
            rows, cols = clients.view(-1, 1), pos.view(1, -1)
            ls, cs = self._batched_eval(params, x[rows, cols], y[rows, cols], mask)
            loss_sum += ls
            correct += cs
        return loss_sum, correct
