"""P3's (mmFL) section of the suite report. First Table 1's shape for every setup run under
several losses (`table1`: dataset x method x modality rows, loss and accuracy per loss
function, the paper's numbers in rows of their own where the data is the paper's, none for a
stand-in). Then per experiment: every method's final test loss and accuracy per modality (the
paper's numbers for that loss beside where it has them), Figs. 2-5's shapes, the
distribution of the selected rates, the four Sec. 3.2 claims with our numbers
(`claims`), each decided again on the experiment's replicate (`p3_rep_<name>`, another deal
of the data to the clients) where the suite ran it, and which rate each selection cell's
copies chose before and after its scored round (`chosen`). Where an experiment has a validation
experiment (references.yaml `rate_selection`), every cell with a twin there is scored at the
round picked on validation (`rounds`), its replicate too. Runs are read from history.json
(`test_acc_<modality>` etc., written by the `p3_modalities` evaluator; `selected_lr` arrays by
the algorithms)."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from clusterfl.engine.losses import LOSSES
from clusterfl.papers.p3.report.chosen import chosen_table
from clusterfl.papers.p3.report.claims import (
    REPLICATE,
    Replicate,
    claims_section,
    fixed_rates,
    replicate_of,
)
from clusterfl.papers.p3.report.plots import bars_figure, curves_figure, rates_figure
from clusterfl.papers.p3.report.rounds import (
    ScoredRound,
    edge_cells,
    finals_at,
    rounds_table,
    scored_rounds,
)
from clusterfl.papers.p3.report.selection import Selection, Variant, select, selection_table
from clusterfl.papers.p3.report.table1 import LOSS_TITLES, loss_groups, loss_of, table1
from clusterfl.reports.runs import by_experiment, read_cell
from clusterfl.reports.section import ReportInput, ReportOutput
from clusterfl.reports.tables import markdown_table, mean_std
from clusterfl.training.history import Divergence, divergence

META = ("mmfl", "unimodal_meta_fl")
FIG4_PAIR = ["unimodal_meta_fl", "mmfl"]  # the same grid and T_temp: only the head differs


def read_experiment(results: Path, exp: str, algs: list[str]) -> tuple[
        dict[str, dict[str, np.ndarray]], dict[str, np.ndarray], list[str],
        dict[str, list[Divergence | None]]]:
    """(curves: alg -> metric -> [seeds, rounds], selected rates: alg -> [seeds, rounds,
    clients] of every cell that records the rate its copies chose, modality names, and each
    such cell's seeds' divergence or None, `chosen.py`) of one experiment's cells, each
    history read once."""
    curves: dict[str, dict[str, np.ndarray]] = {}
    selected: dict[str, np.ndarray] = {}
    diverged: dict[str, list[Divergence | None]] = {}
    modalities: list[str] = []
    for alg in algs:
        seeds = read_cell(results, exp, alg)
        if not seeds:
            continue
        keys = [k for k in seeds[0].records[0] if k.startswith(("test_acc", "test_loss"))]
        curves[alg] = {k: np.array([[r[k] for r in s.records] for s in seeds]) for k in keys}
        modalities = modalities or [k.removeprefix("test_acc_") for k in keys
                                    if k.startswith("test_acc_")]
        if "selected_lr" in seeds[0].arrays:
            selected[alg] = np.array([s.arrays["selected_lr"] for s in seeds], dtype=float)
            diverged[alg] = [divergence(s.records) for s in seeds]
    return curves, selected, modalities, diverged


def experiment_table(finals: Mapping[str, Mapping[str, list[float]]], modalities: list[str],
                     paper: Mapping[tuple[str, str], list[float]]) -> list[str]:
    """One experiment's every method: final test loss and accuracy per modality, and the
    paper's [loss, accuracy] for this loss function beside where `paper` has the row."""
    header = ["method", "modality", "loss", "accuracy (%)"]
    if paper:
        header += ["paper loss", "paper accuracy (%)"]
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
                 out: Path, exp: str, meta: str = "mmfl") -> list[Path]:
    """Figs. 2-5's shapes and the selected rates, those with runs to draw; the files.
    `meta`: the mmFL cell the claims score (Fig. 3 sets the fixed rates against it)."""
    acc = [f"test_acc_{m}" for m in modalities]
    path = {name: out / f"{exp}_{name}.png" for name in ("fig2", "fig3", "fig4", "fig5",
                                                           "rates", "rounds")}
    drawn = {
        "fig2": curves_figure(curves, ["standalone", "unimodal_fl"], acc,
                              f"Fig. 2 shape, {title}: standalone vs FL", path["fig2"]),
        "fig3": meta in curves and curves_figure(
            curves, [*fixed_rates(finals), meta], ["test_acc"],
            f"Fig. 3 shape, {title}: fixed rates vs meta", path["fig3"]),
        # a pair, drawn only where both ran: one bar alone compares nothing
        "fig4": all(a in finals for a in FIG4_PAIR) and bars_figure(
            finals, FIG4_PAIR, acc, f"Fig. 4 shape, {title}: unimodal meta-FL vs mmFL",
            path["fig4"]),
        "fig5": bars_figure(finals, list(finals), ["test_acc", *acc],
                            f"Fig. 5 shape, {title}: all methods", path["fig5"]),
        "rates": rates_figure(selected, f"Selected rates, {title}", path["rates"]),
        "rounds": curves_figure(curves, list(finals), ["test_acc"],
                                f"Test accuracy per round, {title}: every method",
                                path["rounds"]),
    }
    return [path[name] for name, done in drawn.items() if done]


def paper_rows(refs: Mapping[str, Any], group: Mapping[str, str]
               ) -> tuple[dict[tuple[str, str], dict[str, list[float]]], str | None]:
    """(algorithm, modality) -> loss -> [loss, accuracy %] of the paper's Table 1 for a loss
    group (references.yaml `table1`, keyed by any of the group's experiments), and its
    source; empty and None for a stand-in."""
    ref = next((refs[e] for e in group.values() if e in refs), None)
    if ref is None:
        return {}, None
    rows = {(r["algorithm"], r["modality"]): {k: v for k, v in r.items() if k in LOSSES}
            for r in ref.get("rows", [])}
    return rows, str(ref["source"])


def rate_selection(report: ReportInput, exp: str, read: Mapping[str, Any],
                   rounds: Mapping[str, ScoredRound]) -> tuple[Selection | None, list[str]]:
    """`exp`'s rates chosen on its validation experiment (references.yaml `rate_selection`,
    `selection.py`) at the `rounds` picked there, and the Markdown that shows both; (None,
    []) where it names none."""
    spec = (report.references.get("rate_selection") or {}).get(exp)
    if not spec:
        return None, []
    validation = str(spec["validation"])
    if validation not in read:
        return None, [f"Rates not yet chosen: the validation experiment `{validation}` has not "
                      "run, so the claims below compare the rates the suite ran.", ""]
    grids = {cell: tuple(report.params.algorithm(cell).hyper.rates)
             for cell in spec.get("grids", [])}
    hypers = {cell: report.params.algorithm(cell).hyper for cell in spec.get("settings", [])}
    variants = {cell: Variant(tuple(h.rates), int(h.temp_steps), float(h.holdout_fraction))
                for cell, h in hypers.items()}
    selection = select(validation, read[validation][3], spec["families"], grids, variants)
    return selection, [*rounds_table(validation, rounds), "", *selection_table(selection), ""]


def picked_rounds(references: Mapping[str, Any], curves: Mapping[str, Any]
                  ) -> dict[str, dict[str, ScoredRound]]:
    """experiment -> its cells' rounds picked on validation (`rounds.py`), for every
    experiment references.yaml `rate_selection` gives a validation experiment that ran: the
    experiment, its validation experiment and its replicate alike."""
    out: dict[str, dict[str, ScoredRound]] = {}
    for exp, spec in (references.get("rate_selection") or {}).items():
        validation = str(spec["validation"])
        if validation in curves:
            picked = scored_rounds(curves[validation])
            out |= {e: picked for e in (exp, validation, replicate_of(exp))}
    return out


def build(report: ReportInput) -> ReportOutput:
    parts: list[str] = []
    figures: list[Path] = []
    metrics: dict[str, Any] = {}
    refs = report.references.get("table1") or {}
    raw = {exp: read_experiment(report.results, exp, algs)
           for exp, algs in by_experiment(report.cells).items()}
    rounds = picked_rounds(report.references, {e: r[0] for e, r in raw.items() if r[0]})
    read = {exp: (curves, selected, modalities, finals_at(curves, rounds.get(exp, {})))
            for exp, (curves, selected, modalities, _) in raw.items() if curves}
    validations = {str(spec["validation"]) for spec in
                   (report.references.get("rate_selection") or {}).values()}
    # a replicate is read only through its trials experiment's claims and table
    replicates = {e: Replicate(finals=read[e][3], modalities=read[e][2])
                  for e in list(read) if e.startswith(REPLICATE)}
    for e in replicates:
        del read[e]
    groups = loss_groups([report.params.experiment(e) for e in read if e not in validations])
    for group in groups:  # Table 1's shape: one setup under several losses
        if len(group) < 2:
            continue
        first = next(iter(group.values()))
        paper, source = paper_rows(refs, group)
        kind = (f"the paper's data; the paper's numbers ({source}) in the rows 'paper'"
                if source else "a stand-in dataset: no paper numbers beside it")
        parts += [f"### Table 1's shape: {report.params.experiment(first).title}", "",
                  f"Final round, test split, mean ± std over seeds; experiments "
                  f"{', '.join(f'{LOSS_TITLES[k]}: `{e}`' for k, e in group.items())} "
                  f"({kind}):", "",
                  *table1({k: read[e][3] for k, e in group.items()}, read[first][2], paper),
                  ""]
    for exp, (curves, selected, modalities, finals) in read.items():
        experiment = report.params.experiment(exp)
        if exp in validations:  # scored on validation data: no claims, no figures
            parts += [f"### {experiment.title}", "", "Validation split, each cell at its "
                      "round picked here, mean ± std over seeds (what the rates below are "
                      "chosen on):", "",
                      *experiment_table(finals, modalities, {}), ""]
            continue
        loss = loss_of(experiment)
        group = next(g for g in groups if g.get(loss) == exp)
        paper, source = paper_rows(refs, group)
        kind = (f"the paper's data; paper numbers from {source} ({LOSS_TITLES[loss]})"
                if source else "a stand-in dataset: no paper numbers beside it")
        scored = ("Round picked on validation (a cell without a validation twin: its last)"
                  if exp in rounds else "Final round")
        parts += [f"### {experiment.title}", "", f"{scored}, {LOSS_TITLES[loss]} loss, "
                  f"mean ± std over seeds ({kind}):", "",
                  *experiment_table(finals, modalities,
                                    {k: v[loss] for k, v in paper.items() if loss in v}), ""]
        selection, shown = rate_selection(report, exp, read, rounds.get(exp, {}))
        # the rates of the headline cells and of the mmFL cell the claims score
        meta = (selection.meta if selection else None) or "mmfl"
        figures += draw_figures(curves, finals, {a: v for a, v in selected.items()
                                                 if a in {*META, meta}},
                                modalities, experiment.title, report.figures, exp, meta)
        again = replicates.get(replicate_of(exp))
        parts += ["", *shown, *claims_section(finals, modalities, report.references, exp,
                                               selection, again,
                                               edge_cells(rounds.get(exp, {}))), ""]
        if again:
            parts += [f"The replicate `{replicate_of(exp)}`: {scored.lower()}, mean ± std "
                      "over seeds:", "", *experiment_table(again.finals, again.modalities, {}),
                      ""]
        parts += chosen_table(selected, {a: r.round for a, r in rounds.get(exp, {}).items()},
                              raw[exp][3])
        metrics |= {f"p3/{exp}/{a}/test_acc": float(np.mean(f["test_acc"]))
                    for a, f in finals.items()}
    return ReportOutput(markdown="\n".join(parts) + "\n", metrics=metrics, figures=figures)
