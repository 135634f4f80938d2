"""`clusterfl ui`: the MLflow UI on this repository's store, opened on the runs table.

MLflow 3's UI opens an experiment in its GenAI (traces) view; the link printed here names
the model-training view (`tracking.runs_page_url`), so that the first page is the runs.
A tracking URI that is already a server (http...) is not served again: its link is printed.
The port is checked before the link is printed, and a store that cannot be read is one line.
"""

import errno
import os
import socket
import sys
from pathlib import Path

from rich.console import Console

from clusterfl.core.errors import UserError


def links(base: str, experiment: str, uri: str) -> list[str]:
    """The runs page of `experiment` if the store has it, else the experiments list; a
    store that cannot be read (a corrupt mlflow.db) is a one-line error."""
    from clusterfl.run.tracking import find_experiment, reason, runs_page_url

    try:
        found = find_experiment(experiment, uri) if _store_exists(uri) else None
    except Exception as err:  # MLflow's and SQLAlchemy's errors: one line, not 100
        where = uri.removeprefix("sqlite:///") if uri.startswith("sqlite:///") else uri
        raise UserError(f"{where}: the MLflow store cannot be read ({reason(err)}); the UI "
                        "would show nothing: move the file away (a new store is made on "
                        "the next `clusterfl train`) or point MLFLOW_TRACKING_URI at another "
                        "store") from None
    if found is None:
        return [f"{base}/#/experiments?workflowType=machine_learning"]
    return [runs_page_url(base, found)]


def require_free_port(host: str, port: int) -> None:
    """A one-line error unless the UI can listen on `host`:`port` now: a port outside 1 ..
    65535, a port another process listens on, an address that is not this machine's.
    Checked before the link is printed (a link to a UI that never started misleads)."""
    if not 1 <= port <= 65535:
        raise UserError(f"--port: expected a port in 1 .. 65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise UserError(f"--host: cannot resolve {host!r} ({err.strerror or err}); allowed: "
                        "an address of this machine, e.g. 127.0.0.1 or 0.0.0.0") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            probe.bind(address)
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise UserError(f"--port: {host}:{port} is in use by another process; "
                                "stop it or pick another port (--port)") from None
            raise UserError(f"--host/--port: cannot listen on {host}:{port} "
                            f"({err.strerror or err})") from None


def _store_exists(uri: str) -> bool:
    if uri.startswith("sqlite:///"):
        return Path(uri.removeprefix("sqlite:///")).exists()
    return True


def run(experiment: str, host: str, port: int, console: Console) -> None:
    from clusterfl.run.tracking import default_tracking_uri

    uri = default_tracking_uri()
    if uri.startswith(("http://", "https://")):
        for link in links(uri.rstrip("/"), experiment, uri):
            console.print(f"runs of {experiment!r}: {link}", soft_wrap=True)
        return
    require_free_port(host, port)
    base = f"http://{host}:{port}"
    for link in links(base, experiment, uri):
        console.print(f"open {link}  (the runs of {experiment!r}; Ctrl-C stops the UI)",
                      soft_wrap=True)
    mlflow = str(Path(sys.executable).parent / "mlflow")
    os.execv(mlflow, [mlflow, "ui", "--backend-store-uri", uri, "--host", host,
                      "--port", str(port)])
