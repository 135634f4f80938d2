"""Which samples each client uses at each local step, drawn once, shared by both engines.

A plan is `index[S, C, B]` (sample positions inside each client's data) with `mask[S, C, B]`
(False for padding). Each client walks through fresh permutations of its data in batches of
`batch_size`, the last batch of a pass being partial, as a shuffled `DataLoader` does (pFedMe's
`get_next_train_batch` restarts such a loader when it runs out). With `local_steps` every
client takes that many steps; with `epochs` a client takes as many steps as its passes need,
and clients with fewer steps are padded with inactive steps (`active[S, C]` False).
"""

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class BatchPlan:
    index: torch.Tensor  # long [S, C, B]
    mask: torch.Tensor  # bool [S, C, B]

    @property
    def active(self) -> torch.Tensor:
        """bool [S, C]: whether client c takes step s."""
        return self.mask.any(dim=2)

    @property
    def num_steps(self) -> int:
        return int(self.index.shape[0])


def _client_batches(
    n: int, batch_size: int, steps: int | None, epochs: int | None, rng: np.random.Generator
) -> list[np.ndarray]:
    batches: list[np.ndarray] = []
    passes = 0
    while (steps is not None and len(batches) < steps) or (epochs is not None and passes < epochs):
        order = rng.permutation(n)
        batches.extend(order[i : i + batch_size] for i in range(0, n, batch_size))
        passes += 1
    return batches[:steps] if steps is not None else batches


def make_plan(
    sizes: np.ndarray,
    batch_size: int,
    rng: np.random.Generator,
    local_steps: int | None = None,
    epochs: int | None = None,
) -> BatchPlan:
    """Draw a plan for clients of the given sizes; exactly one of local_steps/epochs is set."""
    if (local_steps is None) == (epochs is None):
        raise ValueError("give exactly one of local_steps and epochs")
    per_client = [_client_batches(int(n), batch_size, local_steps, epochs, rng) for n in sizes]
    n_steps = max((len(b) for b in per_client), default=0)
    width = min(batch_size, int(max(sizes, default=1)))
    index = np.zeros((n_steps, len(sizes), width), dtype=np.int64)
    mask = np.zeros((n_steps, len(sizes), width), dtype=bool)
    for c, batches in enumerate(per_client):
        for s, batch in enumerate(batches):
            index[s, c, : len(batch)] = batch
            mask[s, c, : len(batch)] = True
    return BatchPlan(torch.from_numpy(index), torch.from_numpy(mask))
