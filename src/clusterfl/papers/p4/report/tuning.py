"""P4's threshold scale τ, picked before any trial is scored: the paper defines τ only in its
proof (τ² ≤ Δ²/18), so its scale is an open choice, tuned per algorithm on a grid whose pick
must be interior.

Two protocols, one rule (`Tuning`):
- the linear runs (`p4_tune_tau_*`): the lowest mean final optimum error on tuning draws
  disjoint from the trials (data seeds 1000-1004);
- the neural runs (`p4_rot_tune_tau_*`, beyond the paper): the highest mean final accuracy on
  a validation split (`experiments.<name>.validation_fraction`: 20 % of each client's training
  data in the place of its test split), so no test number of p4_fmnist_rot is read.

Of equal means (a plateau) the larger scale is the pick. Where params use another scale, or
the pick sits at the grid's edge (the grid must bracket it: widen and run again), the
claims that the scale decides are withheld (`tau_refusal`).
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

Sweep = Mapping[float, list[tuple[str, str]]]  # scale -> [(experiment, algorithm)]
Finals = Mapping[tuple[str, str], Mapping[str, list[float]]]


@dataclass(frozen=True)
class Tuning:
    where: str  # where the pick is made, for the report's line
    key: str  # the finals' entry the pick reads
    higher: bool  # a larger value is better (accuracy), else a smaller one (error)


LINEAR = Tuning("the tuning draws (data seeds 1000-1004, disjoint from the trials)",
                "error", higher=False)
NEURAL = Tuning("a validation split (20 % of each client's training data in the place of its "
                "test split; no test number read)", "acc", higher=True)
NEURAL_TUNE = re.compile(r"p4_rot_tune_tau_(\d+)$")  # the scale x 100


def neural_sweep(cells: Iterable[tuple[str, str]]) -> dict[float, list[tuple[str, str]]]:
    """The neural tuning cells by scale (`p4_rot_tune_tau_<100 x scale>`)."""
    sweep: dict[float, list[tuple[str, str]]] = {}
    for exp, alg in cells:
        match = NEURAL_TUNE.match(exp)
        if match:
            sweep.setdefault(int(match.group(1)) / 100, []).append((exp, alg))
    return sweep


def best_tau(sweep: Sweep, final: Finals, algorithm: str, tuning: Tuning = LINEAR
             ) -> float | None:
    """The scale with the best mean of `tuning.key`; of equal ones (a plateau), the largest."""
    means = {v: float(np.mean(final[(e, a)][tuning.key])) for v, cells in sweep.items()
             for e, a in cells if a == algorithm and final[(e, a)].get(tuning.key)}
    if not means:
        return None
    top = max(means.values()) if tuning.higher else min(means.values())
    return max(v for v, m in means.items() if abs(m - top) <= 1e-9 * max(1.0, abs(top)))


def _used_tau(params: Any, algorithm: str) -> float | None:
    tau = getattr(params.algorithm(algorithm, paper="p4").hyper, "tau_scale", None)
    return None if tau is None else float(tau)


def _algorithms(sweep: Sweep) -> list[str]:
    return sorted({a for cells in sweep.values() for _, a in cells})


def tau_refusal(sweep: Sweep, final: Finals, params: Any, tuning: Tuning = LINEAR
                ) -> str | None:
    """Why the claims cannot be decided, or None: an algorithm of the sweep whose params
    scale differs from its pick, or sits at the grid's edge."""
    edges = (min(sweep), max(sweep))
    why = []
    for alg in _algorithms(sweep):
        best, used = best_tau(sweep, final, alg, tuning), _used_tau(params, alg)
        if best is None:
            continue
        if used != best:
            why.append(f"{alg}'s tau scale {used} is not its tuned best {best:g}")
        elif used in edges:
            why.append(f"{alg}'s tau scale {used:g} sits at the tuning grid's edge "
                       f"[{edges[0]:g}, {edges[1]:g}]")
    return "; ".join(why) or None


def tuning_line(sweep: Sweep, final: Finals, params: Any, tuning: Tuning = LINEAR) -> str:
    """Each algorithm's pick beside the scale its params use."""
    picks = []
    for alg in _algorithms(sweep):
        best = best_tau(sweep, final, alg, tuning)
        if best is None:
            continue
        used = _used_tau(params, alg)
        edge = " (a grid edge)" if best in (min(sweep), max(sweep)) else ""
        picks.append(f"{alg} {best:g}{edge}, params {used}"
                     + ("" if used == best else " (differs: re-tune)"))
    return f"Chosen on {tuning.where}: " + "; ".join(picks) + "."
