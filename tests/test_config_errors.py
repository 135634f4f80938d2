"""Bad params input: a one-line error naming the file or key and the allowed values; params
are closed (an unknown key anywhere is an error naming its full path)."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterfl.core.errors import UserError
from clusterfl.core.suite import suite_file
from clusterfl.run.config import SuiteConfig, load_params

ROOT = Path(__file__).resolve().parents[1]
RAW = yaml.safe_load((ROOT / "params.yaml").read_text())
PAPERS = {p: yaml.safe_load((ROOT / f"src/clusterfl/papers/{p}/params.yaml").read_text())
          for p in ("p1", "p2")}


def _params(edit) -> SuiteConfig:
    raw, papers = copy.deepcopy(RAW), copy.deepcopy(PAPERS)
    edit(raw, papers)
    return SuiteConfig(Path("params.yaml"), raw, paper_params=papers)


@pytest.mark.parametrize("name", ["default", "paper", "paper_online", "schemes", "p5_reduced"])
def test_every_suite_file_is_valid(name):
    p = load_params(ROOT / suite_file(name))
    assert p.suite == name and p.seeds
    for _, experiment, _ in p.suite_cells():
        partition = p.experiment(experiment).partition
        assert partition in p.suite_partitions
        assert p.partition(partition)["dataset"] in p.suite_datasets


def test_presets_and_yaml_merges_reach_the_schedule():
    p = load_params(ROOT / "suites/paper/params.yaml")
    cifar = p.experiment("p1_cifar10_cnn").schedule
    assert (cifar.rounds, cifar.lr, cifar.local_steps) == (200, 0.03, 10)  # table2 + overrides
    assert p.algorithm("pfedkm_k2", paper="p1").hyper.num_clusters == 2
    assert p.algorithm("pfedkm_k2", paper="p1").hyper.lam == 15.0  # from the pfedkm anchor
    default = load_params(ROOT / "params.yaml")
    assert default.experiment("p1_synthetic_mlr").schedule.rounds == 30  # suite override


@pytest.mark.parametrize(("edit", "pattern"), [
    (lambda r, p: p["p1"]["algorithms"]["fedavg"].update(method="fedsgd"),
     r"algorithms\.fedavg\.method: unknown value 'fedsgd' \(did you mean 'fedavg'\?\); "),
    (lambda r, p: r["datasets"]["mnist_subset"].update(source="mnist_full_please"),
     r"datasets\.mnist_subset\.source: unknown value .*allowed: .*clustered_synthetic"),
    (lambda r, p: r["partitions"]["p1_synthetic"].update(scheme="dirichet"),
     r"partitions\.p1_synthetic\.scheme: unknown value 'dirichet' \(did you mean 'dirichlet'"),
    (lambda r, p: p["p1"]["experiments"]["p1_cifar10_cnn"]["training"].update(lr=-5),
     r"experiments\.p1_cifar10_cnn\.training\.lr: must be > 0, got -5"),
    (lambda r, p: r["suite"]["training"].update(rounds=0),
     r"training\.rounds: must be >= 1, got 0"),
    (lambda r, p: p["p2"]["experiments"]["p2_synth_1090"].update(
        training={**p["p2"]["presets"]["synthetic"], "init": "he"}),
     r"experiments\.p2_synth_1090\.training\.init: 'he' is not allowed; allowed: pytorch, "
     r"xavier_normal"),
    (lambda r, p: r["partitions"]["p2_fmnist_rot_1090"].update(label_groups=[[0, 1], [1]]),
     r"partitions\.p2_fmnist_rot_1090\.label_groups: must be non-empty, disjoint lists"),
    (lambda r, p: r["suite"]["grid"][0]["algorithms"].append("fedavgg"),
     r"^params\.yaml:suite\.grid\[0\]\.algorithms \(paper p1\): unknown value 'fedavgg' "
     r"\(did you mean 'fedavg'\?\)"),
    (lambda r, p: p["p1"]["experiments"]["p1_synthetic_mlr"].update(
        algorithm_options={"persnal_lr": 1}),
     r"experiments\.p1_synthetic_mlr\.algorithm_options: unknown value 'persnal_lr' "
     r"\(did you mean 'personal_lr'\?\)"),
    (lambda r, p: p["p1"]["experiments"]["p1_synthetic_mlr"].update(
        algorithm_options={"lam": -1.0}),
     r"algorithms\.pfedme \(with experiments\.p1_synthetic_mlr\.algorithm_options\)\.lam: "),
    (lambda r, p: p["p1"]["algorithms"]["ifca_k2"].update(variant="gradients"),
     r"algorithms\.ifca_k2\.variant: 'gradients' is not allowed; allowed: model, gradient"),
    (lambda r, p: p["p1"]["algorithms"]["fedavg"].update(server_lr="fast"),
     r"algorithms\.fedavg\.server_lr: expected float, got 'fast'"),
    (lambda r, p: p["p1"]["algorithms"]["fedavg"].update(momentum=0.9),
     r"algorithms\.fedavg\.momentum: unknown key; allowed: server_lr"),
    (lambda r, p: r["partitions"]["p2_1090"].update(pattern="10:80"),
     r"partitions\.p2_1090\.pattern: '10:80' is not allowed; allowed: 10:90, 30:70, linear"),
    # closed params: unknown keys at every level name their full path
    (lambda r, p: r.update(trainng={}),
     r"^params\.yaml:trainng: unknown key .*; allowed: checkpoints, datasets, partitions, "
     r"suite, tracking"),
    (lambda r, p: r["suite"].update(trainng={"rounds": 5}),
     r"params\.yaml:suite\.trainng: unknown key \(did you mean 'training'\?\)"),
    (lambda r, p: p["p1"]["experiments"]["p1_synthetic_mlr"].update(modle_options={}),
     r"experiments\.p1_synthetic_mlr\.modle_options: unknown key \(did you mean "
     r"'model_options'\?\)"),
    (lambda r, p: p["p1"].update(experimets={}),
     r"^src/clusterfl/papers/p1/params\.yaml:experimets: unknown key \(did you mean "
     r"'experiments'\?\)"),
    (lambda r, p: r["suite"]["training"].update(rondus=5),
     r"^params\.yaml:suite\.training\.rondus: unknown key \(did you mean 'rounds'\?\); "
     r"allowed: batch_size, clients_per_round, epochs"),
    (lambda r, p: r["suite"]["training"].update(rounds="many"),
     r"^params\.yaml:suite\.training\.rounds: expected int, got 'many'"),
    (lambda r, p: p["p1"]["experiments"]["p1_synthetic_mlr"]["training"].update(rondus=5),
     r"^src/clusterfl/papers/p1/params\.yaml:experiments\.p1_synthetic_mlr\.training\.rondus: "
     r"unknown key \(did you mean 'rounds'\?\)"),
    (lambda r, p: p["p1"]["experiments"]["p1_mnist_subset_dnn"].update(
        model_options={"hiden": 10}),
     r"^src/clusterfl/papers/p1/params\.yaml:experiments\.p1_mnist_subset_dnn\.model_options\."
     r"hiden: unknown key \(did you mean 'hidden'\?\); allowed: hidden"),
    (lambda r, p: p["p1"]["experiments"]["p1_synthetic_mlr"].update(model_options={"x": 1}),
     r"experiments\.p1_synthetic_mlr\.model_options\.x: unknown key; allowed: \(none\)"),
    (lambda r, p: p["p1"]["algorithms"]["pfedkm_k2"].update(num_cluster=3),
     r"^src/clusterfl/papers/p1/params\.yaml:algorithms\.pfedkm_k2\.num_cluster: unknown key "
     r"\(did you mean 'num_clusters'\?\)"),
    (lambda r, p: r["partitions"]["p1_synthetic"].update(tset_fraction=0.2),
     r"^params\.yaml:partitions\.p1_synthetic\.tset_fraction: unknown key \(did you mean "
     r"'test_fraction'\?\)"),
    (lambda r, p: r["datasets"]["p1_synthetic"].update(clusters_per_client=2),
     r"^params\.yaml:datasets\.p1_synthetic\.clusters_per_client: unknown key \(did you mean "
     r"'clients_per_cluster'\?\)"),
    (lambda r, p: r["tracking"].update(experiement="x"),
     r"^params\.yaml:tracking\.experiement: unknown key \(did you mean 'experiment'\?\)"),
    (lambda r, p: r["suite"]["grid"][0].update(seeds=3),
     r"^params\.yaml:suite\.grid\[0\]\.seeds: unknown key; allowed: algorithms, experiments"),
    # the grid names experiments of the papers and each cell once; the rest is derived
    (lambda r, p: r["suite"]["grid"][0]["experiments"].append("p1_synthetic_mrl"),
     r"^params\.yaml:suite\.grid\[0\]\.experiments: unknown value 'p1_synthetic_mrl' "
     r"\(did you mean 'p1_synthetic_mlr'\?\)"),
    (lambda r, p: r["suite"]["grid"].append({"experiments": ["p1_synthetic_mlr"],
                                             "algorithms": ["local"]}),
     r"^params\.yaml:suite\.grid\[6\]: cell 'p1_synthetic_mlr-local' is already in the grid"),
    (lambda r, p: r["suite"]["grid"][1].pop("algorithms"),
     r"^params\.yaml:suite\.grid\[1\]\.algorithms: missing"),
    (lambda r, p: r["suite"]["grid"][1].update(algorithms="fedavg"),
     r"^params\.yaml:suite\.grid\[1\]\.algorithms: expected a non-empty list of names"),
    (lambda r, p: r["suite"].update(cells={}),
     r"^params\.yaml:suite\.cells: a suite names a grid instead: grid: "),
    (lambda r, p: r["suite"].update(partitions=["p1_synthetc"]),
     r"^params\.yaml:suite\.partitions: unknown value 'p1_synthetc' \(did you mean "),
    (lambda r, p: r["suite"].pop("name"), r"params\.yaml:suite\.name: missing"),
    (lambda r, p: r["suite"].update(papers=["no_such_paper_module"]),
     r"papers: cannot import 'no_such_paper_module'"),
])
def test_bad_params_name_the_key(edit, pattern):
    with pytest.raises(UserError, match=pattern) as info:
        _params(edit)
    assert "\n" not in str(info.value)


def test_malformed_yaml_names_file_and_line(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("suite:\n  name: default\n  seeds: [unclosed\n")
    with pytest.raises(UserError, match=r"params\.yaml: not valid YAML at line 4"):
        load_params(bad)


def test_empty_file_is_named(tmp_path):
    empty = tmp_path / "mine.yaml"
    empty.write_text("")
    with pytest.raises(UserError, match=r"mine\.yaml: empty file; expected a mapping"):
        load_params(empty)


def test_a_suite_file_names_itself_and_the_catalogue(tmp_path):
    """Keys of another suite's file are reported in that file, catalogue keys in the root's."""
    suite = tmp_path / "suites" / "mine"
    suite.mkdir(parents=True)
    catalogue = copy.deepcopy(RAW)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(catalogue))
    raw = {"suite": {**copy.deepcopy(RAW["suite"]), "name": "mine", "training": {"rouns": 3}}}
    (suite / "params.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(UserError, match=r"suites/mine/params\.yaml:suite\.training\.rouns: "
                                        r"unknown key \(did you mean 'rounds'\?\)"):
        load_params(suite / "params.yaml")
    raw["suite"]["training"] = {"rounds": 3}
    (suite / "params.yaml").write_text(yaml.safe_dump(raw))
    catalogue["partitions"]["p1_synthetic"]["sheme"] = "x"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(catalogue))
    with pytest.raises(UserError, match=r"params\.yaml:partitions\.p1_synthetic\.sheme: "
                                        r"unknown key \(did you mean 'scheme'\?\)") as info:
        load_params(suite / "params.yaml")
    assert "suites/mine" not in str(info.value)


def test_a_renamed_copy_of_the_root_file_is_its_own_catalogue(tmp_path):
    raw = copy.deepcopy(RAW)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    raw["suite"]["training"]["rondus"] = 3
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(UserError, match=r"mine\.yaml:suite\.training\.rondus: unknown key "
                                        r"\(did you mean 'rounds'\?\)"):
        load_params(tmp_path / "mine.yaml")


def test_cli_empty_params_file_is_named(tmp_path):
    (tmp_path / "mine.yaml").write_text("")
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "train", "p1_synthetic_mlr", "fedavg",
         "-p", str(tmp_path / "mine.yaml")], cwd=ROOT, capture_output=True, text=True,
        env={"PYTHONPATH": f"{ROOT}:{ROOT}/src"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {tmp_path / 'mine.yaml'}: empty file; expected a mapping"


def test_cli_user_error_is_one_line_exit_2_and_writes_nothing(tmp_path):
    raw = copy.deepcopy(RAW)
    raw["suite"]["seeds"] = "all"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "train", "p1_synthetic_mlr", "fedavg"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": f"{ROOT}:{ROOT}/src"},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "params.yaml:suite.seeds: expected a non-empty list of integers" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


def test_cli_unknown_suite_lists_the_suites(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "train", "p1_synthetic_mlr", "fedavg",
         "--suite", "papr"], cwd=ROOT, capture_output=True, text=True,
        env={"PYTHONPATH": f"{ROOT}:{ROOT}/src"})
    assert proc.returncode == 2
    assert "--suite: unknown suite 'papr'" in proc.stderr and "paper_online" in proc.stderr
