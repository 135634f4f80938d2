"""Stage `partition`: split one dataset into clients, once per seed of the suite.

An entry with `validation_fraction` (the benchmark's protocol, docs/benchmark.md) writes
`seed<k>.npz` without the validation samples in training and `seed<k>_validation.npz`
(the same training samples, the validation samples as its test split); see
`clusterfl.partition.validation`.
"""

from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from clusterfl.core.errors import UserError
from clusterfl.core.io import atomic_write_text
from clusterfl.data import Dataset, load_dataset
from clusterfl.partition import Partition, build_partition, save_partition
from clusterfl.partition.report import plot_partition, summarize_partition
from clusterfl.partition.validation import carve_validation
from clusterfl.run.config import VALIDATION_KEY, load_params
from pipeline.common import SuitePaths, output_dir, suite_flag


def seed_partition(dataset: Dataset, scheme: str, options: dict[str, Any],
                   fraction: float | None, seed: int, key: str
                   ) -> tuple[Partition, Partition | None]:
    """Seed `seed`'s partition, and its validation split where `fraction` asks for one (the
    training data then lacks the validation samples)."""
    part = build_partition(dataset, scheme, options, seed, key)
    if fraction is None:
        return part, None
    # its own stream: the partition itself is unchanged
    return carve_validation(part, fraction, np.random.default_rng([seed, 1]))


def run(name: str, params_path: Path, console: Console) -> None:
    params = load_params(params_path, load=())  # data needs no paper's code
    paths = SuitePaths(params.home)
    entry = params.partition(name)
    dataset_name = entry.pop("dataset")
    scheme = entry.pop("scheme")
    fraction = entry.pop(VALIDATION_KEY, None)
    source = paths.dataset_file(dataset_name)
    if not source.exists():
        raise UserError(f"{source}: missing; run `clusterfl download {dataset_name} "
                        f"{suite_flag(params)}` first")
    dataset = load_dataset(source)
    with output_dir(paths.partitions / name) as out:
        for seed in params.seeds:
            part, validation = seed_partition(dataset, scheme, entry, fraction, seed,
                                              f"partitions.{name}")
            if validation is not None:
                save_partition(validation, out / paths.validation_file(name, seed).name)
            save_partition(part, out / f"seed{seed}.npz")
            summary = summarize_partition(part, dataset)
            atomic_write_text(out / f"seed{seed}_clients.csv", summary.to_csv(index=False))
            plot_partition(part, dataset, out / f"seed{seed}_clients.png")
    table = Table(title=f"partition {name}: {part.num_clients} clients (seed {params.seeds[-1]})")
    for col in summary.columns:
        table.add_column(str(col))
    for row in summary.itertuples(index=False):
        table.add_row(*(str(v) for v in row))
    console.print(table)
    console.print(f"-> {paths.partitions / name} (per-client CSV and figure for every seed)")
    # The report stage depends on results/<suite>, which a data-only suite's cells never
    # create; an empty folder keeps its report (a list of the partitions) runnable.
    paths.results.mkdir(parents=True, exist_ok=True)

