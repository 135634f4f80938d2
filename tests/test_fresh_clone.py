"""The committed `dvc.lock` matches the code and params at HEAD: `dvc status` of a fresh
clone shows only outputs missing (no DVC cache there), never a changed dependency, param or
command; and `make reproduce` cannot leave `git status` dirty (no autostage, every output
and the MLflow store already ignored, so DVC writes no `.gitignore` and stages nothing).

When the first test fails, the lock is stale: run `dvc repro` in a fresh clone of the
commit and commit its `dvc.lock` (the failure lists the stale stages)."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
pytestmark = pytest.mark.slow
MISSING = {"deleted", "not in cache"}  # what an output absent from a fresh clone shows


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("fresh") / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(target)], check=True, timeout=300)
    return target


def _outs(lock: dict) -> list[str]:
    return [o["path"] for stage in lock.get("stages", {}).values() for o in stage.get("outs", [])]


def _is_output(path: str, outs: list[str]) -> bool:
    """`path` is an output of a stage, or a folder of outputs, or inside one."""
    return any(path == o or o.startswith(f"{path}/") or path.startswith(f"{o}/") for o in outs)


def stale_entries(status: dict, outs: list[str], locked: set[str] | None = None) -> list[str]:
    """What `dvc status --json` reports beyond missing outputs, one line per stage; with
    `locked` (the stage names of the committed lock), of those stages alone: a suite run
    paper by paper (`make paper-p4`) locks that paper's stages, and the others, never run,
    show every dependency as changed."""
    stale = []
    for stage, entries in status.items():
        if locked is not None and stage.rsplit(":", 1)[-1] not in locked:
            continue
        problems = []
        for entry in entries:
            if isinstance(entry, str):  # "changed checksum", "always changed", ...
                problems.append(entry)
                continue
            for kind, changes in entry.items():
                if kind == "changed outs":
                    problems += [f"out {p} {s}" for p, s in changes.items() if s not in MISSING]
                elif kind == "changed deps":
                    problems += [f"{p} {s}" for p, s in changes.items()
                                 if not (isinstance(s, str) and s in MISSING
                                         and _is_output(p, outs))]
                else:
                    problems.append(f"{kind}: {changes}")
        if problems:
            stale.append(f"{stage}: {'; '.join(map(str, problems))}")
    return stale


def test_stale_entries_keep_missing_outputs_and_name_changed_deps():
    status = {"train@a-b": [{"changed deps": {"data/default/partitions": "deleted",
                                              "src/clusterfl": "modified",
                                              "params.yaml": {"suite.seeds": "new"}}},
                            {"changed outs": {"results/default/a/b": "not in cache"}}],
              "partition@p": [{"changed outs": {"data/default/partitions/p": "deleted"}}]}
    outs = ["data/default/partitions/p", "results/default/a/b"]
    assert stale_entries(status, outs) == [
        "train@a-b: src/clusterfl modified; params.yaml {'suite.seeds': 'new'}"]
    named = {f"suites/s/dvc.yaml:{k}": v for k, v in status.items()}
    assert stale_entries(named, outs, locked={"partition@p"}) == []  # train@a-b never ran
    assert stale_entries(named, outs, locked={"train@a-b"}) == [
        "suites/s/dvc.yaml:train@a-b: src/clusterfl modified; params.yaml {'suite.seeds': 'new'}"]


def test_dvc_status_of_a_fresh_clone_shows_only_missing_outputs(clone):
    locks = sorted(p.relative_to(clone) for p in clone.rglob("dvc.lock") if ".dvc" not in p.parts)
    assert locks, "no dvc.lock committed"
    stale = []
    for lock in locks:
        pipeline = lock.parent / "dvc.yaml"
        proc = subprocess.run([str(BIN / "dvc"), "status", "--json", str(pipeline)], cwd=clone,
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
        assert proc.returncode == 0, proc.stderr
        committed = yaml.safe_load((clone / lock).read_text())
        stale += [f"{lock}: {line}" for line in stale_entries(
            json.loads(proc.stdout), _outs(committed), set(committed.get("stages", {})))]
    assert not stale, (
        f"the committed dvc.lock is stale ({len(stale)} stages):\n" + "\n".join(stale)
        + "\nrefresh it: run `dvc repro` in a fresh clone of this commit and commit its dvc.lock")


def test_reproduce_cannot_dirty_git_status(clone):
    config = (clone / ".dvc/config").read_text()
    assert "autostage = false" in config
    outs = _outs(yaml.safe_load((clone / "dvc.lock").read_text()))
    written = [*outs, "mlflow.db", "mlruns/0", ".dvc/tmp", ".dvc/cache",
               "logs/default/e/a/tracking.json", "reports/default/costs.md"]
    proc = subprocess.run(["git", "check-ignore", "--no-index", "-v", "--non-matching", *written],
                          cwd=clone, capture_output=True, text=True, timeout=60)
    not_ignored = [line.split("\t")[-1] for line in proc.stdout.splitlines()
                   if line.startswith("::")]
    assert not not_ignored, f"not git-ignored, `dvc repro` would list them: {not_ignored}"
    assert subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True,
                          text=True, check=True).stdout == ""
