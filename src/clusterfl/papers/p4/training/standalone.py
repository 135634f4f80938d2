"""Standalone (P4 Sec. 4's first baseline: "all agents train only on their own data") as a
`FederatedAlgorithm`: `rounds.standalone_round`, x_i <- x_i - eta g~_i. Records the optimum
error and the gradient norm (no clusters)."""

import torch

from clusterfl.papers.p4.training.linear import MomentumAlgorithm, StepHyper
from clusterfl.papers.p4.training.rounds import standalone_round


class Standalone(MomentumAlgorithm[StepHyper]):
    def round(self, round_: int, clients: torch.Tensor) -> None:
        self.state = standalone_round(self.data, self.state, self.hyper.update, self.generator)

    def default_evaluators(self) -> list[str]:
        return ["optimum_error", "gradient_norm"]
