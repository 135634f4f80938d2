"""A paper is an addition, trained for real: a toy paper package written in a temporary
directory brings an algorithm without a model (no engine, no learning rate), an evaluator of
its own, its params and a report table; a suite file names it in `papers:`, and the real
CLI downloads, partitions, trains and reports it with no edit to any shared file."""

import json
import os
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

INIT = '''
"""Toy: federated estimation of the mean feature vector, by averaging client means."""
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from clusterfl.algorithms import ALGORITHMS
from clusterfl.evaluators import EVALUATORS
from clusterfl.training.loop import FederatedAlgorithm, RunContext, View
from clusterfl.steps.metrics import Metric, register
from clusterfl.papers import Paper
from clusterfl.partition import views

TOY_ERROR = register(Metric("toy_error", "distance to the pooled mean", True))


@dataclass(frozen=True)
class MeanHyper:
    mix: float = 1.0  # how far the server moves toward the clients' average each round

    def validate(self, key: str) -> None:
        pass


@dataclass
class MeanContext(RunContext):
    means: torch.Tensor | None = None  # [N, d]: each client's own feature mean
    sizes: torch.Tensor | None = None  # [N]


class FederatedMean(FederatedAlgorithm[MeanHyper]):

    @classmethod
    def make_context(cls, run):
        base = super().make_context(run)
        rows = [views.client_data(run.dataset, run.partition, k, "train")[0]
                for k in range(run.partition.num_clients)]
        return MeanContext(**vars(base),
                           means=torch.tensor(np.stack([r.mean(0) for r in rows])).double(),
                           sizes=torch.tensor([len(r) for r in rows]).double())

    def setup(self) -> None:
        self.estimate = torch.zeros(self.ctx.means.shape[1], dtype=torch.float64)

    def round(self, round_, clients) -> None:
        w = self.ctx.sizes[clients] / self.ctx.sizes[clients].sum()
        average = (w[:, None] * self.ctx.means[clients]).sum(0)
        self.estimate = self.estimate + self.hyper.mix * (average - self.estimate)

    def view(self) -> View:
        return View(client_models={"mean": self.estimate.expand(self.num_clients, -1)})

    def default_evaluators(self):
        return ["toy_error"]


class ToyError:
    primary = TOY_ERROR.name

    def __init__(self, ctx) -> None:
        w = ctx.sizes / ctx.sizes.sum()
        self.pooled = (w[:, None] * ctx.means).sum(0)

    def evaluate(self, view: View) -> dict[str, float]:
        gap = view.client_models["mean"] - self.pooled
        return {TOY_ERROR.name: float(gap.pow(2).sum(1).mean())}

    def arrays(self, view: View) -> dict:
        return {}


ALGORITHMS.add("toy_mean")(FederatedMean)
EVALUATORS.add("toy_error")(ToyError)
PAPER = Paper(key="toy", title="Toy paper: a federated mean without a model",
              directory=Path(__file__).parent, report="toy_paper_train.report:build")
'''

REPORT = '''
from clusterfl.reports.section import ReportInput, ReportOutput
from clusterfl.reports.runs import seed_rows


def build(report: ReportInput) -> ReportOutput:
    lines = [f"{e} {a} {r['last']:.6f}" for e, a in report.cells
             for r in seed_rows(report.results, e, a)]
    return ReportOutput(markdown="Toy table\\n\\n" + "\\n".join(lines) + "\\n")
'''

PARAMS = {
    "experiments": {"toy_mean_synthetic": {"title": "Toy mean", "partition": "p1_synthetic",
                                           "training": {"rounds": 3}}},
    "algorithms": {"half_steps": {"method": "toy_mean", "mix": 0.5},
                   "full_steps": {"method": "toy_mean", "mix": 1.0}},
}


def test_a_model_free_toy_paper_trains_and_reports_through_the_cli(tmp_path):
    package = tmp_path / "toy_paper_train"
    package.mkdir()
    (package / "__init__.py").write_text(dedent(INIT))
    (package / "report.py").write_text(dedent(REPORT))
    (package / "params.yaml").write_text(yaml.safe_dump(PARAMS))
    suite = {"name": "toy", "seeds": [0], "papers": ["toy_paper_train"], "training": {},
             "grid": [{"experiments": ["toy_mean_synthetic"],
                       "algorithms": ["half_steps", "full_steps"]}]}
    (tmp_path / "suites/toy").mkdir(parents=True)
    (tmp_path / "suites/toy/params.yaml").write_text(yaml.safe_dump({"suite": suite}))
    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text())  # the catalogue
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT}:{ROOT}/src",
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    for args in (["download", "p1_synthetic"], ["partition", "p1_synthetic"],
                 ["train", "toy_mean_synthetic", "half_steps"],
                 ["train", "toy_mean_synthetic", "full_steps"], ["report"]):
        proc = subprocess.run([sys.executable, "-m", "pipeline.cli", *args,
                               "-p", "suites/toy/params.yaml"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    cell = tmp_path / "results/toy/toy_mean_synthetic"
    full = json.loads((cell / "full_steps/seed0/history.json").read_text())
    half = json.loads((cell / "half_steps/seed0/history.json").read_text())
    assert full["primary"] == "toy_error"
    assert [r["toy_error"] for r in full["records"]] == [0.0, 0.0, 0.0]  # one full step
    errors = [r["toy_error"] for r in half["records"]]
    assert errors[0] > 0 and errors[1] == pytest.approx(errors[0] / 4)  # halves the gap
    section = (tmp_path / "reports/toy/tables/toy.md").read_text()
    assert "Toy table" in section and "toy_mean_synthetic half_steps" in section
    assert "toy_mean_synthetic" in (tmp_path / "reports/toy/tables/results.md").read_text()
