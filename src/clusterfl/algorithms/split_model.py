"""What the split-model methods share (FedPer, FedRep, LG-FedAvg): the model's parameters
split into a shared part, averaged by the server, and a personal part each client keeps.

    every client's personal part starts from the one initial model (one draw)
    for t = 1 .. T:
        each selected client k: w_k = LocalUpdate_k(shared + personal_k)
                                personal_k <- w_k's personal part
        server: shared <- sum_k p_k * w_k's shared part   (p_k = n_k / n, or 1 / |S|)
    client k uses shared + personal_k

The methods differ in which part is shared (`shared` in params) and in `LocalUpdate`
(FedRep: head first, then body). `shared` lists parameter names of the model or module
prefixes ("1" stands for "1.weight" and "1.bias"); `split_names` resolves it against the
model and names the allowed values when an entry matches nothing.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import torch

from clusterfl.algorithms.base import NeuralAlgorithm, Weighting, upload_weights
from clusterfl.core.errors import UserError
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.steps.aggregation import broadcast, gather, scatter, weighted_average


def module_prefixes(names: Sequence[str]) -> list[str]:
    """The module names that own `names` ("1.weight" -> "1"), in model order, each once."""
    return list(dict.fromkeys(n.rpartition(".")[0] for n in names if "." in n))


def split_names(patterns: Sequence[str], names: Sequence[str], key: str) -> tuple[str, ...]:
    """The parameter names (in model order) that `patterns` select: a pattern selects the
    parameter of that name and every parameter of the module of that name. A pattern that
    selects nothing is a one-line `UserError` naming `key` and the allowed values."""
    for pattern in patterns:
        if not any(n == pattern or n.startswith(f"{pattern}.") for n in names):
            raise UserError(f"{key}: {pattern!r} is no parameter or module of the model; "
                            f"allowed: {', '.join([*names, *module_prefixes(names)])}")
    return tuple(n for n in names
                 if any(n == p or n.startswith(f"{p}.") for p in patterns))


@dataclass(frozen=True)
class SplitHyper:
    """`shared`: the parameters (or modules) the server averages; every other parameter is
    personal. The defaults name the `dnn` model's layers (`1`: hidden, `3`: output)."""

    shared: tuple[str, ...] = ("1",)
    weighting: Weighting = "samples"

    def validate(self, key: str) -> None:
        require(len(self.shared) >= 1, f"{key}.shared",
                "name at least one parameter or module of the model")


# every split-model method's hyperparameters extend SplitHyper (`shared`, `weighting`)
S = TypeVar("S", bound=SplitHyper)


class SplitModel(NeuralAlgorithm[S]):
    """The round of every split-model method; subclasses may override `local_update`."""

    method: str  # the params `method:` name, for error messages
    # fixed by the hyperparameters and the model: `setup` sets them again on a resume
    transient = (*NeuralAlgorithm.transient, "names", "shared_names", "personal_names")

    def setup(self) -> None:
        model = self.initial_model()
        self.names = tuple(model)
        self.shared_names = split_names(self.hyper.shared, self.names, f"{self.method}.shared")
        self.personal_names = tuple(n for n in self.names if n not in self.shared_names)
        self.shared = {k: model[k] for k in self.shared_names}
        self.personal = broadcast({k: model[k] for k in self.personal_names}, self.num_clients)

    def models_of(self, clients: torch.Tensor) -> Tensors:
        """Stacked models of `clients`: the shared part and each one's personal part, in the
        model's parameter order."""
        shared = broadcast(self.shared, len(clients))
        personal = gather(self.personal, clients)
        return {k: shared[k] if k in shared else personal[k] for k in self.names}

    def local_update(self, start: Tensors, clients: torch.Tensor) -> Tensors:
        """The schedule's local training of every parameter (FedPer, LG-FedAvg)."""
        return self.train_clients(start, clients)

    def aggregation_weights(self, clients: torch.Tensor) -> torch.Tensor:
        return upload_weights(self.hyper.weighting, self.train_sizes, clients)

    def round(self, round_: int, clients: torch.Tensor) -> None:
        local = self.local_update(self.models_of(clients), clients)
        self.personal = scatter(self.personal, clients,
                                {k: local[k] for k in self.personal_names})
        self.shared = weighted_average({k: local[k] for k in self.shared_names},
                                       self.aggregation_weights(clients))

    def client_models(self) -> Tensors:
        return self.models_of(self.all_clients)
