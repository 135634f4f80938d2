"""The true-cluster oracle (P4 Remark 1's comparison: the cluster means of the momentums,
with the clusters known) as a `FederatedAlgorithm`: `rounds.oracle_round` with the
partition's true clusters (read from the run context for training: this is the one
algorithm allowed to see them). Records the optimum error, ARI/NMI (1.0 by construction)
and the (true) cluster per round."""

import torch

from clusterfl.papers.p4.training.linear import MomentumAlgorithm, StepHyper
from clusterfl.papers.p4.training.rounds import oracle_round


class Oracle(MomentumAlgorithm[StepHyper]):
    def round(self, round_: int, clients: torch.Tensor) -> None:
        assert self.ctx.cluster is not None
        self.state = oracle_round(self.data, self.state, self.hyper.update, self.ctx.cluster,
                                  self.generator)
