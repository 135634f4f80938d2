"""A cell killed for real resumes: `clusterfl train` in a subprocess is SIGKILLed after seed 1's
round 5 (seed 0 finished, checkpoints every 2 rounds); the rerun reuses seed 0, resumes seed 1
at round 4, removes the killed run's temporary folder and its checkpoints, and writes the
histories of an uninterrupted run. SIGTERM: a checkpoint, one line, exit 143."""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.workspace import cli_in_process

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
CELL = ("p1_synthetic_mlr", "pfedkm_k2")

# Runs the real CLI with each seed's progress callback replaced by one that sends `signal`
# to this process after round `round` of seed `seed` (argv: seed round signal cli-args...).
DRIVER = """
import os, sys
import pipeline.train as stage
seed, round_, signum = map(int, sys.argv[1:4])

class Kill:
    def __init__(self, mine): self.mine = mine
    def on_run_start(self, info): pass
    def on_round_end(self, r, metrics):
        if self.mine and r == round_: os.kill(os.getpid(), signum)
    def on_run_end(self, summary): pass

stage.progress_callback = lambda name, total: Kill(name.endswith(f"/seed{seed}"))
from pipeline.cli import main
sys.argv = ["clusterfl", *sys.argv[4:]]
sys.exit(main())
"""


def _run(ws: Path, *args: str, driver: tuple[int, int, int] | None = None):
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}",
           "CLUSTERFL_THREADS": "1", "OMP_NUM_THREADS": "1", "HOME": str(ws)}
    cmd = [sys.executable, "-m", "pipeline.cli", *args] if driver is None else \
        [sys.executable, "-c", DRIVER, *map(str, driver), *args]
    return subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("ws")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(seeds=[0, 1], training={"rounds": 6},
                           grid=[{"experiments": [CELL[0]], "algorithms": [CELL[1]]}])
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=3, max_size=200)
    params["checkpoints"] = {"every": 2}
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    for args in (("download", "p1_synthetic"), ("partition", "p1_synthetic")):
        cli_in_process(ws, *args, params=None)  # material, not under test: no new interpreter
    return ws


def histories(cell: Path) -> dict[str, object]:
    """Each seed's history.json without wall-clock values (`*_seconds`)."""
    out = {}
    for path in sorted(cell.glob("seed*/history.json")):
        data = json.loads(path.read_text())
        data["records"] = [{k: v for k, v in r.items() if not k.endswith("_seconds")}
                           for r in data["records"]]
        data.pop("summary")
        out[path.parent.name] = data
    return out


def test_sigkill_then_rerun_resumes_and_equals_an_uninterrupted_run(workspace):
    ws = workspace
    train = ("train", *CELL, "--no-track")
    parent = ws / "results/default" / CELL[0]
    ckpt = ws / "checkpoints/default" / CELL[0] / CELL[1]
    killed = _run(ws, *train, driver=(1, 5, signal.SIGKILL))
    assert killed.returncode == -signal.SIGKILL
    assert not (parent / CELL[1]).exists()
    assert len(list(parent.glob(f".{CELL[1]}.*"))) == 1  # the killed run's temporary folder
    assert (ckpt / "seed0/finished.pt").exists() and (ckpt / "seed1/state.pt").exists()

    resumed = _run(ws, *train)
    assert resumed.returncode == 0, resumed.stderr
    name = "/".join(CELL)
    assert f"{name}/seed0: finished before; its history is reused" in resumed.stderr
    assert f"{name}/seed1: resumed at round 4 from" in resumed.stderr
    assert list(parent.glob(f".{CELL[1]}.*")) == []  # cleaned
    assert not (ws / "checkpoints").exists()  # removed with the finished cell
    got = histories(parent / CELL[1])

    shutil.rmtree(parent / CELL[1])
    # the uninterrupted run to compare with: the same command, in this process (one thread)
    fresh = cli_in_process(ws, *train, params=None,
                           env={"CLUSTERFL_THREADS": "1", "HOME": str(ws)})
    assert "resumed" not in fresh and "finished before" not in fresh
    want = histories(parent / CELL[1])
    assert list(got) == ["seed0", "seed1"] and got == want


def test_sigterm_writes_a_checkpoint_and_exits_143_with_one_line(workspace):
    ws = workspace
    proc = _run(ws, "train", *CELL, "--no-track", driver=(0, 3, signal.SIGTERM))
    assert proc.returncode == 128 + signal.SIGTERM
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {'/'.join(CELL)}/seed0: stopped by SIGTERM after round 3 "
                           f"of 6; checkpoint in {ws / 'checkpoints/default'}/")
    state = ws / "checkpoints/default" / CELL[0] / CELL[1] / "seed0/state.pt"
    assert state.exists()
    again = _run(ws, "train", *CELL, "--no-track")
    assert again.returncode == 0, again.stderr
    assert f"{'/'.join(CELL)}/seed0: resumed at round 3" in again.stderr
