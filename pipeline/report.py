"""Stage `report`: aggregate the active suite's run histories into tables and figures."""

from pathlib import Path

import pandas as pd
import yaml
from rich.console import Console

from clusterfl import figures
from clusterfl import report as rep
from clusterfl.config import load_params
from clusterfl.errors import UserError
from clusterfl.io import atomic_write_json, atomic_write_text
from pipeline import report_p2
from pipeline.common import REPORTS, RESULTS, cell_dir, is_skipped, output_dir

REFERENCES = Path("pipeline/references.yaml")


def run(params_path: Path, console: Console, references_path: Path = REFERENCES,
        partial: bool = False) -> None:
    """`partial`: leave out the suite's cells that have no results (listed in results.md)
    instead of stopping at the first, for a report on part of a suite run by hand."""
    params = load_params(params_path)
    references = yaml.safe_load(references_path.read_text()) or {}
    rows, curves, clusters, missing = [], {}, {}, []
    for exp, alg in params.cells():
        if not params.cell_in_suite(exp, alg):
            continue
        cell = cell_dir(exp, alg)
        if not cell.exists() or is_skipped(cell):
            if not partial:
                raise UserError(f"{cell}: missing; run `clusterfl train {exp} {alg}` first "
                                "(or report without it: --partial)")
            missing.append(f"{exp}/{alg}")
            continue
        rows += rep.seed_rows(RESULTS, exp, alg)
        curves[(exp, alg)] = rep.mean_curve(RESULTS, exp, alg)
        found = rep.assignments(RESULTS, exp, alg)
        if found is not None:
            clusters[(exp, alg)] = found
    if not rows:
        raise UserError(f"suite {params.suite!r}: no trained cells in grid")
    seeds = pd.DataFrame(rows)
    table = rep.summary_table(seeds, references)
    title = (f"# Results, suite `{params.suite}`\n\nThe model each client uses, on its "
             "clients' test splits, weighted by test samples: test accuracy (%) for "
             "classification cells, test MSE for regression cells (P2); mean ± std over "
             "seeds.\n\n")
    if missing:
        title += (f"Partial report: {len(missing)} cells of the suite have no results and are "
                  f"left out: {', '.join(missing)}.\n\n")
    p2 = report_p2.P2Report(params, curves)
    with output_dir(REPORTS / "tables") as out:
        atomic_write_text(out / "results.md", title + rep.markdown_table(table, references))
        atomic_write_text(out / "results.csv", table.to_csv(index=False))
        accuracy = table[table["metric"] == rep.PRIMARY]
        if len(accuracy):
            atomic_write_text(out / "paper_layout.md", title + rep.paper_layout(accuracy))
        atomic_write_text(out / "seeds.csv", seeds.to_csv(index=False))
        if p2.experiments:
            atomic_write_text(out / "p2_tables.md", p2.markdown(references))
    for folder, metric in (("curves", rep.PRIMARY), ("curves_regression", rep.PRIMARY_REGRESSION)):
        with output_dir(REPORTS / folder) as out:
            for (exp, alg), curve in curves.items():
                if rep.curve_metric(curve) == metric:
                    atomic_write_text(out / f"{exp}__{alg}.csv", curve.to_csv(index=False))
    with output_dir(REPORTS / "figures") as out:
        rep.convergence_figure(curves, out / "convergence.png")
        _experiment_figures(params, curves, clusters, out)
        p2.figures(out)
    metrics = rep.metrics_json(table)
    for exp, algs in p2.metrics(references).items():
        for alg, values in algs.items():
            metrics[exp][alg].update(values)
    atomic_write_json(REPORTS / "metrics.json", metrics)
    console.print(rep.markdown_table(table, references))
    console.print(f"wrote {REPORTS}/tables/results.md, {REPORTS}/figures/convergence.png")


def _experiment_figures(params, curves, clusters, out: Path) -> None:
    """P1 Figs. 1-5 per experiment: curves, clustering diagnostics, assignment colour map."""
    for exp in dict.fromkeys(e for e, _ in curves):
        title = params.experiment(exp).title
        mine = {alg: c for (e, alg), c in curves.items() if e == exp}
        figures.curves_figure(title, mine, out / f"{exp}_curves.png")
        figures.clustering_figure(title, mine, out / f"{exp}_clustering.png")
        figures.assignment_figure(
            title, {alg: a for (e, alg), a in clusters.items() if e == exp},
            out / f"{exp}_assignments.png")
