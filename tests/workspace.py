"""A copy of the repository's pipeline in a temporary directory, for tests that run DVC."""

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_pipeline(ws: Path) -> None:
    """dvc.yaml, the package and the suites into `ws` (no lock, caches or .gitignore files),
    so that a test's `dvc repro` starts from nothing; the caller writes params.yaml."""
    for name in ("dvc.yaml", "pyproject.toml", ".dvcignore"):
        shutil.copy(ROOT / name, ws / name)
    for name in ("src", "pipeline", "suites"):
        shutil.copytree(ROOT / name, ws / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "dvc.lock", ".gitignore"))
