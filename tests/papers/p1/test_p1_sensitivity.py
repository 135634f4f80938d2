"""P1's sensitivity section from hand histories: a two-point sweep gives its table (best
value per algorithm in bold), its figure and its metrics; a value read at a given round."""

import yaml

from clusterfl.papers import load_papers
from clusterfl.papers.p1.report import build
from clusterfl.papers.p1.report.sensitivity import value_at
from clusterfl.reports.section import ReportInput
from tests.reports.histories import StandInSuite, declare_primary, write_accuracy_run

SWEEP = {"two": {"title": "personal lr", "variable": "personal lr",
                 "algorithms": ["pfedme", "pfedkm_k4"], "round": 2,
                 "values": [{"label": "0.03", "experiment": "p1s_plr_0_03"},
                            {"label": "0.09", "experiment": "p1s_base"}]}}


def test_value_at_a_round_or_the_last():
    records = [{"round": 1, "a": 1.0}, {"round": 2, "a": 2.0}, {"round": 3, "a": 3.0}]
    assert [value_at(records, "a", r) for r in (1, 2, None)] == [1.0, 2.0, 3.0]


def test_a_two_point_sweep_gives_a_table_a_figure_and_the_best_value(tmp_path):
    results = tmp_path / "results"
    runs = {("p1s_plr_0_03", "pfedme"): ([0.5, 0.6, 0.1], [0.5, 0.8, 0.1]),
            ("p1s_base", "pfedme"): ([0.6, 0.5, 0.9], [0.6, 0.5, 0.9]),
            ("p1s_plr_0_03", "pfedkm_k4"): ([0.2, 0.4, 0.0], [0.2, 0.4, 0.0]),
            ("p1s_base", "pfedkm_k4"): ([0.5, 0.9, 0.0], [0.5, 0.7, 0.0])}
    for (exp, alg), seeds in runs.items():
        for seed, accs in enumerate(seeds):
            write_accuracy_run(results, exp, alg, seed, accs)
            declare_primary(results / exp / alg / f"seed{seed}", "test_acc")
    papers = load_papers()
    references = yaml.safe_load(papers["p1"].references_file.read_text()) | {"p1_sweeps": SWEEP}
    cells = list(runs)
    out = build(ReportInput(StandInSuite(papers, [("p1", *c) for c in cells]), papers["p1"],
                            cells, results, tmp_path / "partitions", references,
                            tmp_path / "tables", tmp_path / "figures"))
    figure = tmp_path / "figures" / "p1_sensitivity_two.png"
    assert figure.exists() and figure in out.figures
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == [figure.name]
    text = out.markdown
    assert ("| personal lr | pfedme | pfedkm_k4 |\n|---|---|---|\n"
            "| 0.03 | **70.00 ± 10.00** | 40.00 ± 0.00 |\n"
            "| 0.09 | 50.00 ± 0.00 | **80.00 ± 10.00** |\n") in text
    # sweep points are not Table 2's cells: no Table 2 layout is drawn from them
    assert "Table 2 as P1's text describes it" not in text and "p1s_base |" not in text
    assert out.metrics == {"p1_sensitivity": {"two": {
        "best": {"pfedme": "0.03", "pfedkm_k4": "0.09"},
        "values": {"pfedme": {"0.03": 70.0, "0.09": 50.0},
                   "pfedkm_k4": {"0.03": 40.0, "0.09": 80.0}}}}}


def test_a_sweep_naming_its_model_says_so_above_its_table(tmp_path):
    results = tmp_path / "results"
    cells = [("p1fs_base", "pfedme"), ("p1fs_lr_0_02", "pfedme")]
    for (exp, alg), accs in zip(cells, ([0.5, 0.6], [0.7, 0.8]), strict=True):
        write_accuracy_run(results, exp, alg, 0, accs)
        declare_primary(results / exp / alg / "seed0", "test_acc")
    sweep = {"lr": {"title": "F-MNIST lr", "variable": "lr", "algorithms": ["pfedme"],
                    "ylabel": "local w_i accuracy (%), validation split",
                    "values": [{"label": "0.005", "experiment": "p1fs_base"},
                               {"label": "0.02", "experiment": "p1fs_lr_0_02"}]}}
    papers = load_papers()
    references = yaml.safe_load(papers["p1"].references_file.read_text()) | {"p1_sweeps": sweep}
    out = build(ReportInput(StandInSuite(papers, [("p1", *c) for c in cells]), papers["p1"],
                            cells, results, tmp_path / "partitions", references,
                            tmp_path / "tables", tmp_path / "figures"))
    assert ("#### F-MNIST lr\n\nModel: local w_i accuracy (%), validation split.\n\n"
            "| lr | pfedme |\n|---|---|\n| 0.005 | 60.00 ± 0.00 |\n"
            "| 0.02 | **80.00 ± 0.00** |\n") in out.markdown
    assert out.metrics["p1_sensitivity"]["lr"]["best"] == {"pfedme": "0.02"}
