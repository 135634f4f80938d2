"""pFedMe/pFedKM's `evaluated_model` switch and the models the `model_views` evaluator reads:
theta_i (the paper's), the local w_i after local training (what the official code's
"personalized" evaluation measures) and the global model before and after the beta-mix."""

import pytest
import torch

from clusterfl.algorithms import NeuralContext, Schedule
from clusterfl.algorithms.pfedkm import PFedKM, PFedKMHyper
from clusterfl.algorithms.pfedme import PFedMe, PFedMeHyper
from clusterfl.core.errors import UserError
from clusterfl.core.options import build_options
from clusterfl.engine import ENGINES
from clusterfl.evaluators.views import ModelViews
from clusterfl.training.models import build_model
from tests.algorithms.test_p1_algorithms import _mlr_grad_at_zero, _zero_start


def _one_round(tiny_data, cls=PFedMe, **hyper):
    """One full-batch round with one inner step from W = 0 (see test_pfedme_round_by_hand):
    theta_c = -0.3 g_c, w_c = 0.1 * 2 * theta_c."""
    model = build_model("mlr", (4,), 3)
    sched = Schedule(lr=0.1, rounds=1, local_steps=1, batch_size=9)
    ctx = NeuralContext.build(model, ENGINES["vectorized"](model, tiny_data), sched, seed=0)
    hyper_cls = PFedKMHyper if cls is PFedKM else PFedMeHyper
    algo = _zero_start(cls)(hyper_cls(beta=0.5, lam=2.0, personal_lr=0.3, inner_steps=1,
                                      **hyper), ctx)
    algo.setup()
    algo.round(1, algo.all_clients)
    return algo, ctx


def _thetas(data) -> torch.Tensor:
    return torch.stack([-0.3 * _mlr_grad_at_zero(data, c) for c in range(3)])


def test_switch_picks_theta_or_the_local_w(tiny_data):
    theta, local = _thetas(tiny_data), 0.1 * 2.0 * _thetas(tiny_data)
    paper, _ = _one_round(tiny_data)
    official, _ = _one_round(tiny_data, evaluated_model="local")
    torch.testing.assert_close(paper.view().client_models["1.weight"], theta)
    torch.testing.assert_close(official.view().client_models["1.weight"], local)
    assert not torch.allclose(theta, local)  # the switch really changes the model


def test_views_hold_theta_local_w_and_the_global_model_before_and_after_the_mix(tiny_data):
    algo, _ = _one_round(tiny_data)
    extras = algo.view().extras
    local = 0.1 * 2.0 * _thetas(tiny_data)
    torch.testing.assert_close(extras["theta"]["1.weight"], _thetas(tiny_data))
    torch.testing.assert_close(extras["local_w"]["1.weight"], local)
    mean = local.mean(0)
    for c in range(3):
        torch.testing.assert_close(extras["global"]["1.weight"][c], mean)
        torch.testing.assert_close(extras["global_mixed"]["1.weight"][c], 0.5 * mean)


def test_model_views_evaluator_scores_each_model_and_the_switch_moves_test_acc(tiny_data):
    paper, ctx = _one_round(tiny_data)
    official, _ = _one_round(tiny_data, evaluated_model="local")
    views = ModelViews(ctx).evaluate(paper.view())
    n = tiny_data.test_n.sum().item()
    for name in ("theta", "local_w", "global", "global_mixed"):
        _, correct = ctx.engine.evaluate(paper.view().extras[name], torch.arange(3), "test")
        assert views[f"{name}_test_acc"] == correct.sum().item() / n
    # the primary number follows the switch; the diagnostics do not
    assert ModelViews(ctx).evaluate(official.view()) == views


def test_pfedkm_global_views_are_each_clients_cluster_model(tiny_data):
    algo, _ = _one_round(tiny_data, cls=PFedKM, num_clusters=1)
    extras = algo.view().extras
    mean = (0.1 * 2.0 * _thetas(tiny_data)).mean(0)
    for c in range(3):
        torch.testing.assert_close(extras["global"]["1.weight"][c], mean)
        torch.testing.assert_close(extras["global_mixed"]["1.weight"][c], 0.5 * mean)


def test_an_unknown_evaluated_model_is_one_line_naming_the_key():
    with pytest.raises(UserError) as err:
        build_options(PFedMeHyper, {"evaluated_model": "personalized"}, "algorithms.pfedme")
    assert str(err.value) == ("algorithms.pfedme.evaluated_model: 'personalized' is not "
                              "allowed; allowed: theta, local")


def test_pfedkm_refuses_diverged_uploads_in_one_line():
    import numpy as np

    from clusterfl.algorithms.pfedkm import clustered_means

    uploads = {"w": torch.tensor([[0.0, 1.0], [float("nan"), 0.0]])}
    with pytest.raises(UserError, match=r"^pfedkm: the uploaded models are not finite"):
        clustered_means(uploads, {"w": torch.zeros(1, 2)}, torch.ones(2),
                        np.random.default_rng(0))
