"""Standalone learning (P3 Fig. 2: "running a model in one user"): every client trains its
own network on its own data and never communicates; each is scored on its own test split.

It shares mmFL's local work (`base.ModalityAlgorithm`: with several `rates` each client
selects its own, with one it trains at that rate) and has no server step.
"""

from clusterfl.core.types import Tensors
from clusterfl.papers.p3.training.base import ModalityAlgorithm


class Standalone(ModalityAlgorithm):
    def server(self, trained: list[Tensors]) -> list[Tensors]:
        return trained
