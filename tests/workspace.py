"""A copy of the repository's pipeline in a temporary directory, for tests that run DVC."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_pipeline(ws: Path, suites: tuple[str, ...] = ()) -> None:
    """dvc.yaml, the package and the named `suites` into `ws` (no lock or .gitignore files),
    so that a test's `dvc repro` starts from nothing; the caller writes params.yaml. The
    bytecode comes along (copies keep their times, so it stays valid; DVC ignores it): the
    workspace's first process need not compile the package again.

    Only the suites a test runs: every `dvc` command reads and checks the graph of every
    dvc.yaml in the repository, and the repository's 10 suites (about 400 stages) cost about
    7 s of CPU per command on 2 cores (a no-op `dvc repro`: 10.7 s with them, 3.7 s without).
    That graph, every suite's, is checked on the real repository by tests/test_fresh_clone.py
    (`dvc status` of a clone)."""
    for name in ("dvc.yaml", "pyproject.toml", ".dvcignore"):
        shutil.copy(ROOT / name, ws / name)
    ignore = shutil.ignore_patterns("dvc.lock", ".gitignore")
    for name in ("src", "pipeline"):
        shutil.copytree(ROOT / name, ws / name, symlinks=True, ignore=ignore)
    (ws / "suites").mkdir()
    for name in suites:
        shutil.copytree(ROOT / "suites" / name, ws / "suites" / name, symlinks=True, ignore=ignore)


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
            from clusterfl.run.execution import _dataset

            _dataset.cache_clear()  # keyed by a relative path: another workspace's file
            result = CliRunner().invoke(app, [*args, *(["-p", params] if params else [])])
    finally:
        os.environ.clear()
        os.environ.update(environ)
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.output



def grid(cells: list[tuple[str, str]]) -> list[dict[str, list[str]]]:
    """A suite's `grid` for exactly these (experiment, algorithm) cells, in order."""
    return [{"experiments": [e], "algorithms": [a]} for e, a in cells]


def render(ws: Path, env: dict[str, str], *suites: str) -> None:
    """`clusterfl render` in `ws` (after a test wrote its suites' params files), so that
    each suite's dvc.yaml iterates over the cells of its grid."""
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "render", *suites], cwd=ws,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def dvc_stages(pipeline: dict, wdir: Path) -> dict[str, dict]:
    """The stages DVC's own parser expands a dvc.yaml mapping to (`foreach` and `matrix`
    loops resolved: `train@<experiment>-<algorithm>` -> its cmd, params, deps, outs);
    `wdir`, an empty directory, is where it would look for a `vars` params file."""
    from types import SimpleNamespace

    from dvc.fs import LocalFileSystem
    from dvc.parsing import DataResolver

    repo = SimpleNamespace(fs=LocalFileSystem(), config={})
    return DataResolver(repo, str(wdir), pipeline).resolve()["stages"]
