"""P1's `build`: Table 2's layout beside the paper's numbers, first under the official pFedMe
protocol (best round; local w_i where recorded), then θ_i at the last round, labelled; and
Figs. 1-5's shapes per experiment for the cells that have something to draw."""

import yaml

from clusterfl.papers import load_papers
from clusterfl.papers.p1.report import build
from clusterfl.reports.section import ReportInput
from tests.reports.histories import StandInSuite, write_accuracy_run

SYN, MNIST = "p1_synthetic_mlr", "p1_mnist_subset_dnn"


def test_p1_section_in_table_2_layout_with_its_figures(tmp_path):
    results = tmp_path / "results"
    for seed, accs in enumerate(([0.7, 0.8], [0.8, 0.9])):
        write_accuracy_run(results, SYN, "pfedkm_k3", seed, accs, [[0, 1], [1, 1]],
                           ari=[0.5, 1.0])
    write_accuracy_run(results, SYN, "fedavg", 0, [0.7, 0.6])  # best round 1, not the last
    write_accuracy_run(results, MNIST, "pfedkm_k3", 0, [0.9, 0.95], [[0, 0], [0, 1]])
    cells = [(SYN, "pfedkm_k3"), (SYN, "fedavg"), (MNIST, "pfedkm_k3")]
    papers = load_papers()
    paper = papers["p1"]
    out = build(ReportInput(StandInSuite(papers, [("p1", *c) for c in cells]), paper, cells,
                            results, tmp_path / "partitions",
                            yaml.safe_load(paper.references_file.read_text()),
                            tmp_path / "tables", tmp_path / "figures"))
    lines = out.markdown.splitlines()
    assert lines[0].startswith("Table 2 scored as the paper's numbers were measured, under "
                               "the official pFedMe protocol")
    header = [f"| algorithm | {SYN} | {MNIST} |", "|---|---|---|"]
    assert lines[2:6] == [*header, "| pfedkm_k3 | 85.00 ± 5.00 (81.88) | 95.00 ± 0.00 (92.98) |",
                          "| fedavg | 70.00 ± 0.00 |  |"]  # best rounds
    theta = lines.index(header[0], 6)
    assert lines[theta - 2].startswith("Table 2 as P1's text describes it")
    assert lines[theta + 2:theta + 4] == [
        "| pfedkm_k3 | 85.00 ± 5.00 (81.88) | 95.00 ± 0.00 (92.98) |",
        "| fedavg | 60.00 ± 0.00 |  |"]  # last rounds
    assert out.metrics == {}
    figures = tmp_path / "figures"
    assert out.figures == [figures / f"{SYN}_curves.png", figures / f"{SYN}_clustering.png",
                           figures / f"{SYN}_assignments.png", figures / f"{MNIST}_curves.png",
                           figures / f"{MNIST}_assignments.png"]
    assert sorted(figures.iterdir()) == sorted(out.figures)
