"""A real `mlflow server` on 127.0.0.1 for the tests that need one (tracking, Ray, browser)."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(store: Path, port: int, artifacts: Path | None = None, workers: int = 1,
                 cwd: Path | None = None, timeout: float = 300,
                 jobs: bool = False, options: tuple[str, ...] = (),
                 env: dict[str, str] | None = None) -> subprocess.Popen:
    """`mlflow server` over the sqlite file `store`, once it answers /health (else the test
    fails; `timeout` is generous: a server takes minutes to start on a loaded machine).

    `jobs=False` starts it without MLflow's job runner (MLFLOW_SERVER_ENABLE_JOB_EXECUTION),
    which serves GenAI jobs (judges, trace rollups) that no run of this repo makes: 8 more
    Python processes (a runner and 7 Huey consumers) that each import MLflow, about 16 s of
    CPU per server on these 2 cores. `options`: more `mlflow server` options (e.g.
    `--app-name basic-auth`); `env`: more environment variables (its secrets stay there, off
    the command line)."""
    command = [str(BIN / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port),
               "--backend-store-uri", f"sqlite:///{store}", "--workers", str(workers)]
    if artifacts is not None:
        command += ["--default-artifact-root", str(artifacts)]
    command += list(options)
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "true" if jobs else "false",
           **(env or {})}
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_server(proc)
                pytest.fail("mlflow server did not start")
            time.sleep(0.5)


def stop_server(proc: subprocess.Popen) -> None:
    """SIGTERM to the server's process group; SIGKILL where it lingers (open keep-alive
    connections hold uvicorn's graceful shutdown; its workers ignore TERM under load)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
