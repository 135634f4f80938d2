"""P1's (pFedKM) section of the suite report: Table 2 under one protocol with its verdicts
(`table2.py`: the headline), Table 2's layout (algorithms as rows, experiments as columns,
ours at the last round beside the paper's number) and, per experiment, Figs. 1-5's shapes
(test accuracy and training loss, clustering diagnostics, the assignment map); the
reported-protocol table (`protocol.py`: context, never a verdict, since the official code's
round is picked on test) and, where the suite ran them, the sensitivity sweeps and the lr
validation of Table 2's DNN cells (`sensitivity.py`, references.yaml `p1_sweeps`)."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from clusterfl.papers.p1.report.protocol import (
    official_rows,
    protocol_markdown,
    protocol_rows,
)
from clusterfl.papers.p1.report.sensitivity import (
    best_labels,
    sensitivity_figure,
    sweep_frame,
    sweep_markdown,
)
from clusterfl.papers.p1.report.table2 import (
    VALIDATION_SWEEPS,
    off_protocol,
    picks_markdown,
    table2_markdown,
    table2_rows,
    validation_picks,
)
from clusterfl.reports.diagnostics import diagnostic_section
from clusterfl.reports.figures import experiment_figures
from clusterfl.reports.results import paper_layout, summary_table
from clusterfl.reports.runs import by_experiment, seed_rows
from clusterfl.reports.section import ReportInput, ReportOutput
from clusterfl.reports.sweeps import sweep_values
from clusterfl.steps.metrics import TEST_ACC

TABLE2 = """### Table 2 under one protocol: the verdicts

Fixed before the test split was read (docs/p1_protocol.md): P1's stated settings (lr 0.005 \
for MLR and DNN, T = 100, R = 10, β = 1, λ = 15, N = 40), θ_i (IFCA: its own model) at the \
last round, {label}, mean ± std over the trials. Beside it, the named departure: each DNN \
cell at the lr picked on a validation split (suite `p1_table2_val`). The replicates column \
decides each number and its pFedKM-vs-pFedMe comparison again, by the same rules, on its \
column's second draw of the data, which no trial reads (`p1_rep_<name>`: the data's own \
draw in params.yaml); a column without one says why.
"""
OFFICIAL = """Context, never a verdict (its round is picked on the test split): Table 2 \
scored as the official pFedMe code measures it (docs/p1_protocol.md), {label} of the local \
w_i after local training (pFedMe, pFedKM) or of the cell's own model (IFCA, FedAvg, Local), \
each run at its best round; mean ± std over seeds, the paper's number in brackets.
"""
PICKS = """### Table 2's DNN learning rates, picked on validation

Each cell's lr with the best mean over the draws at the last round (T = 100) on the \
validation split; a pick at an edge of its grid is refused. The picks run on the test split \
in the paper suite as `p1_<data>_dnn_lr_<pick>`.
"""
INTRO = """Table 2 as P1's text describes it: {label} of θ_i, Algorithm 1's output (pFedMe, \
pFedKM), or of the cell's own model, last round; mean ± std over seeds, the paper's number in \
brackets.
"""
PROTOCOL = """### Reported protocol: which model, which round

Each pFedMe/pFedKM cell's models on the clients' test splits (`model_views`): θ_i is what \
the paper's Algorithm 1 outputs (the last-round table above); the official pFedMe code's \
"personalized" accuracy is the local w_i after local training at its best round \
(`algorithms/pfedme.py`, `evaluated_model: local`). A cell without these models (IFCA, \
FedAvg, Local) has one row, its own evaluated model. Mean ± std over seeds; "r" is the mean \
best round.
"""
SENSITIVITY = """### Sensitivity: what P1 does not state

Each hyperparameter swept alone around the paper's settings; the accuracy (%) of θ_i (or \
of the model a sweep names) on a validation split of the clients' training data (the test \
split unused), mean ± std over seeds; the best value per algorithm in bold.
"""
THETA_VALIDATION = "θ_i accuracy (%), validation split"


def build(report: ReportInput) -> ReportOutput:
    sweeps = report.references.get("p1_sweeps") or {}
    swept = {v.experiment for sweep in sweeps.values() for v in sweep_values(sweep)}
    table2 = [(exp, alg) for exp, alg in report.cells if exp not in swept]
    rows = [row for exp, alg in table2 for row in seed_rows(report.results, exp, alg)]
    # Table 2 reports test accuracy; a cell scored otherwise is in the suite's results table
    accurate = {(r["experiment"], r["algorithm"]) for r in rows if r["metric"] == TEST_ACC.name}
    protocol = [row for exp, alg in table2 if (exp, alg) in accurate
                for row in protocol_rows(report.results, exp, alg)]
    parts: list[str] = []
    metrics: dict[str, Any] = {}
    numbers = table2_rows(report)
    if numbers:  # the headline: one protocol, fixed before the test split was read
        spec = report.references["table2_protocol"]
        causes = {c["column"]: c["explained"] for c in spec["columns"] if "explained" in c}
        parts += [TABLE2.format(label=TEST_ACC.label),
                  *table2_markdown(numbers, float(spec.get("tolerance", 3.0)), causes)]
        metrics["p1_table2"] = {f"{r['column']}/{r['algorithm']}": r["verdict"]
                                for r in numbers}
    elif "table2_protocol" in report.references and (
            why := off_protocol(report, report.references["table2_protocol"])):
        parts += ["### Table 2 under one protocol: the verdicts\n", why, ""]
    if accurate:
        table = summary_table(pd.DataFrame(rows), report.references)
        parts += [INTRO.format(label=TEST_ACC.label),
                  paper_layout(table[table["metric"] == TEST_ACC.name])]
    if protocol:
        official = summary_table(pd.DataFrame(official_rows(protocol, TEST_ACC.name)),
                                 report.references)
        parts += [PROTOCOL, OFFICIAL.format(label=TEST_ACC.label), paper_layout(official),
                  protocol_markdown(protocol)]
    written = [path for exp, algs in by_experiment(table2).items()
               for path in experiment_figures(report.results, exp, algs,
                                              report.params.experiment(exp).title,
                                              report.figures)]
    parts += diagnostic_section(report.results, "p1_model_space",
                                "Where the synthetic clusters are visible (k-means ARI)",
                                f"clusterfl diagnose p1-model-space --suite {report.params.suite}")
    # every sweep's frame is read once: the sensitivity section and the lr picks share them
    frames = {name: sweep_frame(report.results, sweep, set(report.cells))
              for name, sweep in sweeps.items()}
    text, figures, swept_metrics = sensitivity_section(sweeps, frames, report.figures)
    picks = validation_picks({n: f for n, f in frames.items()
                              if n.startswith(VALIDATION_SWEEPS) and not f.empty})
    if picks:
        text = [PICKS, picks_markdown(picks), *text]
        metrics["p1_table2_picks"] = {f"{r['sweep']}/{r['algorithm']}": {
            "pick": r["pick"], "interior": r["interior"]} for r in picks}
    return ReportOutput(markdown="\n".join(parts + text), figures=written + figures,
                        metrics={**metrics, **swept_metrics})


def sensitivity_section(sweeps: Mapping[str, Any], frames: Mapping[str, pd.DataFrame],
                        figures_dir: Path) -> tuple[list[str], list[Path], dict[str, Any]]:
    """A figure and a table per sweep with results (`frames`: each sweep's, by name);
    metrics.json's `p1_sensitivity`."""
    parts: list[str] = []
    figures: list[Path] = []
    metrics: dict[str, Any] = {}
    for name, sweep in sweeps.items():
        frame = frames[name]
        if frame.empty:
            continue
        best = best_labels(frame)
        path = figures_dir / f"p1_sensitivity_{name}.png"
        sensitivity_figure(frame, sweep["variable"], sweep.get("ylabel", THETA_VALIDATION),
                           f"P1 sensitivity: {sweep['title']}", path)
        figures.append(path)
        model = f"Model: {sweep['ylabel']}.\n\n" if "ylabel" in sweep else ""  # P1's own key
        parts += [f"#### {sweep['title']}\n",
                  model + sweep_markdown(frame, sweep["variable"], best),
                  f"Figure: `figures/{path.name}`.\n"]
        means = frame.groupby(["algorithm", "label"], sort=False)["value"].mean()
        metrics[name] = {"best": best, "values": {
            alg: {label: round(float(v), 4) for (a, label), v in means.items() if a == alg}
            for alg in best}}
    if parts:
        parts.insert(0, SENSITIVITY)
    return parts, figures, ({"p1_sensitivity": metrics} if metrics else {})
