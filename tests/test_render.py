"""`clusterfl render`: every committed dvc.yaml is what its suite's grid and the import graph
render to, a stale one is refused by the report stage, and the code deps it derives keep
training apart from report code and from other papers."""

import subprocess
import sys
from pathlib import Path

from pipeline.imports import closure
from pipeline.render import CLI, Code

ROOT = Path(__file__).resolve().parents[1]


def test_every_committed_dvc_yaml_is_current():
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "render", "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every suite's dvc.yaml is current" in proc.stdout + proc.stderr


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
