"""P5's cost claims read with a target per seed (docs/p5.md): the numbers each method uploads
to come within 1 % of the better final objective of the pair *at that seed*, where the claims
table (`report/claims.py`) takes one target per pair. Reads the paper suite's histories
(`results/paper`, after `make paper-p5`); run from the repository root:
`python -m clusterfl.papers.p5.tools.per_seed_target`."""

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from clusterfl.papers.p5.report.claims import COST_WITHIN, cost_to_reach
from clusterfl.papers.p5.training.metrics import OBJECTIVE, UPLOAD_TOTAL
from clusterfl.reports.runs import read_cell

Trace = Sequence[tuple[float, float]]  # (cumulative upload, objective) per round
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


def traces(results: Path, exp: str, alg: str) -> list[Trace]:
    return [[(r[UPLOAD_TOTAL.name], r[OBJECTIVE.name]) for r in h.records
             if OBJECTIVE.name in r and UPLOAD_TOTAL.name in r]
            for h in read_cell(results, exp, alg)]


def main(results: Path = Path("results/paper")) -> None:
    for exp in SETS:
        for start, pairs in PAIRS.items():
            a, b = pairs["syn" if "syn" in exp else "mnist"]
            ca, cb, missed = per_seed_costs(traces(results, exp, a), traces(results, exp, b))
            ratios = ", ".join(f"{r:.2f}" for r in np.divide(cb, ca))
            print(f"{exp} {start}: {a} {np.mean(ca) / 1e6:.1f} ± {np.std(ca) / 1e6:.1f} M vs "
                  f"{b} {np.mean(cb) / 1e6:.1f} ± {np.std(cb) / 1e6:.1f} M; per seed "
                  f"{b}/{a} {ratios}; seeds that never got there: {missed}")


if __name__ == "__main__":
    main()
