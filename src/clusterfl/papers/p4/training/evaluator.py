"""P4's evaluators. `optimum_error`: Sec. 4's metric (1/N) sum_i ||x_i - x*_{k(i)}||^2 of the
personal models (`View.client_models["x"]`) against the true optima of the clients' true
clusters (`GroundTruth.extras["optima"]`, `GroundTruth.cluster`). Every round, not only at T
(the paper plots the loss over rounds in Fig. 1).

`gradient_norm`: (1/N) sum_i ||grad f_i(x_i)||^2 on each client's full local data, the
quantity whose time average Eq. (4) bounds (through sigma / sqrt(n_i T)); the report averages
it over rounds beside the final error (Fig. 2)."""

from typing import Any

import torch

from clusterfl.core.types import View
from clusterfl.papers.p4.training.momentum import gradients
from clusterfl.papers.p4.training.rounds import model_error
from clusterfl.steps.metrics import Metric, register

OPTIMUM_ERROR = register(Metric("optimum_error", "error (1/N) Σ ‖x_i − x*_k(i)‖²", True))
GRADIENT_NORM = register(Metric("gradient_norm", "(1/N) Σ ‖∇f_i(x_i)‖²", True))


class OptimumError:
    primary = OPTIMUM_ERROR.name

    def __init__(self, ctx: Any) -> None:
        self.optima = torch.as_tensor(ctx.truth.extras["optima"], dtype=torch.float64)
        self.cluster = torch.as_tensor(ctx.truth.cluster, dtype=torch.int64)

    def evaluate(self, view: View) -> dict[str, float]:
        assert view.client_models is not None
        params = view.client_models["x"].to(torch.float64)
        return {OPTIMUM_ERROR.name: float(model_error(params, self.optima, self.cluster))}

    def arrays(self, view: View) -> dict[str, list[Any]]:
        return {}


class GradientNorm:
    primary = GRADIENT_NORM.name

    def __init__(self, ctx: Any) -> None:
        self.data = ctx.data

    def evaluate(self, view: View) -> dict[str, float]:
        assert view.client_models is not None
        params = view.client_models["x"].to(torch.float64)
        norms = (gradients(self.data, params) ** 2).sum(dim=1)
        return {GRADIENT_NORM.name: float(norms.mean())}

    def arrays(self, view: View) -> dict[str, list[Any]]:
        return {}
