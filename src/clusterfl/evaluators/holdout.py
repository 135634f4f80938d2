"""The `holdout` evaluator: FedSoft's evaluation protocol (Ruan & Joe-Wong 2022, Sec. 5; "P2"),
for any algorithm whose view has S centers (`[S, ...]`) and importance weights (`[N, S]`).

The paper: "we evaluate [cluster models'] test accuracy/error on holdout datasets sampled
from the corresponding cluster distributions. For local models [...] on local training
datasets"; "c-bar and w-bar represent the average accuracy/error of the cluster and client
models, not the accuracy/error of the averaged models"; for IFCA and FedEM "we use the center
corresponding to the largest importance weight as a client's local model".

Metric names, `<m>` = `mse` for regression and `acc` for classification (a fraction):
- `train_<m>`, `test_<m>` (classification also `train_loss`, `test_loss`): every client's
  local model on its own samples, sample-weighted: the numbers the base `evaluate` gives
  every algorithm, so `test_<m>` means the same in every run;
- `local_train_<m>`, `local_test_<m>`: the paper's w-bar, the mean over clients of each
  local model's number on its own training data / on its local test split. Clients without
  samples in a split are left out; a split no client has is not reported at all;
- `holdout_best_<m>`: mean over distributions of the best center's number on that
  distribution's held-out set (Tables 2 and 8 report the best center per distribution);
- `holdout_matched_<m>`: the same with centers matched one-to-one to distributions (Hungarian
  algorithm on the holdout matrix): the paper's c-bar;
- `mixture_mae`: mean over clients and distributions of |u_ks - true share|, after the best
  permutation of centers (`recovery.mixture_error` divided by the number of columns).
Per-round arrays: `importance` ([N][S]), `holdout_<m>` ([D][S]: rows are test distributions,
columns centers, as the paper's Table 1) and `center_of_distribution` ([D]: the center matched
to each distribution, -1 if there are more distributions than centers).
"""

from typing import Any

import numpy as np
import torch

from clusterfl.core.types import Tensors, View
from clusterfl.engine.base import LocalEngine
from clusterfl.steps.aggregation import broadcast
from clusterfl.steps.clustering import match_centers
from clusterfl.steps.recovery import mixture_error


def metric_name(engine: LocalEngine) -> str:
    return "mse" if engine.data.is_regression else "acc"


def local_metrics(engine: LocalEngine, models: Tensors) -> dict[str, float]:
    """Every client's model `models[k]` on its own train and test samples (see module doc)."""
    regression, name = engine.data.is_regression, metric_name(engine)
    clients = torch.arange(engine.data.num_clients)
    out: dict[str, float] = {}
    for split in ("train", "test"):
        n = engine.data.split(split)[2].to(torch.float64)
        if not (n > 0).any():
            continue
        loss, correct = (v.to(torch.float64) for v in engine.evaluate(models, clients, split))
        value = loss if regression else correct
        out[f"{split}_{name}"] = (value.sum() / n.sum()).item()
        if not regression:
            out[f"{split}_loss"] = (loss.sum() / n.sum()).item()
        has = n > 0
        out[f"local_{split}_{name}"] = (value[has] / n[has]).mean().item()
    return out


def holdout_matrix(holdout: LocalEngine, centers: Tensors) -> np.ndarray:
    """[D, S]: center s's MSE (or accuracy) on distribution d's held-out test set."""
    d = holdout.data.num_clients
    dists = torch.arange(d)
    n = holdout.data.test_n.to(torch.float64)
    columns = []
    for s in range(next(iter(centers.values())).shape[0]):
        center = broadcast({k: v[s] for k, v in centers.items()}, d)
        loss, correct = holdout.evaluate(center, dists, "test")
        columns.append((loss if holdout.data.is_regression else correct).to(torch.float64) / n)
    return torch.stack(columns, dim=1).cpu().numpy()


def holdout_metrics(matrix: np.ndarray, name: str) -> tuple[dict[str, float], np.ndarray]:
    """(`holdout_best_<m>`, `holdout_matched_<m>`) and the matching, from a [D, S] matrix."""
    lower = name == "mse"
    match = match_centers(matrix, lower)
    best = matrix.min(axis=1) if lower else matrix.max(axis=1)
    matched = matrix[match >= 0, match[match >= 0]]
    return ({f"holdout_best_{name}": float(best.mean()),
             f"holdout_matched_{name}": float(matched.mean())}, match)


def mixture_mae(true_mixture: np.ndarray, importance: np.ndarray) -> float:
    """Mean absolute error of importance weights vs true mixtures, best center permutation."""
    columns: int = max(true_mixture.shape[1], importance.shape[1])
    return mixture_error(true_mixture, importance) / columns


class HoldoutProtocol:
    """The protocol as an evaluator: local metrics of `view.client_models`; with held-out
    sets, every center of `view.centers` on each (`holdout_<m>` matrix, matching); with true
    mixtures, the importance-weight error of `view.importance`."""

    def __init__(self, ctx: Any) -> None:
        self.engine, self.holdout = ctx.engine, ctx.holdout
        self.true_mixture = ctx.truth.mixture
        self.name = metric_name(self.engine)
        self.primary = f"test_{self.name}"
        # this round's holdout matrix and center matching, from `evaluate`, for `arrays`
        self._matrix: np.ndarray | None = None
        self._match: np.ndarray | None = None

    def evaluate(self, view: View) -> dict[str, float]:
        assert view.client_models is not None  # every algorithm with this evaluator has them
        out = local_metrics(self.engine, view.client_models)
        self._matrix = self._match = None
        if self.holdout is not None and view.centers is not None:
            self._matrix = holdout_matrix(self.holdout, view.centers)
            scores, self._match = holdout_metrics(self._matrix, self.name)
            out |= scores
        if self.true_mixture is not None and view.importance is not None:
            out["mixture_mae"] = mixture_mae(self.true_mixture, view.importance.cpu().numpy())
        return out

    def arrays(self, view: View) -> dict[str, list[Any]]:
        if view.importance is None:
            return {}
        out: dict[str, list[Any]] = {"importance": view.importance.cpu().tolist()}
        if self._matrix is not None and self._match is not None:
            out |= {f"holdout_{self.name}": self._matrix.tolist(),
                    "center_of_distribution": self._match.tolist()}
        return out
