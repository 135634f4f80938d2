"""Server-side aggregation math: small pure functions on stacked parameters `[C, ...]`."""

import torch

from clusterfl.core.types import Tensors


def weighted_average(stacked: Tensors, weights: torch.Tensor) -> Tensors:
    """sum_c w_c * params_c / sum_c w_c, for each tensor (FedAvg's n_k/n weighting)."""
    first = next(iter(stacked.values()))
    w = weights.to(device=first.device, dtype=first.dtype)
    w = w / w.sum()
    return {k: torch.tensordot(w, v, dims=1) for k, v in stacked.items()}


def broadcast(params: Tensors, count: int) -> Tensors:
    """Stack `count` copies of one model: `[...]` -> `[count, ...]`."""
    return {k: v.unsqueeze(0).expand(count, *v.shape).clone() for k, v in params.items()}


def mix(old: Tensors, new: Tensors, beta: float) -> Tensors:
    """(1 - beta) * old + beta * new: the server mixing of pFedMe and pFedKM."""
    return {k: (1 - beta) * old[k] + beta * new[k] for k in old}


def gather(stacked: Tensors, rows: torch.Tensor) -> Tensors:
    """The models at `rows` of a stack."""
    return {k: v[rows] for k, v in stacked.items()}


def largest_weight_centers(centers: Tensors, importance: torch.Tensor) -> Tensors:
    """Client k's model = the center with its largest importance weight (IFCA, FedEM)."""
    return gather(centers, importance.argmax(dim=1))


def scatter(stacked: Tensors, rows: torch.Tensor, values: Tensors) -> Tensors:
    """A copy of `stacked` with `rows` replaced by `values`."""
    out = {k: v.clone() for k, v in stacked.items()}
    for k in out:
        out[k][rows] = values[k]
    return out
