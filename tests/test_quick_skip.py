"""Skipping items outside the active suite from the YAML alone (no torch import)."""

import json

import yaml

from pipeline.common import outside_suite, skip_quickly

PARAMS = {
    "suite": "small",
    "suites": {"small": {"datasets": ["a"], "experiments": ["e1"]}},
    "datasets": {"a": {}, "b": {}},
    "partitions": {"pa": {"dataset": "a"}, "pb": {"dataset": "b"}},
    "experiments": {"e1": {}, "e2": {}},
}


def test_outside_suite_by_kind(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(PARAMS))
    assert outside_suite(path, "dataset", "a") is None
    assert outside_suite(path, "dataset", "b") == "dataset 'b' is not in suite 'small'"
    assert outside_suite(path, "partition", "pa") is None
    assert outside_suite(path, "partition", "pb") == "partition 'pb' is not in suite 'small'"
    assert outside_suite(path, "experiment", "e2") == "experiment 'e2' is not in suite 'small'"
    # unknown names and broken files go to the full validation, which names the key
    assert outside_suite(path, "experiment", "e3") is None
    assert outside_suite(path, "partition", "pc") is None
    (tmp_path / "bad.yaml").write_text("suite: [")
    assert outside_suite(tmp_path / "bad.yaml", "dataset", "a") is None


def test_skip_quickly_swaps_in_a_marker_only_when_outside(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(PARAMS))
    out = tmp_path / "results" / "e2" / "fedavg"
    out.mkdir(parents=True)
    (out / "old.json").write_text("{}")
    assert skip_quickly(path, "experiment", "e2", out) is not None
    assert [p.name for p in out.iterdir()] == ["skipped.json"]
    assert "not in suite" in json.loads((out / "skipped.json").read_text())["skipped"]
    inside = tmp_path / "results" / "e1" / "fedavg"
    assert skip_quickly(path, "experiment", "e1", inside) is None
    assert not inside.exists()
