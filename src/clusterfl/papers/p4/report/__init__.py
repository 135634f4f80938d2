"""P4's (PFL-TC / PDL-TC) section of the suite report: Fig. 1's shape (optimum error per
round, mean with a ±std band over seeds, and every trial's final error), a table of final
errors and ARI, Fig. 2's shape (final error against N/K, log-log, with a 1/sqrt(N/K) slope),
the initial-scale and threshold-scale sweeps, and the paper's three Sec. 4 claims, each with
our numbers and a verdict (`claims`). The paper prints no numbers (references.yaml holds the
claims' text only).

The tuning sweeps (`tuning`: `p4_tune_tau_*` on tuning draws, `p4_rot_tune_tau_*` on the
real data's validation split) name each algorithm's pick; where params use another scale, or
one at the grid's edge, every verdict that scale decides is withheld (`tau_refusal`).
Experiments `p4_rep_<name>` are `p4_<name>` on a second data draw: they get no figure and
decide each claim again for its `replicates` column.

Experiments are grouped by name (`groups`): `p4_fig2{,sgd,b1,b5}_m<N/K>`, `p4_init_s<s>` /
`p4_n100_init_s<s>` (the s = 1 point is `p4_fig1` / `p4_fig1_n100`), `p4_tau_<100 x scale>`
(the 1.0 point is `p4_fig1_n100`); any other experiment gets Fig. 1's panels. Experiments
whose runs record test accuracy instead (the real-data extension, `real`) get their own
table (accuracy, ARI), figure (accuracy and ARI per round) and verdicts.
"""

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
from clusterfl.papers.p4.report.tuning import (
    NEURAL,
    neural_sweep,
    tau_refusal,
    tuning_line,
)
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
        parts += real_section(report, real, figures)
    metrics = {f"p4/{e}/{a}/final_error": float(np.mean(f["error"]))
               for (e, a), f in final.items() if f["error"]}
    metrics |= {f"p4/{e}/{a}/final_acc": float(np.mean(f["acc"])) for (e, a), f in real.items()
                if not neural_sweep([(e, a)])}  # a tuning cell's accuracy is validation's
    return ReportOutput(markdown="\n".join(parts) + "\n", metrics=metrics, figures=figures)


def real_section(report: ReportInput, real: dict, figures: list) -> list[str]:
    """The real-data part: the neural τ tuning on its validation split (`tuning`), then the
    trials' table, verdicts (withheld where τ is off its pick) and figures."""
    sweep = neural_sweep(real)
    tuned = {e for cells in sweep.values() for e, _ in cells}
    trials = {cell: f for cell, f in real.items() if cell[0] not in tuned}
    parts: list[str] = []
    refusal = None
    if sweep:
        algs = sorted({a for cells in sweep.values() for _, a in cells})
        parts += ["", "Neural τ scale, chosen before the trials are scored: final accuracy "
                  "on the validation split (%), mean ± std over seeds:", "",
                  *markdown_table(["tau scale", *algs], [
                      [f"{v:g}", *[_cell(real, exp_of(points, a), a, "acc", 2) for a in algs]]
                      for v, points in sorted(sweep.items())]),
                  "", tuning_line(sweep, real, report.params, NEURAL)]
        refusal = tau_refusal(sweep, real, report.params, NEURAL)
        path = report.figures / "p4_rot_tune_tau.png"
        sweep_figure("neural tau scale (validation split)", sweep, real, path, key="acc",
                     ylabel="final validation accuracy (%)")
        figures.append(path)
    if trials:
        parts += ["", "Beyond the paper: real clustered data. Final test accuracy of each "
                  "client's model on its own test split (sample-weighted, %), final ARI and "
                  "ARI averaged over rounds against the true clusters, mean ± std over seeds; "
                  "– where an algorithm forms no clusters.", "", *real_table(trials), "",
                  *real_claims_section(trials, refusal)]
        for exp, algs in by_experiment(list(trials)).items():
            path = report.figures / f"p4_real_{exp}.png"
            real_figure(report.results, exp, algs, report.params.experiment(exp).title, path)
            figures.append(path)
    return parts


def exp_of(points: list[tuple[str, str]], algorithm: str) -> str | None:
    return next((e for e, a in points if a == algorithm), None)


def _cell(final: dict, exp: str | None, alg: str, key: str = "error", digits: int = 3) -> str:
    if exp is None or not final[(exp, alg)].get(key):
        return "–"
    return mean_std(final[(exp, alg)][key], digits)
