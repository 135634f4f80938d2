"""Choosing how seed jobs run: the executor a command's options ask for (`--jobs`,
`--threads`, `clusterfl sweep --executor ray|process|serial`). Above the executor interface
(`clusterfl.run.execution`) and its implementations, which never import this module.
"""

import os

from clusterfl.core.errors import UserError, unknown_name
from clusterfl.core.options import count
from clusterfl.run.execution import Executor, SerialExecutor
from clusterfl.run.process_executor import ProcessExecutor

SWEEP_EXECUTORS = ("ray", "process", "serial")


def choose_executor(kind: str | None = None, *, jobs: int | None = None,
                    runs: int | None = None, threads: int | None = None,
                    cpus: int | None = None, device: str = "cpu", address: str | None = None,
                    cpus_per_task: float = 1.0, gpus_per_task: float | None = None,
                    retries: int = 3) -> tuple[Executor, str]:
    """The executor a command's options ask for, and `device` resolved where its jobs run.

    `clusterfl train` and `tune` (kind None): `jobs` worker processes (--jobs, else
    CLUSTERFL_JOBS, else 1), at most `runs`, each with `threads` (--threads) torch threads,
    else cores / processes; a single one runs here instead (live progress and tracking), with
    `threads`, else CLUSTERFL_THREADS, else torch's default.
    `clusterfl sweep --executor KIND`: `ray` (a local Ray of `cpus` CPUs, or the cluster at
    `address` / RAY_ADDRESS; each task asks for `cpus_per_task` CPUs and `gpus_per_task` GPUs,
    default one on CUDA; a task whose worker died runs again up to `retries` times), `process`
    (`cpus` workers, default one per core, one thread each) or `serial` (this process).
    """
    from clusterfl.run.devices import resolve_device

    if kind is None:
        jobs = count("--jobs", jobs, "CLUSTERFL_JOBS") or 1
        threads = count("--threads", threads, "CLUSTERFL_THREADS")
        if jobs == 1:
            _configure_threads(threads)
        elif threads is not None:
            os.environ["CLUSTERFL_THREADS"] = str(threads)  # read by each worker process
        workers = min(jobs, jobs if runs is None else runs)
        executor: Executor = SerialExecutor() if workers <= 1 else ProcessExecutor(workers)
        return executor, resolve_device(device)
    cpus = count("--cpus", cpus)  # 0 is an error, as for --jobs and --threads
    if kind == "ray":
        from clusterfl.run.ray_executor import RayExecutor

        if cpus is not None and (address or os.environ.get("RAY_ADDRESS")):
            raise UserError("--cpus: sets the size of a local Ray; a cluster (--address, "
                            "RAY_ADDRESS) has the CPUs its nodes were started with")
        ray = RayExecutor(address=address, num_cpus=cpus, cpus_per_task=cpus_per_task,
                          max_retries=retries)
        device = resolve_device(device, ray.gpus() > 0, "the Ray cluster")
        ray.gpus_per_task = gpus_per_task if gpus_per_task is not None else float(
            device == "cuda")
        return ray, device
    if kind not in SWEEP_EXECUTORS:
        raise unknown_name("--executor", kind, list(SWEEP_EXECUTORS))
    device = resolve_device(device)
    if kind == "process":
        return ProcessExecutor(cpus or os.cpu_count() or 1, threads=1), device
    _configure_threads(None)
    return SerialExecutor(), device


def _configure_threads(n: int | None) -> None:
    """This process's torch threads: `n` (--threads), else CLUSTERFL_THREADS, else torch's
    default (one per core)."""
    from clusterfl.engine.threads import configure_threads

    configure_threads(count("--threads", n, "CLUSTERFL_THREADS"))
