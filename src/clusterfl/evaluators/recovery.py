"""The `cluster_recovery` evaluator: each client's cluster against the partition's truth."""

from typing import Any

import numpy as np

from clusterfl.core.types import View
from clusterfl.steps.metrics import ARI, NMI
from clusterfl.steps.recovery import adjusted_rand, normalized_mutual_info


class ClusterRecovery:
    """ARI and NMI of `view.assignment` against the true clusters (when the partition has
    them), and the assignment itself as the per-round array `cluster` (for the assignment
    map). An algorithm without an assignment records nothing."""

    primary = None

    def __init__(self, ctx: Any) -> None:
        truth = ctx.truth.cluster
        self.truth = None if truth is None else np.asarray(truth)

    def evaluate(self, view: View) -> dict[str, float]:
        if view.assignment is None or self.truth is None:
            return {}
        found = view.assignment.cpu().numpy()
        return {ARI.name: adjusted_rand(self.truth, found),
                NMI.name: normalized_mutual_info(self.truth, found)}

    def arrays(self, view: View) -> dict[str, list[Any]]:
        return {} if view.assignment is None else {"cluster": view.assignment.tolist()}
