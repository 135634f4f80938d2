"""Which samples each client uses at each local step, drawn once, shared by both engines.

A plan is `index[S, C, B]` (sample positions inside each client's data) with `mask[S, C, B]`
(False for padding). Each client walks through fresh permutations of its data in batches of
`batch_size`, the last batch of a pass being partial, as a shuffled `DataLoader` does (pFedMe's
`get_next_train_batch` restarts such a loader when it runs out). With `local_steps` every
client takes that many steps; with `epochs` a client takes as many steps as its passes need,
and clients with fewer steps are padded with inactive steps (`active[S, C]` False).

Optional per-sample weights (`weight[S, C, B]`, from `with_sample_weights`) scale each
sample's term of the batch loss: a client minimises sum_i weight_i * loss_i / |batch| on each
batch (FedEM's responsibility-weighted component updates). Without them every real sample
weighs 1, i.e. the batch loss is the plain mean.
"""

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class BatchPlan:
    index: torch.Tensor  # long [S, C, B]
    mask: torch.Tensor  # bool [S, C, B]
    weight: torch.Tensor | None = None  # float [S, C, B], 0 at padding; None: all 1

    def with_sample_weights(self, per_sample: torch.Tensor) -> "BatchPlan":
        """This plan with sample j of client row c weighted by `per_sample[c, j]` ([C, N])."""
        per_sample = per_sample.to(self.index.device)
        rows = torch.arange(self.index.shape[1], device=self.index.device).view(1, -1, 1)
        weight = per_sample[rows, self.index] * self.mask.to(per_sample.dtype)
        return BatchPlan(self.index, self.mask, weight)

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
