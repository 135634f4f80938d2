"""Thread settings, set on purpose: one place decides how many cores a process may use.

A run alone on the machine may use every core (`n=None` keeps PyTorch's default, one thread
per core). When independent runs go in parallel, each must use `cores / jobs` threads (usually
1), or every process starts one thread per core and they oversubscribe the CPU: on 2 cores, two
2-thread processes run slower together than one after the other. The environment variables
reach child processes (and libraries that read them when they start); the torch call sets
this process.
"""

import contextlib
import os

import torch

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# libgomp threads spin while they wait; on a shared machine a descheduled peer then stalls the
# others (a pFedMe round took 14-44 s instead of 3.3 s with 2 threads beside other jobs).
PASSIVE_WAIT = ("OMP_WAIT_POLICY", "PASSIVE")


def configure_threads(n: int | None) -> int:
    """Use `n` intra-op threads here and in child processes (None: leave the defaults).

    Returns the number of threads torch now uses.
    """
    if n is None:
        return torch.get_num_threads()
    if n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    for name in THREAD_ENV:
        os.environ[name] = str(n)
    os.environ.setdefault(*PASSIVE_WAIT)  # read when OpenMP starts: children, not this process
    torch.set_num_threads(n)
    # Inter-op threads can be set only before the first parallel op; else keep what is there.
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(n)
    return torch.get_num_threads()


def split_threads(jobs: int, cores: int | None = None) -> int:
    """Threads per process when `jobs` processes share `cores` (default: all) cores."""
    cores = cores or os.cpu_count() or 1
    return max(1, cores // max(jobs, 1))
