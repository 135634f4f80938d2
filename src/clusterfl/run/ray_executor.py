"""Seed jobs as Ray tasks: the cluster executor of `clusterfl.run.execution`.

`RayExecutor` has the interface of the serial and process executors (`submit`, `result`,
`cancel`; `execution.run_jobs` runs a cell on it): one Ray task per seed job, each with its
CPU/GPU request, its history handed back when it ends (not live: the caller replays it into
MLflow, so one process per cell writes the store). Ray is a local one by default
(`ray.init(num_cpus=...)`), a running cluster when an address is given or `RAY_ADDRESS` is set.

What makes a task's numbers the same wherever it runs:
- the job is self-contained: the dataset and partition files travel as bytes through Ray's
  object store (put once per file) and the task writes them to a content-addressed file on
  its node, so a worker needs no shared file system and no download;
- on a cluster the driver's `clusterfl` package is shipped to the workers
  (`runtime_env={"py_modules": [...]}`), so the code that trains is the code DVC hashed;
- a task whose worker process dies (killed, out of memory, a node lost) is re-run from the
  start by Ray (`max_retries`); a seed run is a pure function of its inputs and seed, so the
  retry gives the same history. An exception raised by the job itself is not retried: it
  would fail the same way again, and the caller reports it.
"""

import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clusterfl.run.execution import LiveCallbacks, SeedJob, no_callbacks
from clusterfl.training.callbacks import Callback
from clusterfl.training.history import RunHistory

_CACHE = "clusterfl-ray"  # under the node's temp dir: <sha256>/<file name>


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def materialize(digest: str, name: str, data: bytes, root: Path | None = None) -> Path:
    """The file `name` with content `data` on this node (written once, atomically)."""
    folder = (root or Path(tempfile.gettempdir()) / _CACHE) / digest
    path = folder / name
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    return path


def run_task(job: SeedJob, threads: int, dataset_digest: str, dataset: bytes,
             partition_digest: str, partition: bytes,
             callbacks: Sequence[Callback] = ()) -> RunHistory:
    """The body of one Ray task: the job's files on this node, then the job itself."""
    from clusterfl.engine.threads import configure_threads

    configure_threads(threads)
    return dataclasses.replace(
        job, dataset=materialize(dataset_digest, job.dataset.name, dataset),
        partition=materialize(partition_digest, job.partition.name, partition))(callbacks)


class RayExecutor:
    """Each job a Ray task asking for `cpus_per_task` CPUs and `gpus_per_task` GPUs."""

    live = False

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 cpus_per_task: float = 1.0, gpus_per_task: float = 0.0,
                 max_retries: int = 3, task: Any = None) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.num_cpus = num_cpus
        self.cpus_per_task = cpus_per_task
        self.gpus_per_task = gpus_per_task
        self.max_retries = max_retries
        self.task = task or run_task  # tests swap in a task that dies on its first attempt
        self._refs: dict[Path, tuple[str, Any]] = {}
        self._remote: Any = None

    def connect(self) -> None:
        """Join the cluster at `address`, else start a local Ray with `num_cpus` CPUs."""
        import ray

        if ray.is_initialized():
            return
        if self.address:
            import clusterfl

            ray.init(address=self.address, log_to_driver=True,
                     runtime_env={"py_modules": [str(Path(clusterfl.__file__).parent)]})
        else:
            ray.init(address="local", num_cpus=self.num_cpus, include_dashboard=False,
                     log_to_driver=True)

    def gpus(self) -> float:
        """GPUs in the cluster (connects first)."""
        import ray

        self.connect()
        return float(ray.cluster_resources().get("GPU", 0.0))

    def _file(self, path: Path) -> tuple[str, Any]:  # (its digest, its bytes' ObjectRef)
        import ray

        if path not in self._refs:
            self._refs[path] = (file_digest(path), ray.put(path.read_bytes()))
        return self._refs[path]

    def submit(self, job: SeedJob, callbacks: LiveCallbacks = no_callbacks) -> Any:
        """Start `job` as a Ray task (`callbacks` are not called: the caller replays the
        history); its handle is an ObjectRef."""
        import ray

        self.connect()
        if self._remote is None:
            self._remote = ray.remote(self.task).options(
                num_cpus=self.cpus_per_task, num_gpus=self.gpus_per_task,
                max_retries=self.max_retries, retry_exceptions=False)
        # top-level ObjectRef arguments reach the task as their bytes
        return self._remote.remote(job, max(1, int(self.cpus_per_task)),
                                   *self._file(Path(job.dataset)),
                                   *self._file(Path(job.partition)))

    def result(self, handle: Any) -> RunHistory:
        import ray

        history: RunHistory = ray.get(handle)
        return history

    def cancel(self, handle: Any) -> None:
        """Stop a task that has not finished. A finished one is left alone: Ray 2.60 can abort
        the driver when a cancel races with the reply of a task that just ended
        ("Check failed: it != submissible_tasks_.end()", ray-project/ray#54846, #54798)."""
        import ray

        ready, _ = ray.wait([handle], timeout=0)
        if not ready:
            ray.cancel(handle)
