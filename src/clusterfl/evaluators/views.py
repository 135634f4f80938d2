"""The `model_views` evaluator: every model an algorithm exposes in `view.extras` (pFedMe and
pFedKM: the personalized theta_i, the local w_i after local training, the global model
before and after the beta-mix), each client's on its own test split, sample-weighted.

It answers "which model does a paper's personalized column measure": the official pFedMe
code's "personalized" accuracy is the local w (`algorithms/pfedme.py`), the paper's is
theta. Metric names: `<view>_test_acc` (classification) or `<view>_test_mse` (regression),
registered in `clusterfl.steps.metrics` (`VIEW_METRICS`).
"""

from typing import Any

from clusterfl.core.types import View
from clusterfl.steps.metrics import VIEW_METRICS


class ModelViews:
    """Test accuracy (or MSE) of each model in `view.extras` named in `VIEW_METRICS`."""

    primary = None  # a diagnostic: the run's primary metric stays the `clients` evaluator's

    def __init__(self, ctx: Any) -> None:
        self.engine = ctx.engine
        self.regression = ctx.engine.data.is_regression

    def evaluate(self, view: View) -> dict[str, float]:
        import torch

        everyone = torch.arange(self.engine.data.num_clients)
        n_test = self.engine.data.test_n.sum().item()
        out = {}
        for name, (acc, mse) in VIEW_METRICS.items():
            models = view.extras.get(name)
            if models is None:
                continue
            loss, correct = self.engine.evaluate(models, everyone, "test")
            if self.regression:
                out[mse.name] = loss.sum().item() / n_test
            else:
                out[acc.name] = correct.sum().item() / n_test
        return out

    def arrays(self, view: View) -> dict[str, list[Any]]:
        return {}
