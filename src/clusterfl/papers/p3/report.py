"""P3's (mmFL) section of the suite report, per experiment: Table 1's shape (method x
modality rows, final test loss and accuracy, the paper's cross-entropy numbers beside ours
where the experiment is on the paper's data, stand-ins apart), Figs. 2-5's shapes, the
distribution of the selected rates, and the four Sec. 3.2 claims with our numbers
(`claims`). Runs are read from history.json (`test_acc_<modality>` etc., written by the
`p3_modalities` evaluator; `selected_lr` arrays by the algorithms)."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from clusterfl.papers import ReportInput, ReportOutput
from clusterfl.papers.p3.claims import FIXED, claims_section
from clusterfl.papers.p3.plots import bars_figure, curves_figure, rates_figure
from clusterfl.reports.runs import by_experiment, read_cell
from clusterfl.reports.tables import markdown_table, mean_std

META = ("mmfl", "unimodal_meta_fl")


def read_experiment(results: Path, exp: str, algs: list[str]) -> tuple[
        dict[str, dict[str, np.ndarray]], dict[str, np.ndarray], list[str]]:
    """(curves: alg -> metric -> [seeds, rounds], selected rates: alg -> [seeds, rounds,
    clients], modality names) of one experiment's cells."""
    curves, selected, modalities = {}, {}, []
    for alg in algs:
        seeds = read_cell(results, exp, alg)
        if not seeds:
            continue
        keys = [k for k in seeds[0].records[0] if k.startswith(("test_acc", "test_loss"))]
        curves[alg] = {k: np.array([[r[k] for r in s.records] for s in seeds]) for k in keys}
        modalities = modalities or [k.removeprefix("test_acc_") for k in keys
                                    if k.startswith("test_acc_")]
        if "selected_lr" in seeds[0].arrays and alg in META:
            selected[alg] = np.array([s.arrays["selected_lr"] for s in seeds])
    return curves, selected, modalities


def table1(finals: Mapping[str, Mapping[str, list[float]]], modalities: list[str],
           paper: Mapping[tuple[str, str], list[float]]) -> list[str]:
    header = ["method", "modality", "loss", "accuracy (%)"]
    if paper:
        header += ["paper loss (CE)", "paper accuracy (%)"]
    rows = []
    for alg, f in finals.items():
        for m in modalities:
            row = [alg, m, mean_std(f[f"test_loss_{m}"], 4),
                   mean_std([100 * v for v in f[f"test_acc_{m}"]], 2)]
            if paper:
                ref = paper.get((alg, m))
                row += [f"{ref[0]:.4f}", f"{ref[1]:.2f}"] if ref else ["–", "–"]
            rows.append(row)
    return markdown_table(header, rows)


def draw_figures(curves: Any, finals: Any, selected: Any, modalities: list[str], title: str,
                 out: Path, exp: str) -> list[Path]:
    """Figs. 2-5's shapes and the selected rates, those with runs to draw; the files."""
    acc = [f"test_acc_{m}" for m in modalities]
    path = {name: out / f"{exp}_{name}.png" for name in ("fig2", "fig3", "fig4", "fig5",
                                                           "rates")}
    drawn = {
        "fig2": curves_figure(curves, ["standalone", "unimodal_fl"], acc,
                              f"Fig. 2 shape, {title}: standalone vs FL", path["fig2"]),
        "fig3": curves_figure(curves, [*FIXED, "mmfl"], ["test_acc"],
                              f"Fig. 3 shape, {title}: fixed rates vs meta", path["fig3"]),
        "fig4": bars_figure(finals, ["unimodal_meta_fl", "mmfl"], acc,
                            f"Fig. 4 shape, {title}: unimodal meta-FL vs mmFL", path["fig4"]),
        "fig5": bars_figure(finals, list(finals), ["test_acc", *acc],
                            f"Fig. 5 shape, {title}: all methods", path["fig5"]),
        "rates": rates_figure(selected, f"Selected rates, {title}", path["rates"]),
    }
    return [path[name] for name, done in drawn.items() if done]


def build(report: ReportInput) -> ReportOutput:
    parts: list[str] = []
    figures: list[Path] = []
    metrics: dict[str, Any] = {}
    refs = report.references.get("table1") or {}
    for exp, algs in by_experiment(report.cells).items():
        curves, selected, modalities = read_experiment(report.results, exp, algs)
        if not curves:
            continue
        finals = {a: {k: v[:, -1].tolist() for k, v in c.items()} for a, c in curves.items()}
        title = report.params.experiment(exp).title
        ref = refs.get(exp)
        paper = {(r["algorithm"], r["modality"]): r["cross_entropy"]
                 for r in (ref or {}).get("rows", [])}
        kind = (f"the paper's data; paper numbers from {ref['source']} (cross-entropy)"
                if ref else "a stand-in dataset: no paper numbers beside it")
        parts += [f"### {title}", "", f"Table 1's shape, final round, mean ± std over seeds "
                  f"({kind}):", "", *table1(finals, modalities, paper), ""]
        figures += draw_figures(curves, finals, selected, modalities, title,
                                report.figures, exp)
        parts += ["", *claims_section(finals, modalities, report.references, exp), ""]
        metrics |= {f"p3/{exp}/{a}/test_acc": float(np.mean(f["test_acc"]))
                    for a, f in finals.items()}
    return ReportOutput(markdown="\n".join(parts) + "\n", metrics=metrics, figures=figures)
