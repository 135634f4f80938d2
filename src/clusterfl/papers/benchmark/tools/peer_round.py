"""Seconds per round, ours beside PFLlib's, at `clusterfl bench round`'s setting, in one window.

    python -m clusterfl.papers.benchmark.tools.peer_round --pfllib /tmp/pfllib/system \
        --algorithms fedavg pfedme --pairs 3

PFLlib (Zhang et al., TsingZ0/PFLlib), written against commit
d832e76f6a23b833038949ec1e4fdefe63a4d350; as in `peer.py`, its code is not copied: this script
runs the checkout named by `--pfllib` (PFLlib's `system/` directory) and needs `h5py` in
`--site` (`pip install --target /tmp/peer_site --no-deps h5py`). Files it uses there:
`flcore/servers/serveravg.py`, `serverpFedMe.py` (their `train` loops, unchanged, and the
per-round wall time they record themselves in `Budget`), `flcore/clients/clientavg.py`,
`clientpFedMe.py`, `flcore/trainmodel/models.py` (`DNN`), `utils/data_utils.py`.

The setting (`clusterfl.bench.cpu.bench_round`): the very same client arrays
(`round_clients`: Fashion-MNIST, 20 clients with 2 classes each, 75/25 split) written in
PFLlib's format, every client every round (join ratio 1), one local epoch of plain SGD at
lr 0.005, batch 10, an MLP 784-100-10; pFedMe with K = 5 inner steps, lambda 15, beta 1,
personal lr 0.09 (our `PFedMeHyper` defaults, PFLlib's `K`, `lamda`, `beta`,
`p_learning_rate`). Both evaluate every client's training and test samples every round
(PFLlib's FedAvg its global model, `evaluate`; its pFedMe the personalized models,
`evaluate_personalized`; ours the algorithm's default evaluators).

What is timed: ours, the median over `--rounds` rounds after one warm-up round
(`bench_round`); PFLlib, the median of its own `Budget` (one entry per iteration of its
`train` loop: selection, sending, evaluation, training, receiving, aggregation) over the
same number of iterations after its first. PFLlib's loaders re-read each client's `.npz`
files from disk every time it trains or evaluates: that is part of its round, as written.
The implementations take turns (`--pairs` times per algorithm) in one process with the same
torch threads, so a burst of load on the shared machine hits both alike; the table keeps every
run and the ratio of the medians.
"""

import argparse
import contextlib
import io
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import types
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clusterfl.papers.benchmark.tools.peer import (
    PFLLIB_DEFAULTS,
    PeerError,
    check_pfllib,
    exit_status,
    import_pfllib,
    pfllib_parser,
    print_log_tail,
    write_pfllib_client,
)

ALGORITHMS = ("fedavg", "pfedme")
PFLLIB_CLASSES = {"fedavg": ("flcore.servers.serveravg", "FedAvg"),
                  "pfedme": ("flcore.servers.serverpFedMe", "pFedMe")}
PFLLIB_FILES = ("flcore/servers/serveravg.py", "flcore/servers/serverpFedMe.py",
                "flcore/trainmodel/models.py", "utils/data_utils.py")
DATASET = "clusterfl_bench_round"
CLIENTS = 20  # `bench round`'s default


def export_round_data(train: Sequence[tuple[np.ndarray, np.ndarray]],
                      test: Sequence[tuple[np.ndarray, np.ndarray]], target: Path) -> None:
    """Every client's arrays as PFLlib's `target/{train,test}/<k>.npz`."""
    for part, clients in (("train", train), ("test", test)):
        for k, (x, y) in enumerate(clients):
            write_pfllib_client(target, part, k, x, y)


def pfllib_round_args(algorithm: str, ours: dict[str, Any], model: Any) -> types.SimpleNamespace:
    """PFLlib's `args` (main.py's namespace) for `bench_round`'s settings `ours`: one
    iteration more than the rounds timed, as its loop's first is not timed here."""
    from clusterfl.bench.cpu import CLASSES

    extra = {}
    if algorithm == "pfedme":
        extra = {"K": ours["K"], "lamda": ours["lambda"], "beta": ours["beta"],
                 "p_learning_rate": ours["personal_lr"]}
    return types.SimpleNamespace(
        **PFLLIB_DEFAULTS, **extra, dataset=DATASET, num_classes=CLASSES, model=model,
        algorithm=PFLLIB_CLASSES[algorithm][1], batch_size=ours["batch"],
        local_learning_rate=ours["lr"], global_rounds=ours["rounds_timed"],
        local_epochs=ours["local_epochs"], join_ratio=1.0, num_clients=ours["clients"],
        mu=0.0, plocal_epochs=1)


def pfllib_seconds(modules: dict[str, Any], algorithm: str, ours: dict[str, Any],
                   workdir: Path, seed: int, log: io.StringIO) -> float:
    """Median seconds of PFLlib's own per-iteration `Budget`, its first iteration left out."""
    import torch

    from clusterfl.bench.cpu import CLASSES, FEATURES

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = modules["models"].DNN(FEATURES, ours["hidden"], CLASSES)
    args = pfllib_round_args(algorithm, ours, model)
    run_dir = workdir / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    cwd = os.getcwd()
    os.chdir(run_dir)  # PFLlib reads ../dataset/<name> and writes ../results, models/
    try:
        with contextlib.redirect_stdout(log), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = modules[algorithm](args, 0)
            server.train()
    finally:
        os.chdir(cwd)
    budget = [float(b) for b in server.Budget]
    if len(budget) != ours["rounds_timed"] + 1:
        raise RuntimeError(f"PFLlib ran {len(budget)} iterations, expected "
                           f"{ours['rounds_timed'] + 1}")
    return statistics.median(budget[1:])


def cpu_name() -> str:
    """The CPU's model name, family and widest vector units, as the figures must name them."""
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    if not fields:
        return platform.processor() or "unknown CPU"
    flags = fields.get("flags", "").split()
    units = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{fields.get('model name', '?')} (family {fields.get('cpu family', '?')}, {units})"


def table(runs: dict[tuple[str, str], list[float]]) -> str:
    """Markdown: every run's seconds per round, the medians and PFLlib's median / ours."""
    out = ["| algorithm | ours s/round (runs) | PFLlib s/round (runs) | PFLlib / ours |",
           "|---|---|---|---|"]
    for alg in ALGORITHMS:
        ours, peer = runs.get(("ours", alg)), runs.get(("pfllib", alg))
        if not ours or not peer:
            continue
        mo, mp = statistics.median(ours), statistics.median(peer)
        out.append(f"| {alg} | {mo:.3f} ({', '.join(f'{t:.3f}' for t in ours)}) | "
                   f"{mp:.3f} ({', '.join(f'{t:.3f}' for t in peer)}) | {mp / mo:.1f}x |")
    return "\n".join(out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = pfllib_parser("clusterfl.papers.benchmark.tools.peer_round",
                      "Seconds per round of FedAvg and pFedMe: ours beside PFLlib's.")
    p.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS),
                   help=f"any of {', '.join(ALGORITHMS)}")
    p.add_argument("--pairs", type=int, default=3, help="runs of each implementation")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds a run (after one)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads for both (default: every core)")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> str:
    for alg in args.algorithms:
        if alg not in ALGORITHMS:
            raise PeerError(f"--algorithms: unknown {alg!r}; allowed: {', '.join(ALGORITHMS)}")
    if args.pairs < 1 or args.rounds < 1:
        raise PeerError(f"--pairs and --rounds: must be >= 1, got {args.pairs}, {args.rounds}")
    system = check_pfllib(args.pfllib, PFLLIB_FILES)
    from clusterfl.bench.cpu import bench_round, round_clients
    from clusterfl.engine.threads import configure_threads

    configure_threads(args.threads)
    modules = import_pfllib(system, args.site, PFLLIB_CLASSES)
    import torch

    seed = 0
    workdir = Path(tempfile.mkdtemp(prefix="clusterfl_peer_round_"))
    log = io.StringIO()
    runs: dict[tuple[str, str], list[float]] = {}
    try:
        given = round_clients(CLIENTS, np.random.default_rng(seed))
        train, test, source = given
        export_round_data(train, test, workdir / "dataset" / DATASET)
        print(f"data: {source}; {cpu_name()}; torch {torch.__version__}, "
              f"{torch.get_num_threads()} threads; PFLlib from {system}", flush=True)
        for alg in args.algorithms:
            for pair in range(args.pairs):
                ours = bench_round(alg, clients=CLIENTS, rounds=args.rounds, seed=seed,
                                   given=given)
                runs.setdefault(("ours", alg), []).append(ours["seconds_per_round"])
                peer = pfllib_seconds(modules, alg, ours, workdir, seed, log)
                runs.setdefault(("pfllib", alg), []).append(peer)
                print(f"{alg} pair {pair + 1}: ours {ours['seconds_per_round']:.3f} s, "
                      f"PFLlib {peer:.3f} s a round (load {os.getloadavg()[0]:.1f})",
                      flush=True)
    except BaseException:
        print_log_tail(log)
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = table(runs)
    print("\n" + result)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    return exit_status(run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
