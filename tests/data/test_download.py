import os

import numpy as np
import pytest

from clusterfl.core.errors import UserError
from clusterfl.data.download import Resource, fetch
from tests.data.formats_fixtures import md5, write_idx_gz

DEAD_URL = "http://127.0.0.1:9/official/"  # connection refused at once: an offline machine


@pytest.fixture
def good(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    path = write_idx_gz(mirror / "labels.gz", np.arange(10, dtype=np.uint8).reshape(10))
    return mirror, Resource("labels.gz", (DEAD_URL + "labels.gz",), md5(path))


def test_local_directory_mirror_fills_the_cache(tmp_path, good):
    mirror, res = good
    cache = tmp_path / "cache"
    path = fetch(res, cache, (str(mirror),))
    assert path == cache / "labels.gz" and md5(path) == res.md5
    assert os.listdir(cache) == ["labels.gz"]


def test_file_url_mirror_and_mirror_order(tmp_path, good):
    mirror, res = good
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "labels.gz").write_bytes(b"corrupted")
    path = fetch(res, tmp_path / "cache", (str(bad), mirror.as_uri()))
    assert md5(path) == res.md5


def test_corrupt_only_source_gives_checksum_error_and_leaves_no_file(tmp_path, good):
    _, res = good
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "labels.gz").write_bytes(b"corrupted")
    cache = tmp_path / "cache"
    with pytest.raises(UserError, match="checksum mismatch"):
        fetch(res, cache, (str(bad),))
    assert list(cache.iterdir()) == []  # nothing half-written, nothing kept


def test_offline_error_names_url_and_manual_step(tmp_path, good):
    _, res = good
    with pytest.raises(UserError) as err:
        fetch(res, tmp_path / "cache", (), key="data.mnist")
    message = str(err.value)
    assert DEAD_URL + "labels.gz" in message
    assert "by hand" in message and str(tmp_path / "cache" / "labels.gz") in message
    assert "\n" not in message


def test_corrupt_cached_file_is_an_error_and_left_untouched(tmp_path, good):
    mirror, res = good
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "labels.gz").write_bytes(b"tampered")
    with pytest.raises(UserError, match="fails its check"):
        fetch(res, cache, (str(mirror),))
    assert (cache / "labels.gz").read_bytes() == b"tampered"


def test_recompressed_mirror_accepted_by_content_checksum(tmp_path, good):
    mirror, res = good
    import gzip

    content = gzip.decompress((mirror / "labels.gz").read_bytes())
    other = tmp_path / "debian"
    other.mkdir()
    (other / "labels.gz").write_bytes(gzip.compress(content, compresslevel=1, mtime=12345))
    assert md5(other / "labels.gz") != res.md5
    import hashlib

    with_content = Resource(res.filename, res.urls, res.md5, hashlib.md5(content).hexdigest())
    assert fetch(with_content, tmp_path / "c1", (str(other),)).exists()
    with pytest.raises(UserError, match="checksum mismatch"):
        fetch(res, tmp_path / "c2", (str(other),))
