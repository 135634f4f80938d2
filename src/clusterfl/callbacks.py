"""Callbacks the round loop calls; tracking, checkpoints and progress bars live here, so
algorithms never import MLflow or a UI library."""

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
    for record in history.records:
        callback.on_round_end(int(record["round"]), record)
    callback.on_run_end(history.summary())


class ProgressCallback:
    """A rich progress bar over rounds showing the latest test accuracy."""

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

    def on_run_start(self, info: dict[str, Any]) -> None:
        self.progress.start()

    def on_round_end(self, round_: int, metrics: dict[str, float]) -> None:
        acc = metrics.get("test_acc")
        text = f"test_acc={acc:.4f}" if acc is not None else ""
        self.progress.update(self.task, completed=round_, metric=text)

    def on_run_end(self, summary: dict[str, float]) -> None:
        self.progress.stop()
