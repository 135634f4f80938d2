"""Every verdict of every paper (issue 55): a claim checked with our numbers, paired by seed.

**Why seeds pair.** Two cells of one experiment run with seed s read the same partition
file (`pipeline.partition` writes `partitions/<name>/seed<s>.npz` from seed s, and
`pipeline.train` hands seed s of every cell that file), and each run draws its initial model
from its own generators seeded with s (`FederatedAlgorithm.__init__`:
`torch.Generator().manual_seed(seed)`, from which `NeuralAlgorithm.initial_model` draws
`models.init_params`; P3 per modality from `modality_seed(seed, m)`; P4's data per trial from
data seed `data_seed_offset + s` when it draws them per trial; P5's common initial point
(W0, H0) from `default_rng([INIT_STREAM, seed])`). So the runs of one seed share the data
split and the initial draw, and the difference of two methods at one seed is free of both:
every comparison below is taken seed by seed.

**A comparison** (`compare`) of "claimed beats other" is, per seed, the difference in the
claim's direction (> 0 goes its way), reported as "wins on k of n seeds, mean paired
difference with a 95 % interval": the Student t interval of the n paired differences,
mean ± t(0.975, n − 1) s / √n (s: their std, ddof 1). Two cases are explicit: with one seed
there is no interval (−∞, ∞); with differences all equal (zero spread) the interval is that
difference itself. A comparison **holds** only where its interval excludes 0 in the claimed
direction, **does not hold** only where it excludes 0 the other way, and is **within noise**
otherwise. Where the two samples do not share their seeds (one cell ran other seeds) there
is nothing to pair: the comparison is unpaired, by Welch's interval on the difference of the
means, and says so. Values given as sequences are one per seed in one seed order (`read_cell`
reads a cell's seed directories sorted, and every cell of a suite trains the suite's
`seeds`); given as mappings they are keyed by seed.

**A threshold check** states its threshold in the paper's units and includes the interval:
- `close`: the paired difference within ±tolerance: holds where the whole interval lies
  within, does not hold where it lies wholly outside, within noise otherwise (`Band`);
- `band`: a per-seed quantity (P4's log-log slope) against a range, the same way;
- `reach_first`: "a reaches a target with less than b" (uploads, rounds), per seed, where a
  run that never reaches the target is **censored**: it did not reach it, and its whole
  spend is only a lower bound on what it would need. A censored run is never counted as
  cheap: a seed is a win only where the claimed side reached the target below what the
  other spent; the claim cannot hold while the claimed side is censored on any seed, nor
  fail while the other side is; a censored value enters the interval as its lower bound
  (which, for the one verdict still open, can only understate the gap it needs), and a
  seed where neither side reached the target stays out of the mean and interval.
- `variance_ratio`: "lower variance over seeds", the ratio of the two variances with its
  95 % F interval (unpaired by nature: one variance per method).

A claim made of several checks holds when every one holds, does not hold when one does not,
and is within noise otherwise (`decide`). Each check is at 95 % (two-sided) with no
correction for the number of checks a claim makes; "holds" needs all of them.

Each claim in a paper's `references.yaml: claims` may carry, beside `text` and `source`:
- `reading`: what the paper states, as coded, with every departure named;
- `open_choices`: each setting the paper leaves open and how it was picked;
- `cause`: why a verdict other than "holds" comes out: the suite's ablation that isolates
  it (`ablation: <experiment>` plus `text`), or a string that starts with "genuine".
`claims_table` renders them as columns beside the verdict, and a `replicates` column: the
verdict decided again on a second draw the reported trials never used ("not run" until
those runs exist; `replicated` words it, saying where it flips).
"""

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import stats

HOLDS, FAILS, NOISE, NOT_RUN = "holds", "does not hold", "within noise", "not run"
VERDICTS = (HOLDS, FAILS, NOISE, NOT_RUN)
LEVEL = 0.95  # two-sided: "excludes 0 in the claimed direction" is one-sided at 2.5 %

PerSeed = Mapping[int, float] | Sequence[float]


def by_seed(values: PerSeed) -> dict[int, float]:
    """`values` keyed by seed (a sequence: one value per seed, in one seed order)."""
    if isinstance(values, Mapping):
        return {int(k): float(v) for k, v in values.items()}
    return {i: float(v) for i, v in enumerate(values)}


def _num(value: float, spec: str) -> str:
    if math.isnan(value):
        return "none"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    shown = format(value, spec)
    return format(0.0, spec) if float(shown) == 0.0 else shown  # no "-0.00" from rounding


@dataclass(frozen=True)
class Estimate:
    """A mean with its 95 % interval (±∞ where there is none)."""

    mean: float
    low: float
    high: float
    n: int

    def interval(self, spec: str = "+.2f") -> str:
        if self.n == 0:
            return "no seed to compare"
        if self.n == 1:
            return "one seed: no interval"
        if self.low == self.high:
            return "zero spread: the interval is the value itself"
        return f"95 % interval {_num(self.low, spec)} to {_num(self.high, spec)}"


def estimate(values: Sequence[float]) -> Estimate:
    """The mean of `values` (one per seed) with its Student t interval; with one value no
    interval, with equal values the value itself."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        raise ValueError("estimate: no values")
    mean = float(v.mean())
    if v.size == 1:
        return Estimate(mean, -math.inf, math.inf, 1)
    if float(np.ptp(v)) == 0.0:
        return Estimate(mean, mean, mean, int(v.size))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, v.size - 1)) * float(v.std(ddof=1)) / math.sqrt(
        v.size)
    return Estimate(mean, mean - half, mean + half, int(v.size))


def welch(a: Sequence[float], b: Sequence[float]) -> Estimate:
    """mean(a) − mean(b) with Welch's interval (unpaired samples); no interval unless each
    has two values or more."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0 or y.size == 0:
        raise ValueError("welch: no values")
    mean = float(x.mean() - y.mean())
    n = int(min(x.size, y.size))
    if n < 2:
        return Estimate(mean, -math.inf, math.inf, 1)
    va, vb = float(x.var(ddof=1)) / x.size, float(y.var(ddof=1)) / y.size
    if va + vb == 0.0:
        return Estimate(mean, mean, mean, n)
    df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, df)) * math.sqrt(va + vb)
    return Estimate(mean, mean - half, mean + half, n)


@dataclass(frozen=True)
class Comparison:
    """'claimed beats other': the differences in the claim's direction (> 0 goes its way),
    paired by seed unless `paired` is False; `wins` of `n` seeds go the claim's way."""

    estimate: Estimate
    wins: int | None  # None: unpaired
    n: int
    paired: bool = True
    note: str = ""  # what the row must say besides: unpaired seeds, censored runs
    can_hold: bool = True  # False: the claimed side never reached a target on some seed
    can_fail: bool = True  # False: the other side never reached it on some seed

    @property
    def verdict(self) -> str:
        if self.estimate.low > 0 and self.can_hold:
            return HOLDS
        if self.estimate.high < 0 and self.can_fail:
            return FAILS
        return NOISE

    def describe(self, spec: str = "+.2f", unit: str = "") -> str:
        """'wins on k of n seeds, mean paired difference +d unit (95 % interval ...)'."""
        est, u = self.estimate, f" {unit}" if unit else ""
        if self.paired:
            text = (f"wins on {self.wins} of {self.n} seed{'s' if self.n != 1 else ''}, mean "
                    f"paired difference {_num(est.mean, spec)}{u} ({est.interval(spec)})")
        else:
            text = (f"mean difference {_num(est.mean, spec)}{u} (Welch "
                    f"{est.interval(spec)})")
        return text + (f"; {self.note}" if self.note else "")


def _unpaired_note(a: Mapping[int, float], b: Mapping[int, float]) -> str:
    return f"unpaired: seeds {sorted(a)} against {sorted(b)} do not match"


def compare(claimed: PerSeed, other: PerSeed, lower_is_better: bool = False,
            scale: float = 1.0) -> Comparison:
    """'claimed beats other' (higher is better unless `lower_is_better`), each value times
    `scale`; paired by seed where both have the same seeds, else unpaired (Welch)."""
    a, b = by_seed(claimed), by_seed(other)
    if not a or not b:
        raise ValueError("compare: a side has no seeds")
    sign = -scale if lower_is_better else scale
    if set(a) != set(b):
        est = welch([sign * v for v in a.values()], [sign * v for v in b.values()])
        return Comparison(est, None, est.n, paired=False, note=_unpaired_note(a, b))
    diffs = [sign * (a[s] - b[s]) for s in sorted(a)]
    return Comparison(estimate(diffs), sum(d > 0 for d in diffs), len(diffs))


@dataclass(frozen=True)
class Band:
    """An estimate against the range [lower, upper] of the paper's units: holds where its
    whole interval lies inside, does not hold where it lies wholly outside; `inside` of `n`
    seeds lie inside (None: unpaired)."""

    estimate: Estimate
    lower: float
    upper: float
    inside: int | None
    n: int
    note: str = ""

    @property
    def verdict(self) -> str:
        est = self.estimate
        if self.lower <= est.low and est.high <= self.upper:
            return HOLDS
        if est.high < self.lower or est.low > self.upper:
            return FAILS
        return NOISE

    def describe(self, spec: str = "+.2f", unit: str = "", what: str = "mean") -> str:
        est, u = self.estimate, f" {unit}" if unit else ""
        seeds = (f"{self.inside} of {self.n} seed{'s' if self.n != 1 else ''} within "
                 f"[{_num(self.lower, spec)}, {_num(self.upper, spec)}]{u}, "
                 if self.inside is not None else "")
        return (f"{seeds}{what} {_num(est.mean, spec)}{u} ({est.interval(spec)})"
                + (f"; {self.note}" if self.note else ""))


def close(claimed: PerSeed, other: PerSeed, tolerance: float) -> Band:
    """'claimed is within ±tolerance of other' (the paper's units), on the paired
    differences (unpaired where the seeds do not match)."""
    a, b = by_seed(claimed), by_seed(other)
    c = compare(a, b)
    inside = (sum(abs(a[s] - b[s]) <= tolerance for s in a) if c.paired else None)
    return Band(c.estimate, -tolerance, tolerance, inside, c.n, c.note)


def band(values: Sequence[float], lower: float, upper: float) -> Band:
    """A per-seed quantity's mean against [lower, upper]."""
    return Band(estimate(values), lower, upper, sum(lower <= v <= upper for v in values),
                len(values))


@dataclass(frozen=True)
class Reach:
    """Where a run first reached a target (its cumulative upload, its round); a run that
    never did is censored: `value` is all it spent, a lower bound on what it would need."""

    value: float
    reached: bool


def reach_first(smaller: Sequence[Reach] | Mapping[int, Reach],
                larger: Sequence[Reach] | Mapping[int, Reach],
                scale_smaller: float = 1.0, scale_larger: float = 1.0,
                names: tuple[str, str] = ("a", "b")) -> Comparison:
    """'smaller (times scale_smaller) reaches the target with less than larger (times
    scale_larger)', per seed (module docstring: censored runs). A seed where neither side
    reached the target bounds the difference neither way: it is no win and stays out of the
    mean and interval (said in the note). `names` name the two sides in the notes."""
    def keyed(x: Sequence[Reach] | Mapping[int, Reach]) -> dict[int, Reach]:
        return dict(x) if isinstance(x, Mapping) else dict(enumerate(x))

    a, b = keyed(smaller), keyed(larger)
    if not a or not b:
        raise ValueError("reach_first: a side has no seeds")
    missed = [(name, sum(not r.reached for r in side.values()), len(side))
              for name, side in zip(names, (a, b), strict=True)]
    notes = [f"{name} never reached it on {k} of {n} seed{'s' if n != 1 else ''} (censored: "
             "its whole spend, a lower bound)" for name, k, n in missed if k]
    can = {"can_hold": all(r.reached for r in a.values()),
           "can_fail": all(r.reached for r in b.values())}
    if set(a) != set(b):  # nothing to pair
        base = compare({s: scale_larger * r.value for s, r in b.items()},
                       {s: scale_smaller * r.value for s, r in a.items()})
        return Comparison(base.estimate, None, base.n, False, "; ".join([base.note, *notes]),
                          **can)
    seeds = sorted(a)
    wins = sum(a[s].reached and scale_smaller * a[s].value < scale_larger * b[s].value
               for s in seeds)
    neither = [s for s in seeds if not (a[s].reached or b[s].reached)]
    used = [s for s in seeds if s not in neither]
    if neither:
        notes.append(f"neither reached it on seed{'s' if len(neither) != 1 else ''} "
                     f"{', '.join(map(str, neither))}: left out of the mean and interval")
    if not used:
        est = Estimate(math.nan, -math.inf, math.inf, 0)
    else:
        est = estimate([scale_larger * b[s].value - scale_smaller * a[s].value for s in used])
    return Comparison(est, wins, len(seeds), True, "; ".join(notes), **can)


@dataclass(frozen=True)
class Ratio:
    """var(other) / var(ours) with its 95 % F interval: > 1 goes the claim 'ours varies
    less' way; holds where the interval lies above 1, does not hold where below."""

    ratio: float
    low: float
    high: float

    @property
    def verdict(self) -> str:
        if self.low > 1:
            return HOLDS
        if self.high < 1:
            return FAILS
        return NOISE

    def describe(self) -> str:
        if math.isnan(self.ratio):
            return "variance ratio undefined (neither varies over seeds)"
        if math.isinf(self.ratio):
            return "variance ratio ∞ (ours does not vary over seeds)"
        return (f"variance ratio {_num(self.ratio, '.3g')} (95 % F interval "
                f"{_num(self.low, '.3g')} to {_num(self.high, '.3g')}; unpaired: one "
                "variance over seeds per method)")


def variance_ratio(ours: Sequence[float], other: Sequence[float]) -> Ratio:
    """'ours has lower variance over seeds than other' (each ≥ 2 seeds): the ratio of the
    variances (ddof 1), R = var(other) / var(ours), and its interval R / F(0.975), R /
    F(0.025) with (n_other − 1, n_ours − 1) degrees of freedom."""
    if len(ours) < 2 or len(other) < 2:
        raise ValueError("variance_ratio: needs two seeds or more on each side")
    var_a, var_b = float(np.var(ours, ddof=1)), float(np.var(other, ddof=1))
    if var_a == 0.0:
        return Ratio(math.nan, math.nan, math.nan) if var_b == 0.0 else Ratio(
            math.inf, math.inf, math.inf)
    ratio, dfs = var_b / var_a, (len(other) - 1, len(ours) - 1)
    return Ratio(ratio, ratio / float(stats.f.ppf(0.5 + LEVEL / 2, *dfs)),
                 ratio / float(stats.f.ppf(0.5 - LEVEL / 2, *dfs)))


def decide(verdicts: Iterable[str]) -> str:
    """The verdict of a claim made of several checks: holds when every one holds, does not
    hold when one does not, within noise otherwise; not run without any."""
    got = list(verdicts)
    if not got:
        return NOT_RUN
    if all(v == HOLDS for v in got):
        return HOLDS
    return FAILS if FAILS in got else NOISE


@dataclass(frozen=True)
class ClaimRow:
    claim_id: str
    ours: str
    verdict: str
    replicates: str = NOT_RUN  # the verdict on a second draw (issue 55): not run yet


def replicated(verdict: str, again: str, seeds: int) -> str:
    """A `replicates` cell: the verdict `again` decided on the second draw (`seeds` seeds)
    beside the trials' `verdict`; one that differs says it flips."""
    said = f"{again} ({seeds} seed{'s' if seeds != 1 else ''})"
    return said if again == verdict else f"{said}: flips (trials: {verdict})"


def fewest_seeds(finals: Iterable[Mapping[str, list[float]]], metric: str) -> int:
    """The fewest seeds any of `finals` (metric -> final per seed) has for `metric`: what
    a replicate's verdicts rest on at least (0 when none has it)."""
    return min((len(f[metric]) for f in finals if f.get(metric)), default=0)


def with_replicates(rows: Sequence[tuple[str, ClaimRow]], again: Sequence[tuple[str, ClaimRow]],
                    seeds: int) -> list[ClaimRow]:
    """The keyed claim `rows`, each with its `replicates` cell: the row of the same key in
    `again` (the same rules on the second draw, `seeds` seeds), where it was decided there;
    a row not run on the trials, or missing from `again`, keeps the cell it had."""
    by_key = dict(again)
    return [replace(row, replicates=replicated(row.verdict, by_key[key].verdict, seeds))
            if key in by_key and row.verdict != NOT_RUN else row for key, row in rows]


def _cell(value: Any) -> str:
    """A references.yaml field as one table cell (lists joined, pipes escaped)."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        ablation = value.get("ablation")
        named = ", ".join(ablation) if isinstance(ablation, list) else ablation
        text = str(value.get("text", "")).strip()
        return (f"ablation `{named}`: {text}" if named else text).replace("|", "\\|")
    if isinstance(value, list):
        return "; ".join(str(v).strip() for v in value).replace("|", "\\|")
    return " ".join(str(value).split()).replace("|", "\\|")


def cause_missing(row: ClaimRow, claims: Mapping[str, Any]) -> bool:
    """A verdict other than holds/not run whose claim names no cause."""
    return row.verdict in (FAILS, NOISE) and not claims.get(row.claim_id, {}).get("cause")


HEADER = ("| claim | paper | ours | verdict | reading | open choices | cause | replicates |",
          "|---|---|---|---|---|---|---|---|")


def claims_table(rows: Sequence[ClaimRow], claims: Mapping[str, Any]) -> list[str]:
    """Markdown rows: claim, what the paper says, our numbers, verdict, its evidence and its
    replication. A claim checked in several rows (experiments) states its text, reading and
    open choices in the first, its cause in the first whose verdict needs one; later rows
    say "as above"."""
    lines = list(HEADER)
    stated: set[str] = set()
    explained: set[str] = set()
    for row in rows:
        claim = claims.get(row.claim_id, {})
        first = row.claim_id not in stated
        stated.add(row.claim_id)
        cause = ""
        if row.verdict in (FAILS, NOISE):
            cause = ("not yet isolated" if cause_missing(row, claims) else
                     "as above" if row.claim_id in explained else _cell(claim.get("cause")))
            explained.add(row.claim_id)
        text, reading, choices = ((_cell(claim.get("text")), _cell(claim.get("reading")),
                                   _cell(claim.get("open_choices"))) if first else
                                  ("as above",) * 3)
        lines.append(f"| {row.claim_id} | {text} | {row.ours} | {row.verdict} | {reading} | "
                     f"{choices} | {cause} | {row.replicates} |")
    return lines
