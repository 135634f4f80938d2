"""The `modality` scheme's `modalities` option and P3's context: one engine per modality,
named from the partition's views; the centralized baseline pools each modality's clients."""

import numpy as np
import pytest

from clusterfl.algorithms import Schedule
from clusterfl.core.errors import UserError
from clusterfl.data.dataset import Dataset
from clusterfl.papers.p3.training.context import build_context
from clusterfl.partition import build_partition
from clusterfl.run.config import Experiment
from clusterfl.run.runner import SeedInputs


def three_modalities(n: int = 300) -> Dataset:
    rng = np.random.default_rng(0)
    return Dataset("mm3", rng.random((n, 12)).astype(np.float32), rng.integers(0, 4, n), 4,
                   modalities=("acc", "gyro", "mag"), modality_sizes=(4, 3, 5))


def test_modality_scheme_picks_modalities_in_the_order_named() -> None:
    ds = three_modalities()
    p = build_partition(ds, "modality", {"clients_per_modality": 2, "min_size": 5,
                                         "modalities": ["gyro", "acc"]}, 0, "p")
    assert p.views == ("modality:gyro", "modality:acc")
    assert p.cluster.tolist() == [0, 0, 1, 1]
    with pytest.raises(UserError, match="'light' is not a modality"):
        build_partition(ds, "modality", {"modalities": ["light"]}, 0, "p")


@pytest.mark.parametrize("pooled", [False, True])
def test_context_has_one_engine_per_modality(pooled: bool) -> None:
    ds = three_modalities()
    p = build_partition(ds, "modality", {"clients_per_modality": 2, "min_size": 5,
                                         "modalities": ["gyro", "acc"]}, 0, "p")
    exp = Experiment(name="e", paper="p3", partition="p", model="p3_net",
                     model_options={"encoder": "mlp", "hidden": 4},
                     schedule=Schedule(rounds=2, lr=0.1, local_steps=1), title="e",
                     algorithm_options={}, evaluators=None)
    ctx = build_context(SeedInputs(exp, ds, p, seed=0), pooled=pooled)
    assert [m.name for m in ctx.modalities] == ["gyro", "acc"]
    widths = [m.engine.data.train_x.shape[2] for m in ctx.modalities]
    assert widths == [3, 4]
    for m, ids in zip(ctx.modalities, ([0, 1], [2, 3]), strict=True):
        sizes = [len(p.train[k]) for k in ids]
        assert m.engine.data.train_n.tolist() == ([sum(sizes)] if pooled else sizes)
