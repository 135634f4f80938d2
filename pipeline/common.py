"""What every stage shares: a suite's output locations and all-or-nothing output directories.

Every suite writes under its own name, so switching suites never overwrites another suite's
data, results or reports: data/<suite>/raw/<dataset>, data/<suite>/partitions/<partition>,
results/<suite>/<experiment>/<algorithm>, reports/<suite>/; apart from the DVC outs, a cell's
timings and tracking record live in logs/<suite>/<experiment>/<algorithm> and its round
checkpoints in checkpoints/<suite>/<experiment>/<algorithm> (`clusterfl.run.checkpoints`).
"""

import errno
import fcntl
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clusterfl.core.errors import UserError

if TYPE_CHECKING:
    from clusterfl.core.types import Partition
    from clusterfl.run.config import Experiment, SuiteConfig

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


class CellBusy(UserError):
    """Another process trains the cell (it holds the cell's lock): exit status 1."""

    exit_code = 1


def lock_file(cell: Path) -> Path:
    """The lock of cell directory `cell` (results/<suite>/<experiment>/<algorithm>): a sibling
    `.lock-<algorithm>`, outside the cell's DVC out (and apart from its temporaries,
    `.<algorithm>.<pid>.*`), that exists while a train holds it."""
    return cell.parent / f".lock-{cell.name}"


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    return f"pid {text}" if text.isdigit() else "another process"


@contextmanager
def cell_lock(cell: Path) -> Iterator[None]:
    """Hold cell `cell`'s lock (`lock_file`: an exclusive `flock`, with the holder's pid in
    it) while inside; the file is removed on the way out. A second `clusterfl train` of the
    cell, in any process, gets a one-line `CellBusy` naming the holder's pid, before it
    reads or writes anything of the cell; the kernel releases the lock of a killed holder,
    so a stale file is taken over, never waited for."""
    path = lock_file(cell)
    made = [d for d in [path.parent, *path.parent.parents] if not d.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)  # (its folders exist: the holder made them)
            raise CellBusy(f"{cell}: is being trained by {holder} (it holds {path}); wait "
                           "for it to finish, or stop it, then run this again") from None
        try:  # the holder before us may have removed the file we opened as it finished
            current = os.stat(path)
        except FileNotFoundError:
            current = None
        if current is not None and os.path.samestat(os.fstat(fd), current):
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)
        for folder in made:  # made for the lock alone (the run failed before writing)
            try:
                folder.rmdir()
            except OSError:
                break


def cell_locked(cell: Path) -> bool:
    """Whether a train of cell `cell` holds its lock now (in any process, this one too)."""
    path = lock_file(cell)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def remove_orphan_checkpoints(paths: SuitePaths, log: Callable[[str], None]) -> list[Path]:
    """Remove the suite's round checkpoints whose seed is complete: a seed directory of
    checkpoints/<suite>/<experiment>/<algorithm>/ whose history is in the cell's results,
    put there after the checkpoint's last write (by a later train, or by DVC restoring the
    cell from its cache: a `dvc repro` interrupted by Ctrl-C, then one that found the cell
    in its run cache, left the interrupted run's checkpoint behind), while no train of the
    cell holds its lock. A checkpoint newer than its seed's history (a run of other
    settings, stopped before it replaced the cell) stays: it is what that run resumes from.
    (With DVC's `cache.type` hardlink or symlink a restored history keeps the time of its
    cache file: such a checkpoint stays until its cell is trained.) Returns the removed
    directories, each also said by `log`."""
    removed = []
    top = paths.root / "checkpoints" / paths.suite
    for seed in sorted(top.glob("*/*/seed*")):
        cell = paths.cell_dir(seed.parent.parent.name, seed.parent.name)
        history = cell / seed.name / "history.json"
        if not seed.is_dir() or not history.exists() or cell_locked(cell):
            continue
        written = max((f.stat().st_mtime for f in seed.iterdir()), default=0.0)
        if os.lstat(history).st_ctime < written:
            continue
        shutil.rmtree(seed, ignore_errors=True)
        removed.append(seed)
        log(f"{seed}: removed an orphan checkpoint (its seed is complete in {cell})")
    for folder in sorted({p.parent for p in removed}, reverse=True):
        for empty in [folder, folder.parent, top]:
            try:
                empty.rmdir()
            except OSError:
                break
    if removed:  # checkpoints/ itself, once nothing is left in it
        with suppress(OSError):
            top.parent.rmdir()
    return removed


# a full disk or quota, a read-only mount, no permission: the user's to fix (the CLI's one line)
FULL_OR_READ_ONLY = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                               errno.EPERM})


def name_path(err: OSError, written: Path, final: Path) -> OSError:
    """`err` with the file it failed on given as the path its output will have: inside
    `written` (a temporary output directory) it names the file under `final` instead, and a
    write error without a file names `final`."""
    name = Path(err.filename) if err.filename else final
    if name.is_relative_to(written):
        name = final / name.relative_to(written)
    return OSError(err.errno, err.strerror or os.strerror(err.errno or errno.EIO), str(name))


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
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if err.errno not in FULL_OR_READ_ONLY:
            raise
        raise name_path(err, tmp, final) from None  # named as the output, not the temporary
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


def require_participation(params: "SuiteConfig", exp: "Experiment", partition: "Partition",
                          path: Path) -> None:
    """A one-line error when the schedule's `clients_per_round` exceeds the clients of the
    partition (`path`), naming the key that set it (the suite's training overrides, else
    the experiment's training block): more than every client each round is no sample."""
    from clusterfl.core.io import shown

    wanted = exp.schedule.clients_per_round
    clients = len(partition.train)
    if wanted is None or wanted <= clients:
        return
    overrides = params.suite_raw.get("training") or {}
    key = (f"{shown(params.file)}:suite.training.clients_per_round"
           if "clients_per_round" in overrides else
           f"{params.paper_file[exp.paper]}:experiments.{exp.name}.training.clients_per_round")
    raise UserError(f"{key}: {wanted} is more than the {clients} clients of partition "
                    f"{exp.partition!r} ({shown(path)}); allowed: 1 to {clients}, or unset "
                    "for every client")
