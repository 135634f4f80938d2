"""Run one cell of the grid (an experiment x an algorithm) for one seed."""

from collections.abc import Sequence

import torch

from clusterfl.core.types import Dataset, Partition, SeedInputs
from clusterfl.evaluators import build_evaluators
from clusterfl.partition.validation import validation_split
from clusterfl.run.checkpoints import SeedCheckpoint
from clusterfl.run.config import AlgorithmConfig, Experiment
from clusterfl.training.callbacks import Callback
from clusterfl.training.history import RunHistory


def run_seed(
    experiment: Experiment,
    algorithm: AlgorithmConfig,
    dataset: Dataset,
    partition: Partition,
    seed: int,
    callbacks: Sequence[Callback] = (),
    engine: str = "vectorized",
    device: str = "cpu",
    checkpoint: SeedCheckpoint | None = None,
) -> RunHistory:
    """Train `algorithm` on `experiment` with `seed`; returns the per-round history.
    With a `checkpoint` the run resumes from it and writes to it (`FederatedAlgorithm.run`).
    An experiment with a `validation_fraction` trains and evaluates on a validation split of
    the clients' training data (`partition.validation`)."""
    torch.manual_seed(seed)  # only for code outside our explicit generators (none expected)
    if experiment.validation_fraction is not None:  # tuning: "test" numbers are validation
        partition = validation_split(partition, experiment.validation_fraction, seed)
    inputs = SeedInputs(experiment, dataset, partition, seed, engine, device)
    ctx = algorithm.cls.make_context(inputs)
    instance = algorithm.cls(algorithm.hyper, ctx)
    names = experiment.evaluators or instance.default_evaluators()
    return instance.run(build_evaluators(list(names), ctx), list(callbacks), checkpoint)
