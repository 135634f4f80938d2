"""The committed `dvc.lock` matches the code and params at HEAD: `dvc status` of a fresh
clone shows only outputs missing (no DVC cache there), never a changed dependency, param or
command; and `make reproduce` cannot leave `git status` dirty (no autostage, every output
and the MLflow store already ignored, so DVC writes no `.gitignore` and stages nothing).

When the first test fails, the lock is stale: run `dvc repro` in a fresh clone of the
commit and commit its `dvc.lock` (the failure lists the stale stages).

A long suite's lock may lag the code between landings only when `suites/lagging_locks.yaml`
names it with the commit it was last refreshed at: then each stage of the lock is either that
commit's entry unchanged (it lags; nobody blessed it by hand since) or current (its `dvc
status` shows only missing outputs: it was run again since, e.g. by `make paper-p3` or
`clusterfl sweep --paper p3`), the commit is an ancestor of HEAD, and README names the suite
and the commit. So a suite can be refreshed paper by paper across landings. The default
suite's lock never lags."""

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


def _locked_at(clone: Path, commit: str, lock: Path) -> dict:
    """The lock as `commit` committed it ({} where it had none)."""
    shown = _git(clone, "show", f"{commit}:{lock}")
    if shown.returncode != 0:
        return {}
    return yaml.safe_load(shown.stdout) or {}


def refreshed_stages(lock: dict, at_refresh: dict) -> set[str]:
    """The stages of a lagging `lock` whose entries differ from its refresh commit's
    (`at_refresh`): run again since, so they must be current; the others lag unchanged."""
    old = at_refresh.get("stages", {})
    return {name for name, entry in lock.get("stages", {}).items() if old.get(name) != entry}


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
        committed = yaml.safe_load((clone / lock).read_text())
        stages = set(committed.get("stages", {}))
        if str(lock) in lagging:  # only the stages run since its refresh commit must be current
            stages = refreshed_stages(committed, _locked_at(clone, lagging[str(lock)], lock))
            if not stages:
                continue
        pipeline = lock.parent / "dvc.yaml"
        proc = subprocess.run([str(BIN / "dvc"), "status", "--json", str(pipeline)], cwd=clone,
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
        assert proc.returncode == 0, proc.stderr
        stale += [f"{lock}: {line}" for line in stale_entries(
            json.loads(proc.stdout), _outs(committed), stages)]
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
        assert _locked_at(clone, commit, Path(lock)), (
            f"{LAGGING}: {lock} is not committed at its refresh commit {commit[:7]}")
        suite = str(Path(lock).parent)
        assert suite in readme and commit[:7] in readme, (
            f"README must say that {suite}'s lock lags (refreshed at {commit[:7]})")


def test_lagging_locks_reads_the_marker(tmp_path):
    assert lagging_locks(tmp_path) == {}
    (tmp_path / "suites").mkdir()
    (tmp_path / LAGGING).write_text("suites/a/dvc.lock: {refreshed_at: abc123, why: x}\n")
    assert lagging_locks(tmp_path) == {"suites/a/dvc.lock": "abc123"}


def test_refreshed_stages_are_those_changed_since_the_refresh_commit():
    at_refresh = {"stages": {"train@a": {"md5": "1"}, "train@b": {"md5": "2"}}}
    lock = {"stages": {"train@a": {"md5": "1"}, "train@b": {"md5": "3"}, "train@c": {"md5": "4"}}}
    assert refreshed_stages(lock, at_refresh) == {"train@b", "train@c"}
    assert refreshed_stages(at_refresh, at_refresh) == set()
    assert refreshed_stages(lock, {}) == {"train@a", "train@b", "train@c"}


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
