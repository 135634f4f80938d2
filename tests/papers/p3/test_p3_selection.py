"""P3's open rates chosen on a validation experiment (`report/selection.py`): each family's
best rate, a grid edge flagged, mmFL's grid around the fixed pick, and the claims at the
picks in the report."""

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from clusterfl.papers.p3 import PAPER
from clusterfl.papers.p3.report import build
from clusterfl.papers.p3.report.selection import (
    Variant,
    bracketing_grid,
    pick_rate,
    pick_settings,
    rate_of,
    select,
    selection_table,
)
from clusterfl.reports.section import ReportInput
from tests.papers.p3.test_p3_report import experiment, write


def acc(*values: float) -> dict[str, list[float]]:
    return {"test_acc": list(values)}


def test_a_familys_rate_is_read_from_its_cell_names():
    assert rate_of("unimodal_fl_lr0_03", "unimodal_fl") == 0.03
    assert rate_of("mmfl_lr1_0", "mmfl") == 1.0
    assert rate_of("unimodal_fl", "unimodal_fl") is None
    assert rate_of("mmfl_rest", "mmfl") is None
    assert rate_of("unimodal_meta_fl", "unimodal_fl") is None


def test_the_best_mean_wins_and_a_pick_at_either_end_is_a_grid_edge():
    finals = {"standalone_lr0_03": acc(0.5, 0.7), "standalone_lr0_1": acc(0.8, 0.9),
              "standalone_lr0_3": acc(0.84, 0.84), "standalone_lr1_0": acc(0.2, 0.2),
              "standalone": acc(0.99, 0.99)}  # the schedule's rate: not in the grid
    pick = pick_rate(finals, "standalone")
    assert (pick.cell, pick.rate) == ("standalone_lr0_1", 0.1)
    assert pick.scores == pytest.approx({0.03: 60.0, 0.1: 85.0, 0.3: 84.0, 1.0: 20.0})
    assert not pick.at_edge
    finals["standalone_lr1_0"] = acc(0.9, 0.9)
    assert pick_rate(finals, "standalone").at_edge
    tie = {"mmfl_lr0_3": acc(0.5), "mmfl_lr0_1": acc(0.5)}
    assert pick_rate(tie, "mmfl").rate == 0.1  # a tie goes to the smaller rate
    assert pick_rate(finals, "centralized") is None


def test_mmfls_grid_is_the_first_that_holds_the_fixed_pick_strictly_inside():
    grids = {"mmfl_hi": (1.0, 0.3, 0.1), "mmfl_mid": (0.3, 0.1, 0.03),
             "mmfl": (0.1, 0.01, 0.001)}
    assert bracketing_grid(grids, 0.3) == "mmfl_hi"
    assert bracketing_grid(grids, 0.1) == "mmfl_mid"
    assert bracketing_grid(grids, 0.01) == "mmfl"
    assert bracketing_grid(grids, 1.0) is None
    selection = select("val", {"mmfl_lr0_1": acc(0.6), "mmfl_lr0_3": acc(0.7),
                               "mmfl_lr1_0": acc(0.1)}, ["mmfl", "standalone"], grids)
    assert selection.grid == "mmfl_hi" and selection.cell("mmfl") == "mmfl_lr0_3"
    assert selection.cell("standalone") is None
    assert selection_table(selection)[2:5] == [
        "| family | 0.1 | 0.3 | 1 | pick |", "|---|---|---|---|---|",
        "| mmfl | 60.00 | **70.00** | 10.00 | 0.3 |"]


def test_the_report_compares_each_method_at_its_rate_picked_on_validation(tmp_path: Path):
    results = tmp_path / "results"
    val = {"unimodal_fl_lr0_1": [(0.5, 0.5)] * 2, "unimodal_fl_lr0_3": [(0.7, 0.7)] * 2,
           "unimodal_fl_lr1_0": [(0.3, 0.3)] * 2,
           "standalone_lr0_1": [(0.8, 0.8)] * 2, "standalone_lr0_3": [(0.6, 0.6)] * 2,
           "standalone_lr1_0": [(0.3, 0.3)] * 2,
           "mmfl_lr0_1": [(0.6, 0.6)] * 2, "mmfl_lr0_3": [(0.7, 0.7)] * 2,
           "mmfl_lr1_0": [(0.3, 0.3)] * 2, "mmfl_hi": [(0.7, 0.7)] * 2}
    test = {"unimodal_fl_lr0_3": [(0.9, 0.9), (0.8, 0.8)], "standalone_lr0_1": [(0.6, 0.6)] * 2,
            "unimodal_fl_lr0_1": [(0.5, 0.5)] * 2, "standalone_lr0_3": [(0.95, 0.95)] * 2,
            "mmfl_hi": [(0.7, 0.7)] * 2, "mmfl": [(0.9, 0.9)] * 2,
            "mmfl_lr0_3": [(0.7, 0.7)] * 2, "mmfl_lr0_1": [(0.6, 0.6)] * 2}
    cells = []
    # every validation twin peaks at round 2 of 3 (its round 3 a point lower; a lower
    # round 1 than the finals only where the finals are above 0.25); the test runs gain 5
    # points at round 3, which the report never reads: it scores them at round 2
    for exp, runs, after in (("p3_watch_val", val, -0.01), ("p3_watch", test, 0.05)):
        for alg, finals in runs.items():
            write(results, exp, alg, finals, after)
            cells.append((exp, alg))
    grids = {"mmfl_hi": (1.0, 0.3, 0.1), "mmfl_mid": (0.3, 0.1, 0.03), "mmfl": (0.1, 0.01, 0.001)}
    params = SimpleNamespace(experiment=experiment, algorithm=lambda name: SimpleNamespace(
        hyper=SimpleNamespace(rates=grids.get(name, grids["mmfl_hi"]), temp_steps=5,
                              holdout_fraction=0.2)))
    refs = yaml.safe_load(PAPER.references_file.read_text())
    md = build(ReportInput(params=params, paper=PAPER, cells=cells, results=results,
                           partitions=tmp_path, references=refs, tables=tmp_path / "t",
                           figures=tmp_path / "f")).markdown
    assert "| unimodal_fl | 50.00 | **70.00** | 30.00 | 0.3 |" in md
    assert "| unimodal_fl_lr0_3 | 2 | 3 | 70.00 | 69.00 |" in md  # the round picked there
    # 0.1 is the smallest rate run here: a pick there is flagged, the grid did not bracket it
    assert "| standalone | **80.00** | 60.00 | 30.00 | 0.1 (grid edge) |" in md
    assert "mmFL's candidate grid: `mmfl_hi`" in md
    # FL at its pick 0.3 (90, 80) against standalone at its pick 0.1 (60, 60), although
    # standalone at 0.3 (95, never picked on validation) would beat it: +30, +20 on the two
    # seeds, 25 ± 12.706 x 5, within noise
    assert ("at the rates picked on p3_watch_val (FL 0.3, standalone 0.1 (grid edge)): "
            "accelerometer: FL "
            "85.00 ± 5.00 vs standalone 60.00 ± 0.00") in md
    first = next(line for line in md.splitlines() if line.startswith("| fl_beats_standalone"))
    assert ("85.00 ± 5.00 vs standalone 60.00 ± 0.00, FL wins on 2 of 2 seeds, mean paired "
            "difference +25.00 points (95 % interval -38.53 to +88.53)") in first
    assert "| within noise |" in first
    # mmfl_hi ties mmfl_lr0_3 on both seeds (0 exactly) and beats mmfl_lr0_1 by 10 on both
    # only mmfl_hi ran on validation: its T_temp and |d| are not a pick
    assert ("grid around the fixed rate picked on p3_watch_val (0.3, T_temp 5, |d| 0.2|D|: the "
            "one variant run there, not picked there), every fixed rate run, beyond "
            "the paper's list (our reading): mmfl_hi 70.00 ± 0.00; "
            "mmfl_lr0_3 70.00 ± 0.00: mmfl_hi wins on 0 of 2 seeds, mean paired difference "
            "+0.00 points (zero spread: the interval is the value itself); mmfl_lr0_1 60.00 ± "
            "0.00: mmfl_hi wins on 2 of 2 seeds, mean paired difference +10.00 points (zero "
            "spread: the interval is the value itself) | within noise |") in md
    row = next(line for line in md.splitlines() if line.startswith("| mmfl_beats_others"))
    ours = row.split(" | ")[2]  # claim, paper, ours, verdict, ...
    assert "mmfl_hi 70.00 ± 0.00; best other unimodal_fl_lr0_3 85.00 ± 5.00" in ours
    assert "standalone_lr0_3" not in ours  # 95 % on test, but not picked on validation
    # the validation experiment: its table, no claims of its own
    val_part = md.split("### title p3_watch_val")[1].split("###")[0]
    assert "Validation split" in val_part and "| claim |" not in val_part


HI = (1.0, 0.3, 0.1)
VARIANTS = {"mmfl_hi": Variant(HI, 5, 0.2), "mmfl_hi_t2": Variant(HI, 2, 0.2),
            "mmfl_hi_t10": Variant(HI, 10, 0.2), "mmfl_hi_d0_1": Variant(HI, 5, 0.1),
            "mmfl_hi_d0_3": Variant(HI, 5, 0.3),
            "mmfl_mid_t2": Variant((0.3, 0.1, 0.03), 2, 0.2)}  # another grid's: never a pick


def test_t_temp_and_holdout_are_picked_for_the_bracketing_grid_and_edges_flagged():
    finals = {"mmfl_hi": acc(0.7, 0.8), "mmfl_hi_t2": acc(0.6, 0.6),
              "mmfl_hi_t10": acc(0.76, 0.86), "mmfl_hi_d0_1": acc(0.74, 0.74),
              "mmfl_mid_t2": acc(0.99, 0.99)}  # mmfl_hi_d0_3 did not run
    pick = pick_settings(finals, "mmfl_hi", HI, VARIANTS)
    assert pick.cell == "mmfl_hi_t10"  # +6 points on both seeds over T_temp 5: no plateau
    assert pick.scores == pytest.approx({"mmfl_hi": 75.0, "mmfl_hi_t2": 60.0,
                                         "mmfl_hi_t10": 81.0, "mmfl_hi_d0_1": 74.0})
    assert next(iter(pick.variants)) == "mmfl_hi"
    # T_temp 10 is the largest tried; |d| 0.2 is the largest tried here (0.3 did not run)
    assert pick.edges() == ["T_temp", "|d|"]
    assert pick.describe() == "T_temp 10 (grid edge), |d| 0.2|D| (grid edge)"
    finals |= {"mmfl_hi_d0_3": acc(0.5, 0.5), "mmfl_hi_t10": acc(0.7, 0.7)}
    centre = pick_settings(finals, "mmfl_hi", HI, VARIANTS)
    assert centre.cell == "mmfl_hi" and centre.edges() == []
    # equal means: the first listed wins
    tie = pick_settings({"mmfl_hi": acc(0.5), "mmfl_hi_t2": acc(0.5), "mmfl_hi_t10": acc(0.4)},
                        "mmfl_hi", HI, VARIANTS)
    assert tie.cell == "mmfl_hi"
    assert pick_settings({"mmfl_mid_t2": acc(0.9)}, "mmfl_hi", HI, VARIANTS) is None
    selection = select("val", {"mmfl_lr0_1": acc(0.6), "mmfl_lr0_3": acc(0.7),
                               "mmfl_lr1_0": acc(0.1), **finals}, ["mmfl"],
                       {"mmfl_hi": HI, "mmfl_mid": (0.3, 0.1, 0.03)}, VARIANTS)
    assert selection.grid == "mmfl_hi" and selection.meta == "mmfl_hi"
    table = selection_table(selection)
    assert "| mmfl_hi | 5 | 0.2 | **75.00** |" in table
    assert "| mmfl_hi_d0_3 | 5 | 0.3 | 50.00 |" in table
    assert table[-1] == "Pick: `mmfl_hi` (T_temp 5, |d| 0.2|D|)."


def test_the_claims_compare_mmfl_at_its_picked_settings(tmp_path: Path):
    from clusterfl.papers.p3.report.claims import check

    selection = select("val", {"mmfl_lr0_1": acc(0.6), "mmfl_lr0_3": acc(0.7),
                               "mmfl_lr1_0": acc(0.1), "mmfl_hi": acc(0.5, 0.5),
                               "mmfl_hi_t2": acc(0.6, 0.6), "mmfl_hi_t10": acc(0.55, 0.55)},
                       ["mmfl"], {"mmfl_hi": HI}, VARIANTS)
    assert selection.meta == "mmfl_hi_t2"
    cell = {"test_acc": [0.8, 0.9], "test_acc_a": [0.8, 0.9]}
    low = {"test_acc": [0.5, 0.6], "test_acc_a": [0.5, 0.6]}
    rows = [r for r in check({"mmfl_hi_t2": cell, "mmfl_lr0_3": low, "mmfl": low}, ["a"],
                             selection) if r.claim_id == "meta_beats_fixed"]
    assert rows[0].ours.startswith(
        "grid around the fixed rate picked on val (0.3, T_temp 2 (grid edge), |d| 0.2|D| "
        "picked there), every fixed rate run, beyond the paper's list (our reading): "
        "mmfl_hi_t2 85.00 ± 5.00; mmfl_lr0_3 55.00 ± 5.00: mmfl_hi_t2 wins on 2 "
        "of 2 seeds")
    # the pick's test cell missing: a row that says so, no verdict
    missing = [r for r in check({"mmfl_hi": cell, "mmfl_lr0_3": low}, ["a"], selection)
               if r.claim_id == "meta_beats_fixed"]
    assert missing[0].verdict == "not run" and "no test cell mmfl_hi_t2" in missing[0].ours


WIDE = {"mmfl_hi": Variant(HI, 5, 0.2), "mmfl_hi_t20": Variant(HI, 20, 0.2),
        "mmfl_hi_t40": Variant(HI, 40, 0.2), "mmfl_hi_t80": Variant(HI, 80, 0.2),
        "mmfl_hi_d0_1": Variant(HI, 5, 0.1), "mmfl_hi_d0_3": Variant(HI, 5, 0.3)}


def test_an_edge_within_noise_of_its_inner_neighbour_is_a_plateau_the_pick_steps_in():
    finals = {"mmfl_hi": acc(0.80, 0.82, 0.81), "mmfl_hi_t20": acc(0.82, 0.84, 0.83),
              "mmfl_hi_t40": acc(0.86, 0.87, 0.88), "mmfl_hi_t80": acc(0.88, 0.86, 0.885),
              "mmfl_hi_d0_1": acc(0.7, 0.7, 0.7), "mmfl_hi_d0_3": acc(0.7, 0.7, 0.7)}
    pick = pick_settings(finals, "mmfl_hi", HI, WIDE)
    # T_temp 80 has the best mean (87.5 against 87.0) at the top edge; against T_temp 40 per
    # seed +2, -1, +0.5: mean +0.5, sd 1.5, t(2) 4.303 x 1.5 / sqrt 3 = 3.73 -> the interval
    # holds 0 and the pick is 40, interior
    assert pick.cell == "mmfl_hi_t40" and pick.edges() == []
    assert pick.describe() == (
        "T_temp 40, |d| 0.2|D|; T_temp plateaued at the grid's edge: `mmfl_hi_t80` against "
        "`mmfl_hi_t40` wins on 2 of 3 seeds, mean paired difference +0.50 points (95 % "
        "interval -3.23 to +4.23)")
    # a last step that gains on every seed is no plateau: the edge stays, flagged
    finals["mmfl_hi_t80"] = acc(0.90, 0.91, 0.92)
    edge = pick_settings(finals, "mmfl_hi", HI, WIDE)
    assert edge.cell == "mmfl_hi_t80" and edge.edges() == ["T_temp"] and not edge.plateau


def test_one_variant_run_on_validation_is_not_a_pick_and_the_claims_say_so():
    """A suite that carries T_temp and |d| from another suite runs one variant: the report
    must not call its settings picked there."""
    from clusterfl.papers.p3.report.claims import check

    selection = select("val", {"mmfl_lr0_1": acc(0.6), "mmfl_lr0_3": acc(0.7),
                               "mmfl_lr1_0": acc(0.1), "mmfl_hi_t40": acc(0.8, 0.9)},
                       ["mmfl"], {"mmfl_hi": HI}, WIDE)
    assert selection.meta == "mmfl_hi_t40" and selection.settings is not None
    assert not selection.settings.picked and selection.settings.edges() == []
    assert selection_table(selection)[-1] == (
        "mmFL's T_temp and |d| are not chosen on `val`: only `mmfl_hi_t40` ran there for "
        "`mmfl_hi` (T_temp 40, |d| 0.2|D|; mean validation accuracy 85.00 % at its round "
        "picked there).")
    cell = {"test_acc": [0.8, 0.9], "test_acc_a": [0.8, 0.9]}
    low = {"test_acc": [0.5, 0.6], "test_acc_a": [0.5, 0.6]}
    row = next(r for r in check({"mmfl_hi_t40": cell, "mmfl_lr0_3": low}, ["a"], selection)
               if r.claim_id == "meta_beats_fixed")
    assert row.ours.startswith(
        "grid around the fixed rate picked on val (0.3, T_temp 40, |d| 0.2|D|: the one "
        "variant run there, not picked there), every fixed rate run")
    assert "picked there)" not in row.ours.replace("not picked there)", "")


def test_mmfl_beats_others_is_not_decided_while_a_fig5_method_has_not_run():
    from clusterfl.papers.p3.report.claims import check, fig5_missing

    def cell(*accs: float) -> dict[str, list[float]]:
        return {"test_acc": list(accs), "test_acc_a": list(accs)}

    finals = {"mmfl": cell(0.90, 0.92, 0.91), "mmfl_lr0_3": cell(0.80, 0.81, 0.79),
              "unimodal_fl": cell(0.70, 0.72, 0.69), "centralized": cell(0.60, 0.62, 0.61)}
    assert fig5_missing(["mmfl_lr0_3", "unimodal_fl", "centralized"]) == ["unimodal meta-FL"]
    assert fig5_missing(["unimodal_fl_lr0_3", "centralized_lr0_3", "mmfl_lr0_01",
                         "unimodal_meta_fl"]) == []
    row = next(r for r in check(finals, ["a"]) if r.claim_id == "mmfl_beats_others")
    # mmFL wins on every seed against the three run, but the fourth may be the one that wins
    assert row.verdict == ("not decided: unimodal meta-FL not run (the rule would say: holds)")
    assert row.ours.endswith("; not run: unimodal meta-FL")
    finals["unimodal_meta_fl"] = cell(0.50, 0.51, 0.52)
    full = next(r for r in check(finals, ["a"]) if r.claim_id == "mmfl_beats_others")
    assert full.verdict == "holds" and "not run" not in full.ours
