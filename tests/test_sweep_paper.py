"""`clusterfl sweep --paper`: one paper's cells of a suite, and only the download and
partition stages that feed them (the paper suite refreshed paper by paper)."""

from pathlib import Path

import pytest
from rich.console import Console

from clusterfl.core.errors import UserError
from clusterfl.run.config import load_params
from pipeline import sweep

ROOT = Path(__file__).resolve().parents[1]


def test_a_papers_cells_bring_only_their_own_data_stages_up_to_date():
    params = load_params(ROOT / "suites/paper/params.yaml")
    p3, p5 = params.paper_cells("p3"), params.paper_cells("p5")
    p3_partitions = {params.experiment(c.experiment).partition for c in p3}
    assert "p3_basic_motions" in p3_partitions
    assert sweep._prepares("partition@p3_basic_motions", p3, params)
    assert not sweep._prepares("partition@p3_basic_motions", p5, params)
    assert sweep._prepares("download@basic_motions", p3, params)
    assert not sweep._prepares("download@basic_motions", p5, params)


def test_a_suites_dvc_file_is_the_one_beside_its_params(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert sweep.dvc_file(load_params(Path("suites/p3_watch/params.yaml"))) == Path(
        "suites/p3_watch/dvc.yaml")
    assert sweep.dvc_file(load_params(ROOT / "suites/paper/params.yaml")) == Path(
        "suites/paper/dvc.yaml")
    assert sweep.dvc_file(load_params(Path("params.yaml"))) == Path("dvc.yaml")


def test_an_unknown_paper_is_one_error_naming_the_suites_papers():
    with pytest.raises(UserError, match=r"--paper .*p9.*p1"):
        sweep.run(ROOT / "suites/paper/params.yaml", None, Console(quiet=True), paper="p9")
