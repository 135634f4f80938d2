"""A lock rewritten on another CPU family (`pipeline.lock_family`): kept as committed only when
nothing but the pipeline's own output hashes changed and the numbers agree with the committed
reference within the tolerance; any other change leaves DVC's lock."""

import copy
from pathlib import Path

import yaml

from clusterfl.training.history import RunHistory
from pipeline.lock_family import hash_only_changes, keep
from pipeline.reference import pack

CELL = "results/s/exp/alg"


def _lock(out_md5: str = "a1.dir", code_md5: str = "c1", lr: float = 0.1) -> dict:
    train = {"cmd": "clusterfl train exp alg --suite s",
             "deps": [{"path": "src/clusterfl/core", "hash": "md5", "md5": code_md5},
                      {"path": "data/s/partitions/p", "hash": "md5", "md5": "p1.dir"}],
             "params": {"params.yaml": {"algorithms.alg.lr": lr}},
             "outs": [{"path": CELL, "hash": "md5", "md5": out_md5, "size": 10, "nfiles": 2}]}
    report = {"cmd": "clusterfl report --suite s",
              "deps": [{"path": CELL, "hash": "md5", "md5": out_md5, "size": 10, "nfiles": 2}],
              "outs": [{"path": "reports/s", "hash": "md5", "md5": f"r{out_md5}"}]}
    return {"schema": "2.0", "stages": {"train@exp-alg": train, "report": report}}


def test_only_the_pipelines_own_hashes_may_differ():
    before = _lock()
    assert hash_only_changes(before, copy.deepcopy(before)) == []
    # the train output and the report that reads it: both produced by the pipeline
    assert hash_only_changes(before, _lock(out_md5="b2.dir")) == ["reports/s", CELL]
    sized = copy.deepcopy(before)
    sized["stages"]["train@exp-alg"]["outs"][0]["size"] = 11
    assert hash_only_changes(before, sized) == [CELL]
    # a code file, a param, a command, a stage or an out path: a real change
    assert hash_only_changes(before, _lock(code_md5="c2")) is None
    assert hash_only_changes(before, _lock(lr=0.2)) is None
    cmd = copy.deepcopy(before)
    cmd["stages"]["report"]["cmd"] += " --no-track"
    assert hash_only_changes(before, cmd) is None
    fewer = copy.deepcopy(before)
    del fewer["stages"]["report"]
    assert hash_only_changes(before, fewer) is None
    moved = copy.deepcopy(before)
    moved["stages"]["train@exp-alg"]["outs"][0]["path"] = "results/s/exp/other"
    assert hash_only_changes(before, moved) is None
    flag = copy.deepcopy(before)
    flag["stages"]["train@exp-alg"]["outs"][0]["cache"] = False
    assert hash_only_changes(before, flag) is None


def _history(seed_dir: Path, accuracy: float) -> Path:
    h = RunHistory(primary="test_acc")
    h.append({"round": 1, "test_acc": 50.0}, {})
    h.append({"round": 2, "test_acc": accuracy}, {})
    seed_dir.mkdir(parents=True)
    h.write(seed_dir)
    return seed_dir / "history.json"


def _workspace(tmp_path: Path, reference: float, trained: float) -> tuple[Path, str]:
    pack({"exp/alg/seed0/history.json": _history(tmp_path / "ref/seed0", reference)},
         tmp_path / "reference/s/p1/histories/histories.tar.xz")
    _history(tmp_path / CELL / "seed0", trained)
    lock = tmp_path / "dvc.lock"
    before = yaml.safe_dump(_lock())
    lock.write_text(yaml.safe_dump(_lock(out_md5="b2.dir")))
    return lock, before


def test_keep_restores_the_committed_lock_within_the_tolerance(tmp_path):
    lock, before = _workspace(tmp_path, 75.0, 75.004)
    kept = keep(lock, before, "s", root=tmp_path, tolerance=0.01)
    assert kept.kept and lock.read_text() == before
    assert kept.changed == ("reports/s", CELL)
    assert "1 histories of its 1 trained cells agree with reference/s within 0.004" in kept.line


def test_keep_leaves_dvcs_lock_beyond_the_tolerance_or_without_a_reference(tmp_path):
    lock, before = _workspace(tmp_path, 75.0, 75.5)
    written = lock.read_text()
    kept = keep(lock, before, "s", root=tmp_path, tolerance=0.01)
    assert not kept.kept and lock.read_text() == written
    assert "differs from its committed reference by 0.5 > 0.01" in kept.line
    lock2, before2 = _workspace(tmp_path / "w2", 75.0, 75.0)
    _history(tmp_path / "w2" / CELL / "seed1", 75.0)  # a seed the reference lacks
    kept2 = keep(lock2, before2, "s", root=tmp_path / "w2")
    assert not kept2.kept and "1 of them (results/s/exp/alg, ...) in no committed" in kept2.line


def test_keep_is_silent_when_nothing_or_a_real_change_happened(tmp_path):
    lock, before = _workspace(tmp_path, 75.0, 75.0)
    lock.write_text(before)
    assert keep(lock, before, "s", root=tmp_path).line == ""
    lock.write_text(yaml.safe_dump(_lock(code_md5="c2")))
    assert keep(lock, before, "s", root=tmp_path).line == ""
    assert "c2" in lock.read_text()
