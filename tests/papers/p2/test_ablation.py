"""P2's participation/λ ablation: the own-center excess, exactly, and its table."""

import numpy as np

from clusterfl.papers.p2.report import ablation
from clusterfl.papers.p2.report.cells import SeedResult
from clusterfl.papers.p2.report.comparable import Draw


def seed(holdout, match, n=0) -> SeedResult:
    return SeedResult(seed=n, measure=None, last={}, holdout=np.array(holdout, dtype=float),
                      match=np.array(match), importance=None, mixture_mae=[])


def test_own_center_excess_reads_each_distributions_matched_center():
    # distribution 0 on its center 3, distribution 1 on its center 2; D = 4 and 2, sigma^2 = 1
    assert ablation.own_center_excess(seed([[3, 9], [7, 2]], [0, 1]), [4, 2], 1.0) == 0.5
    # the matching swaps the centers: 9 and 7 are then the own-center MSEs
    assert ablation.own_center_excess(seed([[3, 9], [7, 2]], [1, 0]), [4, 2], 1.0) == 2.5


def test_section_one_row_per_partition_that_ran_with_the_baseline_beside_it():
    theta = np.array([[0.0, 0.0], [2.0, 0.0]])  # D = 4 on inputs e1, e1
    x = np.array([[1.0, 0.0], [1.0, 0.0]])
    draw = Draw(theta, 1.0, 1.0, (x, x))
    entry = {"title": "t", "algorithm": "fedsoft", "baseline": "fedem",
             "settings": ["base", "all"],
             "partitions": {"a": {"base": "e1", "all": "e2"}, "b": {"base": "e3", "all": "e4"}}}
    cells = {"e1": {"fedsoft": [seed([[2, 5], [5, 3]], [0, 1], 0),
                                seed([[4, 5], [5, 3]], [0, 1], 1)],
                    "fedem": [seed([[1, 5], [5, 1]], [0, 1])]},
             "e2": {"fedsoft": [seed([[1.4, 5], [5, 1.4]], [0, 1])]}}
    lines = ablation.section(entry, cells, {"e1": draw, "e2": draw})
    assert lines[0] == "## Ablation: t\n"
    # seed 0: ((2-1)/4 + (3-1)/4)/2 = 0.375; seed 1: (3/4 + 2/4)/2 = 0.625
    assert lines[-2] == "| a | 0.500 ± 0.125 | 0.100 ± 0.000 | 0.000 ± 0.000 |"
    assert not any(line.startswith("| b |") for line in lines)  # no results for b
    assert ablation.section(entry, {}, {}) == []
