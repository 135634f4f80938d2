"""The centralized multimodal baseline (P3 Fig. 5: "multimodal LSTM" [6, 12], all data in
one place): the samples of all clients of a modality are pooled into one "client", which
trains the same network as mmFL (that modality's encoder and the head shared by every
modality), the head averaged over the modalities after each round's local steps.

Readings: the cited LSTMs are replaced by the Conv1d encoder every method here uses (why:
`model.py`), so that Fig. 5 compares training schemes, not architectures. The pooled model
takes `local_steps` steps per round like a client (its data is 3 clients' worth, so per
round it sees a third of the samples the federation sees); it is scored on the pooled test
samples, the same samples and weighting as the federated methods' per-modality accuracy.
"""

from clusterfl.papers.p3.training.mmfl import MmFL


class Centralized(MmFL):
    pooled = True
