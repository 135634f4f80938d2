"""Local update rules: the update math on stacked parameters `[C, ...]`, written once.

A rule gets the clients' parameters and its own per-client state (both owned by the engine,
updated in place) and a `GradOracle` for the current batch. The oracle returns the gradient of
each client's mean batch loss at any parameters, so a rule may ask several times on one batch
(pFedMe's inner solver does). Rules update in place because a step on the DNN is bound by
memory traffic: a pure `w - lr * g` reads and writes every weight once more than the fused
gradient-and-update GEMM of `GradOracle.descend_` (measured ~2x slower, docs/engine.md).

Proximal terms live here, once, for every algorithm that uses them.
"""

from dataclasses import dataclass
from typing import ClassVar, Protocol

import torch

from clusterfl.core.types import Tensors

Coef = float | torch.Tensor  # a scalar, or one value per client `[C]`


@dataclass(frozen=True)
class Prox:
    """A proximal term mu/2 * weight_c * ||w - center_c||^2 per client c.

    FedProx: weight 1, center = the global model. FedSoft: weight = sum_s u_cs and center =
    sum_s u_cs c_s / weight, which has the same gradient as lambda/2 sum_s u_cs ||w - c_s||^2.
    """

    mu: float
    center: Tensors  # stacked [C, ...]
    weight: torch.Tensor  # [C]



def bcast(per_client: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Reshape a per-client scalar `[C]` to broadcast against stacked `[C, ...]`."""
    return per_client.view(-1, *([1] * (like.dim() - 1)))


def shrink_and_pull_(w: torch.Tensor, keep: Coef, anchor: torch.Tensor | None, pull: Coef) -> None:
    """w <- keep * w + pull * anchor, in place (keep and pull scalars or per client)."""
    if isinstance(keep, torch.Tensor):
        w.mul_(bcast(keep, w))
    elif keep != 1.0:
        w.mul_(keep)
    if anchor is None:
        return
    if isinstance(pull, torch.Tensor):
        w.addcmul_(anchor, bcast(pull, w))
    elif pull != 0.0:
        w.add_(anchor, alpha=pull)


class GradOracle(Protocol):
    """Gradients of each client's mean loss on the current step's batch. `same_step`: the
    oracle vouches that every row has taken the same number of steps (the vectorized
    engine's `BoundOracle`), which spares Adam's GPU path a host synchronisation."""

    @property
    def same_step(self) -> bool: ...

    def grads(self, params: Tensors) -> Tensors:
        """d/dw of each client's mean batch loss at `params` (new tensors)."""
        ...

    def descend_(
        self, params: Tensors, lr: float, decay: Coef = 0.0, anchor: Tensors | None = None,
        pull: Coef = 0.0,
    ) -> None:
        """In place: w <- (1 - decay) * w + pull * anchor - lr * grad f(w).

        Covers SGD with weight decay, FedProx/FedSoft (decay = lr*mu*weight, pull = same,
        anchor = center) and pFedMe's inner step; kernels fuse it into the gradient GEMM.
        """
        ...


def descend_unfused_(
    oracle: GradOracle, params: Tensors, lr: float, decay: Coef, anchor: Tensors | None,
    pull: Coef,
) -> None:
    """`GradOracle.descend_` from `grads`, for oracles that cannot fuse it."""
    g = oracle.grads(params)
    keep = 1.0 - decay
    for k, w in params.items():
        shrink_and_pull_(w, keep, None if anchor is None else anchor[k], pull)
        w.sub_(g[k], alpha=lr)


def prox_coefs(
    prox: Prox | None, lr: float, weight_decay: float
) -> tuple[Coef, Tensors | None, Coef]:
    """(decay, anchor, pull) of one SGD step on f + wd/2 ||w||^2 + mu/2 weight_c ||w - c||^2."""
    if prox is None:
        return lr * weight_decay, None, 0.0
    pull = lr * prox.mu * prox.weight
    return pull + lr * weight_decay, prox.center, pull


def add_penalty_grads_(
    grads: Tensors, params: Tensors, weight_decay: float, prox: Prox | None
) -> None:
    """grads += weight_decay * w + mu * weight_c * (w - center_c), in place."""
    for k, g in grads.items():
        if weight_decay:
            g.add_(params[k], alpha=weight_decay)
        if prox is not None:
            g.addcmul_(params[k] - prox.center[k], bcast(prox.mu * prox.weight, g))


class LocalRule(Protocol):
    """`capturable`: the rule's `step_` never waits on the device (no `.item()`,
    `bool(tensor)`, host copies), so the GPU path records its rounds as a CUDA graph
    (`engine.program`); a rule that says False runs the same program eagerly."""

    capturable: ClassVar[bool]

    def init_state(self, params: Tensors) -> Tensors: ...

    def step_(self, params: Tensors, state: Tensors, oracle: GradOracle, prox: Prox | None) -> None:
        """One local step on one batch, updating `params` and `state` in place."""
        ...


@dataclass(frozen=True)
class Sgd:
    """Plain SGD: w <- w - lr * (grad f + weight_decay * w + prox gradient)."""

    lr: float
    weight_decay: float = 0.0
    capturable: ClassVar[bool] = True

    def init_state(self, params: Tensors) -> Tensors:
        return {}

    def step_(self, params: Tensors, state: Tensors, oracle: GradOracle, prox: Prox | None) -> None:
        decay, anchor, pull = prox_coefs(prox, self.lr, self.weight_decay)
        oracle.descend_(params, self.lr, decay, anchor, pull)


@dataclass(frozen=True)
class Adam:
    """Adam (Kingma & Ba 2015) with per-client moments and step counts, as torch.optim.Adam."""

    lr: float
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0
    capturable: ClassVar[bool] = True

    def init_state(self, params: Tensors) -> Tensors:
        state = {f"m.{k}": torch.zeros_like(w) for k, w in params.items()}
        state |= {f"v.{k}": torch.zeros_like(w) for k, w in params.items()}
        first = next(iter(params.values()))
        state["t"] = torch.zeros(first.shape[0], dtype=first.dtype, device=first.device)
        return state

    def step_(self, params: Tensors, state: Tensors, oracle: GradOracle, prox: Prox | None) -> None:
        g = oracle.grads(params)
        add_penalty_grads_(g, params, self.weight_decay, prox)
        t = state["t"].add_(1)
        # The engines' oracles vouch that every row has taken the same steps (`same_step`),
        # which spares the GPU path a host synchronisation; others are checked.
        if oracle.same_step or (len(t) and bool((t == t[0]).all())):
            self._fused_step_(params, state, g, t[0])
        else:
            self._formula_step_(params, state, g, t)

    def _formula_step_(self, params: Tensors, state: Tensors, g: Tensors, t: torch.Tensor) -> None:
        """Each client c at its own step t[c]."""
        b1, b2 = self.betas
        bias1, bias2 = 1 - b1**t, (1 - b2**t).sqrt()
        for k, w in params.items():
            m = state[f"m.{k}"].mul_(b1).add_(g[k], alpha=1 - b1)
            v = state[f"v.{k}"].mul_(b2).addcmul_(g[k], g[k], value=1 - b2)
            # torch.optim.Adam: w -= lr / bias1 * m / (sqrt(v) / sqrt(bias2) + eps)
            denom = (v.sqrt() / bcast(bias2, v)).add_(self.eps)
            w.addcdiv_(m * bcast(-self.lr / bias1, m), denom)

    def _fused_step_(self, params: Tensors, state: Tensors, g: Tensors, t: torch.Tensor) -> None:
        """Every client at the same step t (the engines' usual case: moments start afresh
        each round and the clients active at a step have all taken the same steps): PyTorch's
        fused Adam kernel, the same update as above in one pass over memory (3x faster on
        the DNN, whose Adam update outweighed its gradients; docs/engine.md)."""
        keys = list(params)
        b1, b2 = self.betas
        torch._fused_adam_(
            [params[k] for k in keys], [g[k] for k in keys], [state[f"m.{k}"] for k in keys],
            [state[f"v.{k}"] for k in keys], [], [t] * len(keys), lr=self.lr, beta1=b1,
            beta2=b2, weight_decay=0.0, eps=self.eps, amsgrad=False, maximize=False,
        )


@dataclass(frozen=True)
class MoreauEnvelope:
    """pFedMe's local step (Dinh et al. 2020, "Personalized Federated Learning with Moreau
    Envelopes", Algorithm 1, read with the official code `CharlieDinh/pFedMe`).

    On each batch: K inner steps theta <- theta - personal_lr * (grad f(theta; batch)
    + lam * (theta - w) + mu * theta), then w <- w - lr * lam * (w - theta).
    theta starts at the received model and carries over from batch to batch (the official
    `UserpFedMe` keeps its personalized model between batches); `personalized(state)` returns
    it at the end. `mu` is the official optimizer's small L2 term (its default 0.001); the
    paper's Algorithm 1 has none, hence our default 0.
    """

    lr: float  # eta, the local (outer) learning rate
    personal_lr: float
    lam: float
    inner_steps: int = 5
    mu: float = 0.0
    capturable: ClassVar[bool] = True

    def init_state(self, params: Tensors) -> Tensors:
        return {f"theta.{k}": w.clone() for k, w in params.items()}

    @staticmethod
    def personalized(state: Tensors) -> Tensors:
        """The personalized models theta_c from a state returned by `train_with_state`."""
        return {k.removeprefix("theta."): v for k, v in state.items() if k.startswith("theta.")}

    def step_(self, params: Tensors, state: Tensors, oracle: GradOracle, prox: Prox | None) -> None:
        if prox is not None:
            raise ValueError("MoreauEnvelope is its own proximal term; pass prox=None")
        theta = self.personalized(state)
        plr = self.personal_lr
        decay, pull = plr * (self.lam + self.mu), plr * self.lam
        repeated = getattr(oracle, "descend_repeated_", None)  # the engines' oracles have it
        if repeated is not None:  # the K steps on one batch at once: far fewer weight passes
            repeated(theta, self.inner_steps, plr, decay, params, pull)
        else:
            for _ in range(self.inner_steps):
                oracle.descend_(theta, plr, decay, params, pull)
        a = self.lr * self.lam
        for k, w in params.items():
            w.mul_(1 - a).add_(theta[k], alpha=a)
