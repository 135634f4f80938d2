"""PDL-TC (P4, Algorithm 3) as a `FederatedAlgorithm`: each round `rounds.pdl_tc_round`
(every client runs Threshold-Clustering with K = 1 over everyone's momentums from its own).
It forms no clusters, so it records the optimum error only (no assignment, no ARI); the
per-client estimates are `View.centers` ([N, d])."""

import torch

from clusterfl.papers.p4.training.linear import ClusterHyper, MomentumAlgorithm
from clusterfl.papers.p4.training.rounds import pdl_tc_round


class PdlTc(MomentumAlgorithm[ClusterHyper]):
    def round(self, round_: int, clients: torch.Tensor) -> None:
        self.state = pdl_tc_round(self.data, self.state, self.hyper.update,
                                  self.hyper.clustering, self.generator)

    def default_evaluators(self) -> list[str]:
        return ["optimum_error", "gradient_norm"]
