"""P1's model-space diagnostic: the ARI helper on exact arrays, the config's one-line errors,
and the CLI end to end on a shrunk dataset whose clusters must be found on the inputs."""

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from clusterfl.core.errors import UserError
from clusterfl.papers.p1.tools import model_space as ms
from clusterfl.partition.base import Partition
from clusterfl.run.config import load_params
from pipeline.cli import app

ROOT = Path(__file__).resolve().parents[3]


def test_kmeans_ari_is_one_for_separated_groups_and_label_free():
    points = np.array([[0.0, 0.0], [0.1, 0.0], [10.0, 10.0], [10.1, 10.0], [-9.0, 9.0],
                       [-9.1, 9.0]])
    assert ms.kmeans_ari(points, np.array([2, 2, 0, 0, 1, 1]), seed=0) == 1.0
    # a truth that splits every found group scores below 0
    assert ms.kmeans_ari(points, np.array([0, 1, 0, 1, 0, 1]), seed=0) < 0


def test_client_input_means_average_each_clients_training_rows():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    part = Partition(train=[np.array([0, 1]), np.array([2, 3, 4])],
                     test=[np.array([5]), np.array([], dtype=np.int64)])
    np.testing.assert_allclose(ms.client_input_means(x, part), [[1.0, 2.0], [6.0, 7.0]])


def test_majority_share_is_the_mean_top_class_share_over_clients():
    y = np.array([0, 0, 1, 2, 2, 2, 1, 1])
    part = Partition(train=[np.array([0, 1]), np.array([3, 4, 6])],
                     test=[np.array([2]), np.array([5, 7])])
    assert ms.majority_share(y, part) == (2 / 3 + 3 / 5) / 2


def test_config_errors_name_the_key(tmp_path):
    bad = tmp_path / "m.yaml"
    bad.write_text("seeds: [0]\nvariants: {a: {experiment: p1_synthetic_mlr, option: {}}}\n")
    with pytest.raises(UserError,
                       match=r"variants\.a\.option: unknown key \(did you mean 'options'\?\)"):
        ms.load_config(bad)
    bad.write_text("rounds: 0\nvariants: {a: {experiment: p1_synthetic_mlr}}\n")
    with pytest.raises(UserError, match=r"m\.yaml:rounds: must be an integer >= 1"):
        ms.load_config(bad)


def test_the_shipped_config_loads_and_names_known_experiments():
    cfg = ms.load_config(ROOT / "src/clusterfl/papers/p1/model_space.yaml")
    params = load_params(ROOT / "suites/paper/params.yaml")
    for experiment, _ in cfg.variants.values():
        params.experiment(experiment)
    assert cfg.clustered in params.algorithms["p1"]


def test_cli_writes_the_table_and_finds_far_apart_input_clusters(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the suite's params
    tiny = {"clients_per_cluster": 3, "max_size": 60, "dimension": 8,
            "cluster_offsets": [-40.0, 0.0, 40.0], "input_spread": 0.1}
    config = tmp_path / "m.yaml"
    config.write_text(f"seeds: [0]\nrounds: 2\nclustered: pfedkm_k3\nvariants:\n"
                      f"  far: {{experiment: p1_synthetic_mlr, options: {tiny}}}\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["diagnose", "p1-model-space", "--suite", "paper",
                                      "--config", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    frame = __import__("pandas").read_csv(out / "p1_model_space.csv")
    assert frame.loc[0, "input"] == 1.0 and frame.loc[0, "input_level"] == 1.0
    assert set(ms.VIEWS) <= set(frame.columns)
    assert "| far |" in (out / "p1_model_space.md").read_text()
