"""A suite that only adds cells to the one it extends (a user's method beside the benchmark):
it shares the parent's data and results, trains only its own cells, and its algorithms come
from plugin files and its own `algorithms:` entries."""

from pathlib import Path

import pytest
import yaml

from clusterfl.core.errors import UserError
from clusterfl.core.suite import home, merge
from clusterfl.run.config import load_params
from pipeline.render import Code, stages
from tests.workspace import dvc_stages

ROOT = Path(__file__).resolve().parents[1]
SCHEMES = ["bm_iid", "bm_patho2", "bm_dir01", "bm_dir05", "bm_quantity", "bm_noise",
           "bm_rot4", "bm_labelperm", "bm_mix1090", "bm_mixrandom"]


def test_plugins_add_and_algorithm_entries_add_to_the_parents():
    parent = {"name": "a", "plugins": ["x.py"], "algorithms": {"m": {"method": "fedavg"}},
              "seeds": [0]}
    child = {"name": "b", "extends": "a", "plugins": ["y.py"],
             "algorithms": {"n": {"method": "local"}}}
    assert merge(parent, child) == {"name": "b", "plugins": ["x.py", "y.py"], "seeds": [0],
                                    "algorithms": {"m": {"method": "fedavg"},
                                                   "n": {"method": "local"}}}


def test_home_is_the_nearest_suite_that_changes_more_than_cells():
    grid = [{"experiments": ["e"], "algorithms": ["a"]}]
    base = (Path("base"), {"name": "base", "seeds": [0], "grid": grid * 2})
    adds = (Path("adds"), {"name": "adds", "extends": "base", "grid": grid,
                           "plugins": ["p.py"], "algorithms": {}})
    scaled = (Path("scaled"), {"name": "scaled", "extends": "base", "training": {}})
    more = (Path("more"), {"name": "more", "extends": "adds", "grid": grid})
    assert home([base]) == ("base", 0)
    assert home([adds, base]) == ("base", 2)  # base's two grid entries are inherited
    assert home([scaled, base]) == ("scaled", 0)  # a key that changes the cells
    assert home([more, adds, base]) == ("base", 3)  # adds' entry is adds' to train


def test_my_method_shares_the_benchmark_and_trains_only_its_own_cells():
    p = load_params(ROOT / "suites/my_method/params.yaml")
    assert p.home == "benchmark"
    assert [c.name for c in p.own_cells] == [f"{s}-my_fedprox" for s in SCHEMES]
    benchmark = load_params(ROOT / "suites/benchmark/params.yaml")
    assert [c.name for c in p.cells] == [*(c.name for c in benchmark.cells),
                                         *(c.name for c in p.own_cells)]
    config = p.algorithm("my_fedprox", experiment="bm_rot4")
    assert (config.method, config.hyper.mu, config.cls.__name__) == ("my_fedprox", 0.01,
                                                                     "MyFedProx")


def test_rendering_trains_own_cells_into_the_parents_directories(tmp_path):
    p = load_params(ROOT / "suites/my_method/params.yaml")
    out = stages(p, ROOT, Code(ROOT))["stages"]
    assert sorted(out) == ["report", "train", "tune"]  # the benchmark prepares the data
    train = dvc_stages({"stages": out}, tmp_path)["train@bm_rot4-my_fedprox"]
    assert train["outs"] == ["results/benchmark/bm_rot4/my_fedprox"]
    assert "examples/my_fedprox.py" in train["deps"]
    assert "data/benchmark/partitions/bm_rot4" in train["deps"]
    assert {"suites/my_method/params.yaml": ["suite.algorithms.my_fedprox"]} in train["params"]
    report = out["report"]["deps"]
    assert "results/benchmark/bm_iid/fedavg" in report
    assert "results/benchmark/bm_mixrandom/my_fedprox" in report
    assert out["report"]["outs"][0] == "reports/my_method/tables"


def _suite(tmp_path: Path, block: dict) -> Path:
    for name in ("params.yaml", "suites/benchmark/params.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text((ROOT / name).read_text())
    (tmp_path / "suites/mine").mkdir()
    suite = {"name": "mine", "extends": "benchmark",
             "grid": [{"experiments": ["bm_iid"], "algorithms": ["mine"]}], **block}
    (tmp_path / "suites/mine/params.yaml").write_text(yaml.safe_dump({"suite": suite}))
    return tmp_path / "suites/mine/params.yaml"


def test_a_missing_plugin_is_one_line_naming_the_key(tmp_path):
    path = _suite(tmp_path, {"plugins": ["examples/nope.py"],
                             "algorithms": {"mine": {"method": "fedavg"}}})
    with pytest.raises(UserError, match=r"suites/mine/params\.yaml:suite\.plugins\[0\]: "
                                        r"'examples/nope\.py' is not a \.py file"):
        load_params(path)


def test_an_own_algorithm_may_not_take_a_papers_name(tmp_path):
    path = _suite(tmp_path, {"algorithms": {"fedavg": {"method": "fedavg"}}})
    with pytest.raises(UserError, match=r"suite\.algorithms\.fedavg: already an algorithm of "
                                        r"paper '"):
        load_params(path)


def test_an_own_algorithm_with_an_unknown_method_names_the_suites_file(tmp_path):
    path = _suite(tmp_path, {"algorithms": {"mine": {"method": "nope"}}})
    with pytest.raises(UserError, match=r"suites/mine/params\.yaml:suite\.algorithms\.mine"
                                        r"\.method: unknown"):
        load_params(path)
