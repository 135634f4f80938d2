"""Evaluators: what a run measures every round, chosen per experiment in params
(`experiments.<name>.evaluators`), each reading a `View` of the algorithm.

An evaluator is built once per run from the run's context (`factory(ctx)`) and declares its
task's primary metric (`primary`, direction from `clusterfl.steps.metrics`). Papers register their
own (`EVALUATORS.add(name)(factory)`). Built in:
- `clients`: every client's model on its own train and test samples, sample-weighted
  (accuracy and loss, or MSE for regression);
- `holdout`: P2's protocol (w-bar per client, each center on each distribution's held-out
  set, importance-weight error), `holdout.py`;
- `model_views`: every model in `view.extras` (pFedMe/pFedKM: theta, local w, global before
  and after the beta-mix) on each client's test split, `views.py`;
- `cluster_recovery`: each client's cluster against the partition's true clusters (ARI,
  NMI), and the assignment itself as a per-round array.
"""

from collections.abc import Callable
from typing import Any

from clusterfl.core.registry import Registry
from clusterfl.core.types import Evaluator, RunContext
from clusterfl.evaluators.clients import ClientModels
from clusterfl.evaluators.holdout import HoldoutProtocol
from clusterfl.evaluators.recovery import ClusterRecovery
from clusterfl.evaluators.views import ModelViews

EvaluatorFactory = Callable[[Any], Evaluator]

EVALUATORS: Registry[EvaluatorFactory] = Registry("evaluator")
EVALUATORS.add("clients")(ClientModels)
EVALUATORS.add("holdout")(HoldoutProtocol)
EVALUATORS.add("cluster_recovery")(ClusterRecovery)
EVALUATORS.add("model_views")(ModelViews)


def build_evaluators(names: list[str], ctx: RunContext) -> list[Evaluator]:
    return [EVALUATORS.get(name, "evaluators")(ctx) for name in names]


__all__ = ["EVALUATORS", "build_evaluators"]
