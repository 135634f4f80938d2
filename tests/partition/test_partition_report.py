import numpy as np

from clusterfl.data import Dataset
from clusterfl.partition import build_partition, plot_partition, summarize_partition


def test_summary_rows_and_plot(tmp_path):
    rng = np.random.default_rng(0)
    ds = Dataset("toy", rng.random((600, 1, 4, 4)).astype(np.float32),
                 np.repeat(np.arange(10), 60), 10)
    p = build_partition(ds, "label_quantity", {"num_clients": 5, "classes_per_client": 2}, 0, "p")
    table = summarize_partition(p, ds)
    assert list(table.columns) == ["client", "train", "test", "classes", "cluster"]
    assert table["train"].tolist() == p.train_sizes().tolist()
    assert all(len(c.split()) == 2 for c in table["classes"])
    plot_partition(p, ds, tmp_path / "fig" / "p.png")
    assert (tmp_path / "fig" / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_summary_of_mixture_partition(tmp_path):
    rng = np.random.default_rng(0)
    ds = Dataset("l", rng.random((3000, 1, 4, 4)).astype(np.float32), rng.integers(0, 26, 3000),
                 26, domain=np.arange(3000) % 2, domain_names=("lower", "upper"))
    p = build_partition(ds, "fedsoft_mixture", {"num_clients": 10, "holdout_size": 10}, 0, "p")
    table = summarize_partition(p, ds)
    assert table["mixture"][0] == "0.100 0.900" and table["cluster"].isna().all()
    plot_partition(p, ds, tmp_path / "m.png")
    assert (tmp_path / "m.png").exists()
