"""The committed `dvc.lock` matches the code and params at HEAD: `dvc status` of a fresh
clone shows only outputs missing (no DVC cache there), never a changed dependency, param or
command; and `make reproduce` cannot leave `git status` dirty (no autostage, every output
and the MLflow store already ignored, so DVC writes no `.gitignore` and stages nothing).

When the first test fails, the lock is stale: run `dvc repro` in a fresh clone of the
commit and commit its `dvc.lock` (the failure lists the stale stages).

A long suite's lock may lag the code between landings only when `suites/lagging_locks.yaml`
names it with the commit it was last refreshed at: then the lock must be byte-for-byte that
commit's (nobody blessed it by hand since), the commit an ancestor of HEAD, and README must
name the suite and the commit. The default suite's lock never lags."""

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
LAGGING = "suites/lagging_locks.yaml"


def lagging_locks(root: Path) -> dict[str, str]:
    """lock path -> the commit it was last refreshed at, from `suites/lagging_locks.yaml`."""
    path = root / LAGGING
    if not path.exists():
        return {}
    entries = yaml.safe_load(path.read_text()) or {}
    return {lock: str(entry["refreshed_at"]) for lock, entry in entries.items()}


def _git(clone: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=clone, capture_output=True, text=True, timeout=60)


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
    lagging = lagging_locks(clone)
    stale = []
    for lock in locks:
        if str(lock) in lagging:  # checked against its commit instead, below
            continue
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


def test_a_lagging_lock_is_exactly_its_refresh_commits_and_named_in_readme(clone):
    lagging = lagging_locks(clone)
    assert "dvc.lock" not in lagging, "the default suite's lock never lags"
    readme = (clone / "README.md").read_text()
    for lock, commit in lagging.items():
        assert (clone / lock).exists(), f"{LAGGING}: {lock} is not committed"
        assert _git(clone, "merge-base", "--is-ancestor", commit, "HEAD").returncode == 0, (
            f"{LAGGING}: {lock}'s refresh commit {commit} is not in HEAD's history")
        changed = _git(clone, "diff", "--quiet", commit, "HEAD", "--", lock)
        assert changed.returncode == 0, (
            f"{lock} differs from its refresh commit {commit[:7]}: a refreshed lock removes "
            f"its line from {LAGGING}; a lock is never edited by hand")
        suite = str(Path(lock).parent)
        assert suite in readme and commit[:7] in readme, (
            f"README must say that {suite}'s lock lags (refreshed at {commit[:7]})")


def test_lagging_locks_reads_the_marker(tmp_path):
    assert lagging_locks(tmp_path) == {}
    (tmp_path / "suites").mkdir()
    (tmp_path / LAGGING).write_text("suites/a/dvc.lock: {refreshed_at: abc123, why: x}\n")
    assert lagging_locks(tmp_path) == {"suites/a/dvc.lock": "abc123"}


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
