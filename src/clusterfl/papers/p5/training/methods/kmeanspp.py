"""The K-means++ benchmark (P5 Sec. V-D, [47]; scikit-learn, centralized, `kmeans.kmeans_pp`)
on the round loop, as a one-round run: its context has rounds = 1 whatever the experiment's
schedule, since it has no rounds to count; the report draws its final accuracy as a
horizontal line. Its view is the ONMF point the clustering defines: W = the K centroids
(inside W's box, as means of samples), H = the 0/1 cluster indicators, so that
`p5_objective` reports 1/2 the k-means sum of squares + nu/2 N. It uploads nothing."""

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from clusterfl.core.options import require
from clusterfl.papers.p5.training.context import P5Context, central_x
from clusterfl.papers.p5.training.kmeans import kmeans_pp
from clusterfl.papers.p5.training.methods.base import P5Algorithm, Snapshot
from clusterfl.steps.metrics import KMEANS_SECONDS


@dataclass(frozen=True)
class KMeansHyper:
    clusters: int | None = None  # K (None: the dataset's classes)

    def validate(self, key: str) -> None:
        require(self.clusters is None or self.clusters >= 2, f"{key}.clusters", "must be >= 2")


def indicator_point(x: torch.Tensor, labels: np.ndarray,
                    clusters: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(W = centroids M x K, H = one-hot K x N) of a labelling; an empty cluster's centroid
    is 0 (inside the box when min X <= 0, as for every P5 dataset)."""
    index = torch.as_tensor(labels, device=x.device)
    h = torch.nn.functional.one_hot(index, clusters).T.to(x.dtype)
    counts = h.sum(dim=1).clamp_min(1.0)
    return (x @ h.T) / counts, h


class KMeansPP(P5Algorithm[KMeansHyper]):
    def __init__(self, hyper: KMeansHyper, ctx: P5Context) -> None:
        super().__init__(hyper, dataclasses.replace(ctx, rounds=1))

    def setup(self) -> None:
        self.x = central_x(self.ctx.fed)
        self.seconds = 0.0
        self.converged = True

    def round(self, round_: int, clients: torch.Tensor) -> None:
        labels, self.seconds = kmeans_pp(self.x.T.cpu().numpy(), self.clusters, self.rng)
        w, h = indicator_point(self.x, labels, self.clusters)
        self.snapshot = Snapshot(w, self.ctx.fed.padded_h(h), h @ h.T, self.x @ h.T)

    def round_metrics(self) -> dict[str, float]:
        return super().round_metrics() | {KMEANS_SECONDS.name: self.seconds}
