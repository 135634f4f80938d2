"""The local-training engine: every algorithm's client work goes through it.

Algorithms say *what* to compute (a `LocalRule`, a `BatchPlan`, optional proximal terms, the
models whose per-sample losses they need); an engine decides *how*. `VectorizedEngine` trains
all selected clients together on stacked parameters (hand-written batched matmuls for
Linear-ReLU stacks, the same around oneDNN/cuDNN convolutions for CNNs, `torch.func.vmap`
otherwise); `ReferenceEngine` is the plain per-client loop kept as the oracle the tests
compare the fast path against. See docs/engine.md.
"""

from collections.abc import Callable

from clusterfl.engine.base import ClientData, LocalEngine, Prox
from clusterfl.engine.choose import make_kernel
from clusterfl.engine.conv import ConvKernel
from clusterfl.engine.kernels import BmmKernel, VmapKernel
from clusterfl.engine.plan import BatchPlan, make_plan
from clusterfl.engine.reference import ReferenceEngine
from clusterfl.engine.rules import Adam, GradOracle, LocalRule, MoreauEnvelope, Sgd
from clusterfl.engine.threads import configure_threads, split_threads
from clusterfl.engine.vectorized import VectorizedEngine

ENGINES: dict[str, Callable[..., LocalEngine]] = {"vectorized": VectorizedEngine,
                                                  "reference": ReferenceEngine}

__all__ = [
    "ENGINES",
    "Adam",
    "BatchPlan",
    "BmmKernel",
    "ClientData",
    "ConvKernel",
    "GradOracle",
    "LocalEngine",
    "LocalRule",
    "MoreauEnvelope",
    "Prox",
    "ReferenceEngine",
    "Sgd",
    "VectorizedEngine",
    "VmapKernel",
    "configure_threads",
    "make_kernel",
    "make_plan",
    "split_threads",
]
