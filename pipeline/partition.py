"""Stage `partition`: split one dataset into clients, once per seed of the active suite."""

from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from clusterfl.config import load_params
from clusterfl.data import load_dataset
from clusterfl.errors import UserError
from clusterfl.io import atomic_write_text
from clusterfl.partition import Partition, build_partition, save_partition
from pipeline.common import PARTITIONS, dataset_file, is_skipped, output_dir, write_skipped


def summary_csv(partition: Partition, labels: np.ndarray) -> str:
    lines = ["client,train,test,classes,cluster"]
    for k, (tr, te) in enumerate(zip(partition.train, partition.test, strict=True)):
        classes = " ".join(map(str, np.unique(labels[tr])))
        cluster = "" if partition.cluster is None else str(partition.cluster[k])
        lines.append(f"{k},{len(tr)},{len(te)},{classes},{cluster}")
    return "\n".join(lines) + "\n"


def run(name: str, params_path: Path, console: Console) -> None:
    params = load_params(params_path)
    entry = params.partition(name)
    dataset_name = entry.pop("dataset")
    scheme = entry.pop("scheme")
    with output_dir(PARTITIONS / name) as out:
        if not params.partition_in_suite(name):
            write_skipped(out, f"dataset {dataset_name!r} is not in suite {params.suite!r}")
            console.print(f"[dim]{name}: not in suite {params.suite!r}, skipped[/dim]")
            return
        source = dataset_file(dataset_name)
        if not source.exists() or is_skipped(source.parent):
            raise UserError(f"{source}: missing; run `clusterfl download {dataset_name}` first")
        dataset = load_dataset(source)
        for seed in params.seeds:
            part = build_partition(dataset, scheme, entry, seed, f"partitions.{name}")
            save_partition(part, out / f"seed{seed}.npz")
            atomic_write_text(out / f"seed{seed}_clients.csv", summary_csv(part, dataset.y))
    sizes = part.train_sizes() + part.test_sizes()
    table = Table(title=f"partition {name} (seed {params.seeds[-1]})")
    for col in ("clients", "samples", "min size", "max size", "true clusters"):
        table.add_column(col)
    clusters = "–" if part.cluster is None else str(len(np.unique(part.cluster)))
    table.add_row(str(part.num_clients), str(sizes.sum()), str(sizes.min()), str(sizes.max()),
                  clusters)
    console.print(table)
