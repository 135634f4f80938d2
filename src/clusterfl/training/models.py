"""Models of the papers, built by name, initialised from an explicit `torch.Generator`.

- `mlr`: multinomial logistic regression (one linear layer on the flattened input).
- `dnn`: one hidden layer (P1: 128 units, ReLU) then a linear output layer;
- `linreg`: linear regression without intercept, y_hat = <w, x> (FedSoft's synthetic model);
- `cnn`: 2 conv + 2 fully connected layers (P1's CIFAR-10 model, FedSoft's letters model);
- `cnn6`: FedSoft's CIFAR-10 CNN, 6 conv layers (32, 64, 128, 128, 256, 256), a 2x2 max-pool
  after every second one, then fully connected layers of 1024 and 512 units (Appendix "CIFAR-10
  Results": "the fully connected layer has dimension 1024x512", read as the two hidden
  widths: on 32x32 images three pools leave 256 x 4 x 4 = 4096 features, not 1024).
Regression data (`num_classes == 0`) gets one output unit; the engines then use squared error.
Initialisation (`init_params`, drawn from the run's own generator, so a seed fixes the model):
- `pytorch`: PyTorch's default for Linear/Conv1d/Conv2d, U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  for weight and bias;
- `xavier_normal` (FedSoft, Sec. 5: "Xavier normal initialization, no pre-training"): weights
  N(0, 2 / (fan_in + fan_out)) as `torch.nn.init.xavier_normal_` with gain 1; the paper says
  nothing of biases, we start them at 0 (the usual companion of Xavier schemes).
"""

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from clusterfl.core.errors import UserError
from clusterfl.core.options import build_options, require
from clusterfl.core.registry import Registry
from clusterfl.core.types import Tensors


@dataclass(frozen=True)
class MlrOptions:
    """Multinomial logistic regression takes no options."""


@dataclass(frozen=True)
class DnnOptions:
    hidden: int = 128

    def validate(self, key: str) -> None:
        require(self.hidden > 0, f"{key}.hidden", "must be > 0")


@dataclass(frozen=True)
class LinregOptions:
    """Linear regression without intercept takes no options."""


@dataclass(frozen=True)
class CnnOptions:
    """Two conv layers (ReLU, 2x2 max-pool after each), then two fully connected layers.

    Defaults are FedSoft's letters CNN (k5, pad 2, 32/64 channels, fc 512); P1's CIFAR-10 CNN
    ("2 conv + 2 fc") gives no sizes, so it uses the same."""

    channels: tuple[int, ...] = (32, 64)
    kernel_size: int = 5
    padding: int = 2
    hidden: int = 512

    def validate(self, key: str) -> None:
        require(len(self.channels) == 2 and min(self.channels) > 0, f"{key}.channels",
                "must be two positive channel counts")
        require(self.kernel_size > 0 and self.padding >= 0, f"{key}.kernel_size",
                "kernel_size must be > 0 and padding >= 0")
        require(self.hidden > 0, f"{key}.hidden", "must be > 0")


def _linreg(shape: tuple[int, ...], outputs: int, opts: LinregOptions) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(shape), outputs, bias=False))


def _mlr(shape: tuple[int, ...], num_classes: int, opts: MlrOptions) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(shape), num_classes))


def _dnn(shape: tuple[int, ...], num_classes: int, opts: DnnOptions) -> nn.Module:
    return nn.Sequential(
        nn.Flatten(), nn.Linear(math.prod(shape), opts.hidden), nn.ReLU(),
        nn.Linear(opts.hidden, num_classes),
    )


def _cnn(shape: tuple[int, ...], num_classes: int, opts: CnnOptions) -> nn.Module:
    if len(shape) != 3:
        raise UserError(f"model cnn: needs images (channels, height, width), got shape {shape}")
    c1, c2 = opts.channels
    k, pad = opts.kernel_size, opts.padding
    height, width = shape[1:]
    for _ in range(2):  # conv (stride 1) then 2x2 max-pool
        height, width = (height + 2 * pad - k + 1) // 2, (width + 2 * pad - k + 1) // 2
    return nn.Sequential(
        nn.Conv2d(shape[0], c1, k, padding=pad), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, k, padding=pad), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * height * width, opts.hidden), nn.ReLU(),
        nn.Linear(opts.hidden, num_classes),
    )


@dataclass(frozen=True)
class Cnn6Options:
    """FedSoft's CIFAR-10 CNN: 3x3 convs (pad 1), ReLU, a 2x2 max-pool after every second."""

    channels: tuple[int, ...] = (32, 64, 128, 128, 256, 256)
    hidden: tuple[int, ...] = (1024, 512)

    def validate(self, key: str) -> None:
        require(len(self.channels) > 0 and len(self.channels) % 2 == 0
                and min(self.channels) > 0, f"{key}.channels",
                "must be an even number of positive channel counts")
        require(min(self.hidden, default=1) > 0, f"{key}.hidden", "must be positive widths")


def _cnn6(shape: tuple[int, ...], num_classes: int, opts: Cnn6Options) -> nn.Module:
    if len(shape) != 3:
        raise UserError(f"model cnn6: needs images (channels, height, width), got shape {shape}")
    layers: list[nn.Module] = []
    inputs, (height, width) = shape[0], shape[1:]
    for i, channels in enumerate(opts.channels):
        layers += [nn.Conv2d(inputs, channels, 3, padding=1), nn.ReLU()]
        inputs = channels
        if i % 2 == 1:
            layers.append(nn.MaxPool2d(2))
            height, width = height // 2, width // 2
    if height < 1 or width < 1:
        raise UserError(f"model cnn6: {len(opts.channels) // 2} max-pools shrink {shape} to "
                        "nothing; use fewer channels entries or larger images")
    layers.append(nn.Flatten())
    inputs = inputs * height * width
    for width_ in opts.hidden:
        layers += [nn.Linear(inputs, width_), nn.ReLU()]
        inputs = width_
    return nn.Sequential(*layers, nn.Linear(inputs, num_classes))


@dataclass(frozen=True)
class ModelSpec:
    description: str
    options: type[Any]  # the options dataclass `build` takes
    build: Callable[[tuple[int, ...], int, Any], nn.Module]  # (feature shape, outputs, options)


MODELS: Registry[ModelSpec] = Registry("model")
MODELS.add("mlr")(ModelSpec("multinomial logistic regression", MlrOptions, _mlr))
MODELS.add("dnn")(ModelSpec("MLP with one hidden ReLU layer", DnnOptions, _dnn))
MODELS.add("linreg")(ModelSpec("linear regression, no intercept", LinregOptions, _linreg))
MODELS.add("cnn")(ModelSpec("2 conv (ReLU, max-pool) + 2 fully connected layers", CnnOptions,
                            _cnn))
MODELS.add("cnn6")(ModelSpec("6 conv layers, max-pool every 2, then 2 fully connected "
                             "(FedSoft's CIFAR-10 CNN)", Cnn6Options, _cnn6))


def build_model(
    name: str, feature_shape: tuple[int, ...], num_classes: int,
    options: Mapping[str, Any] | None = None, key: str = "model",
) -> nn.Module:
    spec = MODELS.get(name, key)
    opts = build_options(spec.options, options, f"{key}_options")
    outputs = num_classes if num_classes > 0 else 1  # regression: one output
    return spec.build(tuple(feature_shape), outputs, opts)


InitScheme = Literal["pytorch", "xavier_normal"]


def init_params(
    model: nn.Module, generator: torch.Generator, scheme: InitScheme = "pytorch"
) -> Tensors:
    """Fresh parameters for `model` under `scheme` (see the module doc), from `generator`."""
    params: Tensors = {}
    for module_name, module in model.named_modules():
        if not isinstance(module, nn.Linear | nn.Conv1d | nn.Conv2d):
            continue
        fan_in = module.weight[0].numel()
        fan_out = module.weight.shape[0] * module.weight[0, 0].numel()
        bound = 1.0 / math.sqrt(fan_in)
        for pname, p in module.named_parameters(recurse=False):
            # drawn on the CPU from the run's CPU generator, then moved: the same numbers on
            # every device (a CUDA tensor cannot draw from a CPU generator)
            fresh = torch.empty(p.shape, dtype=p.dtype)
            if scheme == "pytorch":
                fresh.uniform_(-bound, bound, generator=generator)
            elif pname == "weight":
                fresh.normal_(0.0, math.sqrt(2.0 / (fan_in + fan_out)), generator=generator)
            else:
                fresh.zero_()
            params[f"{module_name}.{pname}"] = fresh.to(p.device)
    missing = set(dict(model.named_parameters())) - set(params)
    if missing:
        raise ValueError(f"init_params does not know how to initialise {sorted(missing)}")
    return params
