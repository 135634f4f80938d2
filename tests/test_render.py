"""`clusterfl render`: every committed dvc.yaml is what its suite's grid and the import graph
render to, a stale one is refused by the report stage, and the code deps it derives keep
training apart from report code and from other papers. The files say nothing a stage can
derive: DVC expands each to exactly the stages of one full item per cell."""

import subprocess
import sys
from pathlib import Path

import yaml

from clusterfl.run.config import load_params
from pipeline.imports import closure
from pipeline.render import CLI, Code, cell_loop, compact_items, dvc_file, stages, suite_files
from tests.workspace import dvc_stages

ROOT = Path(__file__).resolve().parents[1]


def test_every_committed_dvc_yaml_is_current():
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "render", "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every suite's dvc.yaml is current" in proc.stdout + proc.stderr


def test_train_can_reach_no_report_code_and_no_paper_but_the_loaded_one():
    code = Code(ROOT)
    reached = code.reach("train")
    assert not {m for m in reached if m.startswith(("clusterfl.reports", "clusterfl.papers."))}
    p5 = closure(code.modules, ["clusterfl.papers.p5"])
    assert {m for m in p5 if m.startswith("clusterfl.papers.")} <= {
        m for m in code.modules if m.startswith(("clusterfl.papers.p5.training",))
    } | {"clusterfl.papers.p5"}
    assert "clusterfl.reports" in {m.rsplit(".", 1)[0] for m in code.reach("report")}
    assert CLI in reached


def test_a_suite_of_several_papers_gets_one_report_stage_per_paper_on_its_cells_alone():
    code = Code(ROOT)
    paper = stages(load_params(ROOT / "suites/paper/params.yaml"), ROOT, code)["stages"]
    assert [s for s in paper if s.startswith("report")] == [
        "report", "report_p1", "report_p2", "report_p3", "report_p4", "report_p5"]
    p5 = paper["report_p5"]
    assert p5["cmd"] == "clusterfl report --suite paper --paper p5"
    results = [d for d in p5["deps"] if d.startswith("results/")]
    # 6 experiments x 5 algorithms, 4 x 4, the hard draw's 2 x 5, its replicate draw's 2 x 4,
    # the convergence sets' replicate draw 2 x 5, and issue 37's ablations: 4 x 1 (SNCP's
    # twin), 4 x 3 (warm starts), 2 x 1 (Fig. 1(b)'s Q-hat) (suites/paper/params.yaml's P5 grid)
    assert len(results) == 30 + 16 + 10 + 8 + 10 + 4 + 12 + 2
    assert all(d.startswith("results/paper/p5_") for d in results)
    assert results[:2] == ["results/paper/p5_syn_unf/sncp", "results/paper/p5_syn_unf/kmeanspp"]
    assert [d for d in p5["deps"] if d.startswith("data/")] == [
        f"data/paper/partitions/{p}" for p in ("p5_syn_unf", "p5_syn_noniid",
                                               "p5_mnist_subset_bals", "p5_mnist_subset_ubls",
                                               "p5_fmnist_bals", "p5_fmnist_ubls",
                                               "p5_syn_unf_n2000_hard",
                                               "p5_syn_noniid_n2000_hard",
                                               "p5_rep_syn_unf_n2000_hard",
                                               "p5_rep_syn_noniid_n2000_hard",
                                               "p5_rep_syn_unf", "p5_rep_syn_noniid")]
    assert not [d for d in p5["deps"] if "/papers/p1" in d or "/papers/p2" in d]
    assert p5["outs"] == [f"reports/paper/p5/{o}"
                          for o in ("tables", "figures", "curves", "index.html")]
    one = stages(load_params(ROOT / "suites/p5_reduced/params.yaml"), ROOT, code)["stages"]
    assert [s for s in one if s.startswith("report")] == ["report"]


def test_dvc_expands_every_committed_dvc_yaml_to_the_stages_of_full_items(tmp_path):
    """The compact loops (a matrix, derived fields) lose nothing: DVC's own parser gives the
    same stages, names and order as a `foreach` whose items carry every field, so every
    cell keeps its exact params and deps (and the committed locks their meaning)."""
    code = Code(ROOT)
    for suite in suite_files(ROOT):
        full = stages(load_params(suite), ROOT, code, compact=False)
        committed = yaml.safe_load(dvc_file(suite).read_text())
        expanded = dvc_stages(committed, tmp_path)
        assert list(expanded) == list(dvc_stages(full, tmp_path)), suite
        assert expanded == dvc_stages(full, tmp_path), suite
        assert committed["plots"] == full["plots"]


def test_a_full_grid_is_a_matrix_and_no_anchor_is_pyyamls():
    texts = {suite: dvc_file(suite).read_text() for suite in suite_files(ROOT)}
    assert not [s for s, text in texts.items() if "&id0" in text or "*id0" in text]
    benchmark = yaml.safe_load(texts[ROOT / "suites/benchmark/params.yaml"])["stages"]
    assert benchmark["tune"]["matrix"] is benchmark["train"]["matrix"]  # `*cells`
    assert len(benchmark["train"]["matrix"]["experiment"]) == 10
    assert "data/benchmark/partitions/${item.experiment}" in benchmark["train"]["deps"]
    default = yaml.safe_load(texts[ROOT / "params.yaml"])["stages"]["train"]
    assert default["foreach"]["p1_synthetic_mlr-fedavg"] == {
        "paper": "p1", "experiment": "p1_synthetic_mlr", "algorithm": "fedavg",
        "code": "src/clusterfl/algorithms/fedavg.py", "dataset": "p1_synthetic",
        "partition": "p1_synthetic"}
    assert "src/clusterfl/papers/${item.paper}/training" in default["do"]["deps"]


def test_compact_items_drop_what_is_constant_or_a_path_of_a_kept_field():
    def cell(paper: str, experiment: str, algorithm: str, partition: str) -> dict[str, str]:
        return {"paper": paper, "experiment": experiment, "algorithm": algorithm,
                "init": f"src/papers/{paper}/__init__.py", "seeds": "params.yaml",
                "partition": partition, "key": f"algorithms.{algorithm}"}

    items = {"e1-a": cell("p1", "e1", "a", "e1"), "e2-b": cell("p2", "e2", "b", "e2")}
    rows, fill = compact_items(items, ["experiment", "algorithm"])
    assert rows == {"e1-a": {"paper": "p1", "experiment": "e1", "algorithm": "a"},
                    "e2-b": {"paper": "p2", "experiment": "e2", "algorithm": "b"}}
    assert fill == {"init": "src/papers/${item.paper}/__init__.py", "seeds": "params.yaml",
                    "partition": "${item.experiment}", "key": "algorithms.${item.algorithm}"}
    items["e2-b"]["partition"] = "other"  # no longer the experiment's name in every item
    rows, fill = compact_items(items, ["experiment", "algorithm"])
    assert rows["e2-b"]["partition"] == "other" and "partition" not in fill


def test_the_cells_are_a_matrix_only_when_they_are_the_whole_grid_in_order():
    def cells(names: list[str]) -> dict[str, dict[str, str]]:
        return {n: dict(zip(("experiment", "algorithm"), n.split("-"), strict=True))
                for n in names}

    whole = ["e1-a", "e1-b", "e2-a", "e2-b"]
    loop, fill = cell_loop(cells(whole))
    assert loop == {"matrix": {"experiment": ["e1", "e2"], "algorithm": ["a", "b"]}}
    assert fill == {}
    for names in (whole[:3], [whole[1], whole[0], *whole[2:]]):  # a cell short, reordered
        loop, _ = cell_loop(cells(names))
        assert list(loop["foreach"]) == names
