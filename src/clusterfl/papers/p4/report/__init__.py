"""P4's (PFL-TC / PDL-TC) section of the suite report: Fig. 1's shape (optimum error per
round, mean with a ±std band over seeds, and every trial's final error), a table of final
errors and ARI, Fig. 2's shape (final error against N/K, log-log, with a 1/sqrt(N/K) slope),
the initial-scale and threshold-scale sweeps, and the paper's three Sec. 4 claims, each with
our numbers and a verdict (`claims`). The paper prints no numbers (references.yaml holds the
claims' text only).

The tuning sweep (`p4_tune_tau_*`) names each algorithm's best scale; where params use
another one, or one at the grid's edge, every claim verdict is withheld (`tau_refusal`).
Experiments `p4_rep_<name>` are `p4_<name>` on a second data draw: they get no figure and
decide each claim again for its `replicates` column.

Experiments are grouped by name (`groups`): `p4_fig2{,sgd,b1,b5}_m<N/K>`, `p4_init_s<s>` /
`p4_n100_init_s<s>` (the s = 1 point is `p4_fig1` / `p4_fig1_n100`), `p4_tau_<100 x scale>`
(the 1.0 point is `p4_fig1_n100`); any other experiment gets Fig. 1's panels. Experiments
whose runs record test accuracy instead (the real-data extension, `real`) get their own
table (accuracy, ARI), figure (accuracy and ARI per round) and verdicts.
"""

from typing import Any

import numpy as np

from clusterfl.papers.p4.report.claims import (
    RATE_NAMES,
    REPLICATE,
    claims_section,
    real_claims_section,
)
from clusterfl.papers.p4.report.groups import RATE_SWEEPS, finals, sweep_values
from clusterfl.papers.p4.report.plots import fig1_figure, fig2_figure, sweep_figure
from clusterfl.papers.p4.report.real import is_real, real_figure, real_finals, real_table
from clusterfl.reports.runs import by_experiment
from clusterfl.reports.section import ReportInput, ReportOutput
from clusterfl.reports.tables import markdown_table, mean_std


def build(report: ReportInput) -> ReportOutput:
    real = {(e, a): real_finals(report.results, e, a) for e, a in report.cells}
    real = {cell: f for cell, f in real.items() if is_real(f)}
    linear = [cell for cell in report.cells if cell not in real]
    final = {(e, a): finals(report.results, e, a) for e, a in linear}
    # the replicate draw's cells (p4_rep_<name>) decide the claims again, keyed as p4_<name>
    again = {("p4_" + e.removeprefix(REPLICATE), a): f for (e, a), f in final.items()
             if e.startswith(REPLICATE)}
    grouped = by_experiment([c for c in linear if not c[0].startswith(REPLICATE)])
    refusal = None
    parts = ["Final optimum error (1/N) Σ ||x_i − x*_k(i)||² (last round) and final ARI, "
             "mean ± std over seeds; – where an algorithm forms no clusters.\n"]
    rows = []
    for (exp, alg), f in final.items():
        ari = f["ari"]
        rows.append([exp, alg, mean_std(f["error"], 3 if max(f["error"], default=0) < 1 else 1),
                     mean_std(ari, 3) if ari else "–", str(len(f["error"]))])
    parts += markdown_table(["experiment", "algorithm", "final error", "final ARI", "seeds"],
                            rows)
    figures = []
    for exp, algs in grouped.items():
        path = report.figures / f"{exp}.png"
        fig1_figure(report.results, exp, algs, report.params.experiment(exp).title, path)
        figures.append(path)
    for name, sweep in sweep_values(grouped).items():
        path = report.figures / f"p4_{name}.png"
        if name in RATE_SWEEPS:
            fig2_figure(sweep, final, path, f"P4 Fig. 2, {RATE_NAMES[name]}")
        else:
            sweep_figure(name, sweep, final, path)
        figures.append(path)
        parts += ["", f"Sweep `{name}` (final error, mean ± std):", ""]
        algs = sorted({a for points in sweep.values() for _, a in points})
        parts += markdown_table([name, *algs], [
            [f"{value:g}", *[_cell(final, exp_of(points, a), a) for a in algs]]
            for value, points in sorted(sweep.items())
        ])
        if name == "tune_tau":
            parts += ["", tuning_line(sweep, final, report.params)]
            refusal = tau_refusal(sweep, final, report.params)
    parts += ["", *claims_section(final, sweep_values(grouped), report.references, again,
                                  sweep_values(by_experiment(list(again))), refusal)]
    if real:
        parts += ["", "Beyond the paper: real clustered data. Final test accuracy of each "
                  "client's model on its own test split (sample-weighted, %), final ARI and "
                  "ARI averaged over rounds against the true clusters, mean ± std over seeds; "
                  "– where an algorithm forms no clusters.", "", *real_table(real), "",
                  *real_claims_section(real)]
        for exp, algs in by_experiment(list(real)).items():
            path = report.figures / f"p4_real_{exp}.png"
            real_figure(report.results, exp, algs, report.params.experiment(exp).title, path)
            figures.append(path)
    metrics = {f"p4/{e}/{a}/final_error": float(np.mean(f["error"]))
               for (e, a), f in final.items() if f["error"]}
    metrics |= {f"p4/{e}/{a}/final_acc": float(np.mean(f["acc"])) for (e, a), f in real.items()}
    return ReportOutput(markdown="\n".join(parts) + "\n", metrics=metrics, figures=figures)


def best_tau(sweep: dict[float, list[tuple[str, str]]], final: dict, algorithm: str
             ) -> float | None:
    """The scale with the lowest mean final error on the tuning draws; of equal ones (a
    plateau), the largest."""
    means = {v: float(np.mean(final[(e, a)]["error"])) for v, cells in sweep.items()
             for e, a in cells if a == algorithm and final[(e, a)]["error"]}
    if not means:
        return None
    low = min(means.values())
    return max(v for v, m in means.items() if m <= low * (1 + 1e-9))


def _used_tau(params: Any, algorithm: str) -> float | None:
    tau = getattr(params.algorithm(algorithm, paper="p4").hyper, "tau_scale", None)
    return None if tau is None else float(tau)


def tau_refusal(sweep: dict[float, list[tuple[str, str]]], final: dict, params: Any
                ) -> str | None:
    """Why the claims cannot be decided, or None: an algorithm of the tuning sweep whose
    params scale differs from its best on the tuning draws, or sits at the grid's edge (the
    grid must bracket the pick: widen it and run again)."""
    edges = (min(sweep), max(sweep))
    why = []
    for alg in sorted({a for cells in sweep.values() for _, a in cells}):
        best, used = best_tau(sweep, final, alg), _used_tau(params, alg)
        if best is None:
            continue
        if used != best:
            why.append(f"{alg}'s tau scale {used} is not its tuned best {best:g}")
        elif used in edges:
            why.append(f"{alg}'s tau scale {used:g} sits at the tuning grid's edge "
                       f"[{edges[0]:g}, {edges[1]:g}]")
    return "; ".join(why) or None


def tuning_line(sweep: dict[float, list[tuple[str, str]]], final: dict, params: Any) -> str:
    """Each algorithm's best scale on the tuning draws beside the one its params use."""
    picks = []
    for alg in sorted({a for cells in sweep.values() for _, a in cells}):
        best = best_tau(sweep, final, alg)
        used = _used_tau(params, alg)
        edge = " (a grid edge)" if best in (min(sweep), max(sweep)) else ""
        picks.append(f"{alg} {best:g}{edge}, params {used}"
                     + ("" if used == best else " (differs: re-tune)"))
    return ("Chosen on the tuning draws (data seeds 1000-1004, disjoint from the trials): "
            + "; ".join(picks) + ".")


def exp_of(points: list[tuple[str, str]], algorithm: str) -> str | None:
    return next((e for e, a in points if a == algorithm), None)


def _cell(final: dict, exp: str | None, alg: str) -> str:
    if exp is None or not final[(exp, alg)]["error"]:
        return "–"
    return mean_std(final[(exp, alg)]["error"], 3)
