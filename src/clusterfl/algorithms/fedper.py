"""FedPer (Arivazhagan, Aggarwal, Singh & Choudhary 2019, "Federated Learning with
Personalization Layers", arXiv:1912.00818, Sec. 3).

The model is base layers and personalization layers (the top). The server averages the base
layers (FedAvg); each client keeps its own personalization layers, which never leave it.

    for t = 1 .. T:
        each selected client k: (W_B, W_P,k) <- SGD_k(W_B, W_P,k)   (all layers, E epochs)
        server: W_B <- sum_k n_k / n * W_B,k
    client k uses (W_B, W_P,k)

The round is `split_model.SplitModel`'s; `shared` names the base layers.

Readings:
- The base is the `dnn`'s hidden layer (`shared: ["1"]`) and its output layer is personal:
  the paper's personalization layers are the top K_P layers of its ResNet-34 / MobileNet-v1
  (it varies K_P); with one hidden layer, K_P = 1 is the only split that leaves a base.
- The paper gives no code; local work is the schedule's (optimizer, lr, epochs or steps,
  batch), all layers at once, as the FedPer baseline in the FedRep code
  (`lgcollins/FedRep`, `main_fedrep.py --alg fedper`) trains it.
- Aggregation weights n_k / n (FedAvg's, as that code's `lens` weighting); `weighting:
  uniform` averages the selected clients equally.
- Every client's personalization layers start from the same initial draw as the base (the
  FedRep code copies the initial global model to every user); a client that has not trained
  yet uses that draw with the current base.
- With `shared` naming every layer FedPer is FedAvg, bit for bit (tested).
"""

from dataclasses import dataclass

from clusterfl.algorithms.split_model import SplitHyper, SplitModel


@dataclass(frozen=True)
class FedPerHyper(SplitHyper):
    """`shared`: the base layers (default the `dnn`'s hidden layer, "1")."""


class FedPer(SplitModel[FedPerHyper]):
    family = "personalized"
    method = "fedper"
