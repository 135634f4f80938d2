"""Models of the papers, built by name, initialised from an explicit `torch.Generator`.

- `mlr`: multinomial logistic regression (one linear layer on the flattened input).
- `dnn`: one hidden layer (P1: 128 units, ReLU) then a linear output layer;
- `linreg`: linear regression without intercept, y_hat = <w, x> (FedSoft's synthetic model).
Regression data (`num_classes == 0`) gets one output unit; the engines then use squared error.
Initialisation is PyTorch's default for Linear/Conv (U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for
weight and bias) but drawn from the run's own generator, so a seed fixes the model.
"""

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from clusterfl.options import build_options, require
from clusterfl.registry import Registry

Params = dict[str, torch.Tensor]


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


def _linreg(in_features: int, outputs: int, opts: LinregOptions) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(in_features, outputs, bias=False))


def _mlr(in_features: int, num_classes: int, opts: MlrOptions) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(in_features, num_classes))


def _dnn(in_features: int, num_classes: int, opts: DnnOptions) -> nn.Module:
    return nn.Sequential(
        nn.Flatten(), nn.Linear(in_features, opts.hidden), nn.ReLU(),
        nn.Linear(opts.hidden, num_classes),
    )


@dataclass(frozen=True)
class ModelSpec:
    description: str
    options: type
    build: Callable[[int, int, Any], nn.Module]


MODELS: Registry[ModelSpec] = Registry("model")
MODELS.add("mlr")(ModelSpec("multinomial logistic regression", MlrOptions, _mlr))
MODELS.add("dnn")(ModelSpec("MLP with one hidden ReLU layer", DnnOptions, _dnn))
MODELS.add("linreg")(ModelSpec("linear regression, no intercept", LinregOptions, _linreg))


def build_model(
    name: str, feature_shape: tuple[int, ...], num_classes: int,
    options: Mapping[str, Any] | None = None, key: str = "model",
) -> nn.Module:
    spec = MODELS.get(name, key)
    opts = build_options(spec.options, options, f"{key}_options")
    outputs = num_classes if num_classes > 0 else 1  # regression: one output
    return spec.build(math.prod(feature_shape), outputs, opts)


def init_params(model: nn.Module, generator: torch.Generator) -> Params:
    """Fresh parameters for `model` (PyTorch's default scheme, drawn from `generator`)."""
    params: Params = {}
    for module_name, module in model.named_modules():
        if not isinstance(module, nn.Linear | nn.Conv2d):
            continue
        bound = 1.0 / math.sqrt(module.weight[0].numel())
        for pname, p in module.named_parameters(recurse=False):
            fresh = torch.empty_like(p).uniform_(-bound, bound, generator=generator)
            params[f"{module_name}.{pname}"] = fresh
    missing = set(dict(model.named_parameters())) - set(params)
    if missing:
        raise ValueError(f"init_params does not know how to initialise {sorted(missing)}")
    return params
