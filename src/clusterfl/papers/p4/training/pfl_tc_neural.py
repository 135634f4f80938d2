"""PFL-TC (P4, Algorithm 2) on a neural model: the issue's real-data extension (the paper
runs linear regression only). The client side and every reading are in `neural`.

    each round: every client forms m_i from its minibatch gradient(s) (`neural`)
    server: v_1..v_K = Threshold-Clustering({m_i}, k-means++ seeds, K) (`rounds.pfl_tc_server`)
            c(i) = the center nearest to m_i
    every client: x_i <- x_i - eta v_{c(i)}

Records: each client's personal model (accuracy by the `clients` evaluator) and c(i) as the
assignment (ARI/NMI against the true clusters by `cluster_recovery`).
"""

import torch

from clusterfl.papers.p4.training.neural import NeuralMomentum
from clusterfl.papers.p4.training.rounds import pfl_tc_server


class PflTcNeural(NeuralMomentum):
    def setup(self) -> None:
        super().setup()
        self.centers_: torch.Tensor | None = None

    def round(self, round_: int, clients: torch.Tensor) -> None:
        momentum = self.update_momentums()
        self.centers_, self.clusters = pfl_tc_server(momentum, self.centers_,
                                                     self.hyper, self.generator)
        self.step(self.centers_[self.clusters])
