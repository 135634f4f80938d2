"""Stage `partition`: split one dataset into clients, once per seed of the active suite."""

from pathlib import Path

from rich.console import Console
from rich.table import Table

from clusterfl.config import load_params
from clusterfl.data import load_dataset
from clusterfl.errors import UserError
from clusterfl.io import atomic_write_text
from clusterfl.partition import build_partition, save_partition
from clusterfl.partition.report import plot_partition, summarize_partition
from pipeline.common import PARTITIONS, dataset_file, is_skipped, output_dir, write_skipped


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
            summary = summarize_partition(part, dataset)
            atomic_write_text(out / f"seed{seed}_clients.csv", summary.to_csv(index=False))
        plot_partition(part, dataset, out / f"seed{seed}_clients.png")
    table = Table(title=f"partition {name}: {part.num_clients} clients (seed {params.seeds[-1]})")
    for col in summary.columns:
        table.add_column(str(col))
    for row in summary.itertuples(index=False):
        table.add_row(*(str(v) for v in row))
    console.print(table)
    console.print(f"-> {PARTITIONS / name} (per-client CSV and figure for every seed)")
