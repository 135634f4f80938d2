"""`clusterfl bench ...`: the engine's benchmarks, one JSON object per line on stdout.

Thin: parse options, set threads, call `clusterfl.bench.cpu`, print. See docs/engine.md.
"""

import json
from pathlib import Path
from typing import Annotated, Any

import typer

bench_app = typer.Typer(
    help="Benchmark the local-training engine (prints one JSON object per line).",
    no_args_is_help=True,
)

ThreadsOpt = Annotated[int | None, typer.Option(
    "--threads", help="torch/OMP/MKL threads for this process (default: one per core).")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the data, models and batch plans.")]
DeviceOpt = Annotated[str, typer.Option(
    help="torch device of data and models: cpu, cuda, or auto (cuda where one is available).")]


def _device(name: str) -> str:
    """cpu or cuda; `--device cuda` without one exits 2 with one line."""
    from clusterfl.core.errors import UserError
    from clusterfl.run.devices import resolve_device

    try:
        return resolve_device(name)
    except UserError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None


def _int_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


ModelsOpt = Annotated[str, typer.Option(help="Comma-separated models: mlr, dnn.")]
EngineModelsOpt = Annotated[str, typer.Option(
    help="Comma-separated models: mlr, dnn, and the CNN rows p1_cnn (P1's CIFAR-10 CNN), "
         "p2_cnn (P2's letters CNN), pfllib_cnn (PFLlib's FedAvgCNN on CIFAR-10).")]


def _print_grid(threads: int | None, clients: str, models: str, bench: Any) -> None:
    """Set threads, then print `bench(model, n)` as one JSON line per (clients, model)."""
    from clusterfl.engine import configure_threads

    configure_threads(threads)
    for n in _int_list(clients):
        for model in (m.strip() for m in models.split(",") if m.strip()):
            print(json.dumps(bench(model, n)), flush=True)


@bench_app.command("engine")
def engine(
    clients: Annotated[str, typer.Option(
        help="Comma-separated numbers of clients, e.g. 10,40,100.")] = "40",
    models: EngineModelsOpt = "mlr,dnn,p1_cnn,p2_cnn,pfllib_cnn",
    batch: Annotated[int | None, typer.Option(
        help="Batch size of every local step (default: 20 for mlr and dnn, each CNN's own: "
             "20, 5, 10).")] = None,
    local_steps: Annotated[int, typer.Option(help="Local steps per client.")] = 10,
    repeats: Annotated[int, typer.Option(help="Timed repeats per engine (best is kept).")] = 5,
    device: DeviceOpt = "cpu",
    threads: ThreadsOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """Client-steps/s of the vectorized engine vs vmap and the per-client loop, FLOPs per
    client-step and GEMM fraction (the CNN rows take minutes: the loop is slow)."""
    from clusterfl.bench.cpu import bench_engine

    _print_grid(threads, clients, models, lambda model, n: bench_engine(
        model, clients=n, batch=batch, local_steps=local_steps, repeats=repeats, seed=seed,
        device=_device(device)))


@bench_app.command("adam")
def adam(
    clients: Annotated[str, typer.Option(
        help="Comma-separated numbers of clients, e.g. 20,84.")] = "20,84",
    models: ModelsOpt = "mlr,dnn",
    repeats: Annotated[int, typer.Option(help="Timed repeats per path (best is kept).")] = 20,
    device: DeviceOpt = "cpu",
    threads: ThreadsOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """Milliseconds per Adam update of stacked client models: fused kernel vs formula."""
    from clusterfl.bench.cpu import bench_adam

    _print_grid(threads, clients, models, lambda model, n: bench_adam(
        model, clients=n, repeats=repeats, seed=seed, device=_device(device)))


@bench_app.command("round")
def round_(
    algorithms: Annotated[str, typer.Option(
        help="Comma-separated algorithms: fedavg, pfedme.")] = "fedavg,pfedme",
    clients: Annotated[int, typer.Option(help="Number of clients.")] = 20,
    rounds: Annotated[int, typer.Option(help="Timed rounds (after one warm-up round).")] = 5,
    engine: Annotated[str, typer.Option(help="vectorized or reference.")] = "vectorized",
    device: DeviceOpt = "cpu",
    threads: ThreadsOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """Median seconds per whole round (train, aggregate, evaluate all clients)."""
    from clusterfl.bench.cpu import bench_round
    from clusterfl.engine import configure_threads

    configure_threads(threads)
    device = _device(device)
    for algorithm in (a.strip() for a in algorithms.split(",") if a.strip()):
        result = bench_round(algorithm, clients=clients, rounds=rounds, engine_name=engine,
                             seed=seed, device=device)
        print(json.dumps(result), flush=True)


@bench_app.command("gpu")
def gpu(
    clients: Annotated[str, typer.Option(
        help="Comma-separated numbers of clients for the engine rows.")] = "40,400,2000",
    repeats: Annotated[int, typer.Option(help="Timed repeats per engine row (best is kept).")
                       ] = 5,
    cell_rounds: Annotated[int, typer.Option(
        help="Timed rounds of the P1 cell (after one warm-up round).")] = 2,
    effect_rounds: Annotated[int, typer.Option(
        help="Rounds of the P1 cell's seed 0 trained in fp32, tf32 and bf16 on cuda, to "
             "compare their accuracy (0: skip).")] = 0,
    fashion_mnist: Annotated[Path, typer.Option(
        help="Folder of the Fashion-MNIST idx .gz files (random data of its shape if absent).")
                             ] = Path("/usr/share/datasets/fashion-mnist"),
    threads: ThreadsOpt = None,
) -> None:
    """The engine on a lent GPU beside a plain batched program, this machine's CPU, bench
    round on cuda and cpu, and seconds per round of p1_fmnist_dnn_val / pfedkm_k4
    (minutes). Without CUDA the cuda rows say "no CUDA device". See docs/engine.md."""
    from clusterfl.bench.gpu import gpu_rows
    from clusterfl.engine import configure_threads
    from clusterfl.run.devices import cuda_available

    configure_threads(threads)
    sizes = _int_list(clients)
    if not sizes or min(sizes) < 1 or repeats < 1 or cell_rounds < 1 or effect_rounds < 0:
        typer.echo("error: --clients, --repeats and --cell-rounds: expected positive integers; "
                   "--effect-rounds: an integer >= 0", err=True)
        raise typer.Exit(2)
    for row in gpu_rows(sizes, cuda_available(), repeats, cell_rounds, effect_rounds,
                        fashion_mnist):
        print(json.dumps(row), flush=True)


@bench_app.command("cell")
def cell(
    cells: Annotated[str, typer.Argument(
        help="Comma-separated EXPERIMENT/ALGORITHM cells of the suite, e.g. "
             "p1_cifar10_cnn/pfedkm_k4,p2_letters_1090/fedsoft.")],
    suite: Annotated[Path, typer.Option(
        help="The suite's params.yaml.")] = Path("suites/paper_online/params.yaml"),
    rounds: Annotated[int, typer.Option(help="Timed rounds (after one warm-up round).")] = 1,
    device: DeviceOpt = "cpu",
    fashion_mnist: Annotated[Path, typer.Option(
        help="Folder of the Fashion-MNIST idx .gz files (random data of its shape if absent).")
                             ] = Path("/usr/share/datasets/fashion-mnist"),
    threads: ThreadsOpt = None,
) -> None:
    """Seconds per whole round of suite cells as `clusterfl train` builds them (seed 0), on
    random data of the dataset's real shape where it cannot be had offline (CIFAR-10, EMNIST
    letters) or Fashion-MNIST; split into the round and the evaluation."""
    from clusterfl.bench.gpu import cell_round_seconds
    from clusterfl.engine import configure_threads

    configure_threads(threads)
    pairs = [c.strip().split("/") for c in cells.split(",") if c.strip()]
    if rounds < 1 or not pairs or any(len(p) != 2 for p in pairs):
        typer.echo("error: cells as EXPERIMENT/ALGORITHM[,...]; --rounds >= 1", err=True)
        raise typer.Exit(2)
    for experiment, algorithm in pairs:
        row = cell_round_seconds(_device(device), rounds, fashion_mnist,
                                 (experiment, algorithm), suite)
        print(json.dumps(row), flush=True)


@bench_app.command("fedc")
def fedc(
    clients: Annotated[int, typer.Option(help="P, the clients.")] = 100,
    features: Annotated[int, typer.Option(help="M, the features.")] = 2000,
    samples: Annotated[int, typer.Option(help="N, the samples.")] = 10000,
    clusters: Annotated[int, typer.Option(help="K, the clusters.")] = 20,
    sncp_iterations: Annotated[int, typer.Option(
        help="Centralized SNCP iterations (each Q1 = Q2 = 100 block steps) to time against "
             "scikit-learn's KMeans.")] = 100,
    threads: ThreadsOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """P5: one FedCGds round batched over all clients vs a per-client loop (ratio in one run),
    and centralized SNCP vs scikit-learn KMeans (time, accuracy). Defaults: the paper's
    synthetic size (P=100, M=2000, N=10000, K=20, Q1=Q2=100)."""
    from clusterfl.engine import configure_threads
    from clusterfl.papers.p5.tools.bench import bench_fedcgds_round

    configure_threads(threads)
    result = bench_fedcgds_round(clients=clients, features=features, samples=samples,
                                 clusters=clusters, sncp_iterations=sncp_iterations, seed=seed)
    print(json.dumps(result), flush=True)
