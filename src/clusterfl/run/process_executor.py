"""Seed jobs in spawned worker processes: the process executor of `clusterfl.run.execution`.

At most `workers` jobs run at once, each in a worker process with `threads` torch threads. A
worker is kept for the next queued job (torch imported and the cell's dataset loaded once)
and stops when nothing is queued, so no idle process outlives its jobs. Spawned, not forked:
a fork would copy torch's thread pools.

Stopping: `cancel` drops a queued job and sends a running job's worker SIGTERM, on which a
job with checkpoints finishes its round, writes a checkpoint and stops (`checkpoints.py`),
and one without stops at once. Workers run in their own process group, so a Ctrl-C reaches
the parent alone, which stops them that way: a second signal would kill a worker before its
checkpoint. When the parent exits (after a Ctrl-C, say) every job still queued or running is
stopped like that and the parent waits for the workers' checkpoints; the threads serving the
queue are daemons, so nothing else would stop them before the whole queue had run.
"""

import atexit
import contextlib
import multiprocessing
import multiprocessing.util  # its exit handler (joining children) must run after ours
import os
import signal
import threading
import traceback
import weakref
from collections import deque
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from clusterfl.core.options import count
from clusterfl.engine.threads import configure_threads, split_threads
from clusterfl.run.checkpoints import Interrupted
from clusterfl.training.history import RunHistory

if TYPE_CHECKING:  # execution.py imports this module
    from clusterfl.run.execution import LiveCallbacks, SeedJob


class RemoteTraceback(Exception):
    """The worker's traceback, attached as the cause of the error a job raised there."""

    def __str__(self) -> str:
        return str(self.args[0])


def serve(conn: Connection, threads: int) -> None:
    """A worker's life: run each job it is sent, send back its history or its error; None
    ends it."""
    os.setpgrp()  # Ctrl-C reaches the parent only; it stops workers through `cancel`
    configure_threads(threads)
    while (job := conn.recv()) is not None:
        try:
            reply = (True, job(), "")
        except BaseException as err:  # raised again by the caller, with this traceback
            reply = (False, err, traceback.format_exc())
        try:
            conn.send(reply)
        except Exception:  # an error that does not pickle: its text
            conn.send((False, RuntimeError(f"{type(reply[1]).__name__}: {reply[1]}"),
                       reply[2]))
        if isinstance(reply[1], Interrupted):  # stopped by a signal: no further job
            return


class _Worker:
    """One spawned worker process and the pipe its jobs and replies go through."""

    def __init__(self, threads: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=serve, args=(child, threads),
                                       name="clusterfl-worker")
        self.process.start()
        child.close()

    def run(self, job: "SeedJob") -> tuple[bool, Any, str]:
        """(True, history, "") or (False, the error, the worker's traceback)."""
        try:
            self.conn.send(job)
            reply: tuple[bool, Any, str] = self.conn.recv()
            return reply
        except (EOFError, OSError):  # killed, out of memory, stopped by `cancel`
            self.process.join()
            return False, BrokenProcessPool(f"{job.name}: its worker process died (exit "
                                            f"code {self.process.exitcode})"), ""

    def stop(self) -> None:
        """End it between jobs (one that died already is only reaped)."""
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.process.join()
        self.conn.close()


class ProcessExecutor:
    """Jobs in at most `workers` spawned processes; histories come back when each job ends.
    Threads per worker: `threads`, else CLUSTERFL_THREADS, else cores / workers."""

    live = False

    def __init__(self, workers: int, threads: int | None = None) -> None:
        self.workers = workers
        self.threads = (count("threads", threads, "CLUSTERFL_THREADS")
                        or split_threads(workers))
        self._lock = threading.Lock()  # guards the four below
        self._queue: deque[tuple[Future[RunHistory], SeedJob]] = deque()
        self._running: dict[Future[RunHistory], _Worker] = {}
        self._signalled: set[Future[RunHistory]] = set()  # cancelled while running
        self._slots: list[threading.Thread] = []  # serving the queue, one worker each
        _EXECUTORS.add(self)

    def submit(self, job: "SeedJob", callbacks: "LiveCallbacks | None" = None
               ) -> Future[RunHistory]:
        """Queue `job` (`callbacks` are not called: the caller replays the history)."""
        future: Future[RunHistory] = Future()
        with self._lock:
            self._queue.append((future, job))
            if len(self._slots) < self.workers:
                slot = threading.Thread(target=self._slot, name="clusterfl-slot", daemon=True)
                self._slots.append(slot)
                slot.start()
        return future

    def result(self, handle: Future[RunHistory]) -> RunHistory:
        return handle.result()

    def cancel(self, handle: Future[RunHistory]) -> None:
        """A queued job never starts; a running one's worker gets SIGTERM; a finished one is
        left alone."""
        with self._lock:
            if not handle.cancel():
                self._terminate(handle)

    def close(self) -> None:
        """Stop every job queued or running and wait until their workers have ended."""
        with self._lock:
            for future, _ in self._queue:
                future.cancel()
            for future in self._running:
                self._terminate(future)
            slots = list(self._slots)
        for slot in slots:
            slot.join()

    def _terminate(self, future: Future[RunHistory]) -> None:
        """SIGTERM to the worker running `future`, once (a second would kill it before its
        checkpoint); holding the lock."""
        worker = self._running.get(future)
        if worker is not None and worker.process.pid and future not in self._signalled:
            self._signalled.add(future)
            os.kill(worker.process.pid, signal.SIGTERM)

    def _next(self, worker: _Worker | None
              ) -> tuple[Future[RunHistory], "SeedJob", _Worker] | None:
        """The next job not cancelled, marked running on `worker` (started if None); None
        when the queue is empty, and the slot ends."""
        with self._lock:
            while self._queue:
                future, job = self._queue.popleft()
                if not future.set_running_or_notify_cancel():
                    continue
                try:  # started under the lock: `cancel` finds every running job's worker
                    worker = worker or _Worker(self.threads)
                except OSError as err:
                    future.set_exception(err)
                    continue
                self._running[future] = worker
                return future, job, worker
            self._slots.remove(threading.current_thread())
            return None

    def _slot(self) -> None:
        """Jobs off the queue one at a time, in one worker process kept between them."""
        worker: _Worker | None = None
        try:
            while (item := self._next(worker)) is not None:
                future, job, worker = item
                try:
                    ok, value, trace = worker.run(job)
                except Exception as err:  # e.g. a job that does not pickle (nothing was sent)
                    ok, value, trace = False, err, ""
                with self._lock:
                    del self._running[future]
                    signalled = future in self._signalled
                    self._signalled.discard(future)
                if signalled or isinstance(value, BrokenProcessPool | Interrupted):
                    worker.stop()  # one that was sent a signal is given no other job
                    worker = None
                if ok:
                    future.set_result(value)
                else:
                    value.__cause__ = RemoteTraceback(trace) if trace else None
                    future.set_exception(value)
        finally:
            with self._lock:  # ended by an error of its own: a later submit starts another
                if threading.current_thread() in self._slots:
                    self._slots.remove(threading.current_thread())
            if worker is not None:
                worker.stop()


_EXECUTORS: "weakref.WeakSet[ProcessExecutor]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for executor in list(_EXECUTORS):
        executor.close()
