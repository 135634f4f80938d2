"""What every stage shares: a suite's output locations and all-or-nothing output directories.

Every suite writes under its own name, so switching suites never overwrites another suite's
data, results or reports: data/<suite>/raw/<dataset>, data/<suite>/partitions/<partition>,
results/<suite>/<experiment>/<algorithm>, reports/<suite>/; apart from the DVC outs, a cell's
timings and tracking record live in logs/<suite>/<experiment>/<algorithm> and its round
checkpoints in checkpoints/<suite>/<experiment>/<algorithm> (`clusterfl.run.checkpoints`).
"""

import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clusterfl.core.errors import UserError

if TYPE_CHECKING:
    from clusterfl.run.config import SuiteConfig

from clusterfl.core.io import temporary_dir


@dataclass(frozen=True)
class SuitePaths:
    suite: str
    root: Path = Path(".")

    @property
    def raw(self) -> Path:
        return self.root / "data" / self.suite / "raw"

    @property
    def partitions(self) -> Path:
        return self.root / "data" / self.suite / "partitions"

    @property
    def results(self) -> Path:
        return self.root / "results" / self.suite

    @property
    def reports(self) -> Path:
        return self.root / "reports" / self.suite

    def dataset_file(self, name: str) -> Path:
        return self.raw / name / "dataset.npz"

    def partition_file(self, name: str, seed: int) -> Path:
        return self.partitions / name / f"seed{seed}.npz"

    def validation_file(self, name: str, seed: int) -> Path:
        """A partition with `validation_fraction`: seed `seed`'s validation split."""
        return self.partitions / name / f"seed{seed}_validation.npz"

    def tuning_dir(self, experiment: str, algorithm: str) -> Path:
        """The benchmark's `tune` stage output for a cell: picks.json, grid.csv."""
        return self.results / "tuning" / experiment / algorithm

    def cell_dir(self, experiment: str, algorithm: str) -> Path:
        return self.results / experiment / algorithm

    def log_dir(self, experiment: str, algorithm: str) -> Path:
        """What a cell's runs measured that differs per run (timings, tracking.json):
        outside its DVC out (`clusterfl.training.history.log_dir`)."""
        return self.root / "logs" / self.suite / experiment / algorithm

    def checkpoint_dir(self, experiment: str, algorithm: str) -> Path:
        return self.root / "checkpoints" / self.suite / experiment / algorithm


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temporaries(final: Path) -> list[Path]:
    """The temporary siblings `.<name>.<pid>.*` of `final` left by killed processes (and
    those of older versions without a pid); a live process's own are kept."""
    removed = []
    for tmp in final.parent.glob(f".{final.name}.*"):
        pid = tmp.name[len(final.name) + 2:].split(".")[0]
        if tmp.is_dir() and not (pid.isdigit() and _alive(int(pid))):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed


def suite_flag(params: "SuiteConfig") -> str:
    """How a hint names the suite of `params`: `--suite NAME` where that option finds its
    file, else `-p FILE` (a suite file of your own: `--suite` would name an unknown suite)."""
    from clusterfl.core.io import shown
    from clusterfl.core.suite import suite_file

    named = suite_file(params.suite)
    if named.exists() and named.resolve() == params.file.resolve():
        return f"--suite {params.suite}"
    return f"-p {shown(params.file)}"


def rebuild_command(path: str | Path, params_file: Path | None = None) -> str | None:
    """The command that rebuilds a file of a suite's outputs (`SuitePaths`' layout), from
    its path alone (with `-p params_file` where the suite came from a file given so); None
    for a path outside that layout."""
    parts = Path(path).parts

    def flag(suite: str) -> str:
        return f"--suite {suite}" if params_file is None else f"-p {params_file}"

    if len(parts) >= 5 and parts[-5] == "data" and parts[-3] == "raw":
        return f"clusterfl download {parts[-2]} {flag(parts[-4])}"
    if len(parts) >= 5 and parts[-5] == "data" and parts[-3] == "partitions":
        return f"clusterfl partition {parts[-2]} {flag(parts[-4])}"
    if len(parts) >= 6 and parts[-6] == "results" and parts[-2].startswith("seed"):
        return f"clusterfl train {parts[-4]} {parts[-3]} {flag(parts[-5])}"
    return None


def require_writable(path: Path) -> None:
    """A one-line error before hours of work whose output `path` could not be written: its
    nearest existing folder is read-only (a read-only mount, or no write permission)."""
    folder = path
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not os.access(folder, os.W_OK):
        inside = "" if folder == path else f", and {path} is written there"
        raise UserError(f"{folder}: not writable{inside}; nothing was run")


@contextmanager
def output_dir(final: Path) -> Iterator[Path]:
    """Write a stage's outputs into a temporary sibling, then swap it in whole.

    On any error the temporary directory is removed and `final` is left as it was, so a
    failed stage leaves no half-written output behind; one a killed process left behind is
    removed the next time (the name carries the writer's pid).
    """
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(final)
        tmp = temporary_dir(final.parent, f".{final.name}.{os.getpid()}.")  # umask's mode
    except OSError as err:  # a read-only results/ or reports/: nothing was written yet
        raise UserError(f"{final}: cannot write it ({err.strerror}); nothing was "
                        "changed") from None
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)


def require_seeds(params: "SuiteConfig", partition: str, seeds: Iterable[int]) -> None:
    """A seed outside `suite.seeds` has no partition file (the partition stage makes the
    suite's seeds only): a one-line error naming the edit and the command that make it."""
    from clusterfl.core.io import shown

    paths = SuitePaths(params.home)
    for seed in seeds:
        if seed not in params.seeds and not paths.partition_file(partition, seed).exists():
            raise UserError(
                f"--seed {seed}: not among suite.seeds {list(params.seeds)} of "
                f"{shown(params.file)}, the seeds `clusterfl partition {partition} "
                f"{suite_flag(params)}` makes; add {seed} to suite.seeds there, then run it")
