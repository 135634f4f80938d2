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


def outside_suite(params_path: Path, kind: str, name: str) -> str | None:
    """Why `name` (a dataset, partition or experiment, per `kind`) is outside the active
    suite, read from the YAML alone, so that DVC's many skipped items cost no torch import;
    None if it is inside, or if anything looks off (full validation then reports it)."""
    import yaml

    try:
        raw = yaml.safe_load(params_path.read_text())
        suite_name = raw["suite"]
        suite = raw["suites"][suite_name]
        if kind == "experiment":
            raw["experiments"][name]  # an unknown name is the full validation's to report
            inside = name in suite["experiments"]
        else:
            dataset = raw["partitions"][name]["dataset"] if kind == "partition" else name
            raw["datasets"][dataset]
            inside = dataset in suite["datasets"]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return None
    return None if inside else f"{kind} {name!r} is not in suite {suite_name!r}"


def skip_quickly(params_path: Path, kind: str, name: str, out: Path) -> str | None:
    """Write `out`'s skip marker (whole directory swapped in) if `name` is outside the suite."""
    reason = outside_suite(params_path, kind, name)
    if reason is not None:
        with output_dir(out) as tmp:
            write_skipped(tmp, reason)
    return reason
