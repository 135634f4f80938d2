"""The plain per-client loop: the oracle the vectorized engine is tested against.

One client at a time, only its real samples, ordinary autograd. It runs the same `LocalRule`
on a stack of one client, so the tests compare batching, padding, masking, gathering and the
kernels' hand-written gradients of the fast path, not two copies of the update math.
"""

import torch
from torch import nn
from torch.func import functional_call

from clusterfl.core.types import Tensors
from clusterfl.engine.base import ClientData, Prox, Split
from clusterfl.engine.losses import check_loss, num_correct, sample_loss
from clusterfl.engine.plan import BatchPlan
from clusterfl.engine.rules import Coef, LocalRule, descend_unfused_


class AutogradOracle:
    """Gradient of one client's mean loss on (x, y) by `torch.autograd` (weighted mean
    sum_i w_i loss_i / len(y) when per-sample weights `w` are given)."""

    same_step = False  # one client: Adam checks its step count itself

    def __init__(
        self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor | None = None,
        loss: str | None = None,
    ) -> None:
        self.model, self.x, self.y, self.w, self.loss = model, x, y, w, loss

    def grads(self, params: Tensors) -> Tensors:
        leaves = {k: v[0].detach().requires_grad_(True) for k, v in params.items()}
        with torch.enable_grad():
            losses = sample_loss(functional_call(self.model, leaves, (self.x,)), self.y, self.loss)
            loss = losses.mean() if self.w is None else (losses * self.w).sum() / len(losses)
            grads = torch.autograd.grad(loss, list(leaves.values()))
        return {k: g.unsqueeze(0) for k, g in zip(leaves, grads, strict=True)}

    def descend_(
        self, params: Tensors, lr: float, decay: Coef = 0.0, anchor: Tensors | None = None,
        pull: Coef = 0.0,
    ) -> None:
        descend_unfused_(self, params, lr, decay, anchor, pull)


def _stack(parts: list[Tensors]) -> Tensors:
    return {k: torch.cat([q[k] for q in parts]) for k in parts[0]} if parts else {}


def _row(tensors: Tensors, i: int) -> Tensors:
    return {k: v[i : i + 1] for k, v in tensors.items()}


class ReferenceEngine:
    def __init__(self, model: nn.Module, data: ClientData, loss: str | None = None) -> None:
        check_loss(loss, data.is_regression)
        self.model = model
        self.data = data
        self.loss = loss  # `losses.sample_loss`'s: None picks it from the labels' dtype

    def train(
        self, params: Tensors, clients: torch.Tensor, rule: LocalRule, plan: BatchPlan,
        prox: Prox | None = None,
    ) -> Tensors:
        return self.train_with_state(params, clients, rule, plan, prox)[0]

    def train_with_state(
        self, params: Tensors, clients: torch.Tensor, rule: LocalRule, plan: BatchPlan,
        prox: Prox | None = None,
    ) -> tuple[Tensors, Tensors]:
        out_p: list[Tensors] = []
        out_s: list[Tensors] = []
        for i, c in enumerate(clients.tolist()):
            p = {k: v.clone() for k, v in _row(params, i).items()}
            p_prox = None
            if prox is not None:
                p_prox = Prox(prox.mu, _row(prox.center, i), prox.weight[i : i + 1])
            state = rule.init_state(p)
            for s in range(plan.num_steps):
                real = plan.mask[s, i]
                if not real.any():
                    continue
                idx = plan.index[s, i][real]
                w = None if plan.weight is None else plan.weight[s, i][real]
                oracle = AutogradOracle(self.model, self.data.train_x[c, idx],
                                        self.data.train_y[c, idx], w, self.loss)
                rule.step_(p, state, oracle, p_prox)
            out_p.append(p)
            out_s.append(state)
        return _stack(out_p), _stack(out_s)

    @torch.no_grad()
    def evaluate(
        self, params: Tensors, clients: torch.Tensor, split: Split
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x, y, n = self.data.split(split)
        losses, correct = [], []
        for i, c in enumerate(clients.tolist()):
            p = {k: v[i] for k, v in params.items()}
            logits = functional_call(self.model, p, (x[c, : n[c]],))
            losses.append(sample_loss(logits, y[c, : n[c]], self.loss).sum())
            correct.append(num_correct(logits, y[c, : n[c]]).sum())
        return torch.stack(losses), torch.stack(correct)

    @torch.no_grad()
    def sample_losses(
        self, models: Tensors, clients: torch.Tensor, split: Split
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x, y, n = self.data.split(split)
        n_sel, n_max = self.data.selected_sizes(clients, split)
        n_models = next(iter(models.values())).shape[0]
        out = torch.zeros(n_models, len(clients), n_max, dtype=x.dtype, device=x.device)
        for m in range(n_models):
            p = {k: v[m] for k, v in models.items()}
            for i, c in enumerate(clients.tolist()):
                logits = functional_call(self.model, p, (x[c, : n[c]],))
                out[m, i, : n[c]] = sample_loss(logits, y[c, : n[c]], self.loss)
        return out, torch.arange(n_max, device=x.device).view(1, -1) < n_sel.view(-1, 1)
