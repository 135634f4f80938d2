"""The paper's claims (`references.yaml: claims`) checked with our numbers, one verdict
each: "holds", "fails" or "not run" (none of its cells in the suite). See references.yaml
for the four `check` kinds; every comparison is of means over seeds, and the numbers are
printed beside the verdict so that a reader can weigh them against the stds in the table.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterfl.reports.runs import Curve

Finals = Mapping[tuple[str, str], Sequence[float]]  # (experiment, algorithm) -> % per seed


@dataclass(frozen=True)
class Verdict:
    claim: str
    source: str
    verdict: str  # holds / fails / not run
    evidence: list[str]


def _mean(finals: Finals, exp: str, alg: str) -> float | None:
    values = finals.get((exp, alg))
    return float(np.mean(values)) if values else None


def _cost(value: float | None) -> str:
    return "never" if value is None else f"{value:.3g}"


def cost_to_reach(curve: Curve, target: float, objective: str, upload: str) -> float | None:
    """The first cumulative upload at which the mean objective is <= target."""
    reached = curve.frame[curve[objective] <= target]
    return None if reached.empty else float(reached[upload].iloc[0])


def check(claim: Mapping[str, Any], finals: Finals, curves: Mapping[tuple[str, str], Curve],
          objective: str, upload: str) -> Verdict:
    kind, a, b = claim["check"], claim["a"], claim["b"]
    results: list[bool] = []
    evidence: list[str] = []
    if kind == "drop":
        for iid, noniid in claim["pairs"]:
            means = [_mean(finals, e, alg) for alg in (a, b) for e in (iid, noniid)]
            if any(m is None for m in means):
                continue
            drop_a, drop_b = means[0] - means[1], means[2] - means[3]
            results.append(drop_a < drop_b)
            evidence.append(f"{iid} → {noniid}: {a} {drop_a:+.2f} pp lost, {b} {drop_b:+.2f}")
    for exp in claim.get("experiments", []):
        if kind == "cost":
            if (exp, a) not in curves or (exp, b) not in curves:
                continue
            ca, cb = curves[(exp, a)], curves[(exp, b)]
            target = max(float(ca[objective].iloc[-1]), float(cb[objective].iloc[-1]))
            cost_a = cost_to_reach(ca, target, objective, upload)
            cost_b = cost_to_reach(cb, target, objective, upload)
            results.append(cost_a is not None and cost_b is not None and cost_a < cost_b)
            evidence.append(f"{exp}: objective {target:.6g} reached after {_cost(cost_a)} "
                            f"({a}) vs {_cost(cost_b)} ({b}) numbers uploaded")
            continue
        ma, mb = _mean(finals, exp, a), _mean(finals, exp, b)
        if ma is None or mb is None:
            continue
        if kind == "better":
            results.append(ma > mb)
        elif kind == "close":
            results.append(abs(ma - mb) <= float(claim["tolerance"]))
        else:
            raise ValueError(f"references.yaml: claim {claim['id']}: unknown check {kind!r}")
        evidence.append(f"{exp}: {a} {ma:.2f} % vs {b} {mb:.2f} %")
    verdict = "not run" if not results else ("holds" if all(results) else "fails")
    return Verdict(claim["text"], claim["source"], verdict, evidence)
