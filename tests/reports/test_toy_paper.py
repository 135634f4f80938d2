"""A paper is an addition: a toy paper package written in a temporary directory (its own
metric, references.yaml and a `build` writing one table) joins the built-in papers, and the
report stage puts its table in the suite report, with no edit to any shared file."""

import json
import sys
from textwrap import dedent

import pytest
from rich.console import Console

from clusterfl.papers import BUILTIN, load_papers
from clusterfl.training.history import RunHistory
from pipeline import report as stage
from tests.reports.histories import StandInSuite, declare_primary, write_accuracy_run

PACKAGE = "toy_paper_for_report_test"

INIT = f'''
from pathlib import Path

from clusterfl.steps.metrics import METRICS, Metric, register
from clusterfl.papers import Paper

# a metric of the toy's own: a model-free method's objective, lower is better
if "toy_objective" not in METRICS:  # the registry outlives this test's import
    register(Metric("toy_objective", "toy objective", lower_is_better=True))

PAPER = Paper(key="toy", title="Toy paper: k-means without a model",
              directory=Path(__file__).parent, report="{PACKAGE}.report:build")
'''

REPORT = '''
from clusterfl.reports.section import ReportInput, ReportOutput
from clusterfl.reports.runs import seed_rows
from clusterfl.reports.tables import markdown_table, mean_std


def build(report: ReportInput) -> ReportOutput:
    rows = []
    for exp, alg in report.cells:
        last = [row["last"] for row in seed_rows(report.results, exp, alg)]
        paper = report.references[exp]["values"][alg]
        rows.append([exp, alg, mean_std(last), f"{paper:.2f}"])
    table = "\\n".join(markdown_table(["grid", "method", "objective", "toy paper"], rows)) + "\\n"
    (report.tables / "toy_objective.md").write_text(table)
    return ReportOutput(markdown="Toy Table 1\\n\\n" + table,
                        metrics={exp: {alg: {"toy_paper": 3.0}} for exp, alg in report.cells})
'''

REFERENCES = """
toy_grid:
  source: Toy Table 1
  values: {kmeans: 3.0}
"""


@pytest.fixture
def toy_package(tmp_path, monkeypatch):
    package = tmp_path / "papers" / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(dedent(INIT))
    (package / "report.py").write_text(dedent(REPORT))
    (package / "references.yaml").write_text(REFERENCES)
    monkeypatch.syspath_prepend(str(tmp_path / "papers"))
    yield PACKAGE
    for name in [m for m in sys.modules if m.startswith(PACKAGE)]:
        del sys.modules[name]


def _toy_run(results, seed: int, objective: list[float]) -> None:
    h = RunHistory()
    for r, value in enumerate(objective, start=1):
        h.append({"round": r, "toy_objective": value}, {"cluster": [0, 1, 1]})
    h.write(results / "toy_grid" / "kmeans" / f"seed{seed}")
    declare_primary(results / "toy_grid" / "kmeans" / f"seed{seed}", "toy_objective")


def test_a_toy_paper_package_joins_the_suite_report(tmp_path, toy_package):
    results, reports = tmp_path / "results/toy", tmp_path / "reports/toy"
    _toy_run(results, 0, [5.0, 3.5])
    _toy_run(results, 1, [4.0, 2.5])
    write_accuracy_run(results, "p1_synthetic_mlr", "pfedme", 0, [0.5, 0.75])
    papers = load_papers((*BUILTIN, toy_package))
    assert list(papers) == [*load_papers(BUILTIN), "toy"]
    suite = StandInSuite(papers, [("p1", "p1_synthetic_mlr", "pfedme"),
                                  ("toy", "toy_grid", "kmeans")])
    stage.run(suite, Console(quiet=True), results, tmp_path / "data/toy/partitions", reports)

    tables = reports / "tables"
    toy_table = ["| grid | method | objective | toy paper |", "|---|---|---|---|",
                 "| toy_grid | kmeans | 3.00 ± 0.50 | 3.00 |"]
    assert (tables / "toy_objective.md").read_text().splitlines() == toy_table
    section = (tables / "toy.md").read_text()
    assert section.startswith("# Toy paper: k-means without a model\n\nToy Table 1\n")
    assert "\n".join(toy_table) in section
    results_md = (tables / "results.md").read_text()
    assert "[Toy paper: k-means without a model](toy.md)" in results_md
    assert ("| toy_grid | kmeans | toy objective | 3.00 (Toy Table 1) | 3.00 ± 0.50 "
            "| last round | +0.00 | 3.00 ± 0.50 | 3.00 ± 0.50 | 2 | 2 |  |") in results_md
    assert (tables / "p1.md").exists() and not (tables / "p2.md").exists()  # no P2 cells
    metrics = json.loads((reports / "metrics.json").read_text())
    assert metrics["toy_grid"] == {"kmeans": {"last_toy_objective": 3.0,
                                              "best_toy_objective": 3.0, "toy_paper": 3.0}}
    curve = (reports / "curves/toy_objective/toy_grid__kmeans.csv").read_text().splitlines()
    assert curve == ["round,toy_objective,toy_objective_std", "1,4.5,0.5", "2,3.0,0.5"]
