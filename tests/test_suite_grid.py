"""Suites as grids (`clusterfl.core.suite`): the cells, partitions and datasets a suite's
`dvc.yaml` iterates over are derived from experiments x algorithms, and `extends` merges a
parent suite's block."""

import copy
from pathlib import Path

import pytest
import yaml

from clusterfl.core.errors import UserError, unknown_name
from clusterfl.core.suite import Cell, grid_cells, grid_experiments, merge, needed
from clusterfl.run.config import load_params

ROOT = Path(__file__).resolve().parents[1]
PAPER_OF = {"e1": "pa", "e2": "pa", "e3": "pb"}
ALGORITHMS = {"pa": ["a", "b"], "pb": ["a", "c"]}


def test_each_entry_is_every_experiment_times_every_algorithm_in_order():
    grid = [{"experiments": ["e2", "e1"], "algorithms": ["b", "a"]},
            {"experiments": ["e3"], "algorithms": ["c"]}]
    cells = grid_cells(grid, "s.grid", PAPER_OF, ALGORITHMS, unknown_name)
    assert [c.name for c in cells] == ["e2-b", "e2-a", "e1-b", "e1-a", "e3-c"]
    assert cells[-1] == Cell("pb", "e3", "c")


@pytest.mark.parametrize(("grid", "message"), [
    ([{"experiments": ["e1"], "algorithms": ["c"]}],
     r"s\.grid\[0\]\.algorithms \(paper pa\): unknown value 'c'; allowed: a, b"),
    ([{"experiments": ["e1"], "algorithms": ["a"]}, {"experiments": ["e1"], "algorithms": ["a"]}],
     r"s\.grid\[1\]: cell 'e1-a' is already in the grid"),
    ([{"experiments": [], "algorithms": ["a"]}],
     r"s\.grid\[0\]\.experiments: expected a non-empty list of names"),
    ({"experiments": ["e1"]}, r"s\.grid: expected a list"),
])
def test_a_bad_grid_is_one_line_naming_its_entry(grid, message):
    with pytest.raises(UserError, match=message):
        grid_cells(grid, "s.grid", PAPER_OF, ALGORITHMS, unknown_name)


def test_partitions_and_datasets_follow_from_the_cells_then_the_extra_partitions():
    cells = [Cell("pa", "e1", "a"), Cell("pa", "e2", "a"), Cell("pb", "e3", "a")]
    partition = {"e1": "p2", "e2": "p1", "e3": "p2"}
    dataset = {"p1": "d1", "p2": "d2", "p3": "d1"}
    assert needed(cells, ["p3", "p1"], partition.__getitem__, dataset.__getitem__) == (
        ["d2", "d1"], ["p2", "p1", "p3"])


def test_a_child_replaces_keys_and_adds_grid_entries_and_partitions():
    parent = {"name": "base", "seeds": [0, 1], "training": {"rounds": 20},
              "grid": [{"experiments": ["e1"], "algorithms": ["a"]}], "partitions": ["p1"]}
    child = {"name": "mine", "extends": "base", "training": {"rounds": 3},
             "grid": [{"experiments": ["e1"], "algorithms": ["b"]}], "partitions": ["p2"]}
    assert merge(parent, child) == {
        "name": "mine", "seeds": [0, 1], "training": {"rounds": 3},
        "grid": [{"experiments": ["e1"], "algorithms": ["a"]},
                 {"experiments": ["e1"], "algorithms": ["b"]}],
        "partitions": ["p1", "p2"]}


def test_benchmark_large_is_the_benchmark_grid_at_its_own_scale():
    base = load_params(ROOT / "suites/benchmark/params.yaml")
    large = load_params(ROOT / "suites/benchmark_large/params.yaml")
    assert large.suite == "benchmark_large" and len(large.cells) == 200
    assert [c.name for c in large.cells] == [c.name for c in base.cells]
    assert large.seeds == base.seeds and large.tuning == base.tuning
    assert large.experiment("bm_iid").schedule.rounds == 100
    assert base.experiment("bm_iid").schedule.rounds == 20
    assert large.dataset("fashion_mnist_bench")[1]["subset"] is None
    assert base.dataset("fashion_mnist_bench")[1]["subset"] == 6000


def test_paper_seeds10_is_paper_cells_at_ten_seeds_the_first_five_the_papers():
    """Its claims are the paper suite's rows at twice the seeds: experiments and algorithms
    exactly as the paper suite runs them (the one addition: the P4 baselines on the replicate
    draw, whose replicates the paper suite leaves unrun), its seeds the paper's and 5 more."""
    paper = load_params(ROOT / "suites/paper/params.yaml")
    ten = load_params(ROOT / "suites/paper_seeds10/params.yaml")
    assert ten.seeds == list(range(10)) and ten.seeds[:5] == paper.seeds
    assert {c.name for c in ten.cells} - {c.name for c in paper.cells} == {
        "p4_rep_fig1-pfl_tc_kmeans", "p4_rep_fig1-pfl_tc_tau0"}
    for cell in ten.cells:
        assert ten.experiment(cell.experiment) == paper.experiment(cell.experiment)
        assert (ten.algorithm(cell.algorithm, paper=cell.paper)
                == paper.algorithm(cell.algorithm, paper=cell.paper))


def test_a_suite_that_extends_another_adds_its_algorithm_to_the_grid(tmp_path):
    (tmp_path / "suites/mine").mkdir(parents=True)
    (tmp_path / "suites/base").mkdir()
    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    default = yaml.safe_load((ROOT / "params.yaml").read_text())["suite"]
    base = copy.deepcopy(default) | {"name": "base"}
    (tmp_path / "suites/base/params.yaml").write_text(yaml.safe_dump({"suite": base}))
    mine = {"name": "mine", "extends": "base", "seeds": [7],
            "grid": [{"experiments": ["p1_synthetic_mlr"], "algorithms": ["pfedme_p1s"]}]}
    (tmp_path / "suites/mine/params.yaml").write_text(yaml.safe_dump({"suite": mine}))
    with pytest.raises(UserError, match=r"suites/mine/params\.yaml:suite\.grid\[6\]\.algorithms"
                                        r" \(paper p1\): unknown value 'pfedme_p1s'"):
        load_params(tmp_path / "suites/mine/params.yaml")
    mine["grid"][0]["algorithms"] = ["cfl"]
    (tmp_path / "suites/mine/params.yaml").write_text(yaml.safe_dump({"suite": mine}))
    p = load_params(tmp_path / "suites/mine/params.yaml")
    assert p.seeds == [7] and len(p.cells) == 18
    assert p.cells[-1].name == "p1_synthetic_mlr-cfl"
    # the listing's reading of the same chain: the parent's experiments first, no repeats
    assert grid_experiments(tmp_path / "suites/mine/params.yaml") == list(
        dict.fromkeys(c.experiment for c in p.cells))
    mine["extends"] = "mine"
    (tmp_path / "suites/mine/params.yaml").write_text(yaml.safe_dump({"suite": mine}))
    with pytest.raises(UserError, match=r"suite\.extends: suite 'mine' extends itself"):
        load_params(tmp_path / "suites/mine/params.yaml")


def test_training_imports_only_the_paper_of_its_cell():
    """A train stage loads its suite with `load=()`: using an experiment imports its paper,
    and no other paper's code runs (each cell's DVC deps name only its own paper)."""
    import subprocess
    import sys

    probe = ("import sys; from pathlib import Path; from clusterfl.run.config import load_params;"
             "p = load_params(Path('params.yaml'), load=());"
             "p.algorithm('pfedkm_k3', experiment='p1_synthetic_mlr');"
             "print(sorted(m for m in sys.modules if m.startswith('clusterfl.papers.')"
             " and m.count('.') == 2))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "['clusterfl.papers.p1']"


def replicate_datasets(paper, experiment: str, trial: str) -> tuple[tuple, tuple]:
    """Assert that replicate `experiment` trains as `trial` does (schedule, model, algorithm
    options) on a partition equal but for its dataset; return both datasets' (source,
    options) for the caller's check of how the draw differs."""
    rep_x, trial_x = paper.experiment(experiment), paper.experiment(trial)
    assert rep_x.schedule == trial_x.schedule and rep_x.model == trial_x.model
    assert rep_x.algorithm_options == trial_x.algorithm_options
    rep_p, trial_p = paper.partition(rep_x.partition), paper.partition(trial_x.partition)
    assert rep_p | {"dataset": None} == trial_p | {"dataset": None}
    return paper.dataset(rep_p["dataset"]), paper.dataset(trial_p["dataset"])


def test_p5_replicates_are_trial_cells_on_a_second_draw_of_the_same_generator():
    """`p5_rep_<name>` (the claims' `replicates` column) is `p5_<name>`'s cell with every
    setting the same but the dataset's seed: the same generator, sizes and split, a draw
    that no trial reads."""
    paper = load_params(ROOT / "suites/paper/params.yaml")
    cells = {(c.experiment, c.algorithm) for c in paper.cells}
    replicates = sorted((e, a) for e, a in cells if e.startswith("p5_rep_"))
    assert {e for e, _ in replicates} == {"p5_rep_syn_unf_n2000_hard",
                                          "p5_rep_syn_noniid_n2000_hard",
                                          "p5_rep_conv_syn_unf", "p5_rep_conv_syn_noniid"}
    for experiment, algorithm in replicates:
        trial = "p5_" + experiment.removeprefix("p5_rep_")
        assert (trial, algorithm) in cells
        (rep_source, rep_d), (trial_source, trial_d) = replicate_datasets(
            paper, experiment, trial)
        assert rep_source == trial_source == "fedc_nmf"
        assert rep_d | {"seed": None} == trial_d | {"seed": None}
        assert rep_d["seed"] != trial_d.get("seed", 0)


def test_p1_replicates_are_table2_cells_on_another_draw_of_their_data():
    """`p1_rep_<name>` (Table 2's `replicates` column) is `p1_<name>`'s cell with every
    training and partition setting the same: the synthetic one on another data seed of the
    same generator, the Fashion-MNIST one on another uniform subset of the same images;
    and each is the `replicate` of the Table 2 column whose stated cell it repeats."""
    paper = load_params(ROOT / "suites/paper/params.yaml")
    cells = {(c.experiment, c.algorithm) for c in paper.cells}
    replicates = sorted((e, a) for e, a in cells if e.startswith("p1_rep_"))
    references = yaml.safe_load((ROOT / "src/clusterfl/papers/p1/references.yaml").read_text())
    columns = {c["replicate"]: c for c in references["table2_protocol"]["columns"]
               if "replicate" in c}
    assert {e for e, _ in replicates} == set(columns) == {
        "p1_rep_synthetic_mlr", "p1_rep_synthetic_dnn", "p1_rep_fmnist_dnn"}
    for experiment, algorithm in replicates:
        trial = "p1_" + experiment.removeprefix("p1_rep_")
        assert columns[experiment]["stated"] == trial
        assert algorithm in columns[experiment]["algorithms"] and (trial, algorithm) in cells
        assert paper.experiment(experiment).model_options == paper.experiment(
            trial).model_options
        (rep_source, rep_d), (trial_source, trial_d) = replicate_datasets(
            paper, experiment, trial)
        assert rep_source == trial_source
        if rep_source == "clustered_synthetic":
            assert rep_d | {"seed": None} == trial_d | {"seed": None}
            assert rep_d["seed"] != trial_d.get("seed", 0)
        else:  # another uniform subset: the trials read every image, the replicate fewer
            assert rep_source == "fashion_mnist" and "subset" not in trial_d
            assert rep_d["subset"] < 70000 and rep_d["seed"] not in paper.seeds


def test_p1_mnist_replicate_is_the_stated_cells_on_seeds_no_trial_uses():
    """MNIST has no second draw offline: its Table 2 columns are replicated by suite
    `p1_table2_rep`, the paper suite's stated MNIST cells on seeds the trials never use."""
    paper = load_params(ROOT / "suites/paper/params.yaml")
    rep = load_params(ROOT / "suites/p1_table2_rep/params.yaml")
    references = yaml.safe_load((ROOT / "src/clusterfl/papers/p1/references.yaml").read_text())
    columns = [c for c in references["table2_protocol"]["columns"] if "replicate_suite" in c]
    assert {c["replicate_suite"] for c in columns} == {rep.suite}
    assert {(c["stated"], a) for c in columns for a in c["algorithms"]} == {
        (c.experiment, c.algorithm) for c in rep.cells}
    assert len(rep.seeds) == len(paper.seeds) and not set(rep.seeds) & set(paper.seeds)
    for cell in rep.cells:
        assert rep.experiment(cell.experiment) == paper.experiment(cell.experiment)
        assert (cell.experiment, cell.algorithm) in {(c.experiment, c.algorithm)
                                                     for c in paper.cells}


def _p5_replicate(suite: str) -> dict:
    references = yaml.safe_load((ROOT / "src/clusterfl/papers/p5/references.yaml").read_text())
    return next(s for s in references["replicate_suites"] if s["suite"] == suite)


def _same_settings(rep, trials) -> None:
    for cell in rep.cells:
        assert rep.experiment(cell.experiment) == trials.experiment(cell.experiment)
        assert (rep.algorithm(cell.algorithm, paper=cell.paper)
                == trials.algorithm(cell.algorithm, paper=cell.paper))


def test_p5_mnist_replicate_is_paper_seeds10s_mnist_cells_on_seeds_no_trial_uses():
    """The 5k MNIST subset has no second draw offline: suite `p5_mnist_rep` (references.yaml
    `replicate_suites`) runs paper_seeds10's cells of those sets, unchanged, on as many seeds
    that no trial uses."""
    ten = load_params(ROOT / "suites/paper_seeds10/params.yaml")
    spec = _p5_replicate("p5_mnist_rep")
    rep = load_params(ROOT / f"suites/{spec['suite']}/params.yaml")
    assert {c.name for c in rep.cells} == {c.name for c in ten.cells
                                           if c.experiment in spec["experiments"]}
    assert {c.experiment for c in rep.cells} == set(spec["experiments"])
    assert len(rep.seeds) == len(ten.seeds) and not set(rep.seeds) & set(ten.seeds)
    _same_settings(rep, ten)


def test_p5_fmnist_replicate_runs_every_method_the_claims_compare_on_seeds_no_trial_uses():
    """Suite `p5_fmnist_rep` runs the paper suite's Fashion-MNIST cells, unchanged, of every
    method a claim compares on those sets (so each such claim is decided again there), on
    seeds that no trial of any suite uses: other image draws, deals and initial points."""
    paper = load_params(ROOT / "suites/paper/params.yaml")
    ten = load_params(ROOT / "suites/paper_seeds10/params.yaml")
    spec = _p5_replicate("p5_fmnist_rep")
    rep = load_params(ROOT / f"suites/{spec['suite']}/params.yaml")
    claims = yaml.safe_load((ROOT / "src/clusterfl/papers/p5/references.yaml").read_text())[
        "claims"]
    compared = {(e, c[side]) for c in claims for e in c.get("experiments", [])
                if e in spec["experiments"] for side in ("a", "b")}
    assert {e for e, _ in compared} == set(spec["experiments"])
    assert {(c.experiment, c.algorithm) for c in rep.cells} == compared
    assert compared <= {(c.experiment, c.algorithm) for c in paper.cells}
    assert not set(rep.seeds) & (set(paper.seeds) | set(ten.seeds))
    assert len(rep.seeds) >= len(paper.seeds)
    _same_settings(rep, paper)
