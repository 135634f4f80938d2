"""Outputs take the modes the process umask gives (0644 files, 0755 directories under umask
022), not the 0600 / 0700 of `tempfile`'s private temporaries: a report copied anywhere can
be served or shared with a group, as docs/operations.md suggests."""

import os
import stat
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from clusterfl.core.io import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_npz,
    atomic_write_text,
)
from clusterfl.papers import load_papers
from pipeline import report as stage
from pipeline.common import output_dir
from tests.reports.histories import StandInSuite, write_accuracy_run


@pytest.fixture
def umask():
    """Run the test under a given umask, the process's own put back afterwards."""
    before = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(before)


def _modes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): stat.S_IMODE(p.stat().st_mode)
            for p in [root, *sorted(root.rglob("*"))]}


def test_atomic_writers_and_output_dirs_honour_umask_022(tmp_path, umask):
    atomic_write_text(tmp_path / "a/text.md", "x\n")
    atomic_write_json(tmp_path / "a/b.json", {"x": 1})
    atomic_write_bytes(tmp_path / "a/c.bin", b"\0")
    atomic_write_npz(tmp_path / "a/d.npz", {"x": np.arange(3)})
    with output_dir(tmp_path / "cell") as out:
        atomic_write_json(out / "seed0/history.json", {"records": []})
    modes = _modes(tmp_path)
    assert {k: v for k, v in modes.items() if (tmp_path / k).is_file()} == {
        "a/text.md": 0o644, "a/b.json": 0o644, "a/c.bin": 0o644, "a/d.npz": 0o644,
        "cell/seed0/history.json": 0o644}
    assert {k: v for k, v in modes.items() if (tmp_path / k).is_dir()} == {
        ".": modes["."], "a": 0o755, "cell": 0o755, "cell/seed0": 0o755}


def test_a_group_writable_umask_is_honoured_too(tmp_path, umask):
    umask(0o002)  # a shared group project
    atomic_write_text(tmp_path / "shared.md", "x\n")
    with output_dir(tmp_path / "out") as out:
        atomic_write_text(out / "f.md", "y\n")
    modes = _modes(tmp_path)
    assert (modes["shared.md"], modes["out"], modes["out/f.md"]) == (0o664, 0o775, 0o664)


def test_the_report_is_readable_by_all_under_umask_022(tmp_path, umask):
    results, reports = tmp_path / "results/s", tmp_path / "reports/s"
    for seed in (0, 1):
        write_accuracy_run(results, "p1_synthetic_mlr", "pfedme", seed, [0.5, 0.75])
    suite = StandInSuite(load_papers(), [("p1", "p1_synthetic_mlr", "pfedme")])
    stage.run(suite, Console(quiet=True), results, tmp_path / "data/s/partitions", reports)
    modes = _modes(reports)
    files = {k: m for k, m in modes.items() if (reports / k).is_file()}
    dirs = {k: m for k, m in modes.items() if (reports / k).is_dir()}
    assert {"index.html", "tables/results.md", "figures/convergence.png"} <= set(files)
    assert {"tables", "figures", "curves"} <= set(dirs)
    assert set(files.values()) == {0o644}, files
    assert set(dirs.values()) == {0o755}, dirs


def test_a_downloaded_file_is_readable_by_all_under_umask_022(tmp_path, umask):
    from clusterfl.data.download import Resource, fetch

    (tmp_path / "mirror").mkdir()
    (tmp_path / "mirror/data.bin").write_bytes(b"\1\2")
    path = fetch(Resource("data.bin", ()), tmp_path / "cache", (str(tmp_path / "mirror"),))
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
