"""The benchmark suite's grid as its params state it (issue 37): every clustered method is
offered each scheme's true K, FedProx the paper's four mu, and pFedMe/pFedKM are scored by the
model their paper's official code evaluates, with the other models recorded beside it."""

from pathlib import Path

import pytest

from clusterfl.run.config import load_params

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def suite():
    return load_params(ROOT / "suites/benchmark/params.yaml")


def _true_k(entry: dict) -> int | None:
    """The number of distributions a scheme's clients are drawn from; None where the scheme
    has no small true K (a class pair or a Dirichlet draw per client)."""
    scheme = entry["scheme"]
    if scheme in ("iid", "quantity_skew", "feature_noise"):
        return 1  # one labelling of i.i.d. labels (sizes or feature noise aside)
    if scheme == "rotation":
        return int(entry["rotations"])
    if scheme == "label_permutation":
        return int(entry["clusters"])
    if scheme == "fedsoft_mixture":
        return len(entry["rotations"])
    assert scheme in ("label_quantity", "dirichlet"), f"true K of {scheme!r} not stated here"
    return None


def test_every_scheme_with_a_true_k_offers_it_first(suite):
    experiments = {e for g in suite.suite_raw["grid"] for e in g["experiments"]}
    offered = {}
    for name in sorted(experiments):
        true_k = _true_k(suite.partition(suite.experiment(name).partition))
        grid = suite.tuning.cluster_grid(name)
        offered[name] = grid[0] if true_k is not None else None
        assert true_k is None or grid[0] == true_k, (name, true_k, grid)
        assert len(grid) >= 2, f"{name}: a wrong K beside the true one"
    assert offered == {"bm_iid": 1, "bm_quantity": 1, "bm_noise": 1, "bm_rot4": 4,
                       "bm_labelperm": 4, "bm_mix1090": 2, "bm_mixrandom": 2,
                       "bm_patho2": None, "bm_dir01": None, "bm_dir05": None}


def test_fedprox_is_offered_the_papers_four_mu(suite):
    assert suite.tuning.hyper["fedprox"]["mu"] == (0.001, 0.01, 0.1, 1.0)


@pytest.mark.parametrize("algorithm", ["pfedme", "pfedkm"])
def test_pfedme_and_pfedkm_are_scored_by_the_official_local_w(suite, algorithm):
    for experiment in ("bm_iid", "bm_rot4"):
        assert suite.algorithm(algorithm, experiment=experiment).hyper.evaluated_model \
            == "local"
        assert "model_views" in suite.experiment(experiment).evaluators
