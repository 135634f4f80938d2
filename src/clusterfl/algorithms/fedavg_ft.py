"""FedAvg followed by local fine-tuning (the personalization baseline of e.g. Wang et al.
2019, "Federated Evaluation of On-device Personalization", and Yu, Bagdasaryan & Shmatikov
2020, "Salvaging Federated Learning by Local Adaptation"): FedAvg trains the global model w
(McMahan et al. 2017, `fedavg.py`, unchanged); the model client k uses is w fine-tuned on
k's own training data for `finetune_steps` local steps.

    for t = 1 .. T:
        FedAvg round: w <- sum_k (n_k / n) LocalSGD_k(w)          (exactly `FedAvg.round`)
        evaluation: client k's model = LocalSGD_k(w, finetune_steps steps)

Readings:
- When the fine-tune happens: at every round's evaluation, on every client, from that round's
  global model, so the curves show the personalized accuracy per round. The fine-tuned
  models are never uploaded or kept: the next round starts from w, and the global model's
  trajectory is FedAvg's bit for bit (whatever `finetune_steps` is).
- The fine-tune uses the schedule's optimizer, lr (unless `finetune_lr` is set) and batch
  size; its batches are drawn from a generator of its own (seeded from the run's seed and a
  fixed tag), so the training rounds draw exactly FedAvg's batches and clients.
- `finetune_steps: 0` is FedAvg itself (every client uses w; the same histories bit for bit).
"""

from dataclasses import dataclass

import numpy as np

from clusterfl.algorithms.fedavg import FedAvgBase, FedAvgHyper
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.engine import Adam, Sgd, make_plan
from clusterfl.steps.aggregation import broadcast

FINETUNE_STREAM = 0x46544E45  # the fine-tune generator's tag beside the run's seed


@dataclass(frozen=True)
class FedAvgFtHyper(FedAvgHyper):
    finetune_steps: int = 10
    finetune_lr: float | None = None  # None: the schedule's lr

    def validate(self, key: str) -> None:
        super().validate(key)
        require(self.finetune_steps >= 0, f"{key}.finetune_steps", "must be >= 0")
        require(self.finetune_lr is None or self.finetune_lr > 0, f"{key}.finetune_lr",
                "must be > 0 (or null for the schedule's lr)")


class FedAvgFt(FedAvgBase[FedAvgFtHyper]):
    family = "personalized"

    def setup(self) -> None:
        super().setup()
        self.finetune_rng = np.random.default_rng([self.ctx.seed, FINETUNE_STREAM])

    def client_models(self) -> Tensors:
        start = broadcast(self.global_model, self.num_clients)
        if self.hyper.finetune_steps == 0:
            return start
        plan = make_plan(self.train_sizes.cpu().numpy(), self.schedule.batch_size,
                         self.finetune_rng, local_steps=self.hyper.finetune_steps)
        return self.engine.train(start, self.all_clients, self.finetune_rule(), plan)

    def finetune_rule(self) -> Sgd | Adam:
        s = self.schedule
        lr = self.hyper.finetune_lr if self.hyper.finetune_lr is not None else self.lr
        if s.optimizer == "adam":
            return Adam(lr, weight_decay=s.weight_decay)
        return Sgd(lr, weight_decay=s.weight_decay)
