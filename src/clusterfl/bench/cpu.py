"""Benchmarks of the local-training engine; each returns a JSON-ready dict.

- `bench_engine`: local training of C clients (Fashion-MNIST-shaped data; images of the
  papers' shapes for the CNN rows, `CNN_ROWS`), vectorized engine (its chosen kernel, and vmap
  for comparison) against the per-client reference loop, and a large square float32 GEMM
  measured in the same process as the machine's yardstick.
- `bench_round`: whole rounds (local work, server step, evaluation of every client) of a
  setting any peer framework can reproduce; see `round_setting`.

Engine timings keep the best of a few repeats after a warm-up (as `timeit` does), the engines
taking turns: on a shared machine other processes only ever add time, and the same rule
applies to every engine, so the ratios taken in one run are what compare. Round timings are
medians over rounds.
"""

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from clusterfl.engine import (
    Adam,
    BatchPlan,
    ClientData,
    LocalEngine,
    ReferenceEngine,
    Sgd,
    VectorizedEngine,
    make_plan,
)
from clusterfl.training.models import build_model, init_params

FEATURES, CLASSES = 784, 10
# `bench engine`'s CNN rows, each our `cnn` as its source trains it: (input shape, classes,
# model options, batch size). P1's CIFAR-10 CNN (p1_cifar10_cnn, batch 20), P2's EMNIST
# letters CNN (p2_letters_*, batch 5) and PFLlib's FedAvgCNN (its models.py: conv5x5(32),
# pool, conv5x5(64), pool, fc 512, fc; no padding, dim 1600 on CIFAR-10; its leaderboard's
# batch 10).
P2_CNN = {"channels": [32, 64], "kernel_size": 5, "padding": 2, "hidden": 512}
CNN_ROWS: dict[str, tuple[tuple[int, ...], int, dict[str, Any], int]] = {
    "p1_cnn": ((3, 32, 32), 10, P2_CNN, 20),
    "p2_cnn": ((1, 28, 28), 26, P2_CNN, 5),
    "pfllib_cnn": ((3, 32, 32), 10, {**P2_CNN, "padding": 0}, 10),
}


def best_seconds(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def gemm_gflops(n: int = 2048, repeats: int = 5) -> float:
    """FLOP rate of one large square float32 matmul: the yardstick for `gemm_fraction`."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    return 2 * n**3 / best_seconds(lambda: a @ b, repeats) / 1e9


def training_flops_per_sample(model: nn.Module, shape: tuple[int, ...] = (FEATURES,)) -> int:
    """FLOPs of one sample's forward and backward through the model's Linear and Conv2d
    layers, for inputs of `shape`.

    Per layer, with m its multiply-adds per sample (in*out for a Linear, Ho*Wo*Cout*Cin*k*k
    for a convolution): 2m forward, 2m for the weight gradient, and 2m for the input gradient
    except at the first layer (no gradient is needed for the data). Biases, softmax, ReLU
    and pooling are left out: a few percent at most here.
    """
    macs: list[int] = []

    def count(module: nn.Module, inputs: Any, out: torch.Tensor) -> None:
        assert isinstance(module, nn.Linear | nn.Conv2d)
        macs.append(out[0].numel() * module.weight[0].numel())

    hooks = [m.register_forward_hook(count) for m in model.modules()
             if isinstance(m, nn.Linear | nn.Conv2d)]
    try:
        with torch.no_grad():
            model(torch.zeros(1, *shape, device=next(model.parameters()).device))
    finally:
        for hook in hooks:
            hook.remove()
    return 4 * sum(macs) + 2 * sum(macs[1:])


def synthetic_clients(
    clients: int, per_client: int, rng: np.random.Generator, device: str = "cpu",
    shape: tuple[int, ...] = (FEATURES,), classes: int = CLASSES,
) -> ClientData:
    """Random clients: features in [0, 1) of `shape` (Fashion-MNIST's by default), labels
    of `classes` classes."""
    parts = [
        (rng.random((per_client, *shape), dtype=np.float32),
         rng.integers(0, classes, per_client))
        for _ in range(clients)
    ]
    return ClientData.from_lists(parts, parts, device)


def model_row(model_name: str, hidden: int = 128
              ) -> tuple[nn.Module, tuple[int, ...], int | None]:
    """A benchmark model by name (`mlr`, `dnn` or a `CNN_ROWS` key), its input shape, and
    its own batch size (None: the benchmark's)."""
    if model_name in CNN_ROWS:
        shape, classes, options, batch = CNN_ROWS[model_name]
        return build_model("cnn", shape, classes, options), shape, batch
    hidden_units = {"hidden": hidden} if model_name == "dnn" else None
    return build_model(model_name, (FEATURES,), CLASSES, hidden_units), (FEATURES,), None


def engine_problem(
    model_name: str, clients: int, batch: int, local_steps: int, hidden: int, seed: int,
    device: str = "cpu",
) -> tuple[ClientData, nn.Module, dict[str, torch.Tensor], torch.Tensor, BatchPlan]:
    """The engine benchmarks' round: random clients, the model (on `device`), every client's
    starting copy of it, the clients' ids and a plan of `local_steps` batches of `batch`."""
    rng = np.random.default_rng(seed)
    model, shape, _ = model_row(model_name, hidden)
    classes = CNN_ROWS[model_name][1] if model_name in CNN_ROWS else CLASSES
    data = synthetic_clients(clients, batch * local_steps, rng, device, shape, classes)
    model = model.to(device)
    g = torch.Generator().manual_seed(seed)
    start = {k: v.unsqueeze(0).repeat(clients, *[1] * v.dim()).to(device)
             for k, v in init_params(model, g).items()}
    plan = make_plan(data.train_n.cpu().numpy(), batch, rng, local_steps=local_steps)
    return data, model, start, torch.arange(clients, device=device), plan


def bench_engine(
    model_name: str, clients: int = 40, batch: int | None = None, local_steps: int = 10,
    repeats: int = 5, reference_repeats: int = 3, hidden: int = 128, seed: int = 0,
    device: str = "cpu",
) -> dict[str, Any]:
    """Client-steps per second of each engine on one round's local training. `batch` None:
    20 for mlr and dnn, a CNN row's own (`CNN_ROWS`)."""
    batch = batch or model_row(model_name, hidden)[2] or 20
    data, model, start, who, plan = engine_problem(model_name, clients, batch, local_steps,
                                                   hidden, seed, device)
    rule = Sgd(lr=0.05)
    fast = VectorizedEngine(model, data)
    engines: dict[str, LocalEngine] = {
        "engine": fast, "vmap": VectorizedEngine(model, data, "vmap"),
        "reference": ReferenceEngine(model, data)}
    # Interleaved (each engine once per repeat, best kept): on a shared machine the load
    # drifts over minutes, and back-to-back repeats of one engine would all catch one phase.
    best = dict.fromkeys(engines, float("inf"))
    for engine in engines.values():
        engine.train(start, who, rule, plan)  # warm-up
    for i in range(max(repeats, reference_repeats)):
        for name, engine in engines.items():
            if i < (reference_repeats if name == "reference" else repeats):
                begin = time.perf_counter()
                engine.train(start, who, rule, plan)
                best[name] = min(best[name], time.perf_counter() - begin)
    engine_rate, vmap_rate, reference_rate = (clients * local_steps / best[name]
                                              for name in engines)
    gemm = gemm_gflops()
    flops = training_flops_per_sample(model, tuple(data.train_x.shape[2:])) * batch
    engine_gflops = engine_rate * flops / 1e9
    return {
        "model": model_name, "clients": clients, "batch": batch, "local_steps": local_steps,
        "threads": torch.get_num_threads(), "kernel": type(fast.kernel).__name__,
        "engine_client_steps_per_s": round(engine_rate, 1),
        "reference_client_steps_per_s": round(reference_rate, 1),
        "vmap_client_steps_per_s": round(vmap_rate, 1),
        "speedup": round(engine_rate / reference_rate, 2),
        "vmap_speedup": round(vmap_rate / reference_rate, 2),
        "flops_per_client_step": flops,
        "engine_gflops": round(engine_gflops, 2), "gemm_gflops": round(gemm, 2),
        "gemm_fraction": round(engine_gflops / gemm, 4),
    }


def bench_adam(model_name: str, clients: int = 20, repeats: int = 20, seed: int = 0,
               device: str = "cpu") -> dict[str, Any]:
    """Milliseconds per Adam update of `clients` stacked models: the fused kernel (every
    client at the same step, the engines' usual case) against the per-client formula."""
    options = {"hidden": 128} if model_name == "dnn" else None
    model = build_model(model_name, (FEATURES,), CLASSES, options)
    g = torch.Generator().manual_seed(seed)
    params = {k: v.unsqueeze(0).repeat(clients, *[1] * v.dim()).to(device)
              for k, v in init_params(model, g).items()}
    grads = {k: torch.randn(v.shape, generator=g).to(device) for k, v in params.items()}
    rule = Adam(lr=1e-3)
    state = rule.init_state(params)
    t = state["t"].add_(1)
    fused = best_seconds(lambda: rule._fused_step_(params, state, grads, t[0]), repeats)
    formula = best_seconds(lambda: rule._formula_step_(params, state, grads, t), repeats)
    return {"model": model_name, "clients": clients, "threads": torch.get_num_threads(),
            "floats": sum(v.numel() for v in params.values()),
            "fused_ms": round(fused * 1e3, 3), "formula_ms": round(formula * 1e3, 3),
            "speedup": round(formula / fused, 2)}


# -- whole rounds -------------------------------------------------------------------------
FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
IDX_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


def fashion_mnist(rng: np.random.Generator, root: Path = FASHION_MNIST_DIR) -> tuple[
        np.ndarray, np.ndarray, str]:
    """All 70,000 Fashion-MNIST images (train + test, pixels in [0, 1]) and labels, with a note
    on the source; synthetic data of the same sizes when the Debian mirror is absent (the
    benchmark must run offline, so it never downloads)."""
    from clusterfl.data.formats import read_idx_gz

    if all((root / name).exists() for name in IDX_FILES):
        xtr, ytr, xte, yte = (read_idx_gz(root / name) for name in IDX_FILES)
        x = np.concatenate([xtr, xte]).reshape(-1, FEATURES).astype(np.float32) / 255
        return x, np.concatenate([ytr, yte]).astype(np.int64), f"fashion-mnist {root}"
    y = np.repeat(np.arange(CLASSES), 7000)
    templates = rng.random((CLASSES, FEATURES), dtype=np.float32)
    noise = rng.random((len(y), FEATURES), dtype=np.float32)
    x = (0.5 * templates[y] + 0.5 * noise).astype(np.float32)
    return x, y, f"synthetic Fashion-MNIST-shaped data ({root} is absent)"


ClientArrays = list[tuple[np.ndarray, np.ndarray]]  # per client: (x, y)


def round_clients(clients: int, rng: np.random.Generator) -> tuple[
        ClientArrays, ClientArrays, str]:
    """Fashion-MNIST over `clients` clients, 2 classes each (pathological), 75/25 split:
    every client's (x, y) for training and for test, and the data's source.

    Every class is dealt to the same number of clients and every sample is used, as in
    pFedMe's MNIST setting. A peer framework is handed these very arrays
    (`papers/benchmark/tools/peer_round.py`).
    """
    from clusterfl.data import Dataset
    from clusterfl.partition.schemes import PathologicalOptions, pathological

    x, y, source = fashion_mnist(rng)
    size = len(y) // clients
    opts = PathologicalOptions(num_clients=clients, classes_per_client=2,
                               size_range=(size, size), test_fraction=0.25)
    part = pathological(Dataset("fashion_mnist", x, y, CLASSES), opts, rng)
    return ([(x[i], y[i]) for i in part.train], [(x[i], y[i]) for i in part.test], source)


RoundData = tuple[ClientArrays, ClientArrays, str]  # `round_clients`' train, test, source


def round_setting(
    clients: int, rng: np.random.Generator, device: str = "cpu", given: RoundData | None = None
) -> tuple[ClientData, str]:
    """`round_clients`' data (or the `given` arrays) as the engines' `ClientData`."""
    train, test, source = given if given is not None else round_clients(clients, rng)
    return ClientData.from_lists(train, test, device), source


def algorithm_round(name: str, engine: Any, model: nn.Module, lr: float, batch: int,
                    seed: int) -> Callable[[int], None] | None:
    """A whole round of the registered algorithm `name` (its own `round`, then its default
    evaluators, as `FederatedAlgorithm.run` calls them), or None if no such algorithm."""
    from clusterfl.algorithms import ALGORITHMS, NeuralContext, Schedule
    from clusterfl.evaluators import build_evaluators

    if name not in ALGORITHMS:
        return None
    cls = ALGORITHMS.get(name)
    schedule = Schedule(lr=lr, epochs=1, batch_size=batch)
    ctx = NeuralContext.build(model, engine, schedule, seed)
    algorithm = cls(cls.Hyper(), ctx)
    evaluators = build_evaluators(algorithm.default_evaluators(), ctx)
    algorithm.setup()

    def one_round(round_: int) -> None:
        algorithm.round(round_, algorithm.select_clients(round_))
        view = algorithm.view()
        for evaluator in evaluators:
            evaluator.evaluate(view)

    return one_round


def time_rounds(run_round: Callable[[int], None], rounds: int, warmup: int = 1) -> float:
    """Median seconds per round over `rounds` rounds after `warmup` rounds."""
    for r in range(warmup):
        run_round(r)
    times = []
    for r in range(warmup, warmup + rounds):
        start = time.perf_counter()
        run_round(r)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_round(
    algorithm: str, clients: int = 20, rounds: int = 5, batch: int = 10, lr: float = 0.005,
    hidden: int = 100, engine_name: str = "vectorized", seed: int = 0, device: str = "cpu",
    given: RoundData | None = None,
) -> dict[str, Any]:
    """Seconds per round of `algorithm` at the setting above; `given`: `round_clients`' arrays
    drawn once by the caller (a peer framework times the same arrays), else drawn here."""
    rng = np.random.default_rng(seed)
    data, source = round_setting(clients, rng, device, given)
    model = build_model("dnn", (FEATURES,), CLASSES, {"hidden": hidden}).to(device)
    engine = VectorizedEngine(model, data) if engine_name == "vectorized" else ReferenceEngine(
        model, data)
    run_round = algorithm_round(algorithm, engine, model, lr, batch, seed)
    implementation = f"clusterfl.algorithms '{algorithm}'"
    if run_round is None:
        raise ValueError(f"no round to time for algorithm {algorithm!r}")
    seconds = time_rounds(run_round, rounds)
    settings = {"clients": clients, "classes_per_client": 2, "split": "75/25",
                "model": f"dnn 784-{hidden}-10", "hidden": hidden, "batch": batch,
                "local_epochs": 1, "lr": lr,
                "evaluation": "all clients, train and test, every round", "rounds_timed": rounds,
                "warmup_rounds": 1, "engine": engine_name, "threads": torch.get_num_threads()}
    if algorithm == "pfedme":
        from clusterfl.algorithms.pfedme import PFedMeHyper

        h = PFedMeHyper()
        settings |= {"K": h.inner_steps, "lambda": h.lam, "beta": h.beta,
                     "personal_lr": h.personal_lr}
    return {"algorithm": algorithm, "seconds_per_round": round(seconds, 3), "data": source,
            "synthetic": source.startswith("synthetic"), "implementation": implementation,
            **settings}
