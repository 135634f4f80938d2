"""The plain per-client loop: the oracle the vectorized engine is tested against.

One client at a time, only its real samples, ordinary autograd. It runs the same `LocalRule`
on a stack of one client, so the tests compare batching, padding, masking and gathering of the
fast path, not two copies of the update math.
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from clusterfl.engine.base import ClientData, Params, Prox, Split
from clusterfl.engine.plan import BatchPlan


class ReferenceEngine:
    def __init__(self, model: nn.Module, data: ClientData) -> None:
        self.model = model
        self.data = data

    def _grad_fn(self, x: torch.Tensor, y: torch.Tensor):
        def grad_fn(params: Params) -> Params:
            leaves = {k: v[0].detach().requires_grad_(True) for k, v in params.items()}
            with torch.enable_grad():
                loss = F.cross_entropy(functional_call(self.model, leaves, (x,)), y)
                grads = torch.autograd.grad(loss, list(leaves.values()))
            return {k: g.unsqueeze(0) for k, g in zip(leaves, grads, strict=True)}

        return grad_fn

    def train(
        self, params: Params, clients: torch.Tensor, rule, plan: BatchPlan,
        prox: Prox | None = None,
    ) -> Params:
        out: dict[str, list[torch.Tensor]] = {k: [] for k in params}
        for i, c in enumerate(clients.tolist()):
            p = {k: v[i : i + 1].clone() for k, v in params.items()}
            p_prox = None
            if prox is not None:
                center = {k: v[i : i + 1] for k, v in prox.center.items()}
                p_prox = Prox(prox.mu, center, prox.weight[i : i + 1])
            state = rule.init_state(p)
            for s in range(plan.num_steps):
                real = plan.mask[s, i]
                if not real.any():
                    continue
                idx = plan.index[s, i][real]
                grad_fn = self._grad_fn(self.data.train_x[c, idx], self.data.train_y[c, idx])
                p, state = rule.step(p, state, grad_fn, p_prox)
            for k in params:
                out[k].append(p[k][0])
        return {k: torch.stack(v) for k, v in out.items()}

    @torch.no_grad()
    def evaluate(
        self, params: Params, clients: torch.Tensor, split: Split
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x, y, n = self.data.split(split)
        losses, correct = [], []
        for i, c in enumerate(clients.tolist()):
            p = {k: v[i] for k, v in params.items()}
            logits = functional_call(self.model, p, (x[c, : n[c]],))
            losses.append(F.cross_entropy(logits, y[c, : n[c]], reduction="sum"))
            correct.append((logits.argmax(-1) == y[c, : n[c]]).sum().to(logits.dtype))
        return torch.stack(losses), torch.stack(correct)
