"""The rates mmFL's copies chose, before and after the scored round (report/chosen.py)."""

import numpy as np
import pytest

from clusterfl.papers.p3.report.chosen import chosen_table, shares
from clusterfl.training.history import Divergence

# 2 seeds, 4 rounds, 2 clients: 1.0 is never chosen up to round 2 and half the time after
SELECTED = np.array([[[0.3, 0.1], [0.3, 0.3], [1.0, 0.3], [1.0, 1.0]],
                     [[0.1, 0.1], [0.3, 0.1], [0.3, 0.3], [1.0, 0.3]]])


def test_shares_count_client_rounds_over_seeds_before_and_after_the_round():
    before, after = shares(SELECTED, 2)
    assert list(before) == [1.0, 0.3, 0.1]  # largest rate first
    assert before == pytest.approx({1.0: 0.0, 0.3: 4 / 8, 0.1: 4 / 8})
    assert after == pytest.approx({1.0: 4 / 8, 0.3: 4 / 8, 0.1: 0.0})
    whole, none = shares(SELECTED, 4)
    assert whole == pytest.approx({1.0: 4 / 16, 0.3: 8 / 16, 0.1: 4 / 16}) and none == {}


def test_the_table_shows_each_choosing_cell_at_its_scored_round_and_its_diverged_seeds():
    fixed = np.full((2, 4, 2), 0.3)  # one rate: nothing was chosen, no row
    lines = chosen_table({"mmfl_hi": SELECTED, "mmfl_lr0_3": fixed}, {"mmfl_hi": 2},
                         {"mmfl_hi": [None, Divergence(3, "test_loss", float("nan"))]})
    rows = [line for line in lines if line.startswith("| mmfl")]
    assert rows == ["| mmfl_hi | 2 of 4 | 1: 0.0 %, 0.3: 50.0 %, 0.1: 50.0 % | "
                    "1: 50.0 %, 0.3: 50.0 %, 0.1: 0.0 % | 1 of 2 (rounds 3) |"]
    # no twin: scored at its last round, nothing after it
    last = chosen_table({"mmfl_hi": SELECTED}, {}, {})
    assert "| mmfl_hi | 4 of 4 | 1: 25.0 %, 0.3: 50.0 %, 0.1: 25.0 % | – | 0 of 2 |" in last
    assert chosen_table({"mmfl_lr0_3": fixed}, {}, {}) == []
