"""P4's open choices as the suite makes them (issue 37): tau is tuned on data draws disjoint
from every reported trial, the scales in use sit strictly inside the tuning grid, and the
metric it is tuned on is the clients' validation loss (fresh samples of their own law)."""

from pathlib import Path

import numpy as np
import torch

from clusterfl.papers.p4 import OptimumError
from clusterfl.run.config import load_params
from clusterfl.training.loop import GroundTruth, View

PAPER = Path("suites/paper/params.yaml")


def p4_experiments(params) -> dict[str, dict]:
    return {name: entry for name, entry in params.experiments.items()
            if name.startswith("p4_") and params.paper_of.get(name) == "p4"}


def test_tuning_draws_are_disjoint_from_every_reported_trial() -> None:
    params = load_params(PAPER, load=("p4",))
    seeds = set(params.seeds)
    experiments = p4_experiments(params)
    tuning = {n: e for n, e in experiments.items() if n.startswith("p4_tune_tau_")}
    replicates = {n: e for n, e in experiments.items() if n.startswith("p4_rep_")}
    assert len(tuning) >= 3 and len(replicates) >= 4
    drawn: dict[str, set[int]] = {}
    for name, entry in experiments.items():
        offset = int((entry.get("algorithm_options") or {}).get("data_seed_offset", 0))
        if name in tuning or name in replicates:  # none of them a reported data seed
            assert not {offset + s for s in seeds} & seeds, name
            drawn.setdefault("tune" if name in tuning else "rep", set()).update(
                offset + s for s in seeds)
        else:  # a reported experiment draws its data from data seed = trial
            assert offset == 0, name
    assert not drawn["tune"] & drawn["rep"]  # the replicate draw is not the tuning draw
    # each replicate is its trials' experiment on the second draw, nothing else changed
    for name, entry in replicates.items():
        trial = experiments["p4_" + name.removeprefix("p4_rep_")]
        assert entry["partition"] == trial["partition"], name
        options = {k: v for k, v in (entry.get("algorithm_options") or {}).items()
                   if k != "data_seed_offset"}
        assert options == (trial.get("algorithm_options") or {}), name


def test_the_scales_in_use_sit_strictly_inside_the_tuning_grid() -> None:
    params = load_params(PAPER, load=("p4",))
    grid = sorted(float(e["algorithm_options"]["tau_scale"])
                  for n, e in p4_experiments(params).items() if n.startswith("p4_tune_tau_"))
    for algorithm in ("pfl_tc", "pdl_tc"):
        used = params.algorithm(algorithm, paper="p4").hyper.tau_scale
        assert used in grid and grid[0] < used < grid[-1], (algorithm, used, grid)


def test_optimum_error_is_the_validation_loss_on_fresh_samples() -> None:
    """Sec. 4's samples are a ~ N(0, I), y = a^T x*: E (a^T x - y)^2 = ||x - x*||^2, so tuning
    on the optimum error of the tuning draws is tuning on their clients' validation loss."""
    rng = np.random.default_rng(3)
    optima = np.array([[0.0, 100.0, 0.0], [100.0, 100.0, 0.0]])
    cluster = np.array([0, 0, 1])
    x = rng.normal(50.0, 30.0, (3, 3))
    fresh = rng.standard_normal((3, 400_000, 3))  # 400k validation samples per client
    residual = np.einsum("cnd,cd->cn", fresh, x - optima[cluster])
    validation = float((residual ** 2).mean())
    ctx = type("Ctx", (), {"truth": GroundTruth(cluster=cluster, extras={"optima": optima})})
    error = OptimumError(ctx).evaluate(View(client_models={"x": torch.as_tensor(x)}))
    assert abs(error["optimum_error"] - validation) < 0.01 * validation
