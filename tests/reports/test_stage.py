"""The report stage on the built-in papers: a missing cell stops it unless `partial`, what it
writes where, and a failing paper section leaving the previous report whole."""

import json
from dataclasses import replace

import pytest
from rich.console import Console

from clusterfl.core.errors import UserError
from clusterfl.papers import load_papers
from clusterfl.reports.section import ReportInput, ReportOutput
from pipeline import report as stage
from tests.reports.histories import StandInSuite, write_accuracy_run

EXP = "p1_synthetic_mlr"


@pytest.fixture
def dirs(tmp_path):
    """results/<suite>, data/<suite>/partitions, reports/<suite>, as the stage is wired."""
    return (tmp_path / "results/s", tmp_path / "data/s/partitions", tmp_path / "reports/s")


def _suite(*algorithms: str) -> StandInSuite:
    return StandInSuite(load_papers(), [("p1", EXP, alg) for alg in algorithms])


def test_report_stops_at_a_missing_cell_unless_partial(dirs):
    results, partitions, reports = dirs
    for seed in (0, 1, 2):
        write_accuracy_run(results, EXP, "pfedme", seed, [0.5, 0.75])
    suite = _suite("pfedme", "local")
    with pytest.raises(UserError, match=rf"results/s/{EXP}/local: missing.*--partial"):
        stage.run(suite, Console(quiet=True), results, partitions, reports)
    assert not reports.exists()  # nothing half-written
    stage.run(suite, Console(quiet=True), results, partitions, reports, partial=True)
    text = (reports / "tables/results.md").read_text()
    assert f"left out: {EXP}/local." in text
    assert f"| {EXP} | pfedme | test accuracy (%) | 79.21 (P1 Table 2, Syn MLR) |" in text
    assert "| local |" not in text and "[P1 pFedKM" in text  # the section is linked
    section = (reports / "tables/p1.md").read_text()
    assert section.startswith("# P1 pFedKM")
    assert "| pfedme | 75.00 ± 0.00 (79.21) |" in section
    assert f"- [{EXP}_curves.png](../figures/{EXP}_curves.png)" in section
    assert (reports / f"figures/{EXP}_curves.png").exists()
    assert (reports / "figures/convergence.png").exists()
    curve = (reports / f"curves/test_acc/{EXP}__pfedme.csv").read_text().splitlines()
    assert curve[0].startswith("round,test_acc,") and curve[2].startswith("2,75.0,")
    seeds = (reports / "tables/seeds.csv").read_text().splitlines()
    assert len(seeds) == 4 and seeds[1].startswith(f"{EXP},pfedme,0,test_acc,75.0,75.0,2,")
    assert json.loads((reports / "metrics.json").read_text()) == {
        EXP: {"pfedme": {"last_acc": 75.0, "best_acc": 75.0}}}


def failing_build(report: ReportInput) -> ReportOutput:
    (report.tables / "half.md").write_text("half a table")
    raise RuntimeError("a paper's report failed")


def test_a_failing_paper_section_leaves_the_last_report_whole(dirs):
    results, partitions, reports = dirs
    write_accuracy_run(results, EXP, "pfedme", 0, [0.5, 0.75])
    suite = _suite("pfedme")
    stage.run(suite, Console(quiet=True), results, partitions, reports)
    before = {p: p.read_bytes() for p in reports.rglob("*") if p.is_file()}
    suite.papers["p1"] = replace(suite.papers["p1"],
                                 report="tests.reports.test_stage:failing_build")
    with pytest.raises(RuntimeError, match="failed"):
        stage.run(suite, Console(quiet=True), results, partitions, reports)
    assert {p: p.read_bytes() for p in reports.rglob("*") if p.is_file()} == before


def test_a_cell_of_an_unknown_paper_is_a_user_error(dirs):
    suite = StandInSuite(load_papers(), [("p9", EXP, "fedavg")])
    with pytest.raises(UserError, match="paper 'p9'"):
        stage.run(suite, Console(quiet=True), *dirs)
