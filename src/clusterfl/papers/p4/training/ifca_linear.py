"""IFCA (Ghosh et al. 2020; P4 Sec. 4's IFCA(model) and IFCA(grad) baselines) on the linear
problem as a `FederatedAlgorithm`: `rounds.ifca_round` over K cluster models.
`variant`: "model" (local steps from the chosen model, models averaged) or "gradient" (one
gradient per client, gradients averaged, the server steps). Records the optimum error of
each client's model theta_{j_i}, ARI/NMI of j_i and j_i per round; `View.centers` the K
models. Registered as `ifca_linear` (`ifca` is the neural-model IFCA)."""

from dataclasses import dataclass
from typing import Literal

import torch

from clusterfl.core.options import require
from clusterfl.core.types import View
from clusterfl.papers.p4.training.linear import LinearProblem, StepHyper
from clusterfl.papers.p4.training.rounds import IfcaState, ifca_initial_state, ifca_round


@dataclass(frozen=True)
class IfcaHyper(StepHyper):
    num_clusters: int = 4
    variant: Literal["model", "gradient"] = "model"

    def validate(self, key: str) -> None:
        super().validate(key)
        require(self.num_clusters >= 1, f"{key}.num_clusters", "must be >= 1")
        require(self.variant in ("model", "gradient"), f"{key}.variant",
                "must be 'model' or 'gradient'")


class IfcaLinear(LinearProblem[IfcaHyper]):
    state: IfcaState

    def setup(self) -> None:
        self.state = ifca_initial_state(self.data, self.hyper.num_clusters, self.generator,
                                        scale=self.hyper.init_scale)

    def round(self, round_: int, clients: torch.Tensor) -> None:
        self.state = ifca_round(self.data, self.state, self.hyper.update, self.hyper.variant,
                                self.generator)

    def view(self) -> View:
        return View(client_models={"x": self.state.client_params},
                    centers={"x": self.state.models}, assignment=self.state.assignment)

    def default_evaluators(self) -> list[str]:
        return ["optimum_error", "gradient_norm", "cluster_recovery"]
