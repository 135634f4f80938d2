"""PFL-TC (P4, Algorithm 2) as a `FederatedAlgorithm`: each round `rounds.pfl_tc_round`
(client momentums, the server's Threshold-Clustering, every client steps with its cluster's
center). Option 1/2 is the hyperparameter `option` (Option 2 with `local_steps` m).
Records: the optimum error, ARI/NMI of the cluster each client stepped with, and that
cluster per round (`cluster_recovery`), the K centers as `View.centers`."""

import torch

from clusterfl.papers.p4.training.linear import ClusterHyper, MomentumAlgorithm
from clusterfl.papers.p4.training.rounds import pfl_tc_round


class PflTc(MomentumAlgorithm[ClusterHyper]):
    def round(self, round_: int, clients: torch.Tensor) -> None:
        self.state = pfl_tc_round(self.data, self.state, self.hyper.update,
                                  self.hyper.clustering, self.generator)
