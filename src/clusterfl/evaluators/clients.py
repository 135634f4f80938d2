"""The `clients` evaluator: every client's model on its own samples, sample-weighted."""

from typing import Any

from clusterfl.core.types import View
from clusterfl.steps.metrics import TEST_ACC, TEST_LOSS, TEST_MSE, TRAIN_ACC, TRAIN_LOSS, TRAIN_MSE


class ClientModels:
    """Test and train accuracy/loss of `view.client_models` over all clients' samples (the
    number a paper's "personalized accuracy" is); MSE for regression, where the
    squared-error loss is the MSE."""

    def __init__(self, ctx: Any) -> None:
        self.engine = ctx.engine
        self.clients = ctx.engine.data.num_clients
        self.regression = ctx.engine.data.is_regression
        self.primary = (TEST_MSE if self.regression else TEST_ACC).name

    def evaluate(self, view: View) -> dict[str, float]:
        import torch

        models, data = view.client_models, self.engine.data
        everyone = torch.arange(self.clients)
        test_loss, test_correct = self.engine.evaluate(models, everyone, "test")
        train_loss, train_correct = self.engine.evaluate(models, everyone, "train")
        n_test = data.test_n.sum().item()
        n_train = data.train_n.sum().item()
        if self.regression:
            return {TEST_MSE.name: test_loss.sum().item() / n_test,
                    TRAIN_MSE.name: train_loss.sum().item() / n_train}
        return {
            TEST_ACC.name: test_correct.sum().item() / n_test,
            TEST_LOSS.name: test_loss.sum().item() / n_test,
            TRAIN_ACC.name: train_correct.sum().item() / n_train,
            TRAIN_LOSS.name: train_loss.sum().item() / n_train,
        }

    def arrays(self, view: View) -> dict[str, list[Any]]:
        return {}
