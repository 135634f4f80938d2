"""`clusterfl ui`: the MLflow UI on this repository's store, opened on the runs table.

MLflow 3's UI opens an experiment in its GenAI (traces) view; the link printed here names
the model-training view (`tracking.runs_page_url`), so that the first page is the runs.
A tracking URI that is already a server (http...) is not served again: its link is printed.
"""

import os
import sys
from pathlib import Path

from rich.console import Console


def links(base: str, experiment: str, uri: str) -> list[str]:
    """The runs page of `experiment` if the store has it, else the experiments list."""
    from clusterfl.run.tracking import find_experiment, runs_page_url

    found = find_experiment(experiment, uri) if _store_exists(uri) else None
    if found is None:
        return [f"{base}/#/experiments?workflowType=machine_learning"]
    return [runs_page_url(base, found)]


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
    base = f"http://{host}:{port}"
    for link in links(base, experiment, uri):
        console.print(f"open {link}  (the runs of {experiment!r}; Ctrl-C stops the UI)",
                      soft_wrap=True)
    mlflow = str(Path(sys.executable).parent / "mlflow")
    os.execv(mlflow, [mlflow, "ui", "--backend-store-uri", uri, "--host", host,
                      "--port", str(port)])
