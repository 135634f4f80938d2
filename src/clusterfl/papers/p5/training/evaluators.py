"""P5's evaluators (`experiments.<name>.evaluators`), reading the `View` every P5 algorithm
fills: `extras` = {"w": W (M x K), "h": H stacked per client (P, K, N_max), "hht": sum_p
H_p H_p^T, "xht": sum_p X_p H_p^T, "rho": the rho the round used, "nu": nu}.

- `p5_clustering`: each sample's cluster (the largest entry of its h_j, as SNCP [16]
  labels) against its true label: clustering accuracy under the best one-to-one matching
  (Hungarian, the paper's Fig. 6 measure), ARI and NMI (ours, beside it).
- `p5_objective`: F(W, H) = 1/2 ||X - W H||^2 + R_H(H) at the round's rho, eq. (104) in our
  scaling (`onmf`), from the shared statistics (no pass over the data).
"""

from typing import Any

from clusterfl.core.types import View
from clusterfl.evaluators import EVALUATORS
from clusterfl.papers.p5.training.context import P5Context, objective_from_statistics
from clusterfl.papers.p5.training.metrics import (
    CLUSTERING_ACCURACY,
    CLUSTERING_ARI,
    CLUSTERING_NMI,
    OBJECTIVE,
)
from clusterfl.papers.p5.training.onmf import clustering_scores, labels_from_h

CLUSTERING, OBJECTIVE_EVALUATOR = "p5_clustering", "p5_objective"


class SampleClustering:
    primary = CLUSTERING_ACCURACY.name

    def __init__(self, ctx: P5Context) -> None:
        self.fed, self.truth = ctx.fed, ctx.labels

    def evaluate(self, view: View) -> dict[str, float]:
        found = labels_from_h(self.fed.flat_h(view.extras["h"]))
        assert self.truth is not None  # `build_context` sets every sample's label
        scores = clustering_scores(self.truth, found)
        return {CLUSTERING_ACCURACY.name: scores["accuracy"], CLUSTERING_ARI.name: scores["ari"],
                CLUSTERING_NMI.name: scores["nmi"]}

    def arrays(self, view: View) -> dict[str, list[Any]]:
        return {}


class OnmfObjective:
    primary = None

    def __init__(self, ctx: P5Context) -> None:
        self.data_norm = ctx.data_norm

    def evaluate(self, view: View) -> dict[str, float]:
        e = view.extras
        parts = objective_from_statistics(self.data_norm, e["w"], e["hht"], e["xht"], e["h"])
        return {OBJECTIVE.name: parts.value(e["rho"], e["nu"])}

    def arrays(self, view: View) -> dict[str, list[Any]]:
        return {}


for _name, _factory in ((CLUSTERING, SampleClustering), (OBJECTIVE_EVALUATOR, OnmfObjective)):
    if _name not in EVALUATORS:  # the registry outlives a test's re-import
        EVALUATORS.add(_name)(_factory)
