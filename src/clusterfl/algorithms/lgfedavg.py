"""LG-FedAvg (Liang, Liu, Ziyin, Allen, Auerbach, Brent, Salakhutdinov & Morency 2020,
"Think Locally, Act Globally: Federated Learning with Local and Global Representations",
arXiv:2001.01523, Algorithm 1), read with the official code `pliang279/LG-FedAvg`.

The opposite split to FedPer: each client keeps its lower layers (its local representation)
and the server averages the top layers (the global model on top of the representations).

    for t = 1 .. T:
        each selected client k: (l_k, g_k) <- SGD_k(l_k, g)         (all layers, E epochs)
        server: g <- sum_k p_k g_k
    client k uses (l_k, g)

The round is `split_model.SplitModel`'s; `shared` names the global (top) layers.

Readings:
- The global part is the `dnn`'s output layer (`shared: ["3"]`), its hidden layer local: the
  official code keeps the top `num_layers_keep` layers global (MNIST: 3 of its 5-layer MLP,
  CIFAR-10: 2 of its CNN); with one hidden layer only the output layer can be global while a
  representation stays local.
- The official `main_lg.py` starts from a FedAvg model trained beforehand (`--load_fed`,
  400+ rounds of `main_fed.py`). `fedavg_warmup_rounds` runs that many FedAvg rounds first,
  inside the run's budget (every layer averaged; after them every client holds the FedAvg
  model); the default 0 starts LG-FedAvg from the initial draw, as the FedRep code's `lg`
  baseline does, since the benchmark gives every method the same number of rounds.
- Averages: the official `main_lg.py` averages the global layers uniformly over the
  selected clients (`weighting: uniform`); the default is n_k / n (FedAvg's, and the FedRep
  code's `lg`).
- The official code also keeps each client's best model by its test accuracy; we never
  select on test data.
"""

from dataclasses import dataclass

import torch

from clusterfl.algorithms.split_model import SplitHyper, SplitModel
from clusterfl.core.options import require
from clusterfl.steps.aggregation import broadcast, weighted_average


@dataclass(frozen=True)
class LgFedAvgHyper(SplitHyper):
    """`shared`: the global layers (default the `dnn`'s output layer, "3")."""

    shared: tuple[str, ...] = ("3",)
    fedavg_warmup_rounds: int = 0

    def validate(self, key: str) -> None:
        super().validate(key)
        require(self.fedavg_warmup_rounds >= 0, f"{key}.fedavg_warmup_rounds", "must be >= 0")


class LgFedAvg(SplitModel[LgFedAvgHyper]):
    family = "personalized"
    method = "lgfedavg"

    def round(self, round_: int, clients: torch.Tensor) -> None:
        if round_ > self.hyper.fedavg_warmup_rounds:
            super().round(round_, clients)
            return
        # a FedAvg round: every layer averaged, every client then holds the average
        local = self.local_update(self.models_of(clients), clients)
        average = weighted_average(local, self.aggregation_weights(clients))
        self.shared = {k: average[k] for k in self.shared_names}
        self.personal = broadcast({k: average[k] for k in self.personal_names},
                                  self.num_clients)
