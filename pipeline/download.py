"""Stage `download`: fetch or generate one dataset into data/<suite>/raw/<name>/."""

from pathlib import Path

from rich.console import Console

from clusterfl.data import build_dataset, save_dataset
from clusterfl.run.config import load_params
from pipeline.common import SuitePaths, output_dir


def run(name: str, params_path: Path, console: Console) -> None:
    params = load_params(params_path, load=())  # data needs no paper's code
    source, options = params.dataset(name)
    target = SuitePaths(params.home).raw / name
    with output_dir(target) as out:
        with console.status(f"loading {name} ({source})"):
            dataset = build_dataset(source, options, f"datasets.{name}")
        save_dataset(dataset, out / "dataset.npz")
    console.print(f"{name}: {len(dataset.y)} samples, features {dataset.feature_shape}, "
                  f"{dataset.num_classes} classes -> {target}")
