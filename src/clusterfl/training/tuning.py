"""The benchmark's fair protocol as pure steps (docs/benchmark.md): a small grid of learning
rates (and, for a clustered method, of K) per (experiment, algorithm), each point scored on
the validation split, and the pick. Nothing here trains or reads files.

A suite's `tuning` block:
    seeds: [0]                 # the seeds each grid point is trained with on validation
    lr: [0.03, 0.1, 0.3]       # the learning rates every algorithm is offered
    clusters:                  # per experiment, the K values a clustered method is offered
      bm_rotation: [4, 2]      # (the true K first, then one wrong K)
    default_clusters: [2, 4]   # experiments not named above (no true K)
    hyper:                     # a method's own key hyperparameter, where it has no K
      cfl: {eps2: [0.5, 0.8]}
A clustered method is one whose hyperparameters have a K field (`CLUSTER_FIELDS`).
"""

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterfl.core.errors import UserError, check_keys

CLUSTER_FIELDS = ("num_clusters", "num_components")  # IFCA/pFedKM/FedSoft's K, FedEM's M
TUNING_KEYS = ("seeds", "lr", "clusters", "default_clusters", "hyper")


@dataclass(frozen=True)
class Tuning:
    seeds: tuple[int, ...]
    lr: tuple[float, ...]
    clusters: dict[str, tuple[int, ...]]
    default_clusters: tuple[int, ...]
    hyper: dict[str, dict[str, tuple[Any, ...]]] = dataclasses.field(default_factory=dict)

    def cluster_grid(self, experiment: str) -> tuple[int, ...]:
        return self.clusters.get(experiment, self.default_clusters)


def _ints(value: Any, key: str, low: int) -> tuple[int, ...]:
    if not (isinstance(value, list) and value and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= low for v in value)):
        raise UserError(f"{key}: expected a non-empty list of integers >= {low}")
    return tuple(value)


def parse_tuning(raw: Mapping[str, Any], key: str) -> Tuning:
    """The `tuning` block, validated; every error names `key.<field>`."""
    check_keys(raw, TUNING_KEYS, key)
    lr = raw.get("lr")
    if not (isinstance(lr, list) and lr and all(
            isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in lr)):
        raise UserError(f"{key}.lr: expected a non-empty list of learning rates > 0")
    clusters = raw.get("clusters") or {}
    if not isinstance(clusters, Mapping):
        raise UserError(f"{key}.clusters: expected a mapping experiment -> list of K")
    hyper = raw.get("hyper") or {}
    for method, fields in (hyper.items() if isinstance(hyper, Mapping) else [(None, None)]):
        if not (isinstance(fields, Mapping) and all(
                isinstance(v, list) and v for v in fields.values())):
            raise UserError(f"{key}.hyper.{method}: expected a mapping field -> list of values")
    return Tuning(seeds=_ints(raw.get("seeds", [0]), f"{key}.seeds", 0),
                  lr=tuple(float(v) for v in lr),
                  clusters={str(e): _ints(v, f"{key}.clusters.{e}", 1)
                            for e, v in clusters.items()},
                  default_clusters=_ints(raw.get("default_clusters", [2]),
                                         f"{key}.default_clusters", 1),
                  hyper={str(m): {str(f): tuple(v) for f, v in fields.items()}
                         for m, fields in hyper.items()})


def cluster_field(hyper: Any) -> str | None:
    """The name of the K field of an algorithm's hyperparameters, None if it has none."""
    names = {f.name for f in dataclasses.fields(hyper)}
    return next((f for f in CLUSTER_FIELDS if f in names), None)


def grid_points(tuning: Tuning, experiment: str, hyper: Any, method: str = ""
                ) -> list[dict[str, Any]]:
    """Every grid point of one (experiment, algorithm), in order: lr outermost, then K (a
    clustered method), then the method's own `tuning.hyper` fields in their order."""
    axes: list[tuple[str, tuple[Any, ...]]] = [("lr", tuning.lr)]
    field = cluster_field(hyper)
    if field is not None:
        axes.append((field, tuning.cluster_grid(experiment)))
    names = {f.name for f in dataclasses.fields(hyper)}
    for name, values in tuning.hyper.get(method, {}).items():
        if name not in names:
            raise UserError(f"suite.tuning.hyper.{method}.{name}: not a hyperparameter of "
                            f"{method!r} (it has {sorted(names)})")
        axes.append((name, values))
    return [dict(zip([a for a, _ in axes], values, strict=True))
            for values in itertools.product(*[v for _, v in axes])]


def apply_point(experiment: Any, algorithm: Any, point: Mapping[str, Any]) -> tuple[Any, Any]:
    """The experiment (its schedule's lr) and algorithm (its K) with a grid point applied."""
    if "lr" not in point:
        raise ValueError(f"grid point {dict(point)} has no lr")
    schedule = dataclasses.replace(experiment.schedule, lr=float(point["lr"]))
    experiment = dataclasses.replace(experiment, schedule=schedule)
    rest = {k: v for k, v in point.items() if k != "lr"}
    if rest:
        hyper = dataclasses.replace(algorithm.hyper, **rest)
        algorithm = dataclasses.replace(algorithm, hyper=hyper)
    return experiment, algorithm


def pick(points: Sequence[Mapping[str, Any]], scores: Sequence[Sequence[float]],
         lower_is_better: bool = False) -> int:
    """The index of the grid point whose mean score over its seeds is best; a tie goes to
    the first point in grid order; a NaN score (a diverged run) never wins over a number."""
    if len(points) != len(scores) or not points:
        raise ValueError("one list of scores per grid point, at least one point")
    means = np.array([np.mean(s) for s in scores], dtype=float)
    sign = 1.0 if lower_is_better else -1.0
    keyed = np.where(np.isnan(means), np.inf, sign * means)
    return int(np.argmin(keyed))
