"""The per-sample loss, chosen by the labels' dtype, written once for every engine and kernel.

- integer class labels: cross-entropy of the model's logits `[..., K]`;
- float targets (regression, `Dataset.num_classes == 0`): squared error (y_hat - y)^2 of a
  model with one output `[..., 1]`, so a mean over samples is the MSE.
"""

import torch
import torch.nn.functional as F


def is_regression(y: torch.Tensor) -> bool:
    return y.is_floating_point()


def sample_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Loss of every sample: `out[..., K]` against `y[...]`, shape `y.shape`."""
    if is_regression(y):
        return (out.squeeze(-1) - y).square()
    logits = out.movedim(-1, 1) if out.dim() > 2 else out  # cross_entropy wants [N, K, ...]
    return F.cross_entropy(logits, y, reduction="none")


def num_correct(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """1.0 where the argmax is the label (classification), 0.0 everywhere for regression."""
    if is_regression(y):
        return torch.zeros_like(y)
    return (out.argmax(-1) == y).to(out.dtype)


def loss_grad(out: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """d/d out of sum_i weight_i * loss_i (the bmm kernel's hand-written backward starts here)."""
    if is_regression(y):
        return (out - y.unsqueeze(-1)).mul_(2 * weight.unsqueeze(-1))
    dz = torch.softmax(out, dim=-1)
    return dz.sub_(F.one_hot(y, dz.shape[-1]).to(dz.dtype)).mul_(weight.unsqueeze(-1))
