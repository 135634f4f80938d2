"""A copy of the repository's pipeline in a temporary directory, for tests that run DVC."""

import shutil
import subprocess
import sys
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


def grid(cells: list[tuple[str, str]]) -> list[dict[str, list[str]]]:
    """A suite's `grid` for exactly these (experiment, algorithm) cells, in order."""
    return [{"experiments": [e], "algorithms": [a]} for e, a in cells]


def render(ws: Path, env: dict[str, str], *suites: str) -> None:
    """`clusterfl render` in `ws` (after a test wrote its suites' params files), so that
    each suite's dvc.yaml iterates over the cells of its grid."""
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "render", *suites], cwd=ws,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
