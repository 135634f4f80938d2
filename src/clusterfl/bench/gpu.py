"""`clusterfl bench gpu`: the engine on a GPU beside a plain batched program of the same shapes.

One command for a lent GPU (minutes). It prints JSON lines, every cuda row before the CPU's
(CPU rows just before measured GPU rows up to 2.7x slow):
- `gemm`: the device's fp32 and TF32 matmul rate (the yardstick);
- `engine`: the vectorized engine's client-steps/s at each client count (DNN 784-128-10,
  batch 20, 10 local steps of SGD), beside `plain`: the same steps written as the plainest
  batched program (forward, backward and update of every client with `baddbmm`, in place,
  the batches already laid out on the device), eager and recorded as one CUDA graph; the
  engine's `fraction_of_plain` is its rate over the plain graph's;
- `cnn`: the same for the CNN rows of `bench engine` (P1's CIFAR-10 CNN, P2's letters CNN,
  PFLlib's FedAvgCNN; each at its own batch) up to 400 clients, beside the plainest batched
  step of that CNN: every client's convolutions as one grouped convolution, autograd for the
  gradients, eager and as one CUDA graph;
- `precision`: the engine at 400 clients in TF32 and bf16;
- the same `engine` rows on this machine's CPU;
- `round`: `bench round` FedAvg and pFedMe, on cuda and cpu;
- `cell`: seconds per round of the paper suite's `p1_fmnist_dnn_val / pfedkm_k4`, on cuda and
  cpu (Fashion-MNIST from the Debian mirror, or random data of its shape).
Without a CUDA device every cuda row is one line `{"device": "cuda", "skipped": "no CUDA
device"}`. Nothing here imports mlflow, dvc or mlxtend (the lent machine has none of them).
"""

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from clusterfl.bench.cpu import (
    CLASSES,
    CNN_ROWS,
    FASHION_MNIST_DIR,
    bench_round,
    best_seconds,
    engine_problem,
    fashion_mnist,
    time_rounds,
    training_flops_per_sample,
)
from clusterfl.engine import Sgd, VectorizedEngine
from clusterfl.engine.vectorized import Precision

NO_CUDA = "no CUDA device"
P1_CELL = ("p1_fmnist_dnn_val", "pfedkm_k4")
CNN_MAX_CLIENTS = 400  # P1's CNN at 2,000 clients: ~12 GB of activations a step


def device_seconds(fn: Callable[[], Any], repeats: int, device: str, warmup: int = 2) -> float:
    """`best_seconds` of `fn`, the device drained after every call (CUDA runs async)."""
    if device != "cuda":
        return best_seconds(fn, repeats, warmup)

    def drained() -> None:
        fn()
        torch.cuda.synchronize()

    return best_seconds(drained, repeats, warmup)


def gemm_tflops(device: str, tf32: bool = False, n: int = 4096) -> float:
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(n, n, generator=g).to(device) for _ in range(2))
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        return 2 * n**3 / device_seconds(lambda: a @ b, 10, device) / 1e12
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def plain_sgd_steps(p: dict[str, torch.Tensor], xs: torch.Tensor, ys: torch.Tensor,
                    lr: float) -> None:
    """The plainest batched SGD for a 2-layer ReLU net: every client, every step, in place.
    xs [S, C, B, F], ys [S, C, B] long; p: stacked w1 [C, H, F], b1, w2 [C, K, H], b2 in
    that order (the model's parameter order)."""
    w1, b1, w2, b2 = p.values()
    for x, y in zip(xs, ys, strict=True):
        h = torch.baddbmm(b1.unsqueeze(1), x, w1.transpose(1, 2)).relu_()
        z = torch.baddbmm(b2.unsqueeze(1), h, w2.transpose(1, 2))
        dz = z.softmax(-1)
        dz.scatter_add_(2, y.unsqueeze(2), torch.full_like(dz[..., :1], -1.0)).div_(x.shape[1])
        dh = torch.bmm(dz, w2).mul_(h > 0)
        w2.baddbmm_(dz.transpose(1, 2), h, alpha=-lr)
        b2.sub_(dz.sum(1), alpha=lr)
        w1.baddbmm_(dh.transpose(1, 2), x, alpha=-lr)
        b1.sub_(dh.sum(1), alpha=lr)


def plain_cnn_steps(p: dict[str, torch.Tensor], xs: torch.Tensor, ys: torch.Tensor,
                    lr: float, padding: int) -> None:
    """The plainest batched SGD for our 2-conv `cnn` (conv-ReLU-pool twice, fc-ReLU-fc):
    every client's convolutions as one grouped convolution (clients on the channel axis,
    groups = clients), autograd for the gradients, in place. xs [S, C, B, ...], ys [S, C, B]
    long; p: the stacked parameters in the model's order, leaves that require grad."""
    c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b = p.values()
    clients = xs.shape[1]
    for x, y in zip(xs, ys, strict=True):
        batch = x.shape[1]
        h = x.transpose(0, 1).reshape(batch, -1, *x.shape[3:])
        for w, b in ((c1w, c1b), (c2w, c2b)):
            h = F.max_pool2d(F.conv2d(h, w.flatten(0, 1), b.flatten(), padding=padding,
                                      groups=clients).relu(), 2)
        h = h.reshape(batch, clients, -1).transpose(0, 1)
        h = torch.baddbmm(f1b.unsqueeze(1), h, f1w.transpose(1, 2)).relu()
        z = torch.baddbmm(f2b.unsqueeze(1), h, f2w.transpose(1, 2))
        loss = F.cross_entropy(z.flatten(0, 1), y.flatten(), reduction="sum") / batch
        grads = torch.autograd.grad(loss, list(p.values()))
        with torch.no_grad():
            torch._foreach_add_(list(p.values()), list(grads), alpha=-lr)


def plain_rates(params: dict[str, torch.Tensor], xs: torch.Tensor, ys: torch.Tensor,
                device: str, repeats: int, padding: int | None = None) -> dict[str, float]:
    """Client-steps/s of the plain program, eager and (CUDA) replayed from one graph:
    `plain_sgd_steps` (the DNN), or with a `padding` `plain_cnn_steps` (a CNN row)."""
    def steps_fn(p: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                 lr: float) -> None:
        if padding is None:
            plain_sgd_steps(p, x, y, lr)
        else:
            plain_cnn_steps(p, x, y, lr, padding)

    work = {k: v.clone().requires_grad_(padding is not None) for k, v in params.items()}
    steps = xs.shape[0] * xs.shape[1]
    rates = {"plain": steps / device_seconds(lambda: steps_fn(work, xs, ys, 0.05),
                                             repeats, device)}
    if device == "cuda":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            steps_fn(work, xs, ys, 0.05)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            steps_fn(work, xs, ys, 0.05)
        rates["plain_graph"] = steps / device_seconds(graph.replay, repeats, device)
    return rates


def engine_row(clients: int, device: str, precision: Precision = "fp32", batch: int = 20,
               local_steps: int = 10, hidden: int = 128, repeats: int = 5,
               with_plain: bool = True, seed: int = 0, model_name: str = "dnn"
               ) -> dict[str, Any]:
    """The engine's client-steps/s on `model_name` ("dnn", or a `CNN_ROWS` key: then
    `batch` is that row's), beside the plain batched program's."""
    cnn = CNN_ROWS.get(model_name)
    batch = cnn[3] if cnn else batch
    data, model, start, who, plan = engine_problem(model_name, clients, batch, local_steps,
                                                   hidden, seed, device)
    engine = VectorizedEngine(model, data, precision=precision)
    rule = Sgd(lr=0.05)
    seconds = device_seconds(lambda: engine.train(start, who, rule, plan), repeats, device)
    rate = clients * local_steps / seconds
    shape = tuple(data.train_x.shape[2:])
    flops = training_flops_per_sample(model, shape) * batch
    row: dict[str, Any] = {
        "bench": "cnn" if cnn else "engine", "device": device, "clients": clients,
        "precision": precision, "model": model_name if cnn else f"dnn 784-{hidden}-10",
        "batch": batch, "local_steps": local_steps, "kernel": type(engine.kernel).__name__,
        "layout": "whole" if engine.whole else "chunked", "captured": engine.capture,
        "threads": torch.get_num_threads(), "flops_per_client_step": flops,
        "engine_client_steps_per_s": round(rate, 1),
        "engine_tflops": round(rate * flops / 1e12, 4)}
    if with_plain:
        rows = torch.arange(clients).view(1, -1, 1) * data.train_x.shape[1]
        flat = (plan.index + rows).flatten().to(device)  # the plan's batches, laid out once
        xs = data.train_x.flatten(0, 1).index_select(0, flat).view(*plan.index.shape, *shape)
        ys = data.train_y.flatten().index_select(0, flat).view(plan.index.shape)
        padding = int(cnn[2]["padding"]) if cnn else None
        for name, value in plain_rates(start, xs, ys, device, repeats, padding).items():
            row[f"{name}_client_steps_per_s"] = round(value, 1)
            row[f"fraction_of_{name}"] = round(rate / value, 3)
    return row


# Datasets a cell may need that cannot be downloaded here: random stand-ins of their real
# shape (input, classes, domains as `emnist_letters_case` marks them), 60,000 samples.
STAND_INS: dict[str, tuple[tuple[int, ...], int, int]] = {
    "cifar10": ((3, 32, 32), 10, 0),
    "emnist_letters_case": ((1, 28, 28), 26, 2),
}


def cell_dataset(source: str, data_root: Path, seed: int) -> tuple[Any, str]:
    """The data of a cell whose dataset comes from `source`: Fashion-MNIST from `data_root`
    (or random data of its shape), a random stand-in of a `STAND_INS` shape; (Dataset,
    what it is)."""
    from clusterfl.core.types import Dataset

    rng = np.random.default_rng(seed)
    if source == "fashion_mnist":
        x, y, note = fashion_mnist(rng, data_root)
        return Dataset("fashion_mnist", x, y, CLASSES), note
    if source not in STAND_INS:
        raise ValueError(f"no stand-in for dataset source {source!r}; one of "
                         f"fashion_mnist, {', '.join(STAND_INS)}")
    shape, classes, domains = STAND_INS[source]
    n = 60_000
    domain = rng.integers(0, domains, n) if domains else None
    names = tuple(f"domain{d}" for d in range(domains)) if domains else ()
    dataset = Dataset(source, rng.random((n, *shape), dtype=np.float32),
                      rng.integers(0, classes, n), classes, domain=domain, domain_names=names)
    return dataset, f"synthetic {source}-shaped data ({n} samples {shape}, {classes} classes)"


def build_cell(device: str, precision: Precision = "fp32", rounds: int | None = None,
               data_root: Path = FASHION_MNIST_DIR, cell: tuple[str, str] = P1_CELL,
               suite: Path = Path("suites/paper/params.yaml"), seed: int = 0
               ) -> tuple[Any, list[Any], str]:
    """A suite cell's seed as `clusterfl train` builds it (its experiment, partition,
    model, schedule and algorithm from the suite's params), in `precision` (its
    `training.precision`) and (optionally) fewer rounds, on `cell_dataset`'s data:
    (algorithm, evaluators, data source)."""
    import dataclasses

    from clusterfl.core.types import SeedInputs
    from clusterfl.evaluators import build_evaluators
    from clusterfl.partition import build_partition
    from clusterfl.run.config import load_params

    if not suite.exists():
        raise FileNotFoundError(f"{suite}: not found; run `clusterfl bench gpu` from the "
                                "repository root")
    params = load_params(suite)
    experiment, algorithm = params.experiment(cell[0]), params.algorithm(cell[1], cell[0])
    schedule = dataclasses.replace(experiment.schedule, precision=precision)
    if rounds is not None:
        schedule = dataclasses.replace(schedule, rounds=rounds)
    experiment = dataclasses.replace(experiment, schedule=schedule)
    entry = dict(params.partition(experiment.partition))
    dataset, source = cell_dataset(params.dataset(str(entry.pop("dataset")))[0], data_root, seed)
    scheme = entry.pop("scheme")
    partition = build_partition(dataset, scheme, entry, seed, f"partitions.{experiment.partition}")
    ctx = algorithm.cls.make_context(SeedInputs(experiment, dataset, partition, seed,
                                                "vectorized", device))
    instance = algorithm.cls(algorithm.hyper, ctx)
    names = list(experiment.evaluators or instance.default_evaluators())
    return instance, build_evaluators(names, ctx), source


def cell_round_seconds(device: str, rounds: int = 2, data_root: Path = FASHION_MNIST_DIR,
                       cell: tuple[str, str] = P1_CELL,
                       suite: Path = Path("suites/paper/params.yaml")) -> dict[str, Any]:
    """Median seconds per whole round (train, server step, evaluation) of a suite's cell
    (the P1 DNN cell by default), and of its parts: the round itself (local training and
    the server's step, k-means included), k-means alone (its `kmeans_seconds`), and the
    evaluation of every client."""
    instance, evaluators, source = build_cell(device, data_root=data_root, cell=cell,
                                              suite=suite)
    instance.setup()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    parts: dict[str, list[float]] = {"round": [], "evaluation": [], "kmeans": []}

    def one_round(round_: int) -> None:
        start = time.perf_counter()
        instance.round(round_ + 1, instance.select_clients(round_ + 1))
        sync()
        middle = time.perf_counter()
        view = instance.view()
        for evaluator in evaluators:
            evaluator.evaluate(view)
        sync()
        parts["round"].append(middle - start)
        parts["evaluation"].append(time.perf_counter() - middle)
        parts["kmeans"].append(instance.round_metrics().get("kmeans_seconds", 0.0))

    seconds = time_rounds(one_round, rounds)
    timed = {f"{name}_seconds": round(float(np.median(values[1:])), 3)
             for name, values in parts.items()}  # [1:]: without the warm-up round
    return {"bench": "cell", "device": device, "cell": "/".join(cell),
            "kernel": type(getattr(getattr(instance.ctx, "engine", None), "kernel", None)).__name__,
            "seconds_per_round": round(seconds, 3), **timed, "rounds_timed": rounds,
            "data": source, "threads": torch.get_num_threads()}


def precision_effect(device: str, rounds: int, data_root: Path = FASHION_MNIST_DIR
                     ) -> Iterator[dict[str, Any]]:
    """The P1 cell's seed 0 for `rounds` rounds in each precision: its primary metric at the
    last and the best round, and the largest gap to fp32 over the rounds."""
    curves: dict[str, list[float]] = {}
    precision: Precision
    for precision in ("fp32", "tf32", "bf16"):
        instance, evaluators, source = build_cell(device, precision, rounds, data_root)
        start = time.perf_counter()
        history = instance.run(evaluators)
        seconds = time.perf_counter() - start
        metric = history.primary
        curve = [float(r[metric]) for r in history.records if metric in r]
        curves[precision] = curve
        gap = max((abs(a - b) for a, b in zip(curve, curves["fp32"], strict=True)), default=0.0)
        yield {"bench": "precision_effect", "device": device, "cell": "/".join(P1_CELL),
               "seed": 0, "rounds": rounds, "precision": precision, "metric": metric,
               "last": round(curve[-1], 4), "best": round(max(curve), 4),
               "max_abs_gap_to_fp32": round(gap, 4), "seconds": round(seconds, 1),
               "data": source}


def gpu_rows(clients: list[int], cuda: bool, repeats: int = 5, cell_rounds: int = 2,
             effect_rounds: int = 0, data_root: Path = FASHION_MNIST_DIR
             ) -> Iterator[dict[str, Any]]:
    """Every row of `bench gpu`: every cuda row first (or one skip line per cuda row), then
    the CPU's. A GPU row timed right after CPU rows measured up to 2.7x slower (the CPU
    rows' worker threads still spinning took the host the launches need), so none is."""
    def skipped(what: str) -> dict[str, Any]:
        return {"bench": what, "device": "cuda", "skipped": NO_CUDA}

    if cuda:
        yield {"bench": "gemm", "device": "cuda", "fp32_tflops": round(gemm_tflops("cuda"), 1),
               "tf32_tflops": round(gemm_tflops("cuda", tf32=True), 1),
               "name": torch.cuda.get_device_name()}
        for n in clients:
            yield engine_row(n, "cuda", repeats=repeats)
        for name in CNN_ROWS:
            for n in (n for n in clients if n <= CNN_MAX_CLIENTS):
                yield engine_row(n, "cuda", repeats=repeats, model_name=name)
        precision: Precision
        for precision in ("tf32", "bf16"):
            yield engine_row(400, "cuda", precision, repeats=repeats, with_plain=False)
        for algorithm in ("fedavg", "pfedme"):
            yield {"bench": "round", "device": "cuda",
                   **bench_round(algorithm, rounds=3, device="cuda")}
        yield cell_round_seconds("cuda", cell_rounds, data_root)
        if effect_rounds:
            yield from precision_effect("cuda", effect_rounds, data_root)
    else:
        yield from (skipped(what) for what in ("gemm", "engine", "cnn", "precision", "round",
                                               "cell"))
        if effect_rounds:
            yield skipped("precision_effect")
    for n in clients:
        yield engine_row(n, "cpu", repeats=max(1, repeats // 2))
    for algorithm in ("fedavg", "pfedme"):
        yield {"bench": "round", "device": "cpu", **bench_round(algorithm, rounds=3, device="cpu")}
    yield cell_round_seconds("cpu", cell_rounds, data_root)
