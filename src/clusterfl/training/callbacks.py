"""Callbacks the round loop calls; tracking and progress bars live here, so algorithms never
import MLflow or a UI library. (Checkpoints need the loop's state, so the loop writes them:
`clusterfl.run.checkpoints`.) A resumed run replays its restored rounds to the callbacks first;
`on_run_start`'s `resumed_at` says how many."""

from typing import Any, Protocol


class Callback(Protocol):
    def on_run_start(self, info: dict[str, Any]) -> None: ...

    def on_round_end(self, round_: int, metrics: dict[str, float]) -> None: ...

    def on_run_end(self, summary: dict[str, float]) -> None: ...


class CallbackList:
    """Fans each event out to every callback, in order."""

    def __init__(self, callbacks: list[Callback] | None = None) -> None:
        self.callbacks = list(callbacks or [])

    def on_run_start(self, info: dict[str, Any]) -> None:
        for cb in self.callbacks:
            cb.on_run_start(info)

    def on_round_end(self, round_: int, metrics: dict[str, float]) -> None:
        for cb in self.callbacks:
            cb.on_round_end(round_, metrics)

    def on_run_end(self, summary: dict[str, float]) -> None:
        for cb in self.callbacks:
            cb.on_run_end(summary)


def replay(history: Any, callback: Callback) -> None:
    """Send a finished run's events to `callback` (a run trained in another process)."""
    callback.on_run_start({"rounds": len(history.records)})
    for record in history.with_timings():
        callback.on_round_end(int(record["round"]), record)
    callback.on_run_end(history.summary())


def _metric_text(name: str | None, metrics: dict[str, float]) -> str:
    if name is None or name not in metrics:
        return ""
    return f"{name}={metrics[name]:.4g}"


class ProgressCallback:
    """A rich progress bar over rounds showing the run's primary metric."""

    def __init__(self, description: str, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[metric]}"), TimeRemainingColumn(), transient=False,
        )
        self.task = self.progress.add_task(description, total=total, metric="")
        self.primary: str | None = None

    def on_run_start(self, info: dict[str, Any]) -> None:
        self.primary = info.get("primary")
        self.progress.start()

    def on_round_end(self, round_: int, metrics: dict[str, float]) -> None:
        self.progress.update(self.task, completed=round_,
                             metric=_metric_text(self.primary, metrics))

    def on_run_end(self, summary: dict[str, float]) -> None:
        self.progress.stop()


class LineProgress:
    """One plain line every `interval` seconds and at the last round (round r/T, the primary
    metric, elapsed, ETA): progress a user sees where the output is not a terminal, e.g.
    under `dvc repro`, where a progress bar shows nothing until the run ends."""

    def __init__(self, description: str, total: int, interval: float = 30.0,
                 write: Any = None, clock: Any = None) -> None:
        import sys
        import time

        self.description, self.total, self.interval = description, total, interval
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.clock = clock or time.monotonic
        self.primary: str | None = None

    def on_run_start(self, info: dict[str, Any]) -> None:
        self.primary = info.get("primary")
        self.resumed = int(info.get("resumed_at", 0))  # rounds restored from a checkpoint
        self.start = self.last = self.clock()

    def on_round_end(self, round_: int, metrics: dict[str, float]) -> None:
        now = self.clock()
        if now - self.last < self.interval and round_ < self.total:
            return
        self.last = now
        elapsed = now - self.start
        eta = elapsed / max(round_ - self.resumed, 1) * (self.total - round_)
        metric = _metric_text(self.primary, metrics)
        self.write(f"{self.description}: round {round_}/{self.total} {metric} "
                   f"elapsed {elapsed:.0f}s eta {eta:.0f}s".replace("  ", " "))

    def on_run_end(self, summary: dict[str, float]) -> None:
        pass


def progress_callback(description: str, total: int) -> Callback:
    """A progress bar on a terminal, periodic plain lines otherwise."""
    import sys

    if sys.stderr.isatty():
        return ProgressCallback(description, total)
    return LineProgress(description, total)
