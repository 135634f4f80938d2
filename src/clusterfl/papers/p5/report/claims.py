"""The paper's claims (`references.yaml: claims`) checked with our numbers, one row each per
the shared rule (`clusterfl.reports.verdicts`): "holds" / "does not hold" only beyond the
seeds' spread, "within noise" otherwise, "not run" when none of its cells ran. The `check`
kinds (references.yaml) and how each is read:
- better: a's final accuracy above b's, per experiment (per-seed samples);
- drop: a's accuracy loss from the i.i.d. to the non-i.i.d. set below b's, per pair, the
  loss taken per seed (the seeds are common initial points, so they pair);
- close: |mean a - mean b| within `tolerance` points: holds when it is, does not hold when
  it exceeds the tolerance by more than the spread, within noise otherwise;
- cost: the numbers a uploads to come within `cost_within` (1 %) of the best final objective
  of the two, per seed, below b's; a seed that never gets there counts its whole upload. Its
  spread is the larger std over seeds of the two costs (the seeds are initial points, so the
  cost's spread is the noise a rerun would show; the target itself is one number per pair);
- rounds: the rounds a needs to come within `within` (2 %) of b's final objective, per seed,
  at most `factor` times b's own ("comparable convergence"; the factor is ours);
- slowdown: per pair (i.i.d. set, non-i.i.d. set), the rounds each of a and b needs to come
  within `within` of b's final objective on that set: a's on the non-i.i.d. set more than
  `factor` times its own on the i.i.d. set ("deteriorates a lot"), b's at most `factor` times
  ("almost unchanged"). A seed that never gets there counts every round it ran.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from clusterfl.reports.verdicts import (
    FAILS,
    HOLDS,
    NOISE,
    NOT_RUN,
    ClaimRow,
    Gap,
    Sample,
    decide,
    gap,
)

Finals = Mapping[tuple[str, str], Sequence[float]]  # (experiment, algorithm) -> % per seed
# (experiment, algorithm) -> per seed, [(cumulative upload, objective)] per round
Traces = Mapping[tuple[str, str], Sequence[Sequence[tuple[float, float]]]]
COST_WITHIN = 0.01


def cost_to_reach(trace: Sequence[tuple[float, float]], target: float) -> tuple[float, bool]:
    """(the first cumulative upload at which the objective is <= target, reached); the
    run's whole upload and False when it never is."""
    for upload, objective in trace:
        if objective <= target:
            return upload, True
    return trace[-1][0], False


def _mean(values: Sample) -> str:
    return f"{np.mean(values):.2f} ± {np.std(values):.2f}"


def _close(a: Sequence[float], b: Sequence[float], tolerance: float) -> str:
    diff, spread = abs(float(np.mean(a) - np.mean(b))), max(float(np.std(a)), float(np.std(b)))
    return HOLDS if diff <= tolerance else FAILS if diff - spread > tolerance else NOISE


def _combine(verdicts: Sequence[str]) -> str:
    if not verdicts:
        return NOT_RUN
    return HOLDS if all(v == HOLDS for v in verdicts) else FAILS if FAILS in verdicts else NOISE


def _cost(exp: str, a: str, b: str, traces: Traces) -> tuple[Gap, str] | None:
    ta, tb = traces.get((exp, a)), traces.get((exp, b))
    if not ta or not tb:
        return None
    best = min(float(np.mean([t[-1][1] for t in ta])), float(np.mean([t[-1][1] for t in tb])))
    target = best * (1 + COST_WITHIN)
    ca, cb = ([cost_to_reach(t, target) for t in traces_] for traces_ in (ta, tb))
    missed = {name: sum(not ok for _, ok in c) for name, c in ((a, ca), (b, cb))}
    note = ", ".join(f"{n} never reached it in {k} seeds" for n, k in missed.items() if k)
    costs_a, costs_b = [u for u, _ in ca], [u for u, _ in cb]
    text = (f"{exp}: within {COST_WITHIN:.0%} of the best final objective ({target:.6g}) after "
            f"{np.mean(costs_a):.3g} ± {np.std(costs_a):.2g} ({a}) vs {np.mean(costs_b):.3g} ± "
            f"{np.std(costs_b):.2g} ({b}) numbers uploaded" + (f"; {note}" if note else ""))
    return gap(costs_a, costs_b, lower_is_better=True), text


def rounds_to_reach(trace: Sequence[tuple[float, float]], target: float) -> tuple[float, bool]:
    """`cost_to_reach` counted in rounds: a trace's index stands in for its upload."""
    return cost_to_reach([(i + 1.0, o) for i, (_, o) in enumerate(trace)], target)


def _rounds(exp: str, a: str, b: str, traces: Traces, within: float, factor: float
            ) -> tuple[Gap, str] | None:
    ta, tb = traces.get((exp, a)), traces.get((exp, b))
    if not ta or not tb:
        return None
    target = float(np.mean([t[-1][1] for t in tb])) * (1 + within)
    ra, rb = ([rounds_to_reach(t, target)[0] for t in traces_] for traces_ in (ta, tb))
    text = (f"{exp}: within {within:.0%} of {b}'s final objective after {np.mean(ra):.3g} ± "
            f"{np.std(ra):.2g} rounds ({a}) vs {np.mean(rb):.3g} ± {np.std(rb):.2g} ({b}); "
            f"comparable: at most {factor:g}x")
    return gap(ra, factor * np.asarray(rb), lower_is_better=True), text


def _slowdown(iid: str, noniid: str, a: str, b: str, traces: Traces, within: float,
              factor: float) -> tuple[list[Gap], str] | None:
    cells = {(e, alg): traces.get((e, alg), ()) for e in (iid, noniid) for alg in (a, b)}
    if not all(cells.values()):
        return None
    rounds: dict[tuple[str, str], list[float]] = {}
    missed: dict[tuple[str, str], int] = {}
    for e in (iid, noniid):
        target = float(np.mean([t[-1][1] for t in cells[(e, b)]])) * (1 + within)
        for alg in (a, b):
            got = [rounds_to_reach(t, target) for t in cells[(e, alg)]]
            rounds[(e, alg)] = [r for r, _ in got]
            missed[(e, alg)] = sum(not ok for _, ok in got)

    def side(alg: str) -> str:
        never = [f"never in {missed[(e, alg)]} of {len(rounds[(e, alg)])} seeds on {e}"
                 for e in (iid, noniid) if missed[(e, alg)]]
        return (f"{alg} {_mean(rounds[(iid, alg)])} → {_mean(rounds[(noniid, alg)])}"
                + (f" ({', '.join(never)})" if never else ""))

    text = (f"{iid} → {noniid}: rounds to come within {within:.0%} of {b}'s final objective, "
            f"{side(a)}, {side(b)}; a lot: more than {factor:g}x")
    slowed = gap(rounds[(noniid, a)], factor * np.asarray(rounds[(iid, a)]))
    kept = gap(rounds[(noniid, b)], factor * np.asarray(rounds[(iid, b)]), lower_is_better=True)
    return [slowed, kept], text


def check(claim: Mapping[str, Any], finals: Finals, traces: Traces) -> ClaimRow:
    kind, a, b = claim["check"], claim["a"], claim["b"]
    gaps: list[Gap] = []
    evidence: list[str] = []
    verdicts: list[str] = []
    if kind == "drop":
        for iid, noniid in claim["pairs"]:
            cells = [finals.get((e, alg), ()) for alg in (a, b) for e in (iid, noniid)]
            if any(not c for c in cells):
                continue
            drop_a = np.subtract(cells[0], cells[1])
            drop_b = np.subtract(cells[2], cells[3])
            gaps.append(gap(drop_a, drop_b, lower_is_better=True))
            evidence.append(f"{iid} → {noniid}: {a} loses {_mean(drop_a)} points, {b} "
                            f"{_mean(drop_b)}")
    if kind == "slowdown":
        for iid, noniid in claim["pairs"]:
            slowdown = _slowdown(iid, noniid, a, b, traces, float(claim["within"]),
                                 float(claim["factor"]))
            if slowdown:
                gaps += slowdown[0]
                evidence.append(slowdown[1])
    for exp in claim.get("experiments", []):
        if kind in ("cost", "rounds"):
            got = (_cost(exp, a, b, traces) if kind == "cost" else
                   _rounds(exp, a, b, traces, float(claim["within"]), float(claim["factor"])))
            if got:
                gaps.append(got[0])
                evidence.append(got[1])
            continue
        fa, fb = finals.get((exp, a)), finals.get((exp, b))
        if not fa or not fb:
            continue
        if kind == "better":
            gaps.append(gap(fa, fb))
        elif kind == "close":
            verdicts.append(_close(fa, fb, float(claim["tolerance"])))
        else:
            raise ValueError(f"references.yaml: claim {claim['id']}: unknown check {kind!r}")
        evidence.append(f"{exp}: {a} {_mean(fa)} % vs {b} {_mean(fb)} %")
    verdict = _combine(verdicts) if kind == "close" else decide(gaps)
    return ClaimRow(claim["id"], "; ".join(evidence) or "none of its cells ran", verdict)
