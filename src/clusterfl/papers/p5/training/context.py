"""The run context of every P5 algorithm: the clients' data laid out once per seed, and the
objective computed from the statistics clients share.

Readings:
- A client's data X_p is all its samples, its partition's `train` and `test` indices
  together: clustering is unsupervised and P5 clusters all N samples (Sec. V: N = 10000 over
  P = 100 clients); a test split some schemes insist on (`iid`) is no held-out set here.
- Images are flattened to M = 784 features with pixels in [0, 1] (the datasets' scaling);
  the paper does not say how it scales MNIST, and the ONMF model is scale-free up to W's box.
- K (`clusters`) is the dataset's number of classes unless an algorithm names another.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from clusterfl.core.errors import UserError
from clusterfl.core.types import RunContext, SeedInputs
from clusterfl.papers.p5.training.clients import Federation
from clusterfl.papers.p5.training.onmf import ObjectiveParts, WBounds
from clusterfl.partition.views import gather
from clusterfl.training.loop import FederatedAlgorithm


@dataclass
class P5Context(RunContext):
    federation: Federation | None = None
    labels: np.ndarray | None = None  # each sample's true label, in federation order
    bounds: WBounds = field(default_factory=lambda: WBounds(0.0, 1.0))  # [min X, max X]
    clusters: int = 0  # the dataset's classes (the default K)
    data_norm: float = 0.0  # ||X||_F^2, the constant of the fit term

    @property
    def fed(self) -> Federation:
        assert self.federation is not None
        return self.federation


def client_rows(dataset: Any, partition: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(samples x features float64, labels) of every client: its train and test samples."""
    rows, labels = [], []
    for train, test in zip(partition.train, partition.test, strict=True):
        x, y = gather(dataset, partition.views, np.concatenate([train, test]))
        rows.append(np.asarray(x, dtype=np.float64).reshape(len(x), -1))
        labels.append(np.asarray(y))
    return rows, labels


def federation_context(base: RunContext, rows: list[np.ndarray], labels: list[np.ndarray],
                       clusters: int, device: str = "cpu") -> P5Context:
    """Stack the clients' rows (client p's samples consecutive, clients in order)."""
    if any(len(r) == 0 for r in rows):
        raise UserError("P5: a client holds no samples; every client needs data")
    sizes = np.array([len(r) for r in rows])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    every = np.concatenate(rows)
    parts = [np.arange(offsets[p], offsets[p + 1]) for p in range(len(rows))]
    fed = Federation.from_parts(every, parts, device=device)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(RunContext)}
    return P5Context(**fields, federation=fed, labels=np.concatenate(labels),
                     bounds=WBounds(float(every.min()), float(every.max())),
                     clusters=clusters, data_norm=float(np.sum(every**2)))


def build_context(run: SeedInputs) -> P5Context:
    """`FederatedAlgorithm.make_context` for P5."""
    base = FederatedAlgorithm.make_context(run)
    rows, labels = client_rows(run.dataset, run.partition)
    return federation_context(base, rows, labels, int(run.dataset.num_classes), run.device)


def central_x(fed: Federation) -> torch.Tensor:
    """All samples as one M x N matrix, columns in federation order (as `fed.flat_h`)."""
    return fed.columns


def objective_from_statistics(data_norm: float, w: torch.Tensor, hht: torch.Tensor,
                              xht: torch.Tensor, h: torch.Tensor) -> ObjectiveParts:
    """F's parts from what clients share: 1/2 ||X - W H||^2 = 1/2 (||X||^2 - 2 <W, X H^T>
    + <W^T W, H H^T>) with H H^T, X H^T summed over clients; the penalties from H (padded
    columns are 0 and add nothing)."""
    fit = 0.5 * (data_norm - 2.0 * float((w * xht).sum()) + float(((w.T @ w) * hht).sum()))
    return ObjectiveParts(
        fit=fit,
        penalty=0.5 * float((h.sum(dim=-2) ** 2 - (h**2).sum(dim=-2)).sum()),
        norm=0.5 * float((h**2).sum()),
    )
