"""PDL-TC (P4, Algorithm 3) on a neural model: the issue's real-data extension. The client
side and every reading are in `neural`.

    each round: every client forms m_i from its minibatch gradient(s) (`neural`)
    every client i: v_i = Threshold-Clustering({m_j}_j, m_i, K = 1) over everyone's momentums,
                    from its own (`rounds.pdl_tc_estimates`), then x_i <- x_i - eta v_i

It forms no clusters, so it records no assignment and no ARI; accuracy as PFL-TC.
"""

import torch

from clusterfl.papers.p4.training.neural import NeuralMomentum
from clusterfl.papers.p4.training.rounds import pdl_tc_estimates


class PdlTcNeural(NeuralMomentum):
    def round(self, round_: int, clients: torch.Tensor) -> None:
        self.step(pdl_tc_estimates(self.update_momentums(), self.hyper))
