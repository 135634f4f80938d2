"""P2's (FedSoft) section of the suite report: for every P2 cell whose runs record P2 arrays
(holdout matrices or importance weights), regression (MSE) or classification (accuracy %),
the center x distribution tables, FedSoft vs the baselines, the sweeps (Tables 5-6) and the
P2 figures; for every P2 experiment the shared curves/clustering/assignment figures. The
distributions' names and the true mixtures come from the partition files (or their summaries
in reference results, `reports.mixtures`); the paper's
numbers and which experiments form a sweep from references.yaml."""

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from clusterfl.papers.p2.report import ablation, comparison, figures, sweeps, tables
from clusterfl.papers.p2.report.cells import SeedResult, cell_metrics, is_soft_cell, read_cell
from clusterfl.papers.p2.report.comparable import read_draw
from clusterfl.reports.diagnostics import diagnostic_section
from clusterfl.reports.figures import experiment_figures
from clusterfl.reports.mixtures import Mixtures, read_mixtures
from clusterfl.reports.runs import by_experiment
from clusterfl.reports.section import ReportInput, ReportOutput
from clusterfl.reports.sweeps import sweep_values

INTRO = """Last round, mean ± std over seeds; MSE for regression experiments (lower is better), \
accuracy in % for classification experiments (higher is better). Cluster-model matrices: rows \
are held-out test distributions, column j the center that the Hungarian matching (per seed, \
on the holdout matrix) assigns to distribution j; the paper's number in brackets, its centers \
matched the same way. Experiments on data the paper did not use show the numbers of the \
experiment they stand in for apart, labelled with the paper's dataset.
"""
NO_SOFT_CELLS = "No cell of this suite records P2's held-out matrices or importance weights.\n"

# (sweep name, its references entry, [(value label, experiment, that experiment's cell)])
Sweep = tuple[str, Mapping[str, Any], list[tuple[str, str, list[SeedResult]]]]


def build(report: ReportInput) -> ReportOutput:
    p2 = P2Report(report)
    written = [path for exp, algs in by_experiment(report.cells).items()
               for path in experiment_figures(report.results, exp, algs,
                                              report.params.experiment(exp).title,
                                              report.figures)]
    return ReportOutput(markdown=p2.markdown(), metrics=p2.metrics(),
                        figures=written + p2.figures(report.figures))


class P2Report:
    def __init__(self, report: ReportInput) -> None:
        self.params, self.partitions = report.params, report.partitions
        self.results = report.results
        self.references = report.references
        self.cells: dict[str, dict[str, list[SeedResult]]] = {}
        for exp, alg in report.cells:
            if is_soft_cell(report.results, exp, alg):
                self.cells.setdefault(exp, {})[alg] = read_cell(report.results, exp, alg)
        self._partitions: dict[tuple[str, int], Mixtures] = {}

    def _partition(self, exp: str, seed: int) -> Mixtures:
        """Each partition is read once: tables, sweeps, metrics and figures all ask."""
        name = self.params.experiment(exp).partition
        if (name, seed) not in self._partitions:
            self._partitions[(name, seed)] = read_mixtures(self.partitions, name, seed)
        return self._partitions[(name, seed)]

    def _names(self, exp: str) -> list[str]:
        seeds = next(iter(self.cells[exp].values()))
        return list(self._partition(exp, seeds[0].seed).distributions)

    def _is_fedsoft(self, alg: str) -> bool:
        return self.params.algorithm(alg).method == "fedsoft"

    def markdown(self) -> str:
        draws = diagnostic_section(
            self.results, "p2_draw_distance", "Off-diagonal MSE and the draw distance D",
            f"clusterfl diagnose p2-draws --suite {self.params.suite}")
        if not self.cells:
            return "\n".join([NO_SOFT_CELLS, *draws])
        parts = [INTRO]
        for exp in self.cells:
            parts += self._experiment(exp, tables.paper_reference(self.references, exp))
        sweep_refs = self.references.get("p2_sweeps") or {}
        for name, sweep, points in self._sweeps():
            parts += self._sweep(sweep, points, tables.paper_reference(sweep_refs, name))
        parts += comparison.section(self._synthetic_cells(), self.references)
        parts += self._ablation()
        return "\n".join(parts + draws)

    def _ablation(self) -> list[str]:
        """The participation/λ ablation's table, over the experiments that ran."""
        entry = self.references.get("p2_ablation")
        if not entry:
            return []
        names = {e for row in entry["partitions"].values() for e in row.values()}
        draws = {e: d for e in names & set(self.cells)
                 if (d := read_draw(self.params, e)) is not None}
        return ablation.section(entry, self.cells, draws)

    def _synthetic_cells(self) -> list[comparison.Cell]:
        """FedSoft's cells on the synthetic regression that the paper has numbers for, each
        with its draw."""
        matrices, local = comparison.paper_numbers(self.references)
        out = []
        for exp, cells in self.cells.items():
            alg = next((a for a in cells if self._is_fedsoft(a)), None)
            if alg is None or (exp not in matrices and exp not in local):
                continue
            seeds = [s for s in cells[alg] if s.holdout is not None and s.match is not None]
            draw = read_draw(self.params, exp) if seeds else None
            if draw is not None:
                out.append(comparison.Cell(exp, seeds, draw, self._names(exp)))
        return out

    def _experiment(self, exp: str, paper: tables.PaperRef | None) -> list[str]:
        names = self._names(exp)
        parts = [f"## {self.params.experiment(exp).title} (`{exp}`)\n"]
        if paper is not None and paper.stand_in:
            parts.append(f"No paper numbers for this dataset: it stands in for "
                         f"`{paper.stand_in_for}`, whose paper numbers are shown apart, "
                         f"labelled \"{paper.label}\".\n")
            note = (self.references.get(exp) or {}).get("note")
            if note:  # against the paper's ordering of the methods
                parts.append(f"Against the paper: {' '.join(str(note).split())}.\n")
        for alg, seeds in self.cells[exp].items():
            have = [s for s in seeds if s.holdout is not None and s.match is not None]
            if not have:
                continue
            mine = paper if self._is_fedsoft(alg) else None  # the paper's are FedSoft's
            own = (mine is not None and not mine.stand_in
                   and f"holdout_{have[0].measure.suffix}" in mine.entry)
            source = (f", paper: {mine.entry['source']}"
                      if own and mine is not None and "source" in mine.entry else "")
            parts.append(f"### {alg}: cluster models on held-out sets{source}\n")
            parts.append(tables.cluster_markdown(names, have, mine))
            if own and mine is not None and mine.entry.get("note"):  # the gap's explanation
                parts.append(f"Gap to the paper: {' '.join(str(mine.entry['note']).split())}.\n")
        parts.append("### FedSoft vs baselines (Table 2 shape)\n")
        parts.append(tables.baseline_markdown(self.cells[exp], names, paper))
        return parts

    def _sweeps(self) -> Iterator[Sweep]:
        """The sweeps of which at least one value has results; values without are left out."""
        for name, sweep in (self.references.get("p2_sweeps") or {}).items():
            alg = sweep["algorithm"]
            points = [(v.label, v.experiment, self.cells[v.experiment][alg])
                      for v in sweep_values(sweep) if alg in self.cells.get(v.experiment, {})]
            if points:
                yield name, sweep, points

    def _sweep(self, sweep: Mapping[str, Any], points: list[tuple[str, str, list]],
               paper: tables.PaperRef | None) -> list[str]:
        names, measure = self._names(points[0][1]), points[0][2][0].measure
        which = ", ".join(f"{sweep['variable']} = {label}: `{exp}`" for label, exp, _ in points)
        return [f"## Sweep: {sweep['title']}\n",
                f"`{sweep['algorithm']}`; rows: each distribution's matched center (c̄) and the "
                f"local models on their own training data (w̄), {measure.unit}. {which}.\n",
                sweeps.sweep_block(sweep["variable"], names, [label for label, _, _ in points],
                                   [sweeps.sweep_column(seeds, len(names))
                                    for _, _, seeds in points],
                                   paper, measure)]

    def figures(self, out: Path) -> list[Path]:
        """Figs. 1-2's shapes and the importance-weight error per experiment; files written."""
        written = []
        for exp, cells in self.cells.items():
            title = self.params.experiment(exp).title
            part = self._partition(exp, next(iter(cells.values()))[0].seed)
            path = out / f"{exp}_mixture_mae.png"
            if figures.mixture_error_figure(title, cells, path):
                written.append(path)
            if part.mixture is None:
                continue
            path = out / f"{exp}_importance.png"
            if figures.importance_figure(title, cells, part.mixture, part.distributions[0], path):
                written.append(path)
            path = out / f"{exp}_evolution.png"
            if self._evolution(exp, title, path):
                written.append(path)
        return written

    def _evolution(self, exp: str, title: str, path: Path) -> bool:
        """Fig. 1 of FedSoft's first seed (the paper draws FedSoft), if FedSoft ran here."""
        alg = next((a for a in self.cells[exp] if self._is_fedsoft(a)), None)
        if alg is None:
            return False
        seed = self.cells[exp][alg][0]
        part = self._partition(exp, seed.seed)
        assert part.mixture is not None  # FedSoft's partitions are mixtures
        return figures.evolution_figure(f"{title}, {alg}", seed, list(part.distributions),
                                        part.mixture, path)

    def metrics(self) -> dict[str, dict[str, Any]]:
        """{experiment: {algorithm: P2 numbers}}; a sweep's cells also carry, under
        `sweeps`, their value and its row of the sweep table."""
        out = {exp: cell_metrics(cells) for exp, cells in self.cells.items()}
        for name, sweep, points in self._sweeps():
            names = self._names(points[0][1])
            for label, exp, seeds in points:
                column = sweeps.sweep_column(seeds, len(names))
                row = sweeps.sweep_metrics(names, column, seeds[0].measure)
                out[exp][sweep["algorithm"]].setdefault("sweeps", {})[name] = {
                    "variable": sweep["variable"], "value": label, **row}
        return out
