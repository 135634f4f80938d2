"""The report stage's P2 (FedSoft) part: tables/p2_tables.md, the P2 figures and the P2
entries of metrics.json, for every cell of the suite whose runs record P2 arrays (holdout
matrices or importance weights), regression (MSE) or classification (accuracy %).
`report_p2` in `clusterfl` builds the tables; the distributions' names and the true mixtures
come from the partition files; the paper's numbers and the sweeps (Tables 5-6: which
experiment holds which value of a FedSoft setting) from references.yaml."""

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from clusterfl import figures_p2
from clusterfl import report_p2 as p2
from clusterfl import report_sweeps as sweeps
from clusterfl.config import Params
from clusterfl.partition import Partition, load_partition
from pipeline.common import RESULTS, partition_file

INTRO = """# P2 (FedSoft): cluster models, baselines, importance weights

Last round, mean ± std over seeds; MSE for regression experiments (lower is better), accuracy \
in % for classification experiments (higher is better). Cluster-model matrices: rows are \
held-out test distributions, column j the center that the Hungarian matching (per seed, on \
the holdout matrix) assigns to distribution j; the paper's number in brackets, its centers \
matched the same way. Experiments on data the paper did not use show the numbers of the \
experiment they stand in for apart, labelled with the paper's dataset.
"""

# (sweep name, its references entry, [(value label, experiment, that experiment's cell)])
Sweep = tuple[str, Mapping[str, Any], list[tuple[str, str, list[p2.SeedResult]]]]


class P2Report:
    def __init__(self, params: Params, curves: Mapping[tuple[str, str], pd.DataFrame]) -> None:
        self.params = params
        self.cells: dict[str, dict[str, list[p2.SeedResult]]] = {}
        for exp, alg in curves:
            if p2.is_soft_cell(RESULTS, exp, alg):
                self.cells.setdefault(exp, {})[alg] = p2.read_cell(RESULTS, exp, alg)
        self.experiments = list(self.cells)
        self._partitions: dict[tuple[str, int], Partition] = {}

    def _partition(self, exp: str, seed: int) -> Partition:
        """Each partition file is read once: tables, sweeps, metrics and figures all ask."""
        key = (self.params.experiment(exp).partition, seed)
        if key not in self._partitions:
            self._partitions[key] = load_partition(partition_file(*key))
        return self._partitions[key]

    def _names(self, exp: str) -> list[str]:
        seeds = next(iter(self.cells[exp].values()))
        return list(self._partition(exp, seeds[0].seed).distributions)

    def _method(self, alg: str) -> str:
        return self.params.algorithm(alg).method

    def markdown(self, references: Mapping[str, Any]) -> str:
        parts = [INTRO]
        for exp in self.experiments:
            parts += self._experiment(exp, p2.paper_reference(references, exp))
        sweep_refs = references.get("p2_sweeps") or {}
        for name, sweep, points in self._sweeps(sweep_refs):
            parts += self._sweep(sweep, points, p2.paper_reference(sweep_refs, name))
        return "\n".join(parts)

    def _experiment(self, exp: str, paper: p2.PaperRef | None) -> list[str]:
        names = self._names(exp)
        parts = [f"## {self.params.experiment(exp).title} (`{exp}`)\n"]
        if paper is not None and paper.stand_in:
            parts.append(f"No paper numbers for this dataset: it stands in for "
                         f"`{paper.stand_in_for}`, whose paper numbers are shown apart, "
                         f"labelled \"{paper.label}\".\n")
        for alg, seeds in self.cells[exp].items():
            have = [s for s in seeds if s.holdout is not None and s.match is not None]
            if not have:
                continue
            mine = paper if self._method(alg) == "fedsoft" else None  # the paper's are FedSoft's
            own = (mine is not None and not mine.stand_in
                   and f"holdout_{have[0].metric.name}" in mine.entry)
            source = f", paper: {mine.entry['source']}" if own and "source" in mine.entry else ""
            parts.append(f"### {alg}: cluster models on held-out sets{source}\n")
            parts.append(p2.cluster_markdown(names, have, mine))
        parts.append("### FedSoft vs baselines (Table 2 shape)\n")
        parts.append(p2.baseline_markdown(self.cells[exp], names, paper))
        return parts

    def _sweeps(self, sweep_refs: Mapping[str, Any]) -> Iterator[Sweep]:
        """The sweeps of which at least one value has results; values without are left out."""
        for name, sweep in sweep_refs.items():
            alg = sweep["algorithm"]
            points = [(str(v["label"]), v["experiment"], self.cells[v["experiment"]][alg])
                      for v in sweep["values"] if alg in self.cells.get(v["experiment"], {})]
            if points:
                yield name, sweep, points

    def _sweep(self, sweep: Mapping[str, Any], points: list[tuple[str, str, list]],
               paper: p2.PaperRef | None) -> list[str]:
        names, metric = self._names(points[0][1]), points[0][2][0].metric
        which = ", ".join(f"{sweep['variable']} = {label}: `{exp}`" for label, exp, _ in points)
        return [f"## Sweep: {sweep['title']}\n",
                f"`{sweep['algorithm']}`; rows: each distribution's matched center (c̄) and the "
                f"local models on their own training data (w̄), {metric.unit}. {which}.\n",
                sweeps.sweep_block(sweep["variable"], names, [label for label, _, _ in points],
                                   [sweeps.sweep_column(seeds, len(names))
                                    for _, _, seeds in points],
                                   paper, metric)]

    def figures(self, out: Path) -> None:
        for exp in self.experiments:
            title, cells = self.params.experiment(exp).title, self.cells[exp]
            first = next(iter(cells.values()))[0].seed
            part = self._partition(exp, first)
            if part.mixture is not None:
                figures_p2.importance_figure(title, cells, part.mixture, part.distributions[0],
                                             out / f"{exp}_importance.png")
                self._evolution(exp, title, out / f"{exp}_evolution.png")
            figures_p2.mixture_error_figure(title, cells, out / f"{exp}_mixture_mae.png")

    def _evolution(self, exp: str, title: str, path: Path) -> None:
        """Fig. 1 of FedSoft's first seed (the paper draws FedSoft), if FedSoft ran here."""
        alg = next((a for a in self.cells[exp] if self._method(a) == "fedsoft"), None)
        if alg is None:
            return
        seed = self.cells[exp][alg][0]
        part = self._partition(exp, seed.seed)
        figures_p2.evolution_figure(f"{title}, {alg}", seed, list(part.distributions),
                                    part.mixture, path)

    def metrics(self, references: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """{experiment: {algorithm: P2 numbers}}; a sweep's cells also carry, under
        `sweeps`, their value and its row of the sweep table."""
        out = {exp: p2.metrics(cells) for exp, cells in self.cells.items()}
        for name, sweep, points in self._sweeps(references.get("p2_sweeps") or {}):
            names = self._names(points[0][1])
            for label, exp, seeds in points:
                column = sweeps.sweep_column(seeds, len(names))
                row = sweeps.sweep_metrics(names, column, seeds[0].metric)
                out[exp][sweep["algorithm"]].setdefault("sweeps", {})[name] = {
                    "variable": sweep["variable"], "value": label, **row}
        return out
