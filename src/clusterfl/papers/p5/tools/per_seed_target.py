"""P5's cost claims read with a target per seed (docs/p5.md): the numbers each method uploads
to come within 1 % of the better final objective of the pair *at that seed*, where the claims
table (`report/claims.py`) takes one target per pair. Reads the paper suite's histories
(`results/paper`, after `make paper-p5`); run from the repository root:
`python -m clusterfl.papers.p5.tools.per_seed_target`."""

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml

from clusterfl.papers.p5.report import traces
from clusterfl.papers.p5.report.claims import COST_WITHIN, Traces, cost_to_reach
from clusterfl.reports.section import ReportInput
from clusterfl.run.config import load_params

Trace = Sequence[tuple[float, float]]  # (cumulative upload, objective) per round
SUITE = Path("suites/paper/params.yaml")
# the Figs. 4-5 cells: (partial participation, full) per start of H, per set
PAIRS = {"random": {"syn": ("fedcgds_m10", "fedcgds_m100_q10"),
                    "mnist": ("fedcgds_m50_q10", "fedcgds_m100_q10")},
         "warm": {"syn": ("fedcgds_m10_warm", "fedcgds_m100_q10_warm"),
                  "mnist": ("fedcgds_m50_q10_warm", "fedcgds_m100_q10_warm")}}
SETS = ("p5_conv_syn_unf", "p5_conv_syn_noniid", "p5_conv_mnist_subset_ubls",
        "p5_conv_mnist_subset_bals")


def per_seed_costs(a: Sequence[Trace], b: Sequence[Trace]
                   ) -> tuple[list[float], list[float], int]:
    """(a's costs, b's costs, seeds that never got there): seed i of a and of b (the same
    initial point) against 1 % above the better of their two final objectives."""
    costs_a, costs_b, missed = [], [], 0
    for ta, tb in zip(a, b, strict=True):
        target = min(ta[-1][1], tb[-1][1]) * (1 + COST_WITHIN)
        (ua, ok_a), (ub, ok_b) = cost_to_reach(ta, target), cost_to_reach(tb, target)
        costs_a.append(ua)
        costs_b.append(ub)
        missed += (not ok_a) + (not ok_b)
    return costs_a, costs_b, missed


def kind(experiment: str) -> str:
    """Which PAIRS a set's cells come from: the synthetic sets' or MNIST's."""
    return "syn" if "syn" in experiment else "mnist"


def read_traces(results: Path) -> Traces:
    """The PAIRS cells' traces as the report reads them (`report.traces`, the claims' input)."""
    params = load_params(SUITE, load=())
    paper = params.paper("p5")
    cells = list(dict.fromkeys((exp, alg) for exp in SETS for pairs in PAIRS.values()
                               for alg in pairs[kind(exp)]))
    report = ReportInput(params, paper, cells, results, Path("data/paper/partitions"),
                         yaml.safe_load(paper.references_file.read_text()),
                         Path("reports/paper/p5/tables"), Path("reports/paper/p5/figures"))
    return traces(report)  # reads the cells' histories alone: nothing is written


def main(results: Path = Path("results/paper")) -> None:
    cells = read_traces(results)
    for exp in SETS:
        for start, pairs in PAIRS.items():
            a, b = pairs[kind(exp)]
            ca, cb, missed = per_seed_costs(cells[exp, a], cells[exp, b])
            ratios = ", ".join(f"{r:.2f}" for r in np.divide(cb, ca))
            print(f"{exp} {start}: {a} {np.mean(ca) / 1e6:.1f} ± {np.std(ca) / 1e6:.1f} M vs "
                  f"{b} {np.mean(cb) / 1e6:.1f} ± {np.std(cb) / 1e6:.1f} M; per seed "
                  f"{b}/{a} {ratios}; seeds that never got there: {missed}")


if __name__ == "__main__":
    main()
