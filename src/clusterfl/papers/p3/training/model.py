"""P3's per-modality network: an encoder (what a modality cluster owns) and a head (the
paper's server "decoder", shared by every modality), registered as model `p3_net`.

The input is one modality of a sample, flattened (`Dataset.modality_slice`): a time series of
`time_steps` readings of C = width / time_steps channels, stored channel-first (UCI HAR and
BasicMotions: x, y, z of one sensor, then the next axis) or time-first (CMU-MOSEI features:
one feature vector per word / frame). Encoders:
- `conv` (default): Conv1d(C, hidden, k) -> ReLU -> MaxPool1d(2) -> Conv1d(hidden, hidden, k)
  -> ReLU -> mean over time: a small temporal encoder. Why not the paper's LSTM: the engine
  trains every client of a modality together through `torch.func.vmap(grad(...))`
  (`VmapKernel`), which batches Conv1d and pooling directly; an LSTM written as a Python loop
  over time steps would also vmap, but runs 100-128 sequential steps per batch. The
  centralized baseline uses the same network so that every compared method has one model.
- `mlp`: Linear(width, hidden) -> ReLU, for features without a time axis.
The head is Linear(hidden, classes); its parameters are the ones named `head.*`.
"""

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from clusterfl.core.errors import UserError
from clusterfl.core.options import require
from clusterfl.training.models import MODELS, ModelSpec

HEAD = "head."  # the prefix of the shared head's parameter names


@dataclass(frozen=True)
class P3NetOptions:
    encoder: Literal["conv", "mlp"] = "conv"
    time_steps: int = 100  # readings per channel (BasicMotions 100, UCI HAR 128)
    layout: Literal["channels_first", "time_first"] = "channels_first"
    hidden: int = 32
    kernel_size: int = 5

    def validate(self, key: str) -> None:
        require(self.time_steps > 0, f"{key}.time_steps", "must be > 0")
        require(self.hidden > 0, f"{key}.hidden", "must be > 0")
        require(self.kernel_size > 0 and self.kernel_size % 2 == 1, f"{key}.kernel_size",
                "must be an odd number > 0")


class P3Net(nn.Module):
    def __init__(self, width: int, classes: int, opts: P3NetOptions) -> None:
        super().__init__()
        self.opts = opts
        h, k = opts.hidden, opts.kernel_size
        if opts.encoder == "conv":
            if width % opts.time_steps:
                raise UserError(f"model p3_net: a modality of {width} values is not "
                                f"time_steps={opts.time_steps} readings of whole channels")
            self.channels = width // opts.time_steps
            self.encoder = nn.Sequential(
                nn.Conv1d(self.channels, h, k, padding=k // 2), nn.ReLU(), nn.MaxPool1d(2),
                nn.Conv1d(h, h, k, padding=k // 2), nn.ReLU(),
                nn.AdaptiveAvgPool1d(1), nn.Flatten())
        else:
            self.encoder = nn.Sequential(nn.Flatten(), nn.Linear(width, h), nn.ReLU())
        self.head = nn.Linear(h, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.opts.encoder == "conv":
            t = self.opts.time_steps
            if self.opts.layout == "channels_first":
                x = x.reshape(x.shape[0], self.channels, t)
            else:
                x = x.reshape(x.shape[0], t, self.channels).transpose(1, 2)
        logits: torch.Tensor = self.head(self.encoder(x))
        return logits


def _build(shape: tuple[int, ...], classes: int, opts: P3NetOptions) -> nn.Module:
    width = 1
    for s in shape:
        width *= s
    return P3Net(width, classes, opts)


MODELS.add("p3_net")(ModelSpec("P3: per-modality encoder (Conv1d or MLP) + shared head",
                               P3NetOptions, _build))
