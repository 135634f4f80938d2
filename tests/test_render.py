"""`clusterfl render`: every committed dvc.yaml is what its suite's grid and the import graph
render to, a stale one is refused by the report stage, and the code deps it derives keep
training apart from report code and from other papers."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clusterfl.errors import UserError
from pipeline.imports import closure
from pipeline.render import CLI, Code, require_current

ROOT = Path(__file__).resolve().parents[1]


def test_every_committed_dvc_yaml_is_current():
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "render", "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every suite's dvc.yaml is current" in proc.stdout


def test_train_can_reach_no_report_code_and_no_paper_but_the_loaded_one():
    code = Code(ROOT)
    reached = code.reach("train")
    assert not {m for m in reached if m.startswith(("clusterfl.reports", "clusterfl.papers."))}
    p5 = closure(code.modules, ["clusterfl.papers.p5"])
    assert {m for m in p5 if m.startswith("clusterfl.papers.")} <= {
        m for m in code.modules if m.startswith(("clusterfl.papers.p5.training",))
    } | {"clusterfl.papers.p5"}
    assert "clusterfl.reports" in {m.rsplit(".", 1)[0] for m in code.reach("report")}
    assert CLI in reached


def test_a_grid_edited_without_render_is_refused_in_one_line(tmp_path):
    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "pipeline", tmp_path / "pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))
    require_current(tmp_path / "params.yaml")  # as committed: current
    params = tmp_path / "params.yaml"
    params.write_text(params.read_text().replace("algorithms: [fedsoft, fedem]",
                                                 "algorithms: [fedsoft]"))
    with pytest.raises(UserError, match=r"dvc\.yaml: stale: it does not match .*params\.yaml's "
                                        r"grid; run `clusterfl render`") as err:
        require_current(tmp_path / "params.yaml")
    assert "\n" not in str(err.value)
