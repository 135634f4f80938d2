"""Every real loader on small files in its real on-disk format, made here."""

import io
import zipfile

import numpy as np
import pytest

from clusterfl.core.errors import UserError
from clusterfl.data import build_dataset, real
from tests.data.formats_fixtures import idx_bytes, md5, write_cifar_tar, write_har_zip, write_idx_gz


def _patch(monkeypatch, name, mirror):
    resources = tuple(
        real.Resource(r.filename, ("http://127.0.0.1:9/" + r.filename,), md5(mirror / r.filename))
        for r in real.RESOURCES[name]
    )
    monkeypatch.setitem(real.RESOURCES, name, resources)


def _opts(tmp_path):
    return {"cache_dir": str(tmp_path / "c"), "mirrors": [str(tmp_path)]}


def test_mnist_idx_gz(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    images = {p: rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
              for p, n in [("train", 7), ("t10k", 3)]}
    labels = {p: rng.integers(0, 10, len(images[p]), dtype=np.uint8) for p in images}
    for p in images:
        write_idx_gz(tmp_path / f"{p}-images-idx3-ubyte.gz", images[p])
        write_idx_gz(tmp_path / f"{p}-labels-idx1-ubyte.gz", labels[p])
    _patch(monkeypatch, "mnist", tmp_path)
    ds = build_dataset("mnist", _opts(tmp_path), "d")
    assert ds.x.shape == (10, 1, 28, 28) and ds.x.dtype == np.float32
    np.testing.assert_allclose(ds.x[7, 0] * 255, images["t10k"][0], atol=1e-3)
    np.testing.assert_array_equal(ds.y, np.concatenate([labels["train"], labels["t10k"]]))
    np.testing.assert_array_equal(ds.split, [0] * 7 + [1] * 3)


def test_corrupt_file_gives_checksum_error_cache_untouched(tmp_path, monkeypatch):
    for p in ("train", "t10k"):
        write_idx_gz(tmp_path / f"{p}-images-idx3-ubyte.gz", np.zeros((2, 28, 28)))
        write_idx_gz(tmp_path / f"{p}-labels-idx1-ubyte.gz", np.zeros(2))
    _patch(monkeypatch, "mnist", tmp_path)
    (tmp_path / "t10k-images-idx3-ubyte.gz").write_bytes(b"broken")
    cache = tmp_path / "c"
    with pytest.raises(UserError, match=r"t10k-images.*checksum mismatch"):
        build_dataset("mnist", {"cache_dir": str(cache), "mirrors": [str(tmp_path)]}, "d")
    assert sorted(f.name for f in cache.iterdir()) == [
        "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"]


def test_cifar10_python_batches(tmp_path, monkeypatch):
    write_cifar_tar(tmp_path / "cifar-10-python.tar.gz", 4, np.random.default_rng(1))
    _patch(monkeypatch, "cifar10", tmp_path)
    ds = build_dataset("cifar10", _opts(tmp_path), "d")
    assert ds.x.shape == (24, 3, 32, 32) and ds.num_classes == 10
    assert ds.split.tolist() == [0] * 20 + [1] * 4
    assert ds.x.min() >= 0.0 and ds.x.max() <= 1.0


def test_emnist_byclass_letters_by_case(tmp_path, monkeypatch):
    labels = np.array([3, 10, 35, 36, 61, 12], dtype=np.uint8)  # digit, A, Z, a, z, C
    images = np.zeros((6, 28, 28), dtype=np.uint8)
    images[:, 0, 5] = 255  # stored transposed: the loader must move it to row 5, column 0
    with zipfile.ZipFile(tmp_path / "gzip.zip", "w") as z:
        import gzip

        for part in ("train", "test"):
            prefix = f"gzip/emnist-byclass-{part}"
            z.writestr(f"{prefix}-images-idx3-ubyte.gz", gzip.compress(idx_bytes(images)))
            z.writestr(f"{prefix}-labels-idx1-ubyte.gz", gzip.compress(idx_bytes(labels)))
    _patch(monkeypatch, "emnist", tmp_path)
    ds = build_dataset("emnist_letters_case", _opts(tmp_path), "d")
    assert ds.num_classes == 26 and len(ds.y) == 10
    assert ds.y[:5].tolist() == [0, 25, 0, 25, 2]
    assert ds.domain[:5].tolist() == [1, 1, 0, 0, 1] and ds.domain_names == ("lower", "upper")
    assert ds.x[0, 0, 5, 0] == 1.0 and ds.x[0, 0, 0, 5] == 0.0


def test_uci_har_text_layout(tmp_path, monkeypatch):
    truth = write_har_zip(tmp_path / "UCI HAR Dataset.zip", {"train": 5, "test": 2},
                          np.random.default_rng(2))
    _patch(monkeypatch, "uci_har", tmp_path)
    ds = build_dataset("uci_har", _opts(tmp_path), "d")
    assert ds.x.shape == (7, 768) and ds.modalities == ("accelerometer", "gyroscope")
    acc = ds.x[:, ds.modality_slice("accelerometer")].reshape(7, 3, 128)
    gyro = ds.x[:, ds.modality_slice("gyroscope")].reshape(7, 3, 128)
    np.testing.assert_allclose(acc[6, 2], truth[("test", "total_acc_z")][1], rtol=1e-5)
    np.testing.assert_allclose(gyro[0, 0], truth[("train", "body_gyro_x")][0], rtol=1e-5)
    labels = np.concatenate([truth[("train", "y")], truth[("test", "y")]])
    assert ds.y.tolist() == (labels - 1).tolist()
    assert ds.groups.max() <= 29 and len(ds.info["sha256"]) == 64


def test_cmu_mosei_features_file(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "mosei.npz"
    np.savez(path, text=rng.normal(size=(6, 4, 300)), audio=rng.normal(size=(6, 74)),
             label=np.array([0, 1, 2, 0, 1, 5]), split=np.array([0, 0, 0, 0, 1, 1]))
    ds = build_dataset("cmu_mosei", {"path": str(path)}, "d")
    assert ds.modalities == ("text", "audio") and ds.modality_sizes == (1200, 74)
    assert ds.x.shape == (6, 1274) and ds.num_classes == 6 and ds.split.tolist()[-2:] == [1, 1]
    np.savez(tmp_path / "bad.npz", text=np.zeros((2, 3)))
    with pytest.raises(UserError, match="needs a 'label' array"):
        build_dataset("cmu_mosei", {"path": str(tmp_path / "bad.npz")}, "d")
    with pytest.raises(UserError, match="not found"):
        build_dataset("cmu_mosei", {"path": str(tmp_path / "missing.npz")}, "d")


def test_basic_motions_from_sktime_files():
    ds = build_dataset("basic_motions", {}, "d")
    assert ds.x.shape == (80, 600) and ds.num_classes == 4
    assert np.bincount(ds.y).tolist() == [20, 20, 20, 20]
    assert np.bincount(ds.split).tolist() == [40, 40]


def test_mnist_subset_is_named_subset_and_shaped_as_images():
    ds = build_dataset("mnist_subset", {}, "d")
    assert ds.name == "mnist_subset" and ds.x.shape == (5000, 1, 28, 28)
    assert np.bincount(ds.y).tolist() == [500] * 10


def test_idx_reader_rejects_other_formats(tmp_path):
    from clusterfl.data.formats import parse_idx

    with pytest.raises(UserError, match="not an IDX"):
        parse_idx(io.BytesIO(b"PK\x03\x04....").read())
