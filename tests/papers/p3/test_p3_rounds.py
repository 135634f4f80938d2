"""P3's scored round picked on validation (`report/rounds.py`): the round of the best mean,
each test cell read at its twin's round, and a claims row comparing a cell whose pick is the
last round run not decided."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from clusterfl.papers.p3 import PAPER
from clusterfl.papers.p3.report import build
from clusterfl.papers.p3.report.rounds import (
    ScoredRound,
    best_round,
    cells_of,
    finals_at,
    refuse_at_edge,
    scored_rounds,
)
from clusterfl.reports.section import ReportInput
from clusterfl.reports.verdicts import ClaimRow
from tests.papers.p3.test_p3_report import experiment, write


def test_the_best_mean_over_seeds_wins_and_the_earlier_of_equals():
    curve = np.array([[0.2, 0.6, 0.5, 0.6], [0.4, 0.8, 0.9, 0.8]])  # means .3 .7 .7 .7
    assert best_round(curve) == ScoredRound(2, 4, pytest.approx(70.0), pytest.approx(70.0))
    assert not best_round(curve).at_edge
    rising = np.array([[0.1, 0.2, 0.3]])
    assert best_round(rising).round == 3 and best_round(rising).at_edge


def test_each_cell_is_read_at_its_twins_round_the_last_without_one():
    validation = {"a": {"test_acc": np.array([[0.1, 0.9, 0.5]])},
                  "b": {"test_acc": np.array([[0.1, 0.2, 0.3]])}}
    rounds = scored_rounds(validation)
    assert {k: r.round for k, r in rounds.items()} == {"a": 2, "b": 3}
    test = {"a": {"test_acc": np.array([[0.3, 0.4, 0.6], [0.5, 0.7, 0.8]]),
                  "test_loss": np.array([[3.0, 2.0, 1.0], [3.0, 2.5, 2.0]])},
            "b": {"test_acc": np.array([[0.1, 0.2]])},  # shorter than its pick: its last
            "c": {"test_acc": np.array([[0.5, 0.1]])}}  # no twin: its last
    assert finals_at(test, rounds) == {"a": {"test_acc": [0.4, 0.7], "test_loss": [2.0, 2.5]},
                                       "b": {"test_acc": [0.2]}, "c": {"test_acc": [0.1]}}


def test_a_row_comparing_a_cell_picked_at_the_last_round_is_not_decided():
    assert cells_of("fl_beats_standalone/unimodal_fl_lr0_3/standalone_lr0_3") == [
        "unimodal_fl_lr0_3", "standalone_lr0_3"]
    assert cells_of("mmfl_beats_others/mmfl_hi/a+b") == ["mmfl_hi", "a", "b"]
    rows = [("fl_beats_standalone/f/s", ClaimRow("fl_beats_standalone", "x", "holds",
                                                 "holds (3 seeds)")),
            ("meta_beats_fixed/m/f+g", ClaimRow("meta_beats_fixed", "y", "within noise")),
            ("fl_beats_standalone/unrun", ClaimRow("fl_beats_standalone", "z", "not run"))]
    out = dict(refuse_at_edge(rows, {"s", "z"}))
    assert out["fl_beats_standalone/f/s"] == ClaimRow(
        "fl_beats_standalone", "x", "not decided: the round picked on validation for s is the "
        "last run (still rising); run longer (the rule would say: holds)",
        "not decided (would say: holds (3 seeds))")
    assert out["meta_beats_fixed/m/f+g"] == rows[1][1]  # no edge cell compared
    assert refuse_at_edge(rows[1:2], {"g"})[0][1].replicates == "not run"  # none to withhold
    assert out["fl_beats_standalone/unrun"] == rows[2][1]


def test_the_report_refuses_a_verdict_whose_round_is_still_rising(tmp_path: Path):
    """FL's validation twin still rises at its last round, standalone's peaks before: the FL
    row is not decided, and the test cells are read at the validation rounds."""
    results = tmp_path / "results"
    write(results, "p3_watch_val", "unimodal_fl_lr0_3", [(0.6, 0.6)] * 2, after=0.1)
    write(results, "p3_watch_val", "standalone_lr0_3", [(0.8, 0.8)] * 2, after=-0.1)
    write(results, "p3_watch", "unimodal_fl_lr0_3", [(0.9, 0.9), (0.8, 0.8)], after=0.05)
    write(results, "p3_watch", "standalone_lr0_3", [(0.6, 0.6)] * 2, after=0.3)
    cells = [(e, a) for e in ("p3_watch_val", "p3_watch")
             for a in ("unimodal_fl_lr0_3", "standalone_lr0_3")]
    refs = yaml.safe_load(PAPER.references_file.read_text())
    hyper = SimpleNamespace(rates=(1.0, 0.3, 0.1), temp_steps=5, holdout_fraction=0.2)
    params = SimpleNamespace(experiment=experiment,
                             algorithm=lambda name: SimpleNamespace(hyper=hyper))
    md = build(ReportInput(params=params, paper=PAPER,
                           cells=cells, results=results, partitions=tmp_path,
                           references=refs, tables=tmp_path / "t",
                           figures=tmp_path / "f")).markdown
    assert "Round picked on validation (a cell without a validation twin: its last)" in md
    assert "| unimodal_fl_lr0_3 | 3 (grid edge) | 3 | 70.00 | 70.00 |" in md
    assert "| standalone_lr0_3 | 2 | 3 | 80.00 | 70.00 |" in md
    row = next(line for line in md.splitlines() if line.startswith("| fl_beats_standalone"))
    # FL at round 3 (95, 85), standalone at round 2 (60, 60): the rule would say holds on
    # both modalities (2 of 2 seeds, +30 and +20 ... within noise at 2 seeds), not decided
    assert "FL 90.00 ± 5.00 vs standalone 60.00 ± 0.00" in row
    assert ("| not decided: the round picked on validation for unimodal_fl_lr0_3 is the last "
            "run (still rising); run longer (the rule would say: within noise) |") in row
