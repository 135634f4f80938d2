"""A train cell depends on its own algorithm's file, not on the folder of algorithms: the
rendered deps of every cell of the benchmark suite name its algorithm's file and no other
algorithm's file (but the bases other algorithms import), and a real `dvc status` in a copy
of the pipeline, after an edit of FedRep's file, finds FedRep's cells stale and no other."""

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from clusterfl.algorithms import ALGORITHMS, GENERAL_METHODS
from clusterfl.run.config import load_params
from pipeline.render import Code, stages
from tests.workspace import copy_pipeline, render

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
FOLDER = "src/clusterfl/algorithms"


def _cell_deps(suite: str) -> dict[str, set[str]]:
    """Each train cell's deps, with the cell's `${item.*}` values filled in."""
    train = stages(load_params(ROOT / "suites" / suite / "params.yaml"), ROOT, Code(ROOT),
                   compact=False)["stages"]["train"]  # the long form: one full item a cell
    out = {}
    for cell, item in train["foreach"].items():
        deps = set()
        for dep in train["do"]["deps"]:
            for key, value in item.items():
                dep = dep.replace(f"${{item.{key}}}", str(value))
            deps.add(dep)
        out[cell] = deps
    return out


def test_a_cell_depends_on_its_own_algorithm_file_and_the_bases_it_imports():
    deps = _cell_deps("benchmark")
    files = {name: f"{FOLDER}/{where.partition(':')[0]}.py"
             for name, where in GENERAL_METHODS.items()}
    # the files other algorithms build on: FedAvg (FedProx, FedAvg + FT), pFedMe (pFedKM)
    bases = {files["fedavg"], files["pfedme"]}
    params = load_params(ROOT / "suites/benchmark/params.yaml")
    for cell, mine in deps.items():
        experiment, algorithm = cell.split("-")
        method = params.algorithm(algorithm, experiment=experiment).method
        assert FOLDER not in mine, cell  # never the whole folder
        assert files[method] in mine, cell
        assert {f for f in files.values() if f in mine} - bases == {files[method]} - bases, cell
    assert sum(files["fedrep"] in mine for mine in deps.values()) == 10  # its 10 schemes


def test_importing_the_registry_imports_no_algorithm():
    code = Code(ROOT)
    registry = code.modules["clusterfl.algorithms"]
    assert registry.top == {"clusterfl.algorithms.base", "clusterfl.training.loop",
                            "clusterfl.core.registry"}
    assert ALGORITHMS.module("fedrep") == "clusterfl.algorithms.fedrep"


def _sh(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.slow
def test_editing_fedrep_makes_only_its_cells_stale(tmp_path):
    """Every stage recorded as run (`dvc commit` of stand-in outputs: nothing is trained),
    then a comment appended to FedRep's file: `dvc status` names FedRep's cells only."""
    ws = tmp_path
    copy_pipeline(ws, suites=("benchmark",))
    (ws / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    suite = yaml.safe_load((ROOT / "suites/benchmark/params.yaml").read_text())
    suite["suite"]["grid"] = [{"experiments": ["bm_iid", "bm_rot4"],
                               "algorithms": ["fedavg", "fedprox", "ditto", "fedrep", "fedper"]}]
    (ws / "suites/benchmark/params.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PYTHONPATH": f"{ws}:{ws / 'src'}"}
    render(ws, env, "benchmark")
    _sh(["git", "init", "-q"], ws, env)
    _sh([str(BIN / "dvc"), "init", "-q"], ws, env)
    dvc_file = "suites/benchmark/dvc.yaml"
    from dvc.repo import Repo

    with Repo(str(ws)) as repo:  # every stage's outputs, as DVC resolves them
        outs = [Path(out.fs_path) for stage in repo.index.stages for out in stage.outs]
    for path in outs:
        if path.suffix in (".json", ".html"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}")
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "stand_in.txt").write_text(path.name)
    _sh([str(BIN / "dvc"), "commit", "-f", "-q", "-R", "suites/benchmark"], ws, env)
    assert "up to date" in _sh([str(BIN / "dvc"), "status", dvc_file], ws, env)
    with (ws / FOLDER / "fedrep.py").open("a") as f:
        f.write("# an edit\n")
    status = yaml.safe_load(_sh([str(BIN / "dvc"), "status", "--json", dvc_file], ws, env))
    stale = {name.rsplit(":", 1)[-1] for name in status}
    assert stale == {f"{stage}@{e}-fedrep" for stage in ("tune", "train")
                     for e in ("bm_iid", "bm_rot4")}

