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


def cli_in_process(ws: Path, *args: str, params: str | None = "params.yaml",
                   env: dict[str, str | None] | None = None) -> str:
    """`clusterfl <args> -p <params>` in this test process, in `ws`, for the steps a test only
    needs done (download, partition, a cell to damage, a run to compare with): the same
    commands as in a subprocess, without a new interpreter importing torch, scikit-learn and
    MLflow again (~7 s of CPU each on these 2 cores). `params=None`: no -p (the --suite's
    file). `env`: variables to set (None: to unset) while it runs; the process's environment
    is put back afterwards (a command sets the thread variables). Returns what it wrote
    (stdout and stderr together)."""
    import os

    import pytest
    from typer.testing import CliRunner

    from pipeline.cli import app

    environ = dict(os.environ)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(ws)
            for name, value in (env or {}).items():
                if value is None:
                    mp.delenv(name, raising=False)
                else:
                    mp.setenv(name, value)
            result = CliRunner().invoke(app, [*args, *(["-p", params] if params else [])])
    finally:
        os.environ.clear()
        os.environ.update(environ)
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.output
