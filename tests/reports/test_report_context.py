"""The report says what it is (issue 38): its first lines name the suite, its cells, seeds,
rounds and data and link the committed paper-scale references; its results table scores a
P1 cell as P1's section does (θ_i at the last round; the official protocol's best round on
test only as context in the section); every gap to a paper carries a note; no table is a
header alone."""

import re
from pathlib import Path

import pytest
from rich.console import Console

from clusterfl.papers import load_papers
from clusterfl.training.history import RunHistory
from pipeline import report as stage
from tests.papers.p4.test_p4_report import header_only_tables
from tests.papers.p4.test_p4_report import write as write_p4
from tests.reports.histories import StandInSuite, write_accuracy_run

SUBSET = "p1_mnist_subset_dnn"  # P1 Table 2, MNIST DNN (full MNIST): pfedme 90.73


def write_views(results: Path, alg: str, seed: int, theta: list[float], local: list[float]):
    """A pFedMe/pFedKM run: θ_i is its primary metric, the local w_i a recorded view."""
    h = RunHistory(primary="test_acc")
    for r, (t, w) in enumerate(zip(theta, local, strict=True), start=1):
        h.append({"round": r, "test_acc": t, "test_loss": 1.0, "train_loss": 1.0,
                  "theta_test_acc": t, "local_w_test_acc": w})
    h.write(results / SUBSET / alg / f"seed{seed}")


@pytest.fixture
def report(tmp_path, monkeypatch):
    """A report at reports/s of a repository with P1's committed reference, the default
    suite's shape: 30 rounds against the experiments' own 100, a P1 and a P4 cell."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reference/paper/p1/report").mkdir(parents=True)
    (tmp_path / "reference/paper/p1/report/index.html").write_text("<html></html>\n")
    results = Path("results/s")
    for seed, (theta, local) in enumerate([([0.5, 0.7, 0.6], [0.8, 0.9, 0.85]),
                                           ([0.5, 0.6, 0.62], [0.8, 0.85, 0.95])]):
        write_views(results, "pfedme", seed, theta, local)
    for seed in (0, 1):
        write_accuracy_run(results, SUBSET, "fedavg", seed, [0.5, 0.75, 0.7])
    write_p4(results, "p4_fig1_n100", "pfl_tc", [5.0, 7.0])
    suite = StandInSuite(load_papers(), [("p1", SUBSET, "pfedme"), ("p1", SUBSET, "fedavg"),
                                         ("p4", "p4_fig1_n100", "pfl_tc")],
                         seeds=[0, 1], rounds=30, own_rounds=100)
    stage.run(suite, Console(quiet=True), results, Path("data/s/partitions"),
              Path("reports/s"))
    return Path("reports/s")


def _row(text: str, alg: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(f"| {SUBSET} | {alg} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_the_header_names_suite_seeds_rounds_data_and_links_the_references(report):
    text = (report / "tables/results.md").read_text()
    first = text.split("\n\n")[1]
    assert first.startswith("**This report:** suite `stand-in` "
                            "(`suites/stand-in/params.yaml`), 3 cells of p1, p4; 2 seeds (0, 1); "
                            "30 rounds (the suite's `training` override; the experiments' own "
                            "settings run 100); data: `digits` (real 8x8 digits (1,797)")
    # links from tables/ and from the page, each to the committed reference's page
    assert ("p1 [reference/paper/p1/report/](../../../reference/paper/p1/report/index.html)"
            in first)
    assert first.endswith("[docs/results.md](../../../docs/results.md) says why numbers differ "
                          "from the papers'.")
    page = (report / "index.html").read_text()
    assert '<a href="../../reference/paper/p1/report/index.html">' in page


def test_the_results_table_scores_p1_as_its_section_with_theta_beside_it(report):
    text = (report / "tables/results.md").read_text()
    pfedme = _row(text, "pfedme")
    # P1's protocol scores θ_i at the last round (61.00); the official protocol's best round
    # on test (local w_i: 92.50) is context in the section, never the table's number
    assert pfedme[4:8] == ["61.00 ± 1.00", "last round", "-29.73", "61.00 ± 1.00"]
    fedavg = _row(text, "fedavg")
    assert fedavg[4:6] == ["70.00 ± 0.00", "last round"]
    section = (report / "tables/p1.md").read_text()
    blocks = section.split("\n\n")
    assert blocks[2].startswith("Table 2's verdicts need P1's protocol")  # 30 rounds here
    assert "| pfedme | 61.00 ± 1.00 (90.73) |" in blocks[4]  # θ_i, last round
    official = section.split("Context, never a verdict")[1]
    assert "| pfedme | 92.50 ± 2.50 (90.73) |" in official
    assert "| fedavg | 75.00 ± 0.00 |" in official


def test_every_gap_to_the_paper_has_a_note_that_explains_it(report):
    text = (report / "tables/results.md").read_text()
    assert _row(text, "pfedme")[-1] == "1, 2" and _row(text, "fedavg")[-1] == ""  # no paper
    notes = text.split("Notes on the gaps to the papers:\n\n")[1].splitlines()
    assert notes[0] == ("1. scale: 30 rounds here, 100 in the experiment's own settings "
                        "(paper scale: [reference/paper/p1/report/]"
                        "(../../../reference/paper/p1/report/index.html))")
    assert notes[1].startswith("2. data: the paper's column is full MNIST (70,000 images)")


def test_no_table_of_the_report_is_a_header_alone(report):
    for path in [*(report / "tables").glob("*.md")]:
        assert header_only_tables(path.read_text()) == [], path
    assert "None of the paper's claims" in (report / "tables/p4.md").read_text()
    assert not re.search(r"<thead>.*?</thead>\s*</table>", (report / "index.html").read_text(),
                         re.S)


def test_a_report_of_the_reference_suite_links_its_own_run_as_such():
    from clusterfl.reports.context import Links, header

    suite = StandInSuite(load_papers(), [("p1", SUBSET, "pfedme")], suite="paper")
    text = header(suite, suite.cells, Links("../", {"p1": "reference/paper/p1/report"}))
    assert ("Its committed run: p1 [reference/paper/p1/report/]"
            "(../reference/paper/p1/report/index.html).") in text
    assert "The papers' own scale" not in text
    # outside the repository's layout: paths, no links
    assert "p1 `reference/paper/p1/report/`" in header(
        suite, suite.cells, Links(None, {"p1": "reference/paper/p1/report"}))


def test_a_side_suite_links_its_own_committed_run_beside_the_papers_scale(tmp_path):
    from clusterfl.reports.context import Links, header

    suite = StandInSuite(load_papers(), [("p1", SUBSET, "pfedme")], suite="paper_seeds10")
    refs = {"p1": "reference/paper/p1/report"}  # committed_references: the paper suite's
    alone = header(suite, suite.cells, Links("../", refs), root=tmp_path)
    assert "Its committed run" not in alone  # none committed for this suite yet
    page = tmp_path / "reference/paper_seeds10/p1/report/index.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html></html>")
    text = header(suite, suite.cells, Links("../", refs), root=tmp_path)
    assert ("Its committed run: p1 [reference/paper_seeds10/p1/report/]"
            "(../reference/paper_seeds10/p1/report/index.html). The papers' own scale, "
            "committed and rendered by this code: p1 [reference/paper/p1/report/]"
            "(../reference/paper/p1/report/index.html).") in text


def test_the_page_names_markdown_files_and_links_only_pages():
    from clusterfl.reports.context import Links, links_for

    refs = {"p1": "reference/paper/p1/report"}
    tables, page = links_for(Path("reports/default"), 1, refs), links_for(
        Path("reports/default"), 0, refs, page=True)
    assert tables.to("docs/results.md") == "[docs/results.md](../../../docs/results.md)"
    assert page.to("docs/results.md") == "`docs/results.md`"  # a browser shows .md as text
    assert page.reference("p1") == ("[reference/paper/p1/report/]"
                                    "(../../reference/paper/p1/report/index.html)")
    assert Links(None, refs, page=True).reference("p1") == "`reference/paper/p1/report/`"


def test_the_papers_scale_is_the_paper_suites_reference_where_it_has_one(tmp_path):
    from clusterfl.reports.context import committed_references

    for suite, key in [("p1_table2_val", "p1"), ("paper", "p1"), ("default", "p2"),
                       ("p3_watch", "p3"), ("zeta", "p3"), ("default", "p4")]:
        page = tmp_path / "reference" / suite / key / "report" / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("<html></html>")
    # p1: `paper` before the validation suite that sorts first; p3: no paper-suite reference,
    # the first suite by name; p2 and p4: the default snapshot is no paper-scale run
    assert committed_references(["p1", "p2", "p3", "p4"], tmp_path) == {
        "p1": "reference/paper/p1/report", "p3": "reference/p3_watch/p3/report"}
