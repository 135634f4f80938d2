"""mmFL (Rahman & Nguyen, "Multimodal Federated Learning with Model Personalization", Sec. 2,
Steps 1-10) and the federated baselines it is compared with, as switches of one algorithm.

The architecture (the paper's client "encoder" and server "decoder" are not defined; our
reading, the one that lets a multimodal model beat a unimodal one in every modality, Fig. 4):
a client holds ONE modality. Its network is that modality's encoder (`model.P3Net`, Conv1d
over the time series) followed by a head (the "decoder"). The encoder is averaged inside its
modality cluster (Eq. 8, "federated averaging separately for the modalities", 1/N;
`server_weights: samples` weights by FedAvg's sample counts, a named variant);
the head is averaged over the clients of EVERY modality, so what one modality learns about
the classes reaches the others. Every client trains encoder and head with its selected rate
(Steps 7-8: "decoder model training using the same alpha").

The names used in params, the report and docs/p3.md:
- mmFL (`rates: [0.01, 0.001, 0.0001]`, `share_head: true`): the paper's method.
- multimodal FL with a fixed rate (`rates: [r]`, `share_head: true`): Fig. 3's fixed rates
  and Table 1's "Multimodal FL"; no selection happens.
- unimodal FL (`rates: [r]`, `share_head: false`): federated averaging of the whole network
  inside each modality; no sharing between modalities. With `server_weights: samples` it is
  exactly FedAvg on each cluster (tested).
- unimodal meta-FL (`rates: [...]`, `share_head: false`): the rate selection without sharing.
Standalone (one client alone) and the centralized baseline are `standalone.py` and
`centralized.py`. The rate selection itself is `base.ModalityAlgorithm.select`.
"""

import torch

from clusterfl.core.types import Tensors
from clusterfl.papers.p3.training.base import ModalityAlgorithm
from clusterfl.papers.p3.training.steps import server_step
from clusterfl.steps.aggregation import broadcast


class MmFL(ModalityAlgorithm):
    def server(self, trained: list[Tensors]) -> list[Tensors]:
        """Step 10: Eq. (8)'s mean of the encoders per modality (1/N, or by sample counts
        with `server_weights: samples`), the head's over every modality (or per modality)."""
        weights = [mod.train_n if self.hyper.server_weights == "samples"
                   else torch.ones_like(mod.train_n) for mod in self.modalities]
        new = server_step(trained, weights, self.hyper.share_head)
        return [broadcast(g, mod.size) for g, mod in zip(new, self.modalities, strict=True)]
