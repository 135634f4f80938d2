"""`clusterfl.papers.benchmark.tools.peer` (ours beside PFLlib) without PFLlib or
Fashion-MNIST: the exporter writes exactly each client's training (validation carved off)
and test samples in PFLlib's format, PFLlib's round indexing is aligned with ours, the
outputs are all or nothing, and bad input is one line with exit status 2 and nothing
written."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from clusterfl.data import Dataset
from clusterfl.papers.benchmark.tools import peer
from clusterfl.partition import Partition, views
from clusterfl.partition.validation import carve_validation
from clusterfl.run.config import load_params

PARAMS = Path(__file__).resolve().parents[1] / "suites" / "benchmark" / "params.yaml"


def _tiny() -> tuple[Dataset, Partition]:
    """12 images of 1x4x4 in 3 classes, 3 clients, two views (0° and 90°: a client's
    samples carry the view in their index, as the rotation scheme's do)."""
    rng = np.random.default_rng(0)
    n = 12
    data = Dataset("toy", rng.random((n, 1, 4, 4)).astype(np.float32),
                   rng.integers(0, 3, n).astype(np.int64), 3)
    train = (np.array([0, 1, 2, 3, 4]), views.encode(1, [5, 6, 7, 8], n), np.array([9, 10]))
    test = (np.array([11]), views.encode(1, [0, 1], n), np.array([2, 3, 4]))
    return data, Partition(train=train, test=test, views=("rot0", "rot90"))


def _read_like_pfllib(path: Path) -> dict[str, np.ndarray]:
    """PFLlib's `utils.data_utils.read_data`: the npz's `data` entry as a dict."""
    with path.open("rb") as f:
        return np.load(f, allow_pickle=True)["data"].tolist()


def test_export_writes_each_clients_train_and_test_samples(tmp_path: Path) -> None:
    dataset, full = _tiny()
    part, validation = carve_validation(full, 0.25, np.random.default_rng([0, 1]))
    counts = peer.export_pfllib(dataset, part, tmp_path / "toy")
    assert counts == [(len(a), len(b)) for a, b in zip(part.train, part.test, strict=True)]
    assert sorted(p.name for p in (tmp_path / "toy" / "train").iterdir()) == \
        ["0.npz", "1.npz", "2.npz"]
    for k in range(part.num_clients):
        for split in ("train", "test"):
            data = _read_like_pfllib(tmp_path / "toy" / split / f"{k}.npz")
            assert set(data) == {"x", "y"}
            x, y = views.client_data(dataset, part, k, split)
            assert data["x"].dtype == np.float32 and data["y"].dtype == np.int64
            assert data["x"].shape == (len(y), 1, 4, 4) and data["y"].shape == (len(y),)
            np.testing.assert_array_equal(data["x"], x)
            np.testing.assert_array_equal(data["y"], y)
        # the validation samples are carved off: never in what PFLlib trains on
        train = _read_like_pfllib(tmp_path / "toy" / "train" / f"{k}.npz")
        assert len(train["y"]) == len(full.train[k]) - len(validation.test[k])
        held = views.client_data(dataset, validation, k, "test")[0]
        assert not any(np.array_equal(v, t) for v in held for t in train["x"])
    # client 1 is seen through the 90° view: rotated, not the raw rows
    x1 = _read_like_pfllib(tmp_path / "toy" / "test" / "1.npz")["x"]
    np.testing.assert_array_equal(x1, np.rot90(dataset.x[[0, 1]], 1, axes=(2, 3)))


def test_pfllib_rounds_align_with_ours() -> None:
    # PFLlib's iteration i (0..R) is read before its training: the models after i rounds
    assert peer.pfllib_rounds([0.1, 0.5, 0.7], 2) == [0.5, 0.7]
    with pytest.raises(RuntimeError, match="expected 3"):
        peer.pfllib_rounds([0.1, 0.5], 2)


def test_setting_from_our_params() -> None:
    params = load_params(PARAMS)
    exp = params.experiment("bm_patho2")
    ditto = params.algorithm("ditto", experiment="bm_patho2")
    fedrep = params.algorithm("fedrep", experiment="bm_patho2")
    s = peer.derive_setting(exp, ditto, fedrep)
    assert (s.rounds, s.batch_size, s.local_epochs, s.hidden) == (20, 20, 1, 64)
    assert (s.ditto_lam, s.ditto_personal_epochs, s.fedrep_head_epochs) == (1.0, 1, 10)
    args = peer.pfllib_args("fedrep", s, "toy", 20, 10, model=None)
    assert (args.plocal_epochs, args.local_epochs, args.join_ratio) == (10, 1, 1.0)
    uniform = dataclasses.replace(fedrep, hyper=dataclasses.replace(fedrep.hyper,
                                                                    weighting="uniform"))
    with pytest.raises(peer.PeerError, match=r"fedrep\.weighting"):
        peer.derive_setting(exp, ditto, uniform)


def _rows() -> list[peer.Row]:
    rows: list[peer.Row] = []
    for impl, base in (("ours", 0.8), ("pfllib", 0.7)):
        for alg in peer.ALGORITHMS:
            for seed in (0, 1):
                rows += [(impl, alg, seed, r, base + 0.01 * seed + 0.001 * r) for r in (1, 2)]
    return rows


def test_outputs_table_and_all_or_nothing(tmp_path: Path, monkeypatch) -> None:
    rows = _rows()
    table = peer.summary_table(rows)
    # ours: 80.2 and 81.2 -> 80.70 ± 0.50; PFLlib 70.2, 71.2 -> 70.70 ± 0.50; gap +10
    assert "| ditto | 2 | 2 | 80.70 ± 0.50 | 70.70 ± 0.50 | +10.00 |" in table
    assert "ReLU" not in table  # no variant rows without the variant's runs
    relu = [(peer.RELU_BODY, "fedrep", s, r, 0.75 + 0.01 * s + 0.001 * r)
            for s in (0, 1) for r in (1, 2)]
    with_relu = peer.summary_table(rows + relu)
    assert with_relu.startswith(table)  # the variant adds a row against ours, labelled
    assert with_relu.endswith("| fedrep (PFLlib's body ending in ReLU) | 2 | 2 | "
                              "80.70 ± 0.50 | 75.70 ± 0.50 | +5.00 |")
    written = peer.write_outputs(rows, tmp_path / "out", "bm_patho2", 0.05)
    assert [p.name for p in written] == ["peer_bm_patho2.csv", "peer_bm_patho2.png"]
    lines = (tmp_path / "out" / "peer_bm_patho2.csv").read_text().splitlines()
    assert lines[0] == peer.CSV_HEADER and lines[1] == "ours,ditto,0,1,0.801000"
    assert len(lines) == 1 + len(rows)

    def broken(*args: object) -> bytes:
        raise RuntimeError("no figure")

    monkeypatch.setattr(peer, "figure_png", broken)
    with pytest.raises(RuntimeError):
        peer.write_outputs(rows, tmp_path / "other", "bm_patho2", 0.05)
    assert not (tmp_path / "other").exists() or not any((tmp_path / "other").iterdir())


def _fake_pfllib(root: Path) -> Path:
    for name in peer.PFLLIB_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    return root


@pytest.mark.parametrize(("extra", "expected"), [
    (["--scheme", "bm_dir01"], "--scheme: unknown scheme 'bm_dir01'; allowed: bm_patho2, bm_rot4"),
    (["--pfllib", "{tmp}/nowhere"], "--pfllib {tmp}/nowhere: does not exist; expected PFLlib's "
                                     "system/ directory"),
    (["--pfllib", "{tmp}"], "--pfllib {tmp}: lacks flcore/servers/serverditto.py"),
    (["--lr", "0"], "--lr: must be > 0"),
    ([], "data/benchmark/raw/fashion_mnist_bench/dataset.npz: missing; run `clusterfl "
         "download fashion_mnist_bench --suite benchmark`"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, capsys, extra: list[str],
                                                  expected: str) -> None:
    system = _fake_pfllib(tmp_path / "system")
    out = tmp_path / "out"
    argv = ["--pfllib", str(system), "--data-root", str(tmp_path / "empty"), "--out", str(out),
            "--seeds", "0", *[a.format(tmp=tmp_path) for a in extra]]
    assert peer.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("error: ") and expected.format(tmp=tmp_path) in err
    assert not out.exists()


def test_missing_partition_names_the_command(tmp_path: Path, capsys) -> None:
    raw = tmp_path / "data" / "benchmark" / "raw" / "fashion_mnist_bench"
    raw.mkdir(parents=True)
    (raw / "dataset.npz").write_bytes(b"")
    argv = ["--pfllib", str(_fake_pfllib(tmp_path / "system")), "--data-root", str(tmp_path),
            "--scheme", "bm_rot4", "--seeds", "1", "--out", str(tmp_path / "out")]
    assert peer.main(argv) == 2
    err = capsys.readouterr().err
    assert "partitions/bm_rot4/seed1.npz: missing; run `clusterfl partition bm_rot4 --suite " \
           "benchmark`" in err
    assert not (tmp_path / "out").exists()
