"""Run one cell of the grid (an experiment x an algorithm) for one seed."""

from collections.abc import Sequence

import torch

from clusterfl.algorithms import RunContext
from clusterfl.callbacks import Callback
from clusterfl.config import AlgorithmConfig, Experiment
from clusterfl.data import Dataset
from clusterfl.engine import ENGINES, ClientData
from clusterfl.history import RunHistory
from clusterfl.models import build_model
from clusterfl.partition import Partition, views


def client_data(dataset: Dataset, partition: Partition, device: str = "cpu") -> ClientData:
    """Lay out each client's train/test samples (views applied) for the engine."""
    clients = range(partition.num_clients)
    return ClientData.from_lists(
        [views.client_data(dataset, partition, k, "train") for k in clients],
        [views.client_data(dataset, partition, k, "test") for k in clients],
        device=device,
    )


def holdout_data(dataset: Dataset, partition: Partition, device: str = "cpu") -> ClientData | None:
    """The partition's held-out test sets, one per distribution, laid out as the `test`
    split of one "client" each (their `train` split is empty); None without hold-outs."""
    if not partition.holdout:
        return None
    sets = [views.holdout_data(dataset, partition, s) for s in range(len(partition.holdout))]
    empty = [(x[:0], y[:0]) for x, y in sets]
    return ClientData.from_lists(empty, sets, device=device)


def run_seed(
    experiment: Experiment,
    algorithm: AlgorithmConfig,
    dataset: Dataset,
    partition: Partition,
    seed: int,
    callbacks: Sequence[Callback] = (),
    engine: str = "vectorized",
    device: str = "cpu",
) -> RunHistory:
    """Train `algorithm` on `experiment` with `seed`; returns the per-round history."""
    torch.manual_seed(seed)  # only for code outside our explicit generators (none expected)
    model = build_model(
        experiment.model, dataset.feature_shape, dataset.num_classes,
        experiment.model_options, key=f"experiments.{experiment.name}.model",
    ).to(device)
    data = client_data(dataset, partition, device)
    holdout = holdout_data(dataset, partition, device)
    ctx = RunContext(
        model=model,
        engine=ENGINES[engine](model, data),
        schedule=experiment.schedule,
        seed=seed,
        true_cluster=partition.cluster,
        true_mixture=partition.mixture,
        holdout=None if holdout is None else ENGINES[engine](model, holdout),
    )
    return algorithm.cls(algorithm.hyper, ctx).run(list(callbacks))
