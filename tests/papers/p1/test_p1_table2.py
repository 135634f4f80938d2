"""P1 Table 2 under one protocol (issue 55): the lr pick and its edge check, each number's
verdict with exact inputs, and the paper suite's validated cells against the committed
validation runs (reference/p1_table2_val)."""

import math
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from clusterfl.papers.p1.report.table2 import (
    CLOSED,
    EXPLAINED,
    OPEN,
    Replicate,
    number_verdict,
    pick_lr,
    replicate_of,
    replicate_text,
    validation_picks,
)
from clusterfl.reports.verdicts import compare


def test_the_pick_is_the_best_mean_and_says_whether_it_is_interior():
    assert pick_lr([("0.005", 50.0), ("0.02", 80.0), ("0.05", 90.0), ("0.1", 85.0)]) == (
        "0.05", True)
    assert pick_lr([("0.005", 50.0), ("0.02", 80.0)]) == ("0.02", False)  # the upper edge
    assert pick_lr([("0.005", 95.0), ("0.02", 80.0), ("0.05", 70.0)]) == ("0.005", False)
    # a diverged point (NaN) never wins; equal means: the first in grid order
    assert pick_lr([("a", 1.0), ("b", math.nan), ("c", 1.0), ("d", 0.5)]) == ("a", False)
    assert pick_lr([("a", math.nan), ("b", 3.0), ("c", 1.0)]) == ("b", True)
    with pytest.raises(ValueError, match="diverged"):
        pick_lr([("a", math.nan)])


def test_a_number_is_closed_only_when_its_whole_interval_is_within_the_band():
    # mean 91, interval 91 ± t(0.975, 2) / sqrt(3) = 91 ± 2.484: inside [88, 94]
    verdict, how = number_verdict([90.0, 91.0, 92.0], 90.5, 3.0, False)
    assert verdict == CLOSED
    assert how == ("above: 3 of 3 seeds within [87.50, 93.50], ours 91.00 (95 % interval "
                   "88.52 to 93.48)")
    # the interval straddles 92 (the band's lower edge for P1's 95): open, and says so
    verdict, how = number_verdict([90.0, 91.0, 92.0], 95.0, 3.0, False)
    assert verdict == OPEN
    assert how.startswith("below: 1 of 3 seeds within [92.00, 98.00]")
    assert how.endswith("(the interval straddles the band)")
    # wholly outside: open; in a column with a measured cause: explained
    assert number_verdict([70.0, 71.0, 72.0], 91.0, 3.0, False)[0] == OPEN
    assert number_verdict([70.0, 71.0, 72.0], 91.0, 3.0, True)[0] == EXPLAINED
    # a number inside the band is closed even where a cause is given
    assert number_verdict([90.0, 91.0, 92.0], 91.0, 3.0, True)[0] == CLOSED


def test_a_replicate_cell_states_its_mean_its_verdict_and_where_it_flips():
    trials = compare([92.0, 93.0, 94.0], [91.0, 91.5, 92.0])  # +1.5 (+0.26 to +2.74): holds
    again = compare({0: 92.0, 1: 90.0, 2: 93.0}, {0: 91.0, 1: 91.0, 2: 92.0})  # +0.33 ± 2.87: noise
    row = {"verdict": EXPLAINED, "vs_pfedme": trials,
           "replicate": Replicate("p1_rep_x", {0: 92.0, 1: 90.0, 2: 93.0}, EXPLAINED, again)}
    assert replicate_text(row) == (
        "`p1_rep_x` 91.67 ± 1.25: explained (3 seeds); pFedKM vs pFedMe within noise "
        "(3 seeds): flips (trials: holds), wins on 2 of 3 seeds, mean paired difference "
        "+0.33 (95 % interval -2.54 to +3.20)")
    # a baseline's row: the number alone; a number whose verdict changes flips
    row = {"verdict": CLOSED, "replicate": Replicate("p1_rep_x", {0: 80.0, 1: 81.0}, OPEN, None)}
    assert replicate_text(row) == "`p1_rep_x` 80.50 ± 0.50: open (2 seeds): flips (trials: closed)"


def test_a_column_without_its_replicate_says_why():
    suite = SimpleNamespace(cells=[("p1_synthetic_mlr", "pfedme")],  # all it reads here
                            params=SimpleNamespace(suite="paper"))
    column = {"replicate_missing": "another deal: suite x", "replicate_suite": "x"}
    assert replicate_of(suite, column, "pfedme", 90.0, 3.0) == (
        "not run here: another deal: suite x")
    rep = SimpleNamespace(cells=suite.cells, params=SimpleNamespace(suite="x"))
    assert replicate_of(rep, column, "pfedme", 90.0, 3.0).startswith(
        "this suite's seeds are the replicate draw")
    assert replicate_of(suite, {"replicate": "p1_rep_synthetic_mlr"}, "pfedme", 90.0,
                        3.0) == "not run: the suite has no `p1_rep_synthetic_mlr`"


def test_validation_picks_per_algorithm_with_the_seed_count():
    frame = pd.DataFrame([
        {"label": lab, "algorithm": alg, "seed": s, "value": v}
        for alg, values in (("pfedme", {"0.005": 60, "0.02": 80, "0.05": 70}),
                            ("ifca_k2", {"0.005": 60, "0.02": 70, "0.05": 80}))
        for lab, v0 in values.items() for s, v in ((0, v0 - 1), (1, v0 + 1))])
    rows = validation_picks({"table2_lr_x": frame})
    assert [(r["algorithm"], r["pick"], r["interior"], r["seeds"]) for r in rows] == [
        ("pfedme", "0.02", True, 2), ("ifca_k2", "0.05", False, 2)]
    assert rows[0]["grid"] == ["0.005", "0.02", "0.05"]


def test_the_paper_suite_runs_each_dnn_cell_at_its_interior_validated_lr():
    """Every `p1_<data>_dnn_lr_<x>` cell of the paper suite runs the lr that the committed
    validation runs pick, and that pick is interior (the check of issue 55's protocol)."""
    from clusterfl.core.suite import suite_file
    from clusterfl.papers.p1.report.sensitivity import sweep_frame
    from clusterfl.reports.runs import histories_read_once
    from clusterfl.run.config import load_params
    from pipeline.reference import reference_dir, unpacked

    ref = reference_dir("p1_table2_val", "p1")
    references = yaml.safe_load(Path("src/clusterfl/papers/p1/references.yaml").read_text())
    paper = load_params(suite_file("paper"))
    columns = {c["validated"]: c for c in references["table2_protocol"]["columns"]
               if "validated" in c}
    with unpacked(ref / "histories") as tree, histories_read_once():
        cells = {(e.name, a.name) for e in tree.iterdir() if e.is_dir()
                 for a in e.iterdir()}
        frames = {name: sweep_frame(tree, sweep, cells)
                  for name, sweep in references["p1_sweeps"].items()
                  if name.startswith("table2_lr_")}
        picks = validation_picks(frames)
    assert picks and all(p["interior"] for p in picks), picks
    ran = [(c.experiment, c.algorithm) for c in paper.paper_cells("p1")
           if any(c.experiment.startswith(prefix) for prefix in columns)]
    assert len(ran) == sum(len(c["algorithms"]) for c in columns.values())
    for exp, alg in ran:
        sweep = next(c["validation"] for prefix, c in columns.items() if exp.startswith(prefix))
        mine = [p for p in picks if (p["sweep"], p["algorithm"]) == (sweep, alg)]
        assert len(mine) == 1, (exp, alg)
        assert paper.experiment(exp).schedule.lr == float(mine[0]["pick"]), (exp, alg)
