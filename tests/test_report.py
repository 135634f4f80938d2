"""Report builder: mean curves over seeds, the Table-2 layout and the P1 figures."""

from pathlib import Path

import pandas as pd
import pytest

from clusterfl import figures
from clusterfl import report as rep
from clusterfl.history import RunHistory


def _write(results, exp, alg, seed, accs, clusters=None, ari=None):
    h = RunHistory()
    for r, acc in enumerate(accs, start=1):
        record = {"round": r, "test_acc": acc, "test_loss": 1.0, "train_loss": 2.0 / r}
        if ari is not None:
            record["ari"] = ari[r - 1]
        h.append(record, {"cluster": clusters[r - 1]} if clusters else None)
    h.write(results / exp / alg / f"seed{seed}")


def test_mean_curve_averages_seeds_and_keeps_clustering_metrics(tmp_path):
    _write(tmp_path, "e", "pfedkm_k2", 0, [0.5, 0.7], [[0, 1], [1, 1]], ari=[0.0, 1.0])
    _write(tmp_path, "e", "pfedkm_k2", 1, [0.7, 0.9], [[1, 1], [0, 0]], ari=[0.5, 1.0])
    curve = rep.mean_curve(tmp_path, "e", "pfedkm_k2")
    assert curve["test_acc"].tolist() == pytest.approx([60.0, 80.0])
    assert curve["test_acc_std"].tolist() == pytest.approx([10.0, 10.0])
    assert curve["ari"].tolist() == pytest.approx([0.25, 1.0])
    assert "kmeans_seconds" not in curve
    assert rep.assignments(tmp_path, "e", "pfedkm_k2").tolist() == [[0, 1], [1, 1]]  # seed 0
    _write(tmp_path, "e", "fedavg", 0, [0.5, 0.6])
    assert rep.assignments(tmp_path, "e", "fedavg") is None


def test_paper_layout_puts_ours_beside_the_papers_number():
    seeds = pd.DataFrame([
        {"experiment": "e1", "algorithm": "pfedme", "seed": s, "metric": "test_acc", "last": a,
         "best": a, "best_round": 3, "last_loss": 0.1} for s, a in [(0, 80.0), (1, 90.0)]
    ] + [{"experiment": "e2", "algorithm": "ifca_k2", "seed": 0, "metric": "test_acc",
          "last": 70.0, "best": 71.0, "best_round": 2, "last_loss": 0.2}])
    table = rep.summary_table(seeds, {"e1": {"values": {"pfedme": 79.21}}})
    assert table.loc[0, "diff_vs_paper"] == pytest.approx(85.0 - 79.21)
    lines = rep.paper_layout(table).splitlines()
    assert lines[0] == "| algorithm | e1 | e2 |"
    assert lines[2] == "| pfedme | 85.00 ± 5.00 (79.21) |  |"
    assert lines[3] == "| ifca_k2 |  | 70.00 ± 0.00 |"


def test_figures_are_written_only_when_there_is_something_to_draw(tmp_path):
    _write(tmp_path, "e", "pfedkm_k2", 0, [0.5, 0.7], [[0, 1], [1, 1]], ari=[0.0, 1.0])
    _write(tmp_path, "e", "fedavg", 0, [0.5, 0.6])
    curves = {alg: rep.mean_curve(tmp_path, "e", alg) for alg in ("pfedkm_k2", "fedavg")}
    figures.curves_figure("t", curves, tmp_path / "c.png")
    assert figures.clustering_figure("t", curves, tmp_path / "k.png")
    assert not figures.clustering_figure("t", {"fedavg": curves["fedavg"]}, tmp_path / "n.png")
    grid = rep.assignments(tmp_path, "e", "pfedkm_k2")
    assert figures.assignment_figure("t", {"pfedkm_k2": grid}, tmp_path / "a.png")
    assert not figures.assignment_figure("t", {}, tmp_path / "b.png")
    for name in ("c.png", "k.png", "a.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "n.png").exists() and not (tmp_path / "b.png").exists()


def test_report_stops_at_a_missing_cell_unless_partial(tmp_path, monkeypatch):
    import yaml
    from rich.console import Console

    from clusterfl.errors import UserError
    from pipeline import report as stage

    root = Path(__file__).resolve().parents[1]
    raw = yaml.safe_load((root / "params.yaml").read_text())
    raw["grid"] = {"p1": {"experiments": ["p1_synthetic_mlr"], "algorithms": ["fedavg", "local"]}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.chdir(tmp_path)
    for seed in (0, 1, 2):
        _write(tmp_path / "results", "p1_synthetic_mlr", "fedavg", seed, [0.5, 0.75])
    refs = root / "pipeline" / "references.yaml"
    with pytest.raises(UserError, match=r"results/p1_synthetic_mlr/local: missing.*--partial"):
        stage.run(Path("params.yaml"), Console(quiet=True), refs)
    assert not (tmp_path / "reports").exists()  # nothing half-written
    stage.run(Path("params.yaml"), Console(quiet=True), refs, partial=True)
    text = (tmp_path / "reports/tables/results.md").read_text()
    assert "left out: p1_synthetic_mlr/local." in text
    assert "| p1_synthetic_mlr | fedavg |" in text and "| local |" not in text
