"""P3's run context: one modality cluster per modality of the dataset, each with its own
network (`p3_net`, built for that modality's input width) and its own engine over the data of
its clients. Modalities may differ in width (CMU-MOSEI text vs audio), so a cluster's clients
are stacked only with each other; what the clusters share is the head (`steps.server_step`).

A client's modality is its true cluster in the `modality` partition scheme (cluster m is
shown through the partition's view m, `modality:<name>`). Every client takes part
in every round (Step 9: the server "receives all completed models for every client").
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from clusterfl.algorithms.base import Schedule, build_engine, model_schedule
from clusterfl.core.errors import UserError
from clusterfl.core.types import RunContext, SeedInputs
from clusterfl.engine import ClientData, LocalEngine
from clusterfl.partition import views
from clusterfl.training.loop import FederatedAlgorithm
from clusterfl.training.models import build_model


@dataclass(frozen=True)
class Modality:
    """One modality cluster: its name, its clients (run-wide ids, ascending), its network and
    the engine over its clients' data (engine client i = `clients[i]`)."""

    name: str
    clients: torch.Tensor
    model: nn.Module
    engine: LocalEngine

    @property
    def size(self) -> int:
        return len(self.clients)

    @property
    def train_n(self) -> torch.Tensor:
        return self.engine.data.train_n


@dataclass
class P3Context(RunContext):
    modalities: list[Modality] = field(default_factory=list)
    schedule: Schedule | None = None
    engine_name: str = "vectorized"  # `ENGINES`' name: the rate scorer builds one more


def modality_clients(partition: Any, key: str) -> list[tuple[str, np.ndarray]]:
    """(name, clients) of each modality cluster: cluster m is shown through the partition's
    view m, `modality:<name>`."""
    names = [v.removeprefix("modality:") for v in partition.views if v.startswith("modality:")]
    if partition.cluster is None or not names or len(names) != len(partition.views):
        raise UserError(f"{key}: P3 needs a multimodal dataset partitioned by the 'modality' "
                        "scheme (every client's cluster is its modality)")
    cluster = np.asarray(partition.cluster)
    return [(name, np.flatnonzero(cluster == m)) for m, name in enumerate(names)]


def build_context(run: SeedInputs, pooled: bool = False) -> P3Context:
    """The context of one seed. `pooled`: each
    modality's clients' samples joined into one client (the centralized baseline)."""
    experiment, dataset, partition = run.experiment, run.dataset, run.partition
    key = f"experiments.{experiment.name}"
    if experiment.model is None:
        raise UserError(f"{key}.model: P3 algorithms train a model (p3_net)")
    schedule = model_schedule(experiment)
    schedule.validate_neural(f"{key}.training")
    schedule.check_loss(dataset.is_regression, f"{key}.training")
    if schedule.clients_per_round is not None:
        raise UserError(f"{key}.training.clients_per_round: P3 trains every client every "
                        "round; leave it unset")
    modalities = []
    for m, (name, ids) in enumerate(modality_clients(partition, key)):
        train = [views.client_data(dataset, partition, int(k), "train") for k in ids]
        test = [views.client_data(dataset, partition, int(k), "test") for k in ids]
        if pooled:
            xs, ys = zip(*train, strict=True)
            train = [(np.concatenate(xs), np.concatenate(ys))]
            xs, ys = zip(*test, strict=True)
            test = [(np.concatenate(xs), np.concatenate(ys))]
        width = train[0][0].shape[1:]
        model = build_model(experiment.model, width, dataset.num_classes,
                            experiment.model_options, key=f"{key}.model").to(run.device)
        data = ClientData.from_lists(train, test, device=run.device)
        clients = torch.tensor([m]) if pooled else torch.as_tensor(ids, dtype=torch.int64)
        modalities.append(Modality(name, clients, model, build_engine(
            run.engine, model, data, schedule, f"{key}.training")))
    base = FederatedAlgorithm.make_context(run)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(RunContext)}
    if pooled:
        fields["num_clients"] = len(modalities)
    return P3Context(**fields, modalities=modalities, schedule=schedule,
                     engine_name=run.engine)
