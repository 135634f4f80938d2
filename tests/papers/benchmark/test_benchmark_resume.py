"""Every general method that no built-in paper uses (the benchmark's baselines) resumes bit
for bit from a round checkpoint (what `tests/test_checkpoints.py` checks for the built-in
papers' algorithms): its `state_dict` holds everything its rounds change."""

import pytest
import torch

from clusterfl.algorithms import GENERAL_METHODS
from clusterfl.run.checkpoints import SeedCheckpoint
from clusterfl.run.config import load_params
from clusterfl.run.runner import run_seed
from tests.algorithms.split_problem import ROOT, runner_problem, timeless

PARAMS = load_params(ROOT / "suites/benchmark/params.yaml")
PAPERS = load_params(ROOT / "params.yaml")  # the built-in papers: tests/test_checkpoints.py
RESUMED = {PAPERS.algorithm(name, paper=key).method
           for key, names in PAPERS.algorithms.items() for name in names}
CASES = [name for name in PARAMS.algorithms["benchmark"]
         if PARAMS.algorithm(name, paper="benchmark").method not in RESUMED]


class StopAt:
    """A callback that raises after round `r` (the loop has checkpointed by then)."""

    def __init__(self, r: int) -> None:
        self.r = r

    def on_run_start(self, info) -> None:
        pass

    def on_round_end(self, round_: int, metrics) -> None:
        if round_ == self.r:
            raise KeyboardInterrupt

    def on_run_end(self, summary) -> None:
        pass


def test_every_general_method_is_resumed_here_or_by_a_paper():
    assert {"fedper", "fedrep", "lgfedavg", "fedala"} <= set(CASES)
    methods = {PARAMS.algorithm(name, paper="benchmark").method for name in CASES}
    assert set(GENERAL_METHODS) <= methods | RESUMED


@pytest.mark.parametrize("name", CASES)
def test_resumes_bit_for_bit(tmp_path, name):
    exp, algorithm, dataset, partition = runner_problem(name, rounds=4)
    whole = run_seed(exp, algorithm, dataset, partition, 0)
    with pytest.raises(KeyboardInterrupt):
        run_seed(exp, algorithm, dataset, partition, 0, [StopAt(2)],
                 checkpoint=SeedCheckpoint(tmp_path, "key", every=1, log=lambda _: None))
    torch.manual_seed(12345)  # the resumed run must not depend on the global generators
    resumed = run_seed(exp, algorithm, dataset, partition, 0,
                       checkpoint=SeedCheckpoint(tmp_path, "key", every=1, log=lambda _: None))
    assert timeless(resumed) == timeless(whole)
