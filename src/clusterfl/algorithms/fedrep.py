"""FedRep (Collins, Hassani, Mokhtari & Shakkottai 2021, "Exploiting Shared Representations
for Personalized Federated Learning", ICML, Algorithm 1), read with the official code
`lgcollins/FedRep` (`main_fedrep.py`, `models/Update.py`).

The body (representation phi) is shared and averaged; each client keeps its head h_k.

    for t = 1 .. T:
        each selected client k:
            h_k <- tau_h head updates on f_k(phi, h)   with phi frozen
            phi_k <- tau body updates on f_k(phi, h_k) with h_k frozen
        server: phi <- sum_k n_k / n * phi_k
    client k uses (phi, h_k)

Freezing is `training.rules.TrainOnly` (the frozen part stays bit for bit).

Readings:
- Step counts: the official `LocalUpdate.train` runs `local_ep` epochs, the first
  `local_ep - local_rep_ep` on the head and the last `local_rep_ep` on the body (its scripts:
  `--local_ep 15 --local_rep_ep 5`, i.e. 10 head epochs, then 5 body epochs). Here the head
  takes `head_epochs` (default 10, the official count) or `head_steps`, and the body the
  schedule's local work (the benchmark's budget: 1 epoch), so FedRep's body does the same
  work as every other method's model; the head's extra epochs are FedRep's own.
- Both phases use the schedule's optimizer, lr and batch, each with a fresh optimizer state
  (the official SGD has momentum 0.5 and weight decay 1e-4, which no other method here has).
  The head's batches are drawn before the body's, each phase from fresh passes over the data.
- The body is the `dnn`'s hidden layer (`shared: ["1"]`), the head its output layer: the
  official code shares every layer but the last (its MLP: 3 of 4 layers, CNN: the conv and
  first two fully connected layers).
- Aggregation weights n_k / n (the official `lens` weighting); `weighting: uniform` averages
  the selected clients equally.
- The official extra last round (every client fine-tunes its head for 10 epochs, then the
  accuracy is read) is not run: every round is evaluated, with the models as they are.
"""

from dataclasses import dataclass

import torch

from clusterfl.algorithms.split_model import SplitHyper, SplitModel
from clusterfl.algorithms.train_only import TrainOnly
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.engine import BatchPlan, make_plan


@dataclass(frozen=True)
class FedRepHyper(SplitHyper):
    """`shared`: the body (default the `dnn`'s hidden layer, "1"); the head trains for
    `head_epochs` epochs, or `head_steps` steps when set (then `head_epochs` must be null)."""

    head_epochs: int | None = 10
    head_steps: int | None = None

    def validate(self, key: str) -> None:
        super().validate(key)
        require((self.head_epochs is None) != (self.head_steps is None), key,
                "set exactly one of head_epochs and head_steps")
        for name in ("head_epochs", "head_steps"):
            value = getattr(self, name)
            require(value is None or value >= 1, f"{key}.{name}", f"must be >= 1, got {value}")


class FedRep(SplitModel[FedRepHyper]):
    family = "personalized"
    method = "fedrep"

    def setup(self) -> None:
        super().setup()
        require(len(self.personal_names) > 0, f"{self.method}.shared",
                "must leave a head: name only the body's layers, not all of "
                f"{', '.join(self.names)}")

    def local_update(self, start: Tensors, clients: torch.Tensor) -> Tensors:
        """The head with the body frozen, then the body with the head frozen."""
        rule = self.local_rule()
        head = TrainOnly(rule, frozenset(self.personal_names))
        body = TrainOnly(rule, frozenset(self.shared_names))
        with_head = self.train_clients(start, clients, rule=head, plan=self.head_plan(clients))
        return self.train_clients(with_head, clients, rule=body)  # the schedule's plan

    def head_plan(self, clients: torch.Tensor) -> BatchPlan:
        """The head phase's batches: `head_steps` steps or `head_epochs` passes."""
        h = self.hyper
        return make_plan(self.train_sizes[clients].cpu().numpy(), self.schedule.batch_size,
                         self.rng, local_steps=h.head_steps, epochs=h.head_epochs)
