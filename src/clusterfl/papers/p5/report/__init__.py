"""P5's section of the suite report (`Paper.report`, imported by the report stage only):

- Table: final clustering accuracy (last round, %, mean ± std over the seeds, which are the
  paper's random initial points: it averages 10, the paper suite runs 5), algorithms as rows
  and experiments as columns, with ARI and NMI in a second table; `p5_accuracy.md` and
  `p5_final.csv` (one row per cell) beside the section;
- figures per experiment: `p5/<exp>_objective.png` (Figs. 4-5: objective vs rounds and vs
  uploaded numbers) and `p5/<exp>_clustering.png` (Fig. 6: accuracy vs rounds and cost,
  centralized methods as horizontal lines; ARI, NMI);
- the paper's claims (references.yaml) checked one by one (`claims.check`), each decided
  again on the replicate experiments (`p5_rep_<name>`, a second data draw) where the suite
  ran them (`claims.replicate_cell`), or in the suites that replicate the image sets
  (references.yaml `replicate_suites`); in the tables a replicate is one more experiment.
"""

from collections.abc import Callable
from dataclasses import replace

import pandas as pd

from clusterfl.papers.p5.report.claims import (
    REPLICATE,
    Traces,
    check,
    replicate_cell,
    trials_of,
)
from clusterfl.papers.p5.report.figures import clustering_figure, convergence_figure
from clusterfl.papers.p5.training.metrics import (
    CLUSTERING_ACCURACY,
    CLUSTERING_ARI,
    CLUSTERING_NMI,
    OBJECTIVE,
    UPLOAD_TOTAL,
)
from clusterfl.reports.runs import by_experiment, mean_curve, read_cell
from clusterfl.reports.section import ReportInput, ReportOutput
from clusterfl.reports.tables import markdown_table, mean_std
from clusterfl.reports.verdicts import claims_table

SCORES = (CLUSTERING_ACCURACY, CLUSTERING_ARI, CLUSTERING_NMI)
INTRO = """Final clustering accuracy (%, last round, best one-to-one label matching), mean ± \
std over seeds; each seed is one common random initial point of every method (the paper \
averages 10). The paper prints no numbers (curves only): its claims are checked below.
"""


def final_rows(report: ReportInput) -> pd.DataFrame:
    """One row per (experiment, algorithm, seed): the last round's scores (percent scaled),
    objective and cumulative upload."""
    rows = []
    for exp, alg in report.cells:
        for history in read_cell(report.results, exp, alg):
            last = history.records[-1]
            row = {"experiment": exp, "algorithm": alg, "seed": history.seed,
                   "rounds": last["round"], OBJECTIVE.name: last.get(OBJECTIVE.name),
                   UPLOAD_TOTAL.name: last.get(UPLOAD_TOTAL.name)}
            rows.append(row | {m.name: m.scale * last[m.name] for m in SCORES})
    return pd.DataFrame(rows)


def layout(frame: pd.DataFrame, columns: list[str], cell: Callable[[pd.DataFrame], str]
           ) -> list[str]:
    """Algorithms as rows, `columns` (experiments) as columns, `cell(group)` in each."""
    rows = []
    for alg in dict.fromkeys(frame["algorithm"]):
        row = [alg]
        for exp in columns:
            group = frame[(frame["algorithm"] == alg) & (frame["experiment"] == exp)]
            row.append(cell(group) if len(group) else "")
        rows.append(row)
    return markdown_table(["algorithm", *columns], rows)


def traces(report: ReportInput) -> Traces:
    """Per cell and seed, (cumulative upload, objective) per round: the cost claims' input."""
    return {(exp, alg): [[(r[UPLOAD_TOTAL.name], r[OBJECTIVE.name]) for r in h.records
                          if OBJECTIVE.name in r and UPLOAD_TOTAL.name in r]
                         for h in read_cell(report.results, exp, alg)]
            for exp, alg in report.cells}


def build(report: ReportInput) -> ReportOutput:
    frame = final_rows(report)
    experiments = list(by_experiment(report.cells))
    accuracy = layout(frame, experiments,
                      lambda g: mean_std(g[CLUSTERING_ACCURACY.name].tolist()))
    ari_nmi = layout(frame, experiments, lambda g: (
        f"{mean_std(g[CLUSTERING_ARI.name].tolist())} / "
        f"{mean_std(g[CLUSTERING_NMI.name].tolist())}"))
    (report.tables / "p5_accuracy.md").write_text("\n".join(accuracy) + "\n")
    frame.to_csv(report.tables / "p5_final.csv", index=False)

    curves = {(exp, alg): mean_curve(report.results, exp, alg) for exp, alg in report.cells}
    written = []
    out = report.figures / "p5"
    for exp, algs in by_experiment(report.cells).items():
        title = report.params.experiment(exp).title
        mine = {alg: curves[(exp, alg)] for alg in algs}
        convergence_figure(title, mine, path := out / f"{exp}_objective.png")
        clustering_figure(title, mine, clustered := out / f"{exp}_clustering.png")
        written += [path, clustered]

    finals = {key: dict(zip(g["seed"].astype(int), g[CLUSTERING_ACCURACY.name], strict=True))
              for key, g in frame.groupby(["experiment", "algorithm"])}  # paired by seed
    claims = report.references.get("claims", [])
    per_seed = traces(report)
    again, again_traces = trials_of(finals), trials_of(per_seed)
    finals = {k: v for k, v in finals.items() if not k[0].startswith(REPLICATE)}
    elsewhere = report.references.get("replicate_suites", [])
    rows = [replace(check(c, finals, per_seed),
                    replicates=replicate_cell(c, finals, per_seed, again, again_traces,
                                              elsewhere, report.params.suite))
            for c in claims]
    markdown = "\n".join([
        INTRO, *accuracy, "", "ARI / NMI (samples against their true labels), last round:", "",
        *ari_nmi, "", "## The paper's claims, checked", "",
        "Means ± std over seeds; each comparison seed by seed (each seed one common initial "
        "point and partition): wins on k of n seeds, mean paired difference with its 95 % "
        "interval; the verdict rules are in `papers/p5/report/claims.py`; replicates: the "
        f"same rule on the `{REPLICATE}<name>` experiments, a second data draw, beside the "
        "trials' verdict on the same experiments.", "",
        *claims_table(rows, {c["id"]: c for c in claims}), ""])
    return ReportOutput(markdown=markdown, figures=written)
