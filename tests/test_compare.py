"""`clusterfl compare`: equal trees pass, one changed number fails, wall-clock is ignored."""

import json

from typer.testing import CliRunner

from clusterfl.training.history import RunHistory
from pipeline.cli import app


def _tree(root, acc: float, seconds: float) -> None:
    h = RunHistory(primary="test_acc")
    h.append({"round": 1, "test_acc": 0.5, "kmeans_seconds": seconds}, {"cluster": [0, 1]})
    h.append({"round": 2, "test_acc": acc, "kmeans_seconds": seconds}, {"cluster": [1, 1]})
    h.write(root / "exp" / "alg" / "seed0")


def test_compare_finds_a_changed_number_and_ignores_wall_clock(tmp_path):
    _tree(tmp_path / "a", 0.75, 0.1)
    _tree(tmp_path / "b", 0.75, 9.9)
    same = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert same.exit_code == 0, same.output
    assert "1 of 1 histories in both trees equal" in same.output
    _tree(tmp_path / "c", 0.7500001, 0.1)
    differ = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "c")])
    assert differ.exit_code == 1
    assert "0 of 1 histories in both trees equal" in differ.output
    data = json.loads((tmp_path / "a/exp/alg/seed0/history.json").read_text())
    assert data["primary"] == "test_acc"


def _invoke(*args: str):
    return CliRunner().invoke(app, ["compare", *map(str, args)])


def test_compare_fails_on_nothing_compared_and_on_histories_in_one_tree_only(tmp_path):
    (tmp_path / "e1").mkdir()
    (tmp_path / "e2").mkdir()
    empty = _invoke(tmp_path / "e1", tmp_path / "e2")
    assert empty.exit_code == 2, empty.output
    assert "nothing to compare" in empty.output
    _tree(tmp_path / "a", 0.75, 0.1)
    _tree(tmp_path / "b", 0.75, 0.1)
    _tree(tmp_path / "extra", 0.75, 0.1)
    (tmp_path / "extra/exp/alg").rename(tmp_path / "b/exp/other")
    part = _invoke(tmp_path / "a", tmp_path / "b")  # b holds a history a lacks
    assert part.exit_code == 1, part.output
    assert "1 of 1 histories in both trees equal" in part.output
    assert f"1 only in {tmp_path / 'b'}" in part.output
    subset = _invoke(tmp_path / "a", tmp_path / "b", "--subset")  # b may hold more
    assert subset.exit_code == 0, subset.output
    reverse = _invoke(tmp_path / "b", tmp_path / "a", "--subset")  # but a must not
    assert reverse.exit_code == 1, reverse.output
    assert "exp/other/seed0" in reverse.output
    none = _invoke(tmp_path / "e1", tmp_path / "b", "--subset")
    assert none.exit_code == 2 and "nothing to compare" in none.output


def test_compare_rejects_a_negative_or_non_finite_tolerance(tmp_path):
    _tree(tmp_path / "a", 0.75, 0.1)
    for bad in ("-1", "nan", "inf"):
        result = _invoke(tmp_path / "a", tmp_path / "a", "--tolerance", bad)
        assert result.exit_code == 2, (bad, result.output)
        assert "--tolerance: must be a finite number >= 0" in result.output
