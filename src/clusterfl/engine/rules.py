"""Local update rules: pure tensor math on stacked parameters `[C, ...]`.

A rule gets the current parameters, its own per-client state and `grad_fn`, which returns the
gradient of each client's mean batch loss at any parameters (so a rule may call it several
times on the same batch, as pFedMe's inner solver does). Proximal terms are added here, once,
for every algorithm that uses them.
"""

from dataclasses import dataclass
from typing import Protocol

import torch

from clusterfl.engine.base import Params, Prox

GradFn = "Callable[[Params], Params]"


def _bcast(per_client: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Reshape a per-client scalar `[C]` to broadcast against stacked `[C, ...]`."""
    return per_client.view(-1, *([1] * (like.dim() - 1)))


def prox_grad(params: Params, prox: Prox | None) -> Params | None:
    """Gradient of mu/2 * weight_c * ||w - center_c||^2 for every client c."""
    if prox is None:
        return None
    return {
        k: prox.mu * _bcast(prox.weight, w) * (w - prox.center[k]) for k, w in params.items()
    }


def total_grad(params: Params, grads: Params, weight_decay: float, prox: Prox | None) -> Params:
    extra = prox_grad(params, prox)
    out = {}
    for k, g in grads.items():
        g = g + weight_decay * params[k] if weight_decay else g
        out[k] = g + extra[k] if extra is not None else g
    return out


class LocalRule(Protocol):
    def init_state(self, params: Params) -> Params: ...

    def step(self, params: Params, state: Params, grad_fn, prox: Prox | None) -> tuple[Params, Params]: ...


@dataclass(frozen=True)
class Sgd:
    """Plain SGD: w <- w - lr * (grad f + weight_decay * w + prox gradient)."""

    lr: float
    weight_decay: float = 0.0

    def init_state(self, params: Params) -> Params:
        return {}

    def step(self, params: Params, state: Params, grad_fn, prox: Prox | None) -> tuple[Params, Params]:
        g = total_grad(params, grad_fn(params), self.weight_decay, prox)
        return {k: w - self.lr * g[k] for k, w in params.items()}, state


@dataclass(frozen=True)
class Adam:
    """Adam (Kingma & Ba 2015) with per-client moments and step counts, as torch.optim.Adam."""

    lr: float
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0

    def init_state(self, params: Params) -> Params:
        state = {f"m.{k}": torch.zeros_like(w) for k, w in params.items()}
        state |= {f"v.{k}": torch.zeros_like(w) for k, w in params.items()}
        first = next(iter(params.values()))
        state["t"] = torch.zeros(first.shape[0], dtype=first.dtype, device=first.device)
        return state

    def step(self, params: Params, state: Params, grad_fn, prox: Prox | None) -> tuple[Params, Params]:
        b1, b2 = self.betas
        g = total_grad(params, grad_fn(params), self.weight_decay, prox)
        t = state["t"] + 1
        new_state: Params = {"t": t}
        new_params = {}
        for k, w in params.items():
            m = b1 * state[f"m.{k}"] + (1 - b1) * g[k]
            v = b2 * state[f"v.{k}"] + (1 - b2) * g[k] * g[k]
            m_hat = m / _bcast(1 - b1**t, m)
            v_hat = v / _bcast(1 - b2**t, v)
            new_params[k] = w - self.lr * m_hat / (v_hat.sqrt() + self.eps)
            new_state[f"m.{k}"], new_state[f"v.{k}"] = m, v
        return new_params, new_state
