"""P2's `build` on a suite's cells: the partition's distribution names and true mixtures,
the paper's matrix beside ours, the σ0 sweep, metrics and the figures it lists."""

import numpy as np
import yaml

from clusterfl.papers import load_papers
from clusterfl.papers.p2.report import NO_SOFT_CELLS, build
from clusterfl.partition import Partition
from clusterfl.partition.base import save_partition
from clusterfl.reports.section import ReportInput
from tests.papers.p2.histories import write_soft_run
from tests.reports.histories import StandInSuite

EXP = "p2_synth_random"  # paper matrix [[42.2, 60.6], [42.7, 27.0]]; σ0 = 10 of Table 6


def _report_input(tmp_path, cells):
    papers = load_papers()
    suite = StandInSuite(papers, [("p2", e, a) for e, a in cells], partitions={EXP: "part"})
    partitions = tmp_path / "partitions"
    for seed in (0, 1):
        save_partition(Partition(train=(np.arange(2), np.arange(2, 4)),
                                 test=(np.arange(1), np.arange(1, 2)),
                                 mixture=np.array([[0.1, 0.9], [0.9, 0.1]]),
                                 distributions=("theta0", "theta1")),
                       partitions / "part" / f"seed{seed}.npz")
    paper = papers["p2"]
    (tmp_path / "tables").mkdir()
    return ReportInput(suite, paper, cells, tmp_path / "results", partitions,
                       yaml.safe_load(paper.references_file.read_text()),
                       tmp_path / "tables", tmp_path / "figures")


def test_p2_section_from_a_suites_cells(tmp_path):
    results = tmp_path / "results"
    # matched: seed 0 theta0 -> c0, theta1 -> c1; seed 1 swapped (as in test_p2_tables)
    write_soft_run(results, "fedsoft", 0, [[30.0, 70.0], [80.0, 20.0]], [5.0, 4.0], [0.3, 0.1],
                   [[0.2, 0.8], [0.9, 0.1]], exp=EXP)
    write_soft_run(results, "fedsoft", 1, [[90.0, 10.0], [40.0, 50.0]], [7.0, 6.0], [0.5, 0.3],
                   [[0.7, 0.3], [0.4, 0.6]], exp=EXP)
    write_soft_run(results, "ifca_p2", 0, None, [9.0, 8.0], [0, 0], None, exp=EXP)
    out = build(_report_input(tmp_path, [(EXP, "fedsoft"), (EXP, "ifca_p2")]))
    lines = out.markdown.splitlines()
    assert "## title of p2_synth_random (`p2_synth_random`)" in lines
    assert "### fedsoft: cluster models on held-out sets, paper: P2 Table 1, synthetic, random" \
        in lines
    assert "| theta0 | 20.0 ± 10.0 (42.2) | 80.0 ± 10.0 (60.6) |" in lines
    assert "| theta1 | 65.0 ± 15.0 (42.7) | 30.0 ± 10.0 (27.0) |" in lines
    # the off-diagonal gap carries its explanation (references.yaml `note`)
    assert any(line.startswith("Gap to the paper: where our off-diagonal (losing-center) MSEs "
                               "exceed the paper's") and "p2-draws" in line for line in lines)
    assert "ifca_p2" not in out.markdown  # records no P2 arrays: in the results table only
    assert "| fedsoft | 20.00 ± 10.00 (0,1) | 30.00 ± 10.00 (1,0) | 4.00 ± 1.00 | 5.00 ± 1.00 " \
        "| 0.20 ± 0.10 |" in lines
    assert "## Sweep: P2 Table 6, synthetic, random, σ0 (the paper's values)" in lines
    assert "| center of theta0 | 20.0 ± 10.0 (42.2) |" in lines
    assert "| local w̄ | 4.00 ± 1.00 (4.96) |" in lines
    assert out.metrics == {EXP: {
        "fedsoft": {"local_train_mse": 4.0, "mixture_mae": 0.2, "sweeps": {
            "sigma0_synth_random": {"variable": "σ0", "value": "10", "matched_theta0": 20.0,
                                    "matched_theta1": 30.0, "local_train_mse": 4.0}}}}}
    assert sorted(p.name for p in out.figures) == sorted(
        f"{EXP}_{name}.png" for name in ("curves", "mixture_mae", "importance", "evolution"))
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in out.figures)


def test_p2_cells_without_p2_arrays_get_the_shared_figures_only(tmp_path):
    write_soft_run(tmp_path / "results", "ifca_p2", 0, None, [9.0, 8.0], [0, 0], None, exp=EXP)
    out = build(_report_input(tmp_path, [(EXP, "ifca_p2")]))
    assert out.markdown == NO_SOFT_CELLS and out.metrics == {}
    assert [p.name for p in out.figures] == [f"{EXP}_curves.png"]


def test_the_draw_distance_table_is_shown_when_diagnose_wrote_it(tmp_path):
    write_soft_run(tmp_path / "results", "ifca_p2", 0, None, [9.0, 8.0], [0, 0], None, exp=EXP)
    report = _report_input(tmp_path, [(EXP, "ifca_p2")])
    assert "draw distance" not in build(report).markdown
    (tmp_path / "results" / "diagnostics").mkdir()
    (tmp_path / "results" / "diagnostics" / "p2_draw_distance.md").write_text("| D | 1 |\n")
    lines = build(report).markdown.splitlines()
    assert lines[-5:] == ["## Off-diagonal MSE and the draw distance D", "",
                          "Written by `clusterfl diagnose p2-draws --suite stand-in`.", "",
                          "| D | 1 |"]
