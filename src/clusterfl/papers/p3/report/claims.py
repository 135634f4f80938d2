"""P3 Sec. 3.2's four claims (references.yaml `claims`), each checked with our numbers.

Everything compares the scored round's test accuracy (the last, or the round picked on
validation, `rounds.py`; per modality where the claim is per modality), seed by seed, by
the shared rule (`clusterfl.reports.verdicts`): each comparison is "wins on k of n seeds,
mean paired difference (points) with its 95 % interval"; a claim holds when every
comparison's interval lies above 0, does not hold when one lies below, within noise
otherwise.

With a `Selection` (rates chosen on a validation experiment, `selection.py`), the first row
of each claim compares every method at its picked rate and mmFL with the grid that brackets
the picked fixed rate; the rows after it are the ablations at the other rates run.
`meta_beats_fixed` is decided against the paper's fixed rates (`PAPER_FIXED_RATES`) first,
then, in a row of its own, against every fixed rate run, larger ones included.

Each row carries a key (claim and cells compared, `checked`), so that the same row decided
on a replicate experiment (`p3_rep_<name>`: `p3_<name>` on another deal of the data to the
clients) fills its `replicates` column.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from clusterfl.papers.p3.report.rounds import refuse_at_edge
from clusterfl.papers.p3.report.selection import Selection, rate_of
from clusterfl.reports.verdicts import (
    HOLDS,
    NOT_RUN,
    ClaimRow,
    Comparison,
    claims_table,
    compare,
    decide,
    fewest_seeds,
    with_replicates,
)

Finals = Mapping[str, Mapping[str, list[float]]]  # algorithm -> metric -> final per seed


class Replicate(NamedTuple):
    """A trials experiment's replicate (`replicate_of`): its finals and its modalities."""

    finals: Finals
    modalities: list[str]


# Fig. 3's fixed rates (Sec. 3.2: "FL with a fixed rate (0.01, 0.001, 0.0001)"): the stated
# reading of meta_beats_fixed compares against these alone; larger fixed rates the suite ran
# (the validated 0.3, the schedule's 0.1) make a second row, named as our reading
PAPER_FIXED_RATES = (0.01, 0.001, 0.0001)
REPLICATE = "p3_rep_"  # p3_rep_<name>: p3_<name> on another deal of the data to the clients


def replicate_of(experiment: str) -> str:
    """The replicate experiment's name of a trials experiment `p3_<name>`."""
    return REPLICATE + experiment.removeprefix("p3_")


def fixed_rates(finals: Finals) -> list[str]:
    """The fixed-rate multimodal FL runs present, largest rate first (`selection.rate_of`
    parses the rate, so a name like `mmfl_lr_sweep` is not taken for one)."""
    rated = {a: r for a in finals if (r := rate_of(a, "mmfl")) is not None}
    return sorted(rated, key=lambda a: rated[a], reverse=True)


# The methods Fig. 5 sets mmFL against, each told by its cells at any rate: the pooled model
# ("multimodal LSTM", `centralized`), unimodal FL, multimodal FL (mmFL at a fixed rate),
# unimodal meta-FL; not Standalone (Fig. 2's) nor mmFL's own variants (`mmfl_rest`, ...)
FIG5_METHODS: dict[str, Callable[[str], bool]] = {
    "the pooled model": lambda c: c == "centralized" or rate_of(c, "centralized") is not None,
    "unimodal FL": lambda c: c == "unimodal_fl" or rate_of(c, "unimodal_fl") is not None,
    "multimodal FL": lambda c: rate_of(c, "mmfl") is not None,
    "unimodal meta-FL": lambda c: c == "unimodal_meta_fl",
}


def fig5_method(cell: str) -> bool:
    """Whether `cell` is one of Fig. 5's methods (`FIG5_METHODS`)."""
    return any(of(cell) for of in FIG5_METHODS.values())


def fig5_missing(others: Sequence[str]) -> list[str]:
    """The Fig. 5 methods none of `others` stands for: mmFL cannot be said to beat them."""
    return [name for name, of in FIG5_METHODS.items() if not any(of(c) for c in others)]


def rate_pairs(finals: Finals, first: str, second: str) -> list[tuple[str, str]]:
    """(first, second) at the schedule's rate, then at every fixed rate both ran at
    (`<name>_lr0_1`: the ablations that train the rate-free baselines at another rate)."""
    rates = sorted(name[len(first):] for name in finals if name.startswith(first + "_lr"))
    return [(first, second)] + [(first + r, second + r) for r in rates
                                if second + r in finals]


def _cmp(finals: Finals, winner: str, loser: str, metric: str) -> Comparison:
    """'winner beats loser' on `metric`, in points, seed by seed."""
    return compare(finals[winner][metric], finals[loser][metric], scale=100.0)


def _said(comparison: Comparison) -> str:
    return comparison.describe(unit="points")


def check(finals: Finals, modalities: list[str], selection: Selection | None = None
          ) -> list[ClaimRow]:
    """A row for each claim whose algorithms all ran; with `selection`, first the row at the
    rates it picked (module docstring)."""
    return [row for _, row in checked(finals, modalities, selection)]


def checked(finals: Finals, modalities: list[str], selection: Selection | None = None
            ) -> list[tuple[str, ClaimRow]]:
    """`check`'s rows, each with its key: the claim and the cells it compares."""
    rows: list[tuple[str, ClaimRow]] = []
    per_mod = [f"test_acc_{m}" for m in modalities]

    def have(*algs: str) -> bool:
        return all(a in finals and finals[a].get("test_acc") for a in algs)

    def mean(alg: str, metric: str) -> str:
        values = finals[alg][metric]
        return f"{100 * np.mean(values):.2f} ± {100 * np.std(values):.2f}"

    def unrun(claim: str, cells: list[str | None], why: str) -> bool:
        """A 'not run' row when a picked cell has no test run (True), else False."""
        missing = [c for c in cells if c is None or not have(c)]
        if missing:
            rows.append((f"{claim}/unrun", ClaimRow(
                claim, f"{why}: no test cell {', '.join(map(str, missing))} - add it to the "
                "suite's grid", NOT_RUN)))
        return bool(missing)

    pairs = rate_pairs(finals, "unimodal_fl", "standalone")
    chosen = None  # the pair at the rates picked on validation
    if selection is not None:
        fl, alone = selection.cell("unimodal_fl"), selection.cell("standalone")
        if not unrun("fl_beats_standalone", [fl, alone], f"rates picked on "
                     f"{selection.validation}"):
            chosen = (str(fl), str(alone))
            pairs = [chosen] + [p for p in pairs if p != chosen]
    for fl, alone in pairs:
        if not have(fl, alone):
            continue
        cmps = [_cmp(finals, fl, alone, k) for k in per_mod]
        rate = f"{fl} vs {alone}: " if fl != "unimodal_fl" else ""
        if selection is not None and (fl, alone) == chosen:
            rate = (f"at the rates picked on {selection.validation} (FL "
                    f"{selection.describe('unimodal_fl')}, standalone "
                    f"{selection.describe('standalone')}): ")
        text = rate + "; ".join(f"{m}: FL {mean(fl, k)} vs standalone {mean(alone, k)}, FL "
                                f"{_said(c)}"
                                for m, k, c in zip(modalities, per_mod, cmps, strict=True))
        rows.append((f"fl_beats_standalone/{fl}/{alone}",
                     ClaimRow("fl_beats_standalone", text, decide(c.verdict for c in cmps))))
    fixed = [f for f in fixed_rates(finals) if have(f)]
    metas = ["mmfl"]
    if selection is not None:
        grid = selection.meta  # the bracketing grid at its picked T_temp and |d|
        if not unrun("meta_beats_fixed", [grid], f"the grid bracketing the fixed rate picked "
                     f"on {selection.validation}"):
            metas = [str(grid)] + (["mmfl"] if grid != "mmfl" else [])
    stated = [f for f in fixed if rate_of(f, "mmfl") in PAPER_FIXED_RATES]
    against = [("the paper's fixed rates", stated)] + (
        [("every fixed rate run, beyond the paper's list (our reading)", fixed)]
        if fixed != stated else [])
    for meta in metas:
        for which, rates in against:
            if not (have(meta) and rates):
                continue
            cmps = [_cmp(finals, meta, f, "test_acc") for f in rates]
            text = f"{which}: {meta} {mean(meta, 'test_acc')}; " + "; ".join(
                f"{f} {mean(f, 'test_acc')}: {meta} {_said(c)}"
                for f, c in zip(rates, cmps, strict=True))
            if selection is not None and meta == selection.meta:
                settings = (f", {selection.settings.describe()}"
                            + (" picked there" if selection.settings.picked else "")
                            if selection.settings else "")
                text = (f"grid around the fixed rate picked on {selection.validation} "
                        f"({selection.describe('mmfl')}{settings}), " + text)
            rows.append((f"meta_beats_fixed/{meta}/{'+'.join(rates)}",
                         ClaimRow("meta_beats_fixed", text, decide(c.verdict for c in cmps))))
    if have("mmfl", "unimodal_meta_fl"):
        cmps = [_cmp(finals, "mmfl", "unimodal_meta_fl", k) for k in per_mod]
        text = "; ".join(f"{m}: mmfl {mean('mmfl', k)} vs unimodal meta-FL "
                         f"{mean('unimodal_meta_fl', k)}, mmfl {_said(c)}"
                         for m, k, c in zip(modalities, per_mod, cmps, strict=True))
        rows.append(("mmfl_beats_unimodal_meta", ClaimRow(
            "mmfl_beats_unimodal_meta", text, decide(c.verdict for c in cmps))))
    # Fig. 5's methods (`fig5_method`); with a selection, each family at its picked rate
    meta = metas[0]
    others = [a for a in finals if have(a) and fig5_method(a)]
    if selection is not None:
        picked = [selection.cell(f) for f in selection.picks]
        others = [a for a in picked if a and have(a) and fig5_method(a)] + [
            a for a in others if not any(a.startswith(f) for f in selection.picks)]
    if have(meta) and others:
        cmps = [_cmp(finals, meta, a, "test_acc") for a in others]
        best = max(others, key=lambda a: np.mean(finals[a]["test_acc"]))
        text = (f"{meta} {mean(meta, 'test_acc')}; best other {best} "
                f"{mean(best, 'test_acc')} (paper: about +7.18 points); {meta} against "
                + "; ".join(f"{a}: {_said(c)}" for a, c in zip(others, cmps, strict=True)))
        if selection is not None:
            text = f"each method at its rate picked on {selection.validation}: " + text
        verdict = decide(c.verdict for c in cmps)
        missing = fig5_missing(others)
        if missing:
            text += f"; not run: {', '.join(missing)}"
            if verdict == HOLDS:  # a method not run may be the one that wins
                verdict = (f"not decided: {', '.join(missing)} not run (the rule would say: "
                           f"{verdict})")
        rows.append((f"mmfl_beats_others/{meta}/{'+'.join(others)}",
                     ClaimRow("mmfl_beats_others", text, verdict)))
    return rows


def replicated_rows(finals: Finals, modalities: list[str], selection: Selection | None,
                    replicate: Replicate | None, edges: set[str] | None = None
                    ) -> list[ClaimRow]:
    """`check`'s rows, each with its `replicates` cell: the same row (same key) decided on
    the replicate experiment's finals and modalities, where it ran; a row comparing a cell
    of `edges` (scored at a round picked at the last run, `rounds.py`) not decided."""
    rows = checked(finals, modalities, selection)
    if replicate is not None:
        again = checked(replicate.finals, replicate.modalities, selection)
        seeds = fewest_seeds(replicate.finals.values(), "test_acc")
        rows = list(zip([key for key, _ in rows], with_replicates(rows, again, seeds),
                        strict=True))
    return [row for _, row in refuse_at_edge(rows, edges or set())]


def claims_section(finals: Finals, modalities: list[str], references: Mapping[str, Any],
                   experiment: str, selection: Selection | None = None,
                   replicate: Replicate | None = None, edges: set[str] | None = None
                   ) -> list[str]:
    """The claims table of one experiment; each row's numbers led by the experiment's
    reading where references.yaml `experiment_readings` gives one (its clients, its test
    set), so that a row says which reading it decides. `replicate`: the finals and
    modalities of `replicate_of(experiment)`, which decide each row again; `edges`: the
    cells whose round picked on validation is the last run (their rows not decided)."""
    reading = (references.get("experiment_readings") or {}).get(experiment)
    rows = [replace(row, ours=f"{' '.join(str(reading).split())}: {row.ours}") if reading
            else row for row in replicated_rows(finals, modalities, selection, replicate,
                                                edges)]
    if not rows:
        return [f"No claim of Sec. 3.2 has all its methods among `{experiment}`'s cells."]
    again = (f"the same rule on `{replicate_of(experiment)}`, "
             f"{' '.join(str(references.get('replicate_draw', 'another deal')).split())}"
             if replicate else "not run: the suite has no `" + replicate_of(experiment) + "`")
    return [f"The paper's claims (Sec. 3.2) against `{experiment}` (test accuracy % at the "
            "scored round, mean ± std over seeds; each comparison seed by seed: wins on k of n "
            "seeds, mean paired difference in points with its 95 % interval; replicates: "
            f"{again}):", "",
            *claims_table(rows, references.get("claims") or {})]
