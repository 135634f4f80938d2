"""Stage `download`: fetch or generate one dataset into data/raw/<name>/."""

from pathlib import Path

from rich.console import Console

from clusterfl.config import load_params
from clusterfl.data import build_dataset, save_dataset
from pipeline.common import RAW, output_dir, write_skipped


def run(name: str, params_path: Path, console: Console) -> None:
    params = load_params(params_path)
    source, options = params.dataset(name)
    with output_dir(RAW / name) as out:
        if not params.dataset_in_suite(name):
            write_skipped(out, f"dataset {name!r} is not in suite {params.suite!r}")
            console.print(f"[dim]{name}: not in suite {params.suite!r}, skipped[/dim]")
            return
        with console.status(f"loading {name} ({source})"):
            dataset = build_dataset(source, options, f"datasets.{name}")
        save_dataset(dataset, out / "dataset.npz")
    console.print(f"{name}: {len(dataset.y)} samples, features {dataset.feature_shape}, "
                  f"{dataset.num_classes} classes -> {RAW / name}")
