"""Local rules the benchmark's split-model methods add, on the engine's `LocalRule` protocol
(`clusterfl.engine.rules`), without touching the engine.

`TrainOnly(rule, trainable)` is `rule` applied to the parameters named in `trainable` only:
the others are frozen, i.e. left bit for bit as they were (never written, not even by a zero
step). FedRep trains its head with the body frozen, then the body with the head frozen.

How: the gradient of each client's batch loss is taken once at the full parameters (the
frozen ones take part in the forward pass), then the inner rule steps the trainable subset
with that gradient through `GradientsOnce`, an oracle over the subset that hands out the
gradient it was given. So the inner rule must ask for gradients once per step, at the
parameters it steps (`Sgd`, `Adam`; not `MoreauEnvelope`, whose inner solver asks at other
points: `GradientsOnce` refuses a second call). The fused gradient-and-update GEMM of the
engine's kernels updates every layer, so the step is the unfused `descend_unfused_`; its
numbers agree with the fused step up to float rounding.
"""

from collections.abc import Collection
from dataclasses import dataclass
from typing import ClassVar

from clusterfl.core.types import Tensors
from clusterfl.engine.base import Prox
from clusterfl.engine.rules import Adam, Coef, GradOracle, Sgd, descend_unfused_


class GradientsOnce:
    """A `GradOracle` over a subset of the parameters that returns precomputed gradients,
    once: they hold only at the parameters they were computed at, before the step."""

    same_step = False  # Adam checks its step counts itself

    def __init__(self, gradients: Tensors) -> None:
        self.gradients = gradients
        self.asked = False

    def grads(self, params: Tensors) -> Tensors:
        if self.asked:
            raise RuntimeError("TrainOnly's inner rule asked for gradients twice in one step; "
                               "only rules that ask once (Sgd, Adam) can be wrapped")
        self.asked = True
        return {k: self.gradients[k] for k in params}

    def descend_(
        self, params: Tensors, lr: float, decay: Coef = 0.0, anchor: Tensors | None = None,
        pull: Coef = 0.0,
    ) -> None:
        descend_unfused_(self, params, lr, decay, anchor, pull)


def _subset(tensors: Tensors, names: Collection[str]) -> Tensors:
    return {k: v for k, v in tensors.items() if k in names}


@dataclass(frozen=True)
class TrainOnly:
    """`rule` on the parameters named in `trainable`; every other parameter is frozen."""

    rule: Sgd | Adam
    trainable: frozenset[str]
    capturable: ClassVar[bool] = False

    def init_state(self, params: Tensors) -> Tensors:
        return self.rule.init_state(_subset(params, self.trainable))

    def step_(self, params: Tensors, state: Tensors, oracle: GradOracle, prox: Prox | None) -> None:
        gradients = oracle.grads(params)
        if prox is not None:
            prox = Prox(prox.mu, _subset(prox.center, self.trainable), prox.weight)
        self.rule.step_(_subset(params, self.trainable), state, GradientsOnce(gradients), prox)
