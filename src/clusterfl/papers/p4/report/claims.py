"""P4 Sec. 4's claims (references.yaml `claims`), each with our numbers and a verdict by
the shared rule (`clusterfl.reports.verdicts`): seed by seed, "holds" or "does not hold" only
where the 95 % interval excludes 0 (or the threshold) one way, "within noise" otherwise. The
trials pair: trial s of every cell draws the same data (data seed `data_seed_offset` + s) and
its own start from s.

How each is read (ours; the paper states the claims from plots):
- "lower loss": per trial, IFCA(grad)'s final error minus PFL-TC's and minus PDL-TC's.
- "significantly lower variance": the variance of the final errors over trials, by the ratio
  var(IFCA(model)) / var(ours) and its 95 % F interval (above 1: holds; below 1: does not
  hold; else within noise); unpaired by nature (one variance per method).
- "less sensitive to the initial weights": per trial, the change of the final error from the
  smallest to the largest initial scale, in absolute terms, against IFCA(model)'s change at
  the same trial.
- "inversely proportional to sqrt(N/K)" (`sqrt_rate`): Eq. (4) is an upper bound on the
  time-averaged squared gradient norm (1/T) sum_t ||grad f_i(x_{i,t-1})||^2 whose leading term
  falls as 1/sqrt(N/K); so, per trial, the slope of log(that quantity) on log(N/K): holds when
  the 95 % interval of the mean slope lies at or below -1/2 (the quantity falls at least as
  fast as the bound), does not hold when it lies wholly above -1/2, within noise otherwise.
- "benefits from more clients per cluster" (`more_clients`, the paper's qualitative reading
  of Fig. 2): the same quantity falls at every step of N/K beyond the noise (each step a
  paired comparison; holds when every step falls, does not hold when one rises).
Both are decided per gradient batch (full, 1, 2, 5 samples of n = 10), with the cluster
recovery (ARI averaged over rounds) printed beside. Rows marked `baseline` decide the same
claim for a named baseline (`pfl_tc_kmeans`, `pfl_tc_tau0`): not the paper's algorithm.
"""

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from clusterfl.reports.verdicts import (
    FAILS,
    HOLDS,
    NOISE,
    ClaimRow,
    band,
    claims_table,
    close,
    compare,
    decide,
    fewest_seeds,
    variance_ratio,
    with_replicates,
)

FIG1 = ("p4_fig1", "p4_fig1_n100")
OURS = ("pfl_tc", "pdl_tc")
BASELINES = ("pfl_tc_kmeans", "pfl_tc_tau0")  # named baselines for PFL-TC (params.yaml)
RATE = -0.5  # Eq. (4)'s leading term: (N/K)^(-1/2)
FIT = 1e-9  # rounding of the log-log fit: a slope of exactly -1/2 may come out -0.4999999999
RATE_NAMES = {"fig2": "full batch", "fig2_b1": "mini-batch 1", "fig2_sgd": "mini-batch 2",
              "fig2_b5": "mini-batch 5"}
REPLICATE = "p4_rep_"  # p4_rep_<name>: p4_<name> on the second data draw

Finals = Mapping[tuple[str, str], Mapping[str, list[float]]]
Sweep = Mapping[float, list[tuple[str, str]]]


def _errors(final: Finals, exp: str | None, alg: str, key: str = "error") -> list[float]:
    return list(final.get((exp, alg), {}).get(key, [])) if exp else []


def below(final: Finals, exp: str, baseline: str, ours: tuple[str, ...] = OURS
          ) -> tuple[str, str] | None:
    """(our numbers, verdict): `ours`' final errors below `baseline`'s."""
    base = _errors(final, exp, baseline)
    got = {a: _errors(final, exp, a) for a in ours}
    if not base or not all(got.values()):
        return None
    numbers = ", ".join(f"{a} {np.mean(v):.4g} ± {np.std(v):.2g}" for a, v in got.items())
    cmps = {a: compare(v, base, lower_is_better=True) for a, v in got.items()}
    said = "; ".join(f"{a} {c.describe('+.4g')}" for a, c in cmps.items())
    return (f"{exp}: {numbers}; {baseline} {np.mean(base):.4g} ± {np.std(base):.2g}; "
            f"below {baseline}: {said}", decide(c.verdict for c in cmps.values()))


def lower_variance(final: Finals, exp: str, baseline: str, ours: tuple[str, ...] = OURS
                   ) -> tuple[str, str] | None:
    base = _errors(final, exp, baseline)
    got = {a: _errors(final, exp, a) for a in ours}
    if len(base) < 2 or not all(len(v) >= 2 for v in got.values()):
        return None
    numbers = ", ".join(f"{a} std {np.std(v, ddof=1):.4g}" for a, v in got.items())
    ratios = {a: variance_ratio(v, base) for a, v in got.items()}
    said = "; ".join(f"{a} {r.describe()}" for a, r in ratios.items())
    return (f"{exp}: {numbers}; {baseline} std {np.std(base, ddof=1):.4g}; {baseline} over "
            f"ours: {said}", decide(r.verdict for r in ratios.values()))


def init_sensitivity(final: Finals, sweep: Sweep,
                     baseline: str = "ifca_model") -> tuple[str, str] | None:
    """Per trial, final error at the largest initial scale minus at the smallest, in absolute
    terms; held when each of OURS changes less than `baseline`, trial by trial."""
    lo, hi = min(sweep), max(sweep)
    change: dict[str, list[float]] = {}
    text = []
    for alg in (*OURS, baseline):
        ends = [_errors(final, next((e for e, a in sweep[v] if a == alg), None), alg)
                for v in (lo, hi)]
        if not ends[0] or len(ends[0]) != len(ends[1]):
            return None
        change[alg] = [hi_ - lo_ for lo_, hi_ in zip(ends[0], ends[1], strict=True)]
        text.append(f"{alg} {np.mean(ends[0]):.4g} → {np.mean(ends[1]):.4g}")
    cmps = {a: compare(change[a], change[baseline], lower_is_better=True) for a in OURS}
    said = "; ".join(f"{a} {c.describe('+.4g')}" for a, c in cmps.items())
    return (f"final error at s = {lo:g} → {hi:g}: " + ", ".join(text)
            + f"; change below {baseline}'s: {said}", decide(c.verdict for c in cmps.values()))


def rate_points(final: Finals, sweep: Sweep, algorithm: str = "pfl_tc",
                key: str = "gradient_norm") -> list[tuple[float, list[float]]]:
    """(N/K, one value per seed) of `algorithm`'s `key`, where every seed is positive and
    every point has the same seeds; [] otherwise (or with fewer than two points)."""
    points = sorted((v, _errors(final, e, a, key)) for v, cells in sweep.items()
                    for e, a in cells if a == algorithm)
    points = [(v, vals) for v, vals in points if vals and min(vals) > 0]
    if len(points) < 2 or len({len(vals) for _, vals in points}) != 1:
        return []
    return points


def seed_slopes(final: Finals, sweep: Sweep, algorithm: str = "pfl_tc",
                key: str = "gradient_norm") -> tuple[list[float], list[float]]:
    """(N/K values, one log-log slope per seed) of `algorithm`'s `key` (by default the
    time-averaged squared gradient norm, Eq. (4)'s bounded quantity)."""
    points = rate_points(final, sweep, algorithm, key)
    if not points:
        return [], []
    x = np.log([v for v, _ in points])
    y = np.log(np.array([vals for _, vals in points]))  # [values, seeds]
    return [v for v, _ in points], [float(np.polyfit(x, y[:, s], 1)[0])
                                    for s in range(y.shape[1])]


def _recovery(final: Finals, sweep: Sweep, algorithm: str) -> str:
    """ARI averaged over rounds (mean over seeds) at each N/K, or '' where none recorded."""
    aris = [(v, _errors(final, e, a, "ari_rounds")) for v, cells in sorted(sweep.items())
            for e, a in cells if a == algorithm]
    shown = [f"{v:g}: {np.mean(x):.2f}" for v, x in aris if x]
    return f"; ARI (mean over rounds) by N/K {', '.join(shown)}" if shown else ""


def rate(final: Finals, sweep: Sweep, name: str, algorithm: str = "pfl_tc"
         ) -> tuple[str, str] | None:
    """`sqrt_rate`: the per-seed slope of log(time-averaged squared gradient norm) on
    log(N/K) against Eq. (4)'s -1/2: holds where the whole interval lies at or below it."""
    values, slopes = seed_slopes(final, sweep, algorithm)
    if not slopes:
        return None
    got = band(slopes, -math.inf, RATE + FIT)
    return (f"{name} ({RATE_NAMES.get(name, name)}): slope of log (1/T)Σ‖∇f_i‖² on log N/K "
            f"{np.mean(slopes):.2f} ± {np.std(slopes):.2f} over seeds, N/K = "
            f"{', '.join(f'{v:g}' for v in values)}; "
            f"{got.describe('+.2f', what='mean slope')}{_recovery(final, sweep, algorithm)}"
            ), got.verdict


def falls(final: Finals, sweep: Sweep, name: str, algorithm: str = "pfl_tc"
          ) -> tuple[str, str] | None:
    """`more_clients`: the time-averaged squared gradient norm falls at every step of N/K,
    each step paired by seed (the larger N/K 'beats' the smaller where it is lower)."""
    points = rate_points(final, sweep, algorithm)
    if not points:
        return None
    steps = [(a, b, compare(vb, va, lower_is_better=True))
             for (a, va), (b, vb) in itertools.pairwise(points)]
    said = "; ".join(f"{a:g}→{b:g} {c.verdict} ({c.wins} of {c.n} seeds, "
                     f"{c.estimate.interval('+.3g')})" for a, b, c in steps)
    means = " → ".join(f"{np.mean(v):.3g}" for _, v in points)
    return (f"{name} ({RATE_NAMES.get(name, name)}): (1/T)Σ‖∇f_i‖² {means} over N/K "
            f"{', '.join(f'{v:g}' for v, _ in points)}; falls per step: {said}"
            f"{_recovery(final, sweep, algorithm)}", decide(c.verdict for *_, c in steps))


def checked(final: Finals, sweeps: Mapping[str, Any]) -> list[tuple[str, ClaimRow]]:
    """Every claim row, each with a key (claim, cells, algorithms) that names the same row
    decided on other cells: the replicate draw's rows carry the same keys."""
    rows: list[tuple[str, ClaimRow]] = []
    pairs = (("below_ifca_grad", below, "ifca_grad"),
             ("lower_variance", lower_variance, "ifca_model"))
    for claim, pair_rule, base in pairs:
        for exp in FIG1:
            for ours, label in ((OURS, ""), *(((b,), f"baseline {b} (not the paper's): ")
                                              for b in BASELINES)):
                if got := pair_rule(final, exp, base, ours):
                    rows.append((f"{claim}/{exp}/{'+'.join(ours)}",
                                 ClaimRow(claim, label + got[0], got[1])))
    for name in ("init_n9", "init_n100"):
        if name in sweeps and (got := init_sensitivity(final, sweeps[name])):
            rows.append((f"initial_weights/{name}",
                         ClaimRow("initial_weights", f"{name}: {got[0]}", got[1])))
    for claim, sweep_rule in (("sqrt_rate", rate), ("more_clients", falls)):
        for name in RATE_NAMES:
            for alg, label in (("pfl_tc", ""), *((b, f"baseline {b} (not the paper's): ")
                                                 for b in BASELINES)):
                if name in sweeps and (got := sweep_rule(final, sweeps[name], name, alg)):
                    rows.append((f"{claim}/{name}/{alg}",
                                 ClaimRow(claim, label + got[0], got[1])))
    return rows


def check(final: Finals, sweeps: Mapping[str, Any], replicate: Finals | None = None,
          replicate_sweeps: Mapping[str, Any] | None = None) -> list[ClaimRow]:
    """The claim rows, each with its `replicates` cell: the same row decided on the second
    draw's cells (`replicate`, keyed by the trials' experiment names), where they ran."""
    rows = checked(final, sweeps)
    if replicate is None:
        return [row for _, row in rows]
    return with_replicates(rows, checked(replicate, replicate_sweeps or {}),
                           fewest_seeds(replicate.values(), "error"))


def refuse(rows: list[ClaimRow], why: str) -> list[ClaimRow]:
    """Every row (and its replicate) marked not decided, `why` said in the verdict."""
    return [ClaimRow(r.claim_id, f"{r.ours} (the rule would say: {r.verdict})",
                     f"not decided: {why}", f"not decided (would say: {r.replicates})")
            for r in rows]


def claims_section(final: Finals, sweeps: Mapping[str, Any],
                   references: Mapping[str, Any], replicate: Finals | None = None,
                   replicate_sweeps: Mapping[str, Any] | None = None,
                   refusal: str | None = None) -> list[str]:
    """The claims table; with `refusal` (a deciding choice off its tuned pick) every verdict
    is withheld and a loud line says why."""
    claims = references.get("claims") or {}
    rows = check(final, sweeps, replicate, replicate_sweeps)
    if not rows:  # a sentence, not a table with a header alone
        return [f"None of the paper's claims (Sec. 4: {', '.join(claims) or 'none listed'}) "
                f"can be checked on this suite's cells: they need {', '.join(FIG1)} with "
                f"{', '.join(OURS)} and IFCA(grad) / IFCA(model), the initial-scale sweeps or "
                "the p4_fig2_* sweep, which the `paper` suite trains."]
    loud = []
    if refusal:
        rows = refuse(rows, refusal)
        loud = [f"**NO VERDICT: {refusal}. Every claim below is marked not decided until "
                "params use the scale picked on the tuning draws.**", ""]
    return [*loud, "The paper's claims (Sec. 4) against our runs (means ± std over seeds; "
            "each comparison trial by trial: wins on k of n seeds, mean paired difference with "
            "its 95 % interval; the verdict rules are in `papers/p4/report/claims.py`; "
            "replicates: the same rule on the second data draw, data seeds 2000 + trial):", "",
            *claims_table(rows, claims)]


# -- beyond the paper: real data (Fashion-MNIST rotations) -----------------------------------
# Verdict rules (ours), by the shared module: "finds the clusters" holds when the 95 % interval
# of the final ARI over seeds lies at or above 0.9, does not hold when it lies below ("early
# rounds only" when the peak of the seed-mean ARI curve reaches 0.9), within noise otherwise;
# accuracies compare the last round seed by seed: "within 1 point" of the oracle when the
# interval of the paired difference lies within ±1 point, "above / below" the oracle or a
# baseline only where the interval lies wholly on that side (beyond the point for the oracle).
ORACLE_NN = "oracle_fedavg"
BASELINES_NN = ("ifca_nn", "pfedkm_nn")
FOUND = 0.9
EQUAL = 1.0  # points: "within 1 point" of the oracle


def _ours_nn(algorithm: str) -> bool:
    return algorithm.startswith(("pfl_tc", "pdl_tc"))


def _accs(finals: Finals, exp: str, alg: str) -> list[float]:
    return list(finals.get((exp, alg), {}).get("acc", []))


def recovery(final: Mapping[str, list[float]], alg: str) -> tuple[str, str] | None:
    if not final.get("ari"):
        return None
    curve = final["ari_curve"]
    peak = int(np.argmax(curve))
    found = band(final["ari"], FOUND, math.inf)
    numbers = (f"{alg}: final ARI {np.mean(final['ari']):.3f}, mean over rounds "
               f"{np.mean(final['ari_mean']):.3f}, peak {curve[peak]:.3f} (round {peak + 1}); "
               f"{found.describe('.3f', what='final ARI')}")
    verdict = found.verdict
    if verdict == FAILS and curve[peak] >= FOUND:
        verdict = "early rounds only"
    return numbers, verdict


def against_oracle(finals: Finals, exp: str, alg: str) -> tuple[str, str] | None:
    ours, oracle = _accs(finals, exp, alg), _accs(finals, exp, ORACLE_NN)
    if not ours or not oracle:
        return None
    got = close(ours, oracle, EQUAL)
    mean = got.estimate.mean
    verdict = (f"within {EQUAL:g} point" if got.verdict == HOLDS else
               f"{'above' if mean > 0 else 'below'} by {abs(mean):.1f} points"
               if got.verdict == FAILS else NOISE)
    return (f"{alg} {np.mean(ours):.2f}%, {ORACLE_NN} {np.mean(oracle):.2f}%; "
            f"{got.describe(unit='points', what='mean paired difference')}", verdict)


def against_baselines(finals: Finals, exp: str, alg: str) -> tuple[str, str] | None:
    ours = _accs(finals, exp, alg)
    base = {b: _accs(finals, exp, b) for b in BASELINES_NN}
    base = {b: v for b, v in base.items() if v}
    if not ours or not base:
        return None
    cmps = {b: compare(ours, v) for b, v in base.items()}
    numbers = (f"{alg} {np.mean(ours):.2f}%; " + ", ".join(
        f"{b} {np.mean(v):.2f}%" for b, v in base.items()) + "; " + "; ".join(
        f"against {b}: {c.describe(unit='points')}" for b, c in cmps.items()))
    sides = {b: {HOLDS: "above", FAILS: "below"}.get(c.verdict, "within noise of")
             for b, c in cmps.items()}
    if len(set(sides.values())) == 1:
        return numbers, f"{next(iter(sides.values()))} all"
    return numbers, ", ".join(f"{side} {b}" for b, side in sides.items())


def real_claims_section(finals: Finals, refusal: str | None = None) -> list[str]:
    """The real-data verdicts; with `refusal` (the neural τ off its pick) each is withheld."""
    rows = []
    for exp, alg in finals:
        if not _ours_nn(alg):
            continue
        for question, got in (("finds the true clusters", recovery(finals[(exp, alg)], alg)),
                              ("accuracy against the oracle", against_oracle(finals, exp, alg)),
                              ("accuracy against IFCA / pFedKM",
                               against_baselines(finals, exp, alg))):
            if got:
                numbers, verdict = got
                if refusal:
                    verdict = f"not decided: {refusal} (the rule would say: {verdict})"
                rows.append((question, exp, numbers, verdict))
    if not rows:
        return []
    loud = [f"**NO VERDICT: {refusal}.**", ""] if refusal else []
    lines = [*loud, "Beyond the paper (real data): PFL-TC / PDL-TC against the true clusters "
             "and the baselines (seed by seed, 95 % intervals; the rules are in "
             "`papers/p4/report/claims.py`):", "",
             "| question | experiment | ours | verdict |", "|---|---|---|---|"]
    return lines + [f"| {q} | {e} | {n} | {v} |" for q, e, n, v in rows]
