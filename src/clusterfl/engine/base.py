"""What the engines share: client data laid out for batching and the protocol (the proximal
terms and the rules it takes are `rules.py`'s, which imports nothing of the engine)."""

from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import torch

from clusterfl.core.types import Tensors
from clusterfl.engine.plan import BatchPlan
from clusterfl.engine.rules import LocalRule, Prox  # Prox: the engines import it from here too

Split = Literal["train", "test"]


@dataclass(frozen=True)
class ClientData:
    """Every client's samples, zero-padded to the largest client: x[C, N_max, ...], y[C, N_max].

    `y` is long for class labels and float32 for regression targets (float input labels);
    unless an engine is given a named loss, it picks the loss from that dtype
    (`engine.losses`).
    """

    train_x: torch.Tensor
    train_y: torch.Tensor
    train_n: torch.Tensor  # long [C]
    test_x: torch.Tensor
    test_y: torch.Tensor
    test_n: torch.Tensor

    @staticmethod
    def from_lists(
        train: list[tuple[np.ndarray, np.ndarray]],
        test: list[tuple[np.ndarray, np.ndarray]],
        device: torch.device | str = "cpu",
    ) -> "ClientData":
        tx, ty, tn = _pad(train, device)
        sx, sy, sn = _pad(test, device)
        return ClientData(tx, ty, tn, sx, sy, sn)

    @property
    def is_regression(self) -> bool:
        return self.train_y.is_floating_point()

    @property
    def num_clients(self) -> int:
        return int(self.train_n.shape[0])

    def split(self, split: Split) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if split == "train":
            return self.train_x, self.train_y, self.train_n
        return self.test_x, self.test_y, self.test_n

    def selected_sizes(self, clients: torch.Tensor, split: Split) -> tuple[torch.Tensor, int]:
        """Sample counts of `clients` in `split`, and the largest (0 for no clients)."""
        n_sel = self.split(split)[2][clients]
        return n_sel, int(n_sel.max()) if len(n_sel) else 0


def _pad(
    parts: list[tuple[np.ndarray, np.ndarray]], device: torch.device | str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    n = np.array([len(y) for _, y in parts], dtype=np.int64)
    n_max = max(int(n.max(initial=0)), 1)
    feat = parts[0][0].shape[1:]
    regression = np.issubdtype(np.asarray(parts[0][1]).dtype, np.floating)
    x = np.zeros((len(parts), n_max, *feat), dtype=np.float32)
    y = np.zeros((len(parts), n_max), dtype=np.float32 if regression else np.int64)
    for c, (xc, yc) in enumerate(parts):
        x[c, : len(yc)] = xc
        y[c, : len(yc)] = yc
    return (torch.from_numpy(x).to(device), torch.from_numpy(y).to(device),
            torch.from_numpy(n).to(device))


class LocalEngine(Protocol):
    """Trains and evaluates stacked client models; implemented by both engines.

    Row i of `params` (and of a `Prox`) belongs to client `clients[i]`; results keep that order.
    """

    data: ClientData
    loss: str | None  # `losses.sample_loss`'s: None picks it from the labels' dtype

    def train(
        self, params: Tensors, clients: torch.Tensor, rule: LocalRule, plan: BatchPlan,
        prox: Prox | None = None,
    ) -> Tensors:
        """Run `plan` with `rule` from `params[i]` for each client in `clients`; new params."""
        ...

    def train_with_state(
        self, params: Tensors, clients: torch.Tensor, rule: LocalRule, plan: BatchPlan,
        prox: Prox | None = None,
    ) -> tuple[Tensors, Tensors]:
        """As `train`, plus the rule's final per-client state (e.g. pFedMe's theta)."""
        ...

    def evaluate(
        self, params: Tensors, clients: torch.Tensor, split: Split
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per client: (sum of losses, number correct) of model `params[i]` on its split."""
        ...

    def sample_losses(
        self, models: Tensors, clients: torch.Tensor, split: Split
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Loss of every sample of every client under each of M shared models `models[m]`.

        Returns (losses [M, C, N], mask [C, N]) with N the largest selected client's size;
        padded positions hold loss 0 and mask False. IFCA, FedSoft and FedEM assign clusters
        from these.
        """
        ...
