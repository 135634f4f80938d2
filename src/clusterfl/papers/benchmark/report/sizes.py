"""What the benchmark's cost table needs of a partition and its dataset: the features' shape,
the number of classes (together they size the model) and the number of clients.

Read from the partition and dataset files when the pipeline made them
(data/<suite>/partitions/<name>/seed<k>.npz, data/<suite>/raw/<dataset>/dataset.npz), else
from the summary beside the partition (`seed<k>.sizes.json`, a few bytes), which reference
results carry instead of the data (generated, never committed): so a fresh clone renders the
benchmark's reference report, cost table included, without the data.
"""

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from clusterfl.core.errors import UserError
from clusterfl.core.io import atomic_write_text
from clusterfl.data import load_dataset
from clusterfl.partition import load_partition


@dataclass(frozen=True)
class Sizes:
    feature_shape: tuple[int, ...]
    num_classes: int
    num_clients: int


def summary_file(partitions: Path, name: str, seed: int) -> Path:
    return partitions / name / f"seed{seed}.sizes.json"


def dataset_shape(dataset_file: Path) -> tuple[tuple[int, ...], int]:
    """(the features' shape, the number of classes) of a dataset file."""
    dataset = load_dataset(dataset_file)
    return tuple(dataset.feature_shape), dataset.num_classes


def from_files(partition_file: Path, shape: tuple[tuple[int, ...], int]) -> Sizes:
    """The sizes of a partition file, its dataset's `shape` (`dataset_shape`) given: a
    dataset serves many partitions and is read once."""
    return Sizes(*shape, load_partition(partition_file).num_clients)


def read_sizes(partitions: Path, name: str, seed: int, dataset_file: Path) -> Sizes:
    """The sizes from the partition and dataset files, else from the summary."""
    partition_file = partitions / name / f"seed{seed}.npz"
    if partition_file.exists() and dataset_file.exists():
        return from_files(partition_file, dataset_shape(dataset_file))
    summary = summary_file(partitions, name, seed)
    try:
        raw = json.loads(summary.read_text())
        return Sizes(tuple(int(n) for n in raw["feature_shape"]), int(raw["num_classes"]),
                     int(raw["num_clients"]))
    except FileNotFoundError:
        raise UserError(f"{partition_file}: no partition file (or no {dataset_file}) and no "
                        f"summary {summary.name} beside it; run the partition stage") from None
    except (ValueError, KeyError, TypeError) as err:
        raise UserError(f"{summary}: not a sizes summary ({err})") from None


def write_sizes(sizes: Sizes, target: Path) -> None:
    """The summary of a partition's sizes (`from_files`) at `target`."""
    atomic_write_text(target, json.dumps(asdict(sizes), separators=(",", ":")) + "\n")
