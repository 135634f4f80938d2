"""A partition's true mixtures as a report reads them: from the partition file when the
pipeline made it (data/<suite>/partitions/<name>/seed<k>.npz), else from its summary beside it
(seed<k>.mixture.json: the distributions' names and the N x D mixture, a few kB), which
reference results carry instead of the partition (generated data, never committed)."""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clusterfl.core.errors import UserError
from clusterfl.core.io import atomic_write_text
from clusterfl.partition import load_partition


@dataclass(frozen=True)
class Mixtures:
    distributions: tuple[str, ...]
    mixture: np.ndarray | None  # (clients, distributions) true shares; None: not a mixture


def summary_file(partitions: Path, name: str, seed: int) -> Path:
    return partitions / name / f"seed{seed}.mixture.json"


def read_mixtures(partitions: Path, name: str, seed: int) -> Mixtures:
    """The partition's mixtures from its file, else from its summary."""
    path = partitions / name / f"seed{seed}.npz"
    if path.exists():
        part = load_partition(path)
        return Mixtures(tuple(part.distributions), part.mixture)
    summary = summary_file(partitions, name, seed)
    try:
        raw = json.loads(summary.read_text())
        mixture = None if raw["mixture"] is None else np.asarray(raw["mixture"], dtype=float)
        return Mixtures(tuple(raw["distributions"]), mixture)
    except FileNotFoundError:
        raise UserError(f"{path}: no partition file and no summary {summary.name} beside it; "
                        "run the partition stage") from None
    except (ValueError, KeyError, TypeError) as err:
        raise UserError(f"{summary}: not a mixture summary ({err})") from None


def write_summary(partition_file: Path, target: Path) -> None:
    """The summary of `partition_file` at `target` (repr-exact floats: JSON round-trips)."""
    part = load_partition(partition_file)
    mixture = None if part.mixture is None else np.asarray(part.mixture, float).tolist()
    text = json.dumps({"distributions": list(part.distributions), "mixture": mixture},
                      separators=(",", ":"))
    atomic_write_text(target, text + "\n")
