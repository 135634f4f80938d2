"""The report stage's P2 (FedSoft) part: tables/p2_tables.md, the importance figures and the
P2 entries of metrics.json, for every regression experiment of the suite (`report_p2` in
`clusterfl` builds the tables; the true mixtures come from the partition files)."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from clusterfl import figures_p2
from clusterfl import report as rep
from clusterfl import report_p2 as p2
from clusterfl.config import Params
from clusterfl.partition import load_partition
from pipeline.common import RESULTS, partition_file


class P2Report:
    def __init__(self, params: Params, curves: Mapping[tuple[str, str], pd.DataFrame]) -> None:
        self.params = params
        self.cells: dict[str, dict[str, list[p2.SeedResult]]] = {}
        for (exp, alg), curve in curves.items():
            if rep.curve_metric(curve) == rep.PRIMARY_REGRESSION:
                self.cells.setdefault(exp, {})[alg] = p2.read_cell(RESULTS, exp, alg)
        self.experiments = list(self.cells)

    def _partition(self, exp: str, seed: int):
        return load_partition(partition_file(self.params.experiment(exp).partition, seed))

    def _names(self, exp: str) -> list[str]:
        seeds = next(iter(self.cells[exp].values()))
        return list(self._partition(exp, seeds[0].seed).distributions)

    def markdown(self, references: Mapping[str, Mapping[str, Any]]) -> str:
        parts = ["# P2 (FedSoft): cluster models, baselines, importance weights\n",
                 "Last round, mean ± std over seeds; MSE. Cluster-model matrices: rows are "
                 "held-out test distributions, column j the center that the Hungarian matching "
                 "(per seed, on the holdout MSE) assigns to distribution j; the paper's number "
                 "in brackets, its centers matched the same way.\n"]
        for exp in self.experiments:
            names, ref = self._names(exp), references.get(exp) or {}
            parts.append(f"## {self.params.experiment(exp).title} (`{exp}`)\n")
            for alg, seeds in self.cells[exp].items():
                have = [s for s in seeds if s.holdout is not None and s.match is not None]
                if not have:
                    continue
                fedsoft = self.params.algorithm(alg).method == "fedsoft"
                paper = ref.get("holdout_mse") if fedsoft else None
                source = f", paper: {ref['source']}" if paper and ref.get("source") else ""
                parts.append(f"### {alg}: cluster models on held-out sets{source}\n")
                parts.append(p2.table1_markdown(names, *p2.center_table(have), paper))
                parts.append("Center serving each distribution (Hungarian matching): " + "; ".join(
                    f"seed {s.seed}: {p2.matching_line(names, s.match)}" for s in have) + "\n")
            parts.append("### FedSoft vs baselines (Table 2 shape)\n")
            parts.append(p2.baseline_markdown(self.cells[exp], names))
        return "\n".join(parts)

    def figures(self, out: Path) -> None:
        for exp in self.experiments:
            title, cells = self.params.experiment(exp).title, self.cells[exp]
            first = next(iter(cells.values()))[0].seed
            part = self._partition(exp, first)
            if part.mixture is not None:
                figures_p2.importance_figure(title, cells, part.mixture, part.distributions[0],
                                             out / f"{exp}_importance.png")
            figures_p2.mixture_error_figure(title, cells, out / f"{exp}_mixture_mae.png")

    def metrics(self) -> dict[str, dict[str, Any]]:
        return {exp: p2.metrics(cells) for exp, cells in self.cells.items()}
