"""The `p3_modalities` evaluator: every client's model on its own samples, sample-weighted,
over all clients (`test_acc`, `test_loss`, `train_acc`, `train_loss`) and per modality
(`test_acc_<modality>`, `test_loss_<modality>`: Table 1's and Figs. 2-5's rows).

It reads `View.extras["models"]`, one stack of client models per modality cluster (the
clusters' networks differ in input width, so there is no single `client_models` stack).
"""

from typing import Any

import torch

from clusterfl.core.types import View
from clusterfl.steps.metrics import (
    METRICS,
    TEST_ACC,
    TEST_LOSS,
    TRAIN_ACC,
    TRAIN_LOSS,
    Metric,
    register,
)


def modality_metrics(modality: str) -> tuple[Metric, Metric]:
    """(test accuracy, test loss) of one modality, registered on first use."""
    acc, loss = f"test_acc_{modality}", f"test_loss_{modality}"
    if acc not in METRICS:
        register(Metric(acc, f"test accuracy, {modality} (%)", False, percent=True))
        register(Metric(loss, f"test loss, {modality}", True))
    return METRICS.get(acc), METRICS.get(loss)


class ModalityEvaluator:
    primary = TEST_ACC.name

    def __init__(self, ctx: Any) -> None:
        self.modalities = ctx.modalities
        self.names = [modality_metrics(mod.name) for mod in self.modalities]

    def evaluate(self, view: View) -> dict[str, float]:
        out: dict[str, float] = {}
        totals = torch.zeros(6, dtype=torch.float64)  # test loss, correct, n; train the same
        for mod, models, (acc, loss) in zip(self.modalities, view.extras["models"], self.names,
                                            strict=True):
            everyone = torch.arange(mod.size)
            data = mod.engine.data
            row = []
            for split, n in (("test", data.test_n), ("train", data.train_n)):
                loss_sum, correct = mod.engine.evaluate(models, everyone, split)
                row += [loss_sum.sum().item(), correct.sum().item(), n.sum().item()]
            totals += torch.tensor(row, dtype=torch.float64)
            out[acc.name] = row[1] / max(row[2], 1)
            out[loss.name] = row[0] / max(row[2], 1)
        t = totals.tolist()
        return {TEST_ACC.name: t[1] / max(t[2], 1), TEST_LOSS.name: t[0] / max(t[2], 1),
                TRAIN_ACC.name: t[4] / max(t[5], 1), TRAIN_LOSS.name: t[3] / max(t[5], 1),
                **out}

    def arrays(self, view: View) -> dict[str, list[Any]]:
        return {}
