"""Round checkpoints: a killed seed resumes at its last checkpointed round and a killed cell at
its first unfinished seed, with the numbers of an uninterrupted run, bit for bit.

A seed's directory, `checkpoints/<suite>/<experiment>/<algorithm>/seed<k>/` at the repository
root (outside the DVC outs, which DVC deletes before it runs a stage, and git-ignored), holds
- `key.txt`: a hash of everything that determines the seed's numbers (`run_key`). A directory
  under another key is stale (a param, a data file or the code changed): it is removed,
  never resumed;
- `state.pt`: the loop's state after its last checkpointed round
  (`FederatedAlgorithm.checkpoint_state`), written every `every` rounds and when SIGTERM or
  SIGINT asks the run to stop;
- `finished.pt`: the seed's history once it finished; a rerun of the cell skips the seed.
The train stage removes a cell's checkpoints once its results are in place.

Files are Python pickles (`torch.save`) written by this code for this code; a file that does
not load is discarded with a warning and the seed starts over.
"""

import dataclasses
import hashlib
import io
import json
import random
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import torch

from clusterfl.core.errors import UserError
from clusterfl.core.io import atomic_write_bytes, atomic_write_text
from clusterfl.training.history import RunHistory

STATE, FINISHED, KEY = "state.pt", "finished.pt", "key.txt"


class Interrupted(UserError):
    """SIGTERM/SIGINT stopped a run after it wrote a checkpoint; the CLI prints the one-line
    message and exits with 128 + the signal number, as a shell does for a killed command."""

    def __init__(self, message: str, exit_code: int = 130) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def __reduce__(self) -> tuple[Any, ...]:  # crosses process boundaries intact
        return (Interrupted, (str(self), self.exit_code))


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- what determines a seed's numbers ------------------------------------------------------
def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def code_digest() -> str:
    """The `clusterfl` package's Python sources (what computes the numbers)."""
    package = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        h.update(str(path.relative_to(package)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def run_key(experiment: Any, method: str, hyper: Any, files: Sequence[Path], seed: int,
            engine: str, device: str) -> str:
    """A hash of the experiment (schedule included), the method and its hyperparameters, the
    contents of the dataset and partition files, the seed, engine, device and code."""
    described = {"experiment": dataclasses.asdict(experiment), "method": method,
                 "hyper": dataclasses.asdict(hyper), "seed": seed, "engine": engine,
                 "device": device, "files": [file_digest(f) for f in files],
                 "code": code_digest()}
    text = json.dumps(described, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


# -- global generators ---------------------------------------------------------------------
def global_rng_state() -> dict[str, Any]:
    """Python's, numpy's and torch's global generators (our code uses explicit ones; these
    cover any library call that does not)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(),
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_global_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])


# -- one seed ------------------------------------------------------------------------------
class SeedCheckpoint:
    """The checkpoint directory of one seed under one key."""

    def __init__(self, directory: Path, key: str, every: int, name: str = "",
                 log: Callable[[str], None] = _log) -> None:
        self.directory, self.key, self.every = directory, key, every
        self.name, self.log = name or str(directory), log
        key_file = directory / KEY
        if directory.exists() and (not key_file.exists() or key_file.read_text() != key):
            shutil.rmtree(directory)
            self.log(f"{self.name}: removed a stale checkpoint (params, data or code changed)")
        directory.mkdir(parents=True, exist_ok=True)
        if not key_file.exists():
            atomic_write_text(key_file, key)

    def _read(self, name: str) -> Any:
        path = self.directory / name
        if not path.exists():
            return None
        try:
            return torch.load(path, weights_only=False)
        except Exception as err:  # a damaged file only costs the rounds it held
            self.log(f"{self.name}: ignoring unreadable checkpoint {path} ({err})")
            path.unlink()
            return None

    def _write(self, name: str, obj: Any) -> None:
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        atomic_write_bytes(self.directory / name, buffer.getvalue())

    def finished(self) -> RunHistory | None:
        """The seed's history if it already finished under this key."""
        history: RunHistory | None = self._read(FINISHED)
        if history is not None:
            self.log(f"{self.name}: finished before; its history is reused, not retrained")
        return history

    def load(self) -> dict[str, Any] | None:
        """The last checkpointed state, if any (`FederatedAlgorithm.checkpoint_state`)."""
        state: dict[str, Any] | None = self._read(STATE)
        if state is not None:
            self.log(f"{self.name}: resumed at round {state['round']} from "
                     f"{self.directory / STATE}")
        return state

    def due(self, round_: int) -> bool:
        return self.every > 0 and round_ % self.every == 0

    def save(self, state: dict[str, Any]) -> None:
        self._write(STATE, state)

    def finish(self, history: RunHistory) -> None:
        """Keep the finished seed's history; its round state is no longer needed."""
        self._write(FINISHED, history)
        (self.directory / STATE).unlink(missing_ok=True)


@dataclass(frozen=True)
class CheckpointPolicy:
    """Where a cell's seeds keep checkpoints and how often (picklable, part of a job)."""

    directory: Path  # checkpoints/<suite>/<experiment>/<algorithm>
    every: int = 10  # rounds between checkpoints; 0: only when a signal stops the run

    def open(self, seed: int, key: str, name: str = "") -> SeedCheckpoint:
        return SeedCheckpoint(self.directory / f"seed{seed}", key, self.every, name)


def remove_checkpoints(directory: Path, seeds: Sequence[int]) -> None:
    """A finished cell's checkpoints of `seeds`, and the folders that leaves empty up to
    `checkpoints/`."""
    for seed in seeds:
        shutil.rmtree(directory / f"seed{seed}", ignore_errors=True)
    for folder in [directory, *list(directory.parents)[:3]]:
        try:
            folder.rmdir()
        except OSError:
            break


# -- stopping on a signal ------------------------------------------------------------------
@dataclass
class StopRequest:
    signum: int | None = None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else ""


# what `signal.getsignal` returns and `signal.signal` takes back
Handler = Callable[[int, FrameType | None], Any] | int | None


@contextmanager
def stop_on_signals(name: str, log: Callable[[str], None] = _log) -> Iterator[StopRequest]:
    """While inside, the first SIGTERM or SIGINT only sets the request (the loop finishes the
    round, writes a checkpoint and stops); a second one acts as it would have without us.
    Outside the main thread (where handlers cannot be installed) nothing changes."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return
    signals = (signal.SIGTERM, signal.SIGINT)
    previous: dict[int, Handler] = {s: signal.getsignal(s) for s in signals}

    def handler(signum: int, frame: Any) -> None:
        if request.signum is not None:
            signal.signal(signum, previous[signum])
            signal.raise_signal(signum)
            return
        request.signum = signum
        log(f"{name}: {signal.Signals(signum).name}: finishing the round, then writing a "
            "checkpoint (again to stop now)")

    for s in signals:
        signal.signal(s, handler)
    try:
        yield request
    finally:
        for s in signals:
            signal.signal(s, previous[s])
