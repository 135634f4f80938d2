"""The MLflow adapter: the only module that imports MLflow.

One parent run per trained cell (experiment x algorithm) holding its params, tags and the
mean over seeds; one nested run per seed holding the per-round curves (one `log_batch` call
per round). Everything goes through an explicit `MlflowClient`, never global run state.

Tracking is best effort (`BestEffortTracker`): a store that is down or slow costs a few
seconds (short HTTP timeout, one retry), one warning line, and no more calls for that cell;
training goes on and writes its history. Each cell's outputs hold `tracking.json` (the
MLflow experiment, run name, params, tags and the attempt id every run of the cell is tagged
with), from which `replay_cell` logs a cell later; a cell whose FINISHED parent run is in the
store is never logged again, and the partial runs of an attempt cut off mid-way are deleted
before its replay, so nothing is logged twice.
"""

import hashlib
import json
import logging
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # MLflow is imported where it is used: training may never touch it
    from mlflow.tracking import MlflowClient

ATTEMPT_TAG = "clusterfl.attempt"  # one id per training of a cell, on the parent and seeds
# MLflow's HTTP client retries for minutes by default; a run must not wait on the store.
# Set only where the user has not set them.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
                 "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                 "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}


def configure_http() -> None:
    """Short MLflow HTTP timeouts (`HTTP_DEFAULTS`), and no per-retry log lines."""
    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)


def default_tracking_uri(root: Path | None = None) -> str:
    """`MLFLOW_TRACKING_URI` if set, else an absolute sqlite file in the repo root."""
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    root = (root or Path.cwd()).resolve()
    return f"sqlite:///{root / 'mlflow.db'}"


def git_commit(cwd: Path | None = None) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=10, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def params_hash(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16]


def flatten(params: dict[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in params.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out |= flatten(v, f"{name}.")
        else:
            out[name] = str(v)
    return out


def reason(err: BaseException) -> str:
    """A short one-line cause of a store error (MLflow's messages nest whole URLs)."""
    text = " ".join(str(err).split())
    found = re.search(r"\[Errno -?\d+\] [^\"')]+|Read timed out|timed out", text)
    return found.group(0) if found else f"{type(err).__name__}: {text[:120]}"


def _experiment_id(client: "MlflowClient", name: str) -> str:
    """The id of experiment `name`, created if missing; another writer creating it at the
    same moment (several workers on one server) is not an error."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    try:
        return client.create_experiment(name)
    except MlflowException:
        created = client.get_experiment_by_name(name)
        assert created is not None  # by the other writer
        return created.experiment_id


class CellTracker:
    """Creates the parent run of a cell and one child run per seed; `finish` closes the
    seed runs still open with the parent's status, so a failed cell leaves nothing RUNNING."""

    def __init__(self, experiment: str, run_name: str, params: dict[str, Any],
                 tags: dict[str, str], uri: str | None = None) -> None:
        from mlflow.tracking import MlflowClient

        configure_http()
        self.client = MlflowClient(uri or default_tracking_uri())
        self.open: set[str] = set()  # seed runs not yet terminated
        self.experiment_id = _experiment_id(self.client, experiment)
        self.params = flatten(params)
        self.tags = {**tags, "params_hash": params_hash(params)}
        self.run_name = run_name
        self.parent = self.client.create_run(self.experiment_id, run_name=run_name, tags=self.tags)
        self._log_params(self.parent.info.run_id)

    def _log_params(self, run_id: str) -> None:
        from mlflow.entities import Param

        items = [Param(k, v[:6000]) for k, v in self.params.items()]
        for start in range(0, len(items), 100):  # MLflow caps params per batch at 100
            self.client.log_batch(run_id, params=items[start : start + 100])

    def seed_callback(self, seed: int) -> "SeedRunCallback":
        tags = {**self.tags, "mlflow.parentRunId": self.parent.info.run_id, "seed": str(seed)}
        # the cell in the name: a flat view of runs (or a search) is unambiguous
        run = self.client.create_run(self.experiment_id, run_name=f"{self.run_name}/seed{seed}",
                                     tags=tags)
        self._log_params(run.info.run_id)
        self.open.add(run.info.run_id)
        return SeedRunCallback(self.client, run.info.run_id, self.open.discard)

    def finish(self, summary: dict[str, float], status: str = "FINISHED") -> None:
        from mlflow.entities import Metric

        for child in sorted(self.open):
            self.client.set_terminated(child, "FINISHED" if status == "FINISHED" else status)
        self.open.clear()
        run_id = self.parent.info.run_id
        metrics = [Metric(k, float(v), 0, 0) for k, v in summary.items()]
        if metrics:
            self.client.log_batch(run_id, metrics=metrics)
        self.client.set_terminated(run_id, status)


class SeedRunCallback:
    """Logs one seed's per-round metrics: exactly one MLflow call per round."""

    def __init__(self, client: Any, run_id: str,
                 closed: Callable[[str], None] = lambda run_id: None) -> None:
        self.client = client
        self.run_id = run_id
        self.closed = closed

    def on_run_start(self, info: dict[str, Any]) -> None:
        pass

    def on_round_end(self, round_: int, metrics: dict[str, float]) -> None:
        import time

        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        batch = [Metric(k, float(v), stamp, round_) for k, v in metrics.items() if k != "round"]
        self.client.log_batch(self.run_id, metrics=batch)

    def on_run_end(self, summary: dict[str, float]) -> None:
        self.client.set_terminated(self.run_id, "FINISHED")
        self.closed(self.run_id)


class _Off:
    """The callback of a seed whose store is unreachable: does nothing."""

    def on_run_start(self, info: dict[str, Any]) -> None: ...

    def on_round_end(self, round_: int, metrics: dict[str, float]) -> None: ...

    def on_run_end(self, summary: dict[str, float]) -> None: ...


class BestEffortTracker:
    """A `CellTracker` whose store may be down or slow: the first error (creating the runs
    included) prints one warning through `warn` and turns tracking off for the rest of the
    cell; no error from the store ever reaches the training."""

    def __init__(self, make: Callable[[], CellTracker], warn: Callable[[str], None],
                 uri: str, later: str) -> None:
        self.warn, self.uri, self.later = warn, uri, later
        self.down = False
        self.tracker: CellTracker | None = self._call(make)

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self.down:
            return None
        try:
            return fn(*args)
        except Exception as err:  # any failure of the store: warn once, stop calling it
            self.down = True
            self.warn(f"MLflow store {self.uri} unreachable ({reason(err)}); "
                      f"training goes on and writes its history; log it later with "
                      f"`{self.later}`")
            return None

    def seed_callback(self, seed: int) -> Any:
        tracker = self.tracker
        made = None if tracker is None else self._call(tracker.seed_callback, seed)
        return _Off() if made is None else _Guarded(self, made)

    def log_artifact(self, path: Path) -> None:
        """`log_cell_artifact` on the parent run (nothing where the store is down)."""
        if self.tracker is not None:
            self._call(log_cell_artifact, self.tracker, path)

    def finish(self, summary: dict[str, float], status: str = "FINISHED") -> None:
        if self.tracker is not None:
            self._call(self.tracker.finish, summary, status)


class _Guarded:
    """A seed callback whose calls go through `BestEffortTracker._call`."""

    def __init__(self, owner: BestEffortTracker, callback: SeedRunCallback) -> None:
        self.owner, self.callback = owner, callback

    def on_run_start(self, info: dict[str, Any]) -> None:
        self.owner._call(self.callback.on_run_start, info)

    def on_round_end(self, round_: int, metrics: dict[str, float]) -> None:
        self.owner._call(self.callback.on_round_end, round_, metrics)

    def on_run_end(self, summary: dict[str, float]) -> None:
        self.owner._call(self.callback.on_run_end, summary)


def replay_cell(record: dict[str, Any],
                load: Callable[[], tuple[Sequence[tuple[int, Any]], dict[str, float]]],
                uri: str | None = None) -> bool:
    """Log a cell trained earlier from its outputs: `record` is its `tracking.json`; `load`
    returns its (seed, `RunHistory`) pairs and summary metrics, and is called only where
    the cell must be logged. Returns False (and logs nothing) where the store already holds
    the cell's FINISHED parent run; runs of the same attempt that are not FINISHED (logging
    cut off mid-way) are deleted first."""
    from mlflow.tracking import MlflowClient

    configure_http()
    client = MlflowClient(uri or default_tracking_uri())
    attempt = record["tags"][ATTEMPT_TAG]
    found = client.get_experiment_by_name(record["experiment"])
    if found is not None:
        runs = client.search_runs([found.experiment_id],
                                  filter_string=f"tags.`{ATTEMPT_TAG}` = '{attempt}'")
        if any(r.info.status == "FINISHED" and "mlflow.parentRunId" not in r.data.tags
               for r in runs):
            return False
        for run in runs:
            client.delete_run(run.info.run_id)
    seeds, summary = load()
    tracker = CellTracker(record["experiment"], record["run_name"], record["params"],
                          record["tags"], uri=uri)
    from clusterfl.training.callbacks import replay

    for seed, history in seeds:
        replay(history, tracker.seed_callback(seed))
    tracker.finish(summary)
    return True


# -- what a user sees in the UI: the runs view, and every figure and table beside its run ----

# MLflow 3's UI opens an experiment in its GenAI view (traces) unless told otherwise: the
# experiment tag below names a model-training experiment (read by the UI where its workflow
# switch is off), and the `workflowType` query parameter of `runs_page_url` picks the runs
# view where it is on (MLflow 3.17: the URL wins, then the browser's last choice).
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")


def show_runs(client: Any, experiment_id: str) -> None:
    """Tag the experiment as model training, so that the UI opens it on its runs."""
    client.set_experiment_tag(experiment_id, *EXPERIMENT_KIND)


def runs_page_url(base: str, experiment_id: str) -> str:
    """The UI's runs table of an experiment, in the model-training view."""
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs?workflowType=machine_learning"


def find_experiment(name: str, uri: str | None = None) -> str | None:
    """The id of experiment `name` in the store, None if it has none."""
    from mlflow.tracking import MlflowClient

    found = MlflowClient(uri or default_tracking_uri()).get_experiment_by_name(name)
    return None if found is None else found.experiment_id


def log_cell_artifact(tracker: "CellTracker", path: Path, artifact_path: str | None = None
                      ) -> None:
    """A file (e.g. the cell's summary.json) as an artifact of the cell's parent run."""
    tracker.client.log_artifact(tracker.parent.info.run_id, str(path), artifact_path)


Files = list[tuple[Path, str]]  # (local file, artifact folder in the run; "" for the top)


def _cell_run(client: Any, experiment_id: str, suite: str, experiment: str,
              algorithm: str) -> str | None:
    """The newest finished parent run of cell `experiment/algorithm` of `suite`."""
    runs = client.search_runs(
        [experiment_id],
        filter_string=(f"attributes.run_name = '{experiment}/{algorithm}' and "
                       f"tags.suite = '{suite}' and tags.stage = 'train' and "
                       "attributes.status = 'FINISHED'"),
        order_by=["attributes.start_time DESC"], max_results=1)
    return runs[0].info.run_id if runs else None


def _log_files(client: Any, run_id: str, files: Files) -> None:
    for path, folder in files:
        client.log_artifact(run_id, str(path), folder or None)


def publish_report(name: str, suite: str, cells: dict[tuple[str, str], Files],
                   report: Files, tags: dict[str, str], uri: str | None = None,
                   paper: str | None = None) -> tuple[str, list[str]]:
    """Attach each cell's files to its newest parent run, and log `report` to a new run
    `report/<suite>` (`report/<suite>/<paper>` for one paper's report; tag stage=report,
    and `paper`). Returns the report run's id and the cells that
    have no parent run in the store (trained with --no-track, or into another store)."""
    from mlflow.tracking import MlflowClient

    configure_http()  # a store that is down costs seconds, not minutes of retries
    client = MlflowClient(uri or default_tracking_uri())
    experiment_id = _experiment_id(client, name)
    show_runs(client, experiment_id)
    missing = []
    for (experiment, algorithm), files in cells.items():
        run_id = _cell_run(client, experiment_id, suite, experiment, algorithm)
        if run_id is None:
            missing.append(f"{experiment}/{algorithm}")
        else:
            _log_files(client, run_id, files)
    run_name = "/".join(["report", suite, *([paper] if paper else [])])
    run = client.create_run(experiment_id, run_name=run_name,
                            tags={**tags, "stage": "report", "suite": suite,
                                  **({"paper": paper} if paper else {})})
    _log_files(client, run.info.run_id, report)
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id, missing
