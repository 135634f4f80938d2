"""Each paper package keeps training code and report code apart by directory, so that a train
cell depends on `papers/<key>/__init__.py` and `papers/<key>/training/` only (and on its own
algorithm's file, `tests/test_algorithm_deps.py`): importing
`clusterfl.papers.<key>` (what training does) must not import the paper's `report/` or
`tools/`, the shared report helpers, matplotlib, or another paper's package."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterfl.papers import load_papers

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ROOT / "src/clusterfl/papers"
KEYS = sorted(p.name for p in PAPERS.iterdir() if (p / "__init__.py").is_file())

# Run in a fresh interpreter: what `import clusterfl.papers.<key>` leaves in sys.modules
PROBE = """
import json, sys
import clusterfl.papers.{key}
print(json.dumps(sorted(sys.modules)))
"""


def forbidden(key: str, module: str) -> bool:
    """Whether training code of paper `key` may not import `module`."""
    own = f"clusterfl.papers.{key}"
    banned = [f"{own}.report", f"{own}.tools", "clusterfl.reports", "matplotlib"]
    banned += [f"clusterfl.papers.{other}" for other in KEYS if other != key]
    return any(module == b or module.startswith(b + ".") for b in banned)


def test_every_builtin_paper_is_a_package_here():
    assert {"p1", "p2", "p3", "p4", "p5", "benchmark"} <= set(KEYS)


@pytest.mark.parametrize("key", KEYS)
def test_training_imports_no_report_code(key: str):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", PROBE.format(key=key)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    modules = json.loads(proc.stdout.strip().splitlines()[-1])
    assert f"clusterfl.papers.{key}" in modules
    assert [m for m in modules if forbidden(key, m)] == []


@pytest.mark.parametrize("key", KEYS)
def test_directories_and_report_entry_point(key: str):
    directory = PAPERS / key
    stray = sorted(p.name for p in directory.glob("*.py") if p.name != "__init__.py")
    assert stray == [], "modules go to training/ or report/ (or tools/), not the package root"
    training = directory / "training"  # none where the paper brings no code of its own
    assert (training / "__init__.py").is_file() or not training.exists()
    assert training.exists() == (key != "benchmark")  # its baselines are general methods
    assert (directory / "report/__init__.py").is_file()
    paper = load_papers([f"clusterfl.papers.{key}"])[key]
    assert paper.directory.resolve() == directory
    assert paper.report == f"clusterfl.papers.{key}.report:build"
    from clusterfl.reports.section import section_builder

    assert callable(section_builder(paper))
