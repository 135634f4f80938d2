"""A tracking server shared on a cluster (docs/cluster.md, "MLflow as the shared store"): a
real `mlflow server --app-name basic-auth` on 127.0.0.1 with the documented config
(examples/mlflow_basic_auth.ini) and `--allowed-hosts`, the admin's password from the
environment, a user added by examples/mlflow_add_user.py from a password file, and
`clusterfl train` logging with that user's credentials from ~/.mlflow/credentials. Nothing
without credentials, no Host header outside --allowed-hosts, no secret on a command line;
and no document starts a server on 0.0.0.0."""

import os
import re
import secrets
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.mlflow_servers import free_port, start_server, stop_server
from tests.workspace import cli_in_process

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_no_document_starts_a_server_on_every_interface():
    """README and docs/cluster.md started `mlflow server --host 0.0.0.0` with no
    authentication: anyone on the network could read, change or delete the runs."""
    for doc in DOCS:
        text = doc.read_text()
        assert "0.0.0.0" not in text, doc
        for command in re.findall(r"mlflow server --[^\n]*(?:\\\n[^\n]*)*", text):
            assert "--host 127.0.0.1" in command or "--app-name basic-auth" in command, (
                doc, command)
    cluster = (ROOT / "docs/cluster.md").read_text()
    assert "--app-name basic-auth" in cluster and "--allowed-hosts" in cluster
    assert "MLFLOW_AUTH_ADMIN_PASSWORD=\"$(cat admin_password)\"" in cluster
    assert "MLFLOW_FLASK_SERVER_SECRET_KEY=\"$(cat flask_secret)\"" in cluster


def _status(url: str, host: str | None = None, auth: tuple[str, str] | None = None) -> int:
    request = urllib.request.Request(url)
    if host is not None:
        request.add_header("Host", host)
    if auth is not None:
        import base64

        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def _workspace(tmp_path: Path) -> Path:
    """A tiny default suite (one seed, 3 rounds, 6 clients) with its data."""
    ws = tmp_path / "ws"
    ws.mkdir()
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(seeds=[0], training={"rounds": 3})
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=2, max_size=120)
    params["tracking"] = {"experiment": "auth-test"}
    (ws / "params.yaml").write_text(yaml.safe_dump(params))
    for args in (["download", "p1_synthetic"], ["partition", "p1_synthetic"]):
        cli_in_process(ws, *args, env={"MLFLOW_TRACKING_URI": None})
    return ws


def _secret(path: Path) -> str:
    path.write_text(secrets.token_urlsafe(24) + "\n")
    path.chmod(0o600)
    return path.read_text().strip()


@pytest.mark.server
@pytest.mark.slow
def test_basic_auth_server_admits_only_signed_in_users_and_allowed_hosts(tmp_path):
    try:
        import flask_wtf  # noqa: F401  (the basic-auth app refuses to start without it)
    except ImportError:
        pytest.fail("Flask-WTF is missing: MLflow's basic-auth app needs it; `make install` "
                    "installs it (requirements.lock)")
    store = tmp_path / "server"
    store.mkdir()
    shutil.copy(ROOT / "examples/mlflow_basic_auth.ini", store / "mlflow_basic_auth.ini")
    admin = _secret(store / "admin_password")
    flask_key = _secret(store / "flask_secret")  # the app's CSRF key, required to start
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    allowed = f"head-node:{port},localhost:{port},127.0.0.1:{port}"
    proc = start_server(
        store / "mlflow.db", port, cwd=store, timeout=180,
        options=("--app-name", "basic-auth", "--allowed-hosts", allowed,
                 "--artifacts-destination", str(store / "artifacts")),
        env={"MLFLOW_AUTH_CONFIG_PATH": str(store / "mlflow_basic_auth.ini"),
             "MLFLOW_AUTH_ADMIN_PASSWORD": admin, "MLFLOW_FLASK_SERVER_SECRET_KEY": flask_key})
    try:
        command_line = Path(f"/proc/{proc.pid}/cmdline").read_text()
        assert "--app-name\0basic-auth" in command_line
        assert admin not in command_line and flask_key not in command_line
        assert (store / "mlflow_auth.db").exists()  # the users, beside the server's files
        api = f"{uri}/api/2.0/mlflow/experiments/search?max_results=1"
        assert _status(api) == 401  # no credentials: nothing to read
        assert _status(api, auth=("admin", "wrong")) == 401
        assert _status(api, auth=("admin", admin)) == 200
        # a hostname Host header: refused unless --allowed-hosts names it
        assert _status(api, host=f"head-node:{port}", auth=("admin", admin)) == 200
        assert _status(api, host=f"other-node:{port}", auth=("admin", admin)) == 403

        alice = _secret(tmp_path / "alice_password")
        add = subprocess.run(
            [sys.executable, str(ROOT / "examples/mlflow_add_user.py"), uri, "alice",
             str(tmp_path / "alice_password")], capture_output=True, text=True, timeout=300,
            env={**os.environ, "MLFLOW_TRACKING_USERNAME": "admin",
                 "MLFLOW_TRACKING_PASSWORD": admin})
        assert add.returncode == 0, add.stderr
        assert _status(api, auth=("alice", alice)) == 200

        ws = _workspace(tmp_path)
        home = tmp_path / "home"
        (home / ".mlflow").mkdir(parents=True)
        credentials = home / ".mlflow/credentials"
        credentials.write_text(f"[mlflow]\nmlflow_tracking_username = alice\n"
                               f"mlflow_tracking_password = {alice}\n")
        credentials.chmod(0o600)
        env = {key: value for key, value in os.environ.items()
               if not key.startswith("MLFLOW_TRACKING_")}
        env |= {"HOME": str(home), "MLFLOW_TRACKING_URI": uri, "CLUSTERFL_THREADS": "1",
                "PYTHONPATH": f"{ROOT}:{ROOT}/src"}
        train = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "train", "p1_synthetic_mlr", "fedavg",
             "-p", "params.yaml"], cwd=ws, env=env, capture_output=True, text=True,
            timeout=600)
        assert train.returncode == 0 and "warning" not in train.stderr, train.stderr

        from mlflow.tracking import MlflowClient

        os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"] = (
            "alice", alice)
        try:
            client = MlflowClient(uri)
            exp = client.get_experiment_by_name("auth-test")
            runs = client.search_runs([exp.experiment_id])
            assert sorted(r.info.run_name for r in runs) == [
                "p1_synthetic_mlr/fedavg", "p1_synthetic_mlr/fedavg/seed0"]
            child = next(r for r in runs if r.info.run_name.endswith("seed0"))
            assert [m.step for m in client.get_metric_history(child.info.run_id,
                                                               "test_acc")] == [1, 2, 3]
            client.log_text(child.info.run_id, "proxied", "note.txt")  # artifacts too
            assert any((store / "artifacts").rglob("note.txt"))
        finally:
            del os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"]
    finally:
        stop_server(proc)
