"""The local-training engine: every algorithm's client work goes through it.

Algorithms say *what* to compute (a `LocalRule`, a `BatchPlan`, optional proximal terms);
an engine decides *how*. `VectorizedEngine` trains all selected clients together on stacked
parameters with `torch.func.vmap`; `ReferenceEngine` is the plain per-client loop kept as the
oracle the tests compare the fast path against.
"""

from clusterfl.engine.base import ClientData, LocalEngine, Prox
from clusterfl.engine.plan import BatchPlan, make_plan
from clusterfl.engine.reference import ReferenceEngine
from clusterfl.engine.rules import Adam, LocalRule, Sgd
from clusterfl.engine.vectorized import VectorizedEngine

ENGINES = {"vectorized": VectorizedEngine, "reference": ReferenceEngine}

__all__ = [
    "ENGINES",
    "Adam",
    "BatchPlan",
    "ClientData",
    "LocalEngine",
    "LocalRule",
    "Prox",
    "ReferenceEngine",
    "Sgd",
    "VectorizedEngine",
    "make_plan",
]
