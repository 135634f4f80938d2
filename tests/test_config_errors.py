"""Bad params.yaml input: a one-line error naming the key and the allowed values."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterfl.config import Params, load_params
from clusterfl.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
RAW = yaml.safe_load((ROOT / "params.yaml").read_text())


def _params(edit) -> Params:
    raw = copy.deepcopy(RAW)
    edit(raw)
    return Params(raw)


def test_real_params_file_is_valid():
    p = load_params(ROOT / "params.yaml")
    assert p.suite == "default" and p.seeds
    assert all(p.experiment_in_suite(e) for e in p.suites["default"]["experiments"])


@pytest.mark.parametrize(("edit", "pattern"), [
    (lambda r: r["algorithms"]["fedavg"].update(method="fedsgd"),
     r"algorithms\.fedavg\.method: unknown value 'fedsgd'; allowed: fedavg, "),
    (lambda r: r["datasets"]["mnist_subset"].update(source="mnist_full_please"),
     r"datasets\.mnist_subset\.source: unknown value .*allowed: .*clustered_synthetic"),
    (lambda r: r["partitions"]["p1_synthetic"].update(scheme="dirichet"),
     r"partitions\.p1_synthetic\.scheme: unknown value 'dirichet'; allowed: .*pathological"),
    (lambda r: r["experiments"]["p1_synthetic_mlr"]["training"].update(rounds=-5),
     r"experiments\.p1_synthetic_mlr\.training\.rounds: must be >= 1, got -5"),
    (lambda r: r["suites"]["default"]["training"].update(rounds=0),
     r"training\.rounds: must be >= 1, got 0"),
    (lambda r: r["experiments"]["p2_synth_1090"]["training"].update(init="he"),
     r"experiments\.p2_synth_1090\.training\.init: 'he' is not allowed; allowed: pytorch, "
     r"xavier_normal"),
    (lambda r: r["partitions"]["p2_fmnist_rot_1090"].update(label_groups=[[0, 1], [1]]),
     r"partitions\.p2_fmnist_rot_1090\.label_groups: must be non-empty, disjoint lists"),
    (lambda r: r.update(suite="papers"), r"suite: unknown value 'papers'; allowed: default, paper"),
    (lambda r: r["grid"]["p1"].update(algorithms=["fedavg", "pfedmee"]),
     r"grid\.p1\.algorithms: unknown value 'pfedmee'"),
    (lambda r: r["experiments"]["p1_synthetic_mlr"].update(algorithm_options={"persnal_lr": 1}),
     r"experiments\.p1_synthetic_mlr\.algorithm_options: unknown value 'persnal_lr'"),
    (lambda r: r["experiments"]["p1_synthetic_mlr"].update(algorithm_options={"lam": -1.0}),
     r"algorithms\.pfedme \(with experiments\.p1_synthetic_mlr\.algorithm_options\)\.lam: "),
    (lambda r: r["algorithms"]["ifca_k2"].update(variant="gradients"),
     r"algorithms\.ifca_k2\.variant: 'gradients' is not allowed; allowed: model, gradient"),
    (lambda r: r["algorithms"]["fedavg"].update(server_lr="fast"),
     r"algorithms\.fedavg\.server_lr: expected float, got 'fast'"),
    (lambda r: r["algorithms"]["fedavg"].update(momentum=0.9),
     r"algorithms\.fedavg\.momentum: unknown key; allowed: server_lr"),
    (lambda r: r.pop("grid"), r"missing top-level key 'grid'"),
    (lambda r: r["partitions"]["p2_1090"].update(pattern="10:80"),
     r"partitions\.p2_1090\.pattern: '10:80' is not allowed; allowed: 10:90, 30:70, linear"),
    (lambda r: r["suites"]["default"]["skip"].update(p2_synth_1090=["ifca"]),
     r"suites\.default\.skip\.p2_synth_1090: unknown value 'ifca'; allowed: "),
])
def test_bad_params_name_the_key(edit, pattern):
    with pytest.raises(UserError, match=pattern) as info:
        _params(edit)
    assert "\n" not in str(info.value)


def test_malformed_yaml_names_file_and_line(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("suite: default\nsuites: [unclosed\n")
    with pytest.raises(UserError, match=r"params\.yaml: not valid YAML at line 3"):
        load_params(bad)


def test_cli_user_error_is_one_line_exit_2_and_writes_nothing(tmp_path):
    raw = copy.deepcopy(RAW)
    raw["algorithms"]["fedavg"]["method"] = "nope"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "train", "p1_synthetic_mlr", "fedavg"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": f"{ROOT}:{ROOT}/src"},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "algorithms.fedavg.method: unknown value 'nope'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]
