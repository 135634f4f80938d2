"""What every stage shares: output locations, all-or-nothing output directories, skip markers."""

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from clusterfl.io import atomic_write_json

RAW = Path("data/raw")
PARTITIONS = Path("data/partitions")
RESULTS = Path("results")
REPORTS = Path("reports")
SKIPPED = "skipped.json"


def dataset_file(name: str) -> Path:
    return RAW / name / "dataset.npz"


def partition_file(name: str, seed: int) -> Path:
    return PARTITIONS / name / f"seed{seed}.npz"


def cell_dir(experiment: str, algorithm: str) -> Path:
    return RESULTS / experiment / algorithm


@contextmanager
def output_dir(final: Path) -> Iterator[Path]:
    """Write a stage's outputs into a temporary sibling, then swap it in whole.

    On any error the temporary directory is removed and `final` is left as it was, so a
    failed stage leaves no half-written output behind.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)


def write_skipped(directory: Path, reason: str) -> None:
    """Mark an output directory as deliberately empty (not in the active suite)."""
    atomic_write_json(directory / SKIPPED, {"skipped": reason})


def is_skipped(directory: Path) -> bool:
    return (directory / SKIPPED).exists()
