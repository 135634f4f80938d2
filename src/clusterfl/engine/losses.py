"""The per-sample loss, written once for every engine and kernel.

`loss=None` (the default everywhere) picks the loss from the labels' dtype:
- integer class labels: cross-entropy of the model's logits `[..., K]`;
- float targets (regression, `Dataset.num_classes == 0`): squared error (y_hat - y)^2 of a
  model with one output `[..., 1]`, so a mean over samples is the MSE.

A named loss (`LOSSES`, the training block's `loss`; P3's Table 1 compares the three) applies
to class labels y and logits z `[..., K]`, with t = one_hot(y):
- `cross_entropy`: -log softmax(z)_y, the same computation as the default;
- `mse`: (1/K) sum_k (softmax(z)_k - t_k)^2, the squared error of the softmax probabilities
  against the one-hot target;
- `bce`: (1/K) sum_k -[t_k log sigmoid(z_k) + (1 - t_k) log(1 - sigmoid(z_k))], K independent
  binary cross-entropies of the sigmoid outputs (computed stably from the logits).
The mean over K is PyTorch's `MSELoss`/`BCELoss` default (`reduction="mean"` over every
element), our reading of P3, which names the three losses and nothing more (docs/p3.md).
Prediction is the argmax of the logits under every loss (softmax and sigmoid keep the order).
"""

from typing import Literal, get_args

import torch
import torch.nn.functional as F

LossName = Literal["cross_entropy", "mse", "bce"]
LOSSES: tuple[str, ...] = get_args(LossName)


def is_regression(y: torch.Tensor) -> bool:
    return y.is_floating_point()


def check_loss(loss: str | None, regression: bool) -> None:
    """A ValueError unless `loss` is None or one of `LOSSES` on class labels."""
    if loss is None:
        return
    if loss not in LOSSES:
        raise ValueError(f"loss {loss!r} is not allowed; allowed: {', '.join(LOSSES)}")
    if regression:
        raise ValueError(f"loss {loss!r} needs class labels; float targets train with the "
                         "squared error (loss unset)")


def _one_hot(y: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """t = one_hot(y) in `out`'s dtype (a comparison: `F.one_hot` cannot run under vmap)."""
    classes = torch.arange(out.shape[-1], device=y.device)
    return (y.unsqueeze(-1) == classes).to(out.dtype)


def sample_loss(out: torch.Tensor, y: torch.Tensor, loss: str | None = None) -> torch.Tensor:
    """Loss of every sample: `out[..., K]` against `y[...]`, shape `y.shape`."""
    if loss is None and is_regression(y):
        return (out.squeeze(-1) - y).square()
    check_loss(loss, is_regression(y))
    if loss == "mse":
        return (torch.softmax(out, dim=-1) - _one_hot(y, out)).square().mean(-1)
    if loss == "bce":
        return F.binary_cross_entropy_with_logits(out, _one_hot(y, out),
                                                  reduction="none").mean(-1)
    logits = out.movedim(-1, 1) if out.dim() > 2 else out  # cross_entropy wants [N, K, ...]
    return F.cross_entropy(logits, y, reduction="none")


def num_correct(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """1.0 where the argmax is the label (classification), 0.0 everywhere for regression."""
    if is_regression(y):
        return torch.zeros_like(y)
    return (out.argmax(-1) == y).to(out.dtype)


def loss_grad(out: torch.Tensor, y: torch.Tensor, weight: torch.Tensor,
              loss: str | None = None) -> torch.Tensor:
    """d/d out of sum_i weight_i * loss_i (the bmm kernel's hand-written backward starts here)."""
    if loss is None and is_regression(y):
        return (out - y.unsqueeze(-1)).mul_(2 * weight.unsqueeze(-1))
    check_loss(loss, is_regression(y))
    w = weight.unsqueeze(-1)
    if loss == "mse":  # g = dL/dp = 2 (p - t) / K; dL/dz_j = p_j (g_j - sum_k g_k p_k)
        p = torch.softmax(out, dim=-1)
        g = (p - _one_hot(y, out)).mul_(2 / out.shape[-1])
        return g.sub_((g * p).sum(-1, keepdim=True)).mul_(p).mul_(w)
    if loss == "bce":  # dL/dz_k = (sigmoid(z_k) - t_k) / K
        return torch.sigmoid(out).sub_(_one_hot(y, out)).mul_(w / out.shape[-1])
    # softmax - one_hot(y), by subtracting 1 at each label in place: the same numbers as
    # building the one-hot, in 2 kernels instead of 4 (GPU steps are launch-bound)
    dz = torch.softmax(out, dim=-1)
    minus_one = dz.new_full((1,) * dz.dim(), -1.0).expand(*y.shape, 1)
    return dz.scatter_add_(-1, y.unsqueeze(-1), minus_one).mul_(weight.unsqueeze(-1))
