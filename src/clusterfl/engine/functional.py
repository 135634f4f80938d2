"""Stateless forward and loss of an `nn.Module` at given parameters (torch.func)."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from clusterfl.engine.base import Params


def masked_mean_loss(
    model: nn.Module, params: Params, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy over the unmasked samples of one client's batch."""
    logits = functional_call(model, params, (x,))
    losses = F.cross_entropy(logits, y, reduction="none")
    return (losses * mask).sum() / mask.sum().clamp(min=1)


def loss_and_correct(
    model: nn.Module, params: Params, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum of losses and number of correct predictions over the unmasked samples."""
    logits = functional_call(model, params, (x,))
    losses = F.cross_entropy(logits, y, reduction="none")
    correct = (logits.argmax(dim=-1) == y).to(losses.dtype)
    return (losses * mask).sum(), (correct * mask).sum()
