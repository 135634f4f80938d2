"""Ditto and FedRep side by side with a peer implementation: PFLlib.

    python -m clusterfl.papers.benchmark.tools.peer --pfllib /tmp/pfllib/system \
        --data-root /tmp/peerclone --scheme bm_patho2 --seeds 0 1 2 --out /tmp/peer_out

PFLlib (Zhang et al., TsingZ0/PFLlib, https://github.com/TsingZ0/PFLlib), written against commit
d832e76f6a23b833038949ec1e4fdefe63a4d350. Its code is not copied here: this script *runs* the
checkout named by `--pfllib` (its `system/` directory: export it with
`git -C <PFLlib repo> archive HEAD system | tar -x -C /tmp/pfllib`). Files it uses there:
`flcore/servers/serverbase.py`, `serverditto.py`, `serverrep.py`; `flcore/clients/
clientbase.py`, `clientditto.py`, `clientrep.py`; `flcore/optimizers/fedoptimizer.py`
(`PerturbedGradientDescent`, Ditto's personal step); `flcore/trainmodel/models.py` (`DNN`,
`BaseHeadSplit`); `utils/data_utils.py` (the client files' format); `main.py` (the defaults of
the `args` its classes read, FedRep's model wrapping). PFLlib's `serverbase` imports `h5py`,
which is not a dependency of this project: install it outside the venv
(`pip install --target /tmp/peer_site --no-deps h5py`); `--site` puts that folder on
`sys.path`, and only when PFLlib is about to be imported.

What it does, for one benchmark scheme (`bm_patho2` or `bm_rot4`) and each seed:
1. reads the partition the train stage reads (`data/benchmark/partitions/<scheme>/
   seed<k>.npz` under `--data-root`, made by `clusterfl download fashion_mnist_bench --suite
   benchmark` and `clusterfl partition <scheme> --suite benchmark` run in that directory):
   each client's training samples *without* the validation samples (the partition stage
   carved those off), and its test split;
2. writes them in PFLlib's format (`<tmp>/dataset/<name>/{train,test}/<k>.npz`, key `data`:
   {'x': float32 (n, 1, 28, 28), 'y': int64 (n,)}, views such as rotations applied), so both
   implementations see the very same samples;
3. runs PFLlib's `Ditto` and `FedRep` servers (`Server.train`, unchanged) on them, with the
   working directory `<tmp>/run` so that its `../dataset` resolves, and records each round's
   personalized test accuracy (Ditto: every client's `model_per`; FedRep: every client's model,
   i.e. the global body and its own head), weighted by test samples as our `clients`
   evaluator is;
4. runs our `ditto` and `fedrep` (`clusterfl.run.runner.run_seed`, tracking off) with the
   benchmark suite's settings and the same `--lr`, and reads our `clients` evaluator's
   `test_acc` of every round;
5. writes `peer_<scheme>.csv` (implementation, algorithm, seed, round, accuracy) and
   `peer_<scheme>.png` (mean +- std over seeds) into `--out`, and prints the last round's
   mean +- std per implementation and the gap as a Markdown table.

Settings shared by both (from `suites/benchmark/params.yaml` and `papers/benchmark/
params.yaml`; the script stops if our params hold a value PFLlib cannot express): 20 clients,
all of them every round (join ratio 1), `--rounds` (default the suite's 20), 1 local epoch,
batch 20, plain SGD (no momentum, no weight decay) with `--lr` (default 0.05), the model an
MLP 784-64-10 (ours `dnn` hidden 64, PFLlib `DNN(784, 64, 10)`), server averages weighted by
training samples; Ditto lambda = PFLlib's `mu` = our `lam` (1.0), its personal epochs
(`plocal_epochs`) 1 = our personal steps on the global update's batches (one epoch); FedRep
head epochs = PFLlib's `plocal_epochs` = our `head_epochs` (10), then one body epoch.

Where the two implementations differ (read from both; these can explain a gap):
- Initialization: the same distribution (U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and
  biases: ours `models.init_params` "pytorch", PFLlib `nn.Linear`'s default), different
  draws: ours from a `torch.Generator` seeded with the seed, PFLlib from the global torch
  stream, which this script seeds with the seed right before it builds `DNN`.
- Data order: ours draws each pass's permutation from the run's numpy generator and keeps the
  last, partial batch of every pass (ceil(n/20) steps an epoch). PFLlib's
  `DataLoader(shuffle=True, drop_last=True)` draws from the global torch stream and *drops*
  the partial batch (floor(n/20) steps): on bm_patho2, n mod 20 of a client's samples (140 to
  220 of 3,600 per epoch over the clients, by seed) go unseen each epoch, and a client with
  fewer than 20 samples would never train; bm_rot4's clients have 180 samples, nothing
  dropped. Ours thus ends a pass with a step on as few as 1-19 samples of a 2-class client,
  right before it is evaluated: one epoch of Ditto's personal step on bm_patho2 seed 0
  (a standalone loop, 6 draws) scored 78.3 % keeping that batch, 80.9 % dropping it, the
  sign of PFLlib's Ditto lead in the early rounds (round 1, 3 seeds: 82.6 against 76.2 %).
  Every PFLlib `Client.__init__` calls `torch.manual_seed(0)`, so left alone every seed
  would shuffle alike; this script seeds torch (and numpy/random, which order the
  clients) with the seed again after the server is built.
- Ditto's personal steps: ours take the personal step on the very batches of the global
  update (the official `litian96/ditto` code); PFLlib's `ptrain` walks its own, separately
  shuffled pass (`plocal_epochs` epochs) before `train`. Both pull towards w^t (the model the
  round started from) with grad + lam (v - w^t) (`PerturbedGradientDescent`; ours `Prox`).
- FedRep's model: PFLlib's main.py replaces `DNN.fc` by `nn.Identity` and wraps
  `BaseHeadSplit(base=DNN, head=fc)`; `DNN.forward` still ends in `log_softmax`, so PFLlib's
  body outputs log_softmax(relu(W1 x + b1)) over the 64 hidden units and the head is a
  linear layer on *those*. Our body is relu(W1 x + b1) and the head reads it directly. This
  is most of the FedRep gap: on bm_patho2, lr 0.05, seeds 0-2, round 20, PFLlib's FedRep
  scored 79.2 +- 2.3 % as main.py builds it and 94.4 +- 1.5 % with its body replaced by
  Flatten, fc1, ReLU (same draws; `--fedrep-relu-body`); ours 93.7 +- 0.6 %.
  (For Ditto the closing `log_softmax` before `CrossEntropyLoss` changes nothing:
  log_softmax is idempotent.) FedRep's steps agree otherwise: 10 head epochs with the body
  frozen, then one body epoch with the head frozen, each phase plain SGD, fresh shuffles
  each epoch; the server averages the body (`fc1`, ours `"1"`) weighted by training
  samples.
- Evaluation timing: PFLlib evaluates at the start of its iteration i = 0..R (after
  `send_models`, before that iteration's training), so its i-th number is the models after i
  rounds of training, which is our round i (our loop evaluates after round i's training).
  Its i = 0 (the initial models) has no counterpart in ours and is left out; its last
  iteration trains once more after the evaluation, a round that is never scored.
- Client order: PFLlib visits the selected clients in a random order (numpy) and sums the
  uploads in another (`random.sample`); ours trains all clients in one batched step and sums
  in client order: float rounding only.
"""

import argparse
import contextlib
import copy
import dataclasses
import importlib
import io
import os
import random
import shutil
import sys
import tempfile
import time
import types
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clusterfl.core.errors import UserError

SUITE = "benchmark"
SCHEMES = ("bm_patho2", "bm_rot4")
ALGORITHMS = ("ditto", "fedrep")
PFLLIB_CLASSES = {"ditto": ("flcore.servers.serverditto", "Ditto"),
                  "fedrep": ("flcore.servers.serverrep", "FedRep")}
# what --pfllib must hold (relative to PFLlib's system/ directory)
PFLLIB_FILES = ("flcore/servers/serverditto.py", "flcore/servers/serverrep.py",
                "flcore/trainmodel/models.py", "utils/data_utils.py")
IMPLEMENTATIONS = ("ours", "pfllib")
# --fedrep-relu-body: PFLlib's FedRep once more with its body ending in relu(W1 x + b1), as
# ours does, instead of main.py's log_softmax over the hidden units (the docstring's
# "FedRep's model"): it attributes the FedRep gap from the repo rather than by hand
RELU_BODY = "pfllib_relu_body"
CSV_HEADER = "implementation,algorithm,seed,round,accuracy"
# PFLlib main.py's argparse defaults for the `args` fields its Server/Client classes read
# and that this comparison does not set (no slow or dropped clients, no DLG, no new clients,
# no lr decay, no auto-break, evaluation every round).
PFLLIB_DEFAULTS: dict[str, Any] = {
    "goal": "peer", "device": "cpu", "device_id": "0", "learning_rate_decay": False,
    "learning_rate_decay_gamma": 0.99, "top_cnt": 100, "random_join_ratio": False,
    "prev": 0, "times": 1, "eval_gap": 1, "save_folder_name": "items", "auto_break": False,
    "dlg_eval": False, "dlg_gap": 100, "batch_num_per_client": 2, "num_new_clients": 0,
    "fine_tuning_epoch_new": 0, "few_shot": 0, "client_drop_rate": 0.0,
    "train_slow_rate": 0.0, "send_slow_rate": 0.0, "time_select": False,
    "time_threthold": 10000,
}


class PeerError(UserError):
    """A one-line error of this script (exit status 2)."""


@dataclasses.dataclass(frozen=True)
class Setting:
    """Everything both implementations are given, from our params (and --lr, --rounds)."""

    rounds: int
    lr: float
    batch_size: int
    local_epochs: int
    hidden: int
    ditto_lam: float
    ditto_personal_epochs: int  # ours: the global update's batches, i.e. its epochs
    fedrep_head_epochs: int


@dataclasses.dataclass(frozen=True)
class Inputs:
    """One scheme's data and our configuration, as the train stage would use them."""

    experiment: Any  # clusterfl.run.config.Experiment with --lr and --rounds applied
    algorithms: dict[str, Any]  # name -> clusterfl.run.config.AlgorithmConfig
    dataset: Any  # clusterfl.core.types.Dataset
    partitions: dict[int, Any]  # seed -> clusterfl.core.types.Partition
    setting: Setting


# -- checks ------------------------------------------------------------------------------------
def check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise PeerError(f"--scheme: unknown scheme {scheme!r}; allowed: {', '.join(SCHEMES)}")
    return scheme


def check_pfllib(path: Path, files: Sequence[str] = PFLLIB_FILES) -> Path:
    """`path` must be PFLlib's `system/` directory (it holds `flcore/` and `utils/`)."""
    missing = [f for f in files if not (path / f).is_file()]
    if missing:
        what = "does not exist" if not path.exists() else f"lacks {', '.join(missing)}"
        raise PeerError(f"--pfllib {path}: {what}; expected PFLlib's system/ directory (with "
                        "flcore/ and utils/), e.g. /tmp/pfllib/system from `git -C <PFLlib> "
                        "archive HEAD system | tar -x -C /tmp/pfllib`")
    return path.resolve()


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise PeerError(f"our params: {what}, which the PFLlib comparison cannot express")


def derive_setting(experiment: Any, ditto: Any, fedrep: Any) -> Setting:
    """Both implementations' settings from our experiment and algorithm configs; a value
    PFLlib's Ditto/FedRep cannot express is an error."""
    s = experiment.schedule
    key = f"experiments.{experiment.name}"
    _require(experiment.model == "dnn", f"{key}.model is {experiment.model!r}, not dnn")
    _require(s.epochs is not None and s.local_steps is None,
             f"{key}.training sets local_steps, not epochs")
    _require(s.optimizer == "sgd" and s.weight_decay == 0.0,
             f"{key}.training uses {s.optimizer} with weight_decay {s.weight_decay}")
    _require(s.clients_per_round is None, f"{key}.training samples clients each round")
    _require(s.init == "pytorch", f"{key}.training.init is {s.init!r}")
    _require(s.loss in (None, "cross_entropy"), f"{key}.training.loss is {s.loss!r}")
    dh, fh = ditto.hyper, fedrep.hyper
    _require(dh.personal_steps is None, "ditto.personal_steps is set")
    _require(dh.weighting == "samples", f"ditto.weighting is {dh.weighting!r}")
    _require(fh.head_steps is None and fh.head_epochs is not None, "fedrep.head_steps is set")
    _require(fh.weighting == "samples", f"fedrep.weighting is {fh.weighting!r}")
    _require(tuple(fh.shared) == ("1",), f"fedrep.shared is {list(fh.shared)}, not the "
             "hidden layer ['1'] (PFLlib's body: everything but DNN.fc)")
    return Setting(rounds=s.rounds, lr=float(s.lr), batch_size=s.batch_size,
                   local_epochs=s.epochs, hidden=int(experiment.model_options.get("hidden")),
                   ditto_lam=float(dh.lam), ditto_personal_epochs=s.epochs,
                   fedrep_head_epochs=fh.head_epochs)


# -- our data, as the train stage reads it -----------------------------------------------------
def load_inputs(scheme: str, seeds: Sequence[int], data_root: Path, params_path: Path,
                lr: float, rounds: int | None) -> Inputs:
    from clusterfl.data import load_dataset
    from clusterfl.partition import load_partition
    from clusterfl.run.config import load_params

    if not params_path.is_file():
        raise PeerError(f"--params {params_path}: no such file; expected the benchmark "
                        "suite's params.yaml (suites/benchmark/params.yaml)")
    params = load_params(params_path)
    experiment = params.experiment(scheme)
    schedule = dataclasses.replace(experiment.schedule, lr=lr,
                                   rounds=rounds or experiment.schedule.rounds)
    experiment = dataclasses.replace(experiment, schedule=schedule)
    algorithms = {name: params.algorithm(name, experiment=scheme) for name in ALGORITHMS}
    setting = derive_setting(experiment, algorithms["ditto"], algorithms["fedrep"])
    data = data_root / "data" / params.home  # what the download and partition stages write
    dataset_name = params.partition(experiment.partition)["dataset"]
    where = f"(in {data_root})"
    dataset_file = data / "raw" / dataset_name / "dataset.npz"
    if not dataset_file.is_file():
        raise PeerError(f"{dataset_file}: missing; run `clusterfl download {dataset_name} "
                        f"--suite {params.suite}` {where} first, or pass --data-root")
    partitions = {}
    for seed in seeds:
        file = data / "partitions" / experiment.partition / f"seed{seed}.npz"
        if not file.is_file():
            raise PeerError(f"{file}: missing; run `clusterfl partition {experiment.partition} "
                            f"--suite {params.suite}` {where} first (seeds "
                            f"{params.seeds}), or pass --data-root")
        partitions[seed] = load_partition(file)
    return Inputs(experiment, algorithms, load_dataset(dataset_file), partitions, setting)


# -- PFLlib's on-disk format -------------------------------------------------------------------
def export_pfllib(dataset: Any, partition: Any, target: Path) -> list[tuple[int, int]]:
    """Write every client's training and test samples (views applied, exactly what our
    engine trains and tests on: `views.client_data`) as PFLlib's `target/train/<k>.npz` and
    `target/test/<k>.npz`: key `data` holding {'x': float32, 'y': int64} (read by PFLlib's
    `utils.data_utils.read_data`). Returns (train, test) counts per client."""
    from clusterfl.partition import views

    counts = []
    for k in range(partition.num_clients):
        sizes = []
        for part in ("train", "test"):
            x, y = views.client_data(dataset, partition, k, part)
            write_pfllib_client(target, part, k, x, y)
            sizes.append(len(y))
        counts.append((sizes[0], sizes[1]))
    return counts


def write_pfllib_client(target: Path, part: str, k: int, x: np.ndarray, y: np.ndarray) -> None:
    """Client `k`'s samples of `part` (train or test) as PFLlib's `target/<part>/<k>.npz`."""
    data = {"x": np.ascontiguousarray(x, dtype=np.float32), "y": np.asarray(y).astype(np.int64)}
    (target / part).mkdir(parents=True, exist_ok=True)
    with (target / part / f"{k}.npz").open("wb") as f:
        np.savez_compressed(f, data=data)  # type: ignore[arg-type]


# -- PFLlib ------------------------------------------------------------------------------------
def import_pfllib(system: Path, site: Path,
                   classes: dict[str, tuple[str, str]] = PFLLIB_CLASSES) -> dict[str, Any]:
    """PFLlib's server `classes` (alias -> (module, class)) and its `models` module, imported
    from `system` (and `site`, where it exists, for h5py)."""
    for folder in (site, system):
        if folder.is_dir() and str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    for name in ("flcore", "utils"):  # a same-named module imported from elsewhere wins
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None) or ""
        if module is not None and not origin.startswith(str(system)):
            raise PeerError(f"a module {name!r} from {origin or 'elsewhere'} is already "
                            f"imported; PFLlib's {system / name} cannot be")
    try:
        importlib.import_module("h5py")
    except ImportError:
        raise PeerError("PFLlib's serverbase imports h5py, which is not installed: `pip "
                        f"install --target {site} --no-deps h5py` (or pass --site a folder "
                        "that has it)") from None
    try:
        modules = {a: getattr(importlib.import_module(m), c) for a, (m, c) in classes.items()}
        modules["models"] = importlib.import_module("flcore.trainmodel.models")
    except (ImportError, AttributeError) as err:
        raise PeerError(f"--pfllib {system}: cannot import PFLlib ({type(err).__name__}: "
                        f"{err})") from None
    return modules


def pfllib_args(algorithm: str, setting: Setting, dataset: str, num_clients: int,
                num_classes: int, model: Any) -> types.SimpleNamespace:
    """The `args` PFLlib's Server and Client classes read (main.py's argparse namespace)."""
    plocal = setting.ditto_personal_epochs if algorithm == "ditto" else setting.fedrep_head_epochs
    return types.SimpleNamespace(
        **PFLLIB_DEFAULTS, dataset=dataset, num_classes=num_classes, model=model,
        algorithm=PFLLIB_CLASSES[algorithm][1], batch_size=setting.batch_size,
        local_learning_rate=setting.lr, global_rounds=setting.rounds,
        local_epochs=setting.local_epochs, join_ratio=1.0, num_clients=num_clients,
        mu=setting.ditto_lam if algorithm == "ditto" else 0.0, plocal_epochs=plocal)


def pfllib_rounds(accuracies: Sequence[float], rounds: int) -> list[float]:
    """PFLlib's per-iteration accuracies (iteration i = 0..R, each read before that
    iteration's training: the models after i rounds) as our rounds 1..R: its i-th number is
    our round i; i = 0, the initial models, has no round of ours and is dropped."""
    if len(accuracies) != rounds + 1:
        raise RuntimeError(f"PFLlib evaluated {len(accuracies)} times, expected {rounds + 1} "
                           f"(iterations 0..{rounds})")
    return [float(a) for a in accuracies[1:]]


def run_pfllib(modules: dict[str, Any], algorithm: str, setting: Setting, workdir: Path,
               dataset: str, num_clients: int, feature_dim: int, num_classes: int,
               seed: int, log: io.StringIO, relu_body: bool = False) -> list[float]:
    """One PFLlib run (its `Server.train`), cwd `workdir/run` so that `../dataset/<dataset>`
    is the exported data; returns the personalized test accuracy of rounds 1..R. With
    `relu_body` FedRep's body is Flatten, fc1, ReLU (PFLlib's own layers and draws) instead
    of main.py's DNN ending in log_softmax."""
    import torch
    from torch import nn

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # the initial model (main.py seeds 0 once, at import)
    model = modules["models"].DNN(feature_dim, setting.hidden, num_classes)
    if algorithm == "fedrep":  # main.py's wrapping for FedRep
        head = copy.deepcopy(model.fc)
        model.fc = nn.Identity()
        body = nn.Sequential(nn.Flatten(), model.fc1, nn.ReLU()) if relu_body else model
        model = modules["models"].BaseHeadSplit(body, head)
    args = pfllib_args(algorithm, setting, dataset, num_clients, num_classes, model)
    run_dir = workdir / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    accuracies: list[float] = []
    cwd = os.getcwd()
    os.chdir(run_dir)
    try:
        with contextlib.redirect_stdout(log), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # as main.py does (softmax without dim, ...)
            server = modules[algorithm](args, 0)
            # every Client.__init__ ran torch.manual_seed(0): re-seed so that each seed's
            # data order (DataLoader shuffles) and client order differ
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            # PFLlib's own evaluation, unchanged (it appends to rs_test_acc, as does Ditto's
            # `evaluate` of its global model); the personalized number is copied to ours
            name = "evaluate_personalized" if algorithm == "ditto" else "evaluate"
            evaluate = getattr(server, name)

            def recorded() -> None:
                evaluate()
                accuracies.append(float(server.rs_test_acc[-1]))

            setattr(server, name, recorded)
            server.train()
    finally:
        os.chdir(cwd)
    return pfllib_rounds(accuracies, setting.rounds)


# -- ours --------------------------------------------------------------------------------------
def run_ours(inputs: Inputs, algorithm: str, seed: int) -> list[float]:
    """Our run of one seed, as `clusterfl train` runs it (no tracking, no checkpoints);
    the `clients` evaluator's test accuracy of rounds 1..R."""
    from clusterfl.run.runner import run_seed
    from clusterfl.steps.metrics import TEST_ACC

    history = run_seed(inputs.experiment, inputs.algorithms[algorithm], inputs.dataset,
                       inputs.partitions[seed], seed, engine="vectorized", device="cpu")
    accuracies = [float(r[TEST_ACC.name]) for r in history.records]
    if [int(r["round"]) for r in history.records] != list(range(1, inputs.setting.rounds + 1)):
        raise RuntimeError(f"our {algorithm} run did not record rounds 1..{inputs.setting.rounds}")
    return accuracies


# -- outputs -----------------------------------------------------------------------------------
Row = tuple[str, str, int, int, float]  # implementation, algorithm, seed, round, accuracy


def curves(rows: Sequence[Row], implementation: str, algorithm: str) -> np.ndarray:
    """[seeds, rounds] accuracies of one implementation and algorithm, seeds in order."""
    by_seed: dict[int, dict[int, float]] = {}
    for impl, alg, seed, round_, acc in rows:
        if impl == implementation and alg == algorithm:
            by_seed.setdefault(seed, {})[round_] = acc
    return np.array([[r[k] for k in sorted(r)] for _, r in sorted(by_seed.items())])


def csv_text(rows: Sequence[Row]) -> str:
    lines = [CSV_HEADER] + [f"{i},{a},{s},{r},{acc:.6f}" for i, a, s, r, acc in rows]
    return "\n".join(lines) + "\n"


def summary_table(rows: Sequence[Row]) -> str:
    """Markdown: the last round's accuracy, mean +- std over seeds (std with ddof 0, as our
    summaries), per algorithm and implementation, and the gap ours - PFLlib."""
    out = ["| algorithm | seeds | round | ours (%) | PFLlib (%) | gap ours - PFLlib (pp) |",
           "|---|---|---|---|---|---|"]
    variants = [(a, "pfllib", a) for a in ALGORITHMS]
    variants.append(("fedrep", RELU_BODY, "fedrep (PFLlib's body ending in ReLU)"))
    for alg, peer_impl, label in variants:
        last = {impl: curves(rows, impl, alg) for impl in ("ours", peer_impl)}
        if any(v.size == 0 for v in last.values()):
            continue
        final = {impl: 100 * v[:, -1] for impl, v in last.items()}
        cells = [f"{v.mean():.2f} ± {v.std():.2f}" for v in final.values()]
        gap = final["ours"].mean() - final[peer_impl].mean()
        out.append(f"| {label} | {len(final['ours'])} | {last['ours'].shape[1]} | "
                   f"{cells[0]} | {cells[1]} | {gap:+.2f} |")
    return "\n".join(out)


def figure_png(rows: Sequence[Row], scheme: str, lr: float) -> bytes:
    """Mean +- std curves over seeds, ours vs PFLlib, one panel per algorithm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, len(ALGORITHMS), figsize=(10, 4), sharey=True)
    for ax, alg in zip(axes, ALGORITHMS, strict=True):
        for impl, label, color, style in (
                ("ours", "clusterfl", "C0", "-"), ("pfllib", "PFLlib", "C1", "-"),
                (RELU_BODY, "PFLlib, body ending in ReLU", "C1", "--")):
            acc = curves(rows, impl, alg)
            if acc.size == 0:
                continue
            mean, std = 100 * acc.mean(axis=0), 100 * acc.std(axis=0)
            x = np.arange(1, acc.shape[1] + 1)
            ax.plot(x, mean, color=color, linestyle=style,
                    label=f"{label} ({acc.shape[0]} seeds)")
            ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.2)
        ax.set_title(f"{alg} on {scheme}, lr {lr:g}")
        ax.set_xlabel("round")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0].set_ylabel("personalized test accuracy (%)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def write_outputs(rows: Sequence[Row], out: Path, scheme: str, lr: float) -> list[Path]:
    """`peer_<scheme>.csv` and `.png`, both rendered before either is written, each written
    to a temporary file and renamed: never half-written."""
    from clusterfl.core.io import atomic_write_bytes

    files = {out / f"peer_{scheme}.csv": csv_text(rows).encode(),
             out / f"peer_{scheme}.png": figure_png(rows, scheme, lr)}
    for path, data in files.items():
        atomic_write_bytes(path, data)
    return list(files)


# -- the command -------------------------------------------------------------------------------
def pfllib_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A parser with the options every PFLlib comparison takes: --pfllib and --site."""
    p = argparse.ArgumentParser(prog=f"python -m {prog}", description=description)
    p.add_argument("--pfllib", type=Path, required=True,
                   help="PFLlib's system/ directory (holds flcore/ and utils/)")
    p.add_argument("--site", type=Path, default=Path("/tmp/peer_site"),
                   help="a folder with h5py (pip install --target), put on sys.path only "
                        "for PFLlib")
    return p


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = pfllib_parser("clusterfl.papers.benchmark.tools.peer",
                      "Ditto and FedRep: ours beside PFLlib's on one benchmark partition.")
    p.add_argument("--scheme", default="bm_patho2", help=f"one of {', '.join(SCHEMES)}")
    p.add_argument("--data-root", "--workdir", dest="data_root", type=Path, default=Path("."),
                   help="the directory holding data/benchmark/ (raw dataset and partitions)")
    p.add_argument("--params", type=Path, default=Path("suites") / SUITE / "params.yaml",
                   help="the benchmark suite's params file (default: the working "
                        "directory's, i.e. run it from the repository root)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--lr", type=float, default=0.05, help="both implementations' SGD lr")
    p.add_argument("--rounds", type=int, default=None,
                   help="rounds (default: the suite's, 20)")
    p.add_argument("--out", type=Path, default=Path("peer_out"))
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--fedrep-relu-body", action="store_true",
                   help="also run PFLlib's FedRep with its body ending in ReLU, as ours "
                        "(main.py's ends in log_softmax): the FedRep gap's attribution")
    p.add_argument("--keep-workdir", action="store_true",
                   help="keep the temporary folder (exported data, PFLlib's logs)")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> str:
    """The whole comparison; returns the Markdown table."""
    scheme = check_scheme(args.scheme)
    system = check_pfllib(args.pfllib)
    if args.lr <= 0:
        raise PeerError(f"--lr: must be > 0, got {args.lr}")
    if args.rounds is not None and args.rounds < 1:
        raise PeerError(f"--rounds: must be >= 1, got {args.rounds}")
    if args.out.exists() and not args.out.is_dir():
        raise PeerError(f"--out {args.out}: exists and is not a directory")
    seeds = list(dict.fromkeys(args.seeds))
    inputs = load_inputs(scheme, seeds, args.data_root, args.params, args.lr, args.rounds)
    from clusterfl.engine.threads import configure_threads

    configure_threads(args.threads)
    modules = import_pfllib(system, args.site)
    s, dataset = inputs.setting, inputs.dataset
    print(f"{scheme}: seeds {seeds}, {s.rounds} rounds, lr {s.lr:g}, batch {s.batch_size}, "
          f"{s.local_epochs} local epoch(s); ditto lam {s.ditto_lam:g}; fedrep head epochs "
          f"{s.fedrep_head_epochs}; PFLlib from {system}", flush=True)
    rows: list[Row] = []
    seconds: dict[tuple[str, str], float] = {}
    workdir = Path(tempfile.mkdtemp(prefix="clusterfl_peer_"))
    log = io.StringIO()
    try:
        for seed in seeds:
            name = f"clusterfl_{scheme}_seed{seed}"
            partition = inputs.partitions[seed]
            export_pfllib(dataset, partition, workdir / "dataset" / name)
            for alg in ALGORITHMS:
                relu = (RELU_BODY,) if alg == "fedrep" and args.fedrep_relu_body else ()
                for impl in IMPLEMENTATIONS + relu:
                    started = time.monotonic()
                    if impl == "ours":
                        acc = run_ours(inputs, alg, seed)
                    else:
                        print(f"==== {alg} seed {seed} ====", file=log)
                        acc = run_pfllib(modules, alg, s, workdir, name,
                                         partition.num_clients,
                                         int(np.prod(dataset.feature_shape)),
                                         dataset.num_classes, seed, log,
                                         relu_body=impl == RELU_BODY)
                    took = time.monotonic() - started
                    seconds[impl, alg] = seconds.get((impl, alg), 0.0) + took
                    rows += [(impl, alg, seed, r, a) for r, a in enumerate(acc, start=1)]
                    print(f"{impl:6s} {alg:6s} seed {seed}: round {len(acc)} accuracy "
                          f"{100 * acc[-1]:.2f}%, {took:.1f} s", flush=True)
    except BaseException:
        print_log_tail(log)
        raise
    finally:
        (workdir / "pfllib.log").write_text(log.getvalue())
        if args.keep_workdir:
            print(f"kept {workdir} (exported data, pfllib.log)")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    written = write_outputs(rows, args.out, scheme, s.lr)
    table = summary_table(rows)
    print("\n" + table + "\n")
    for (impl, alg), t in seconds.items():
        print(f"wall time {impl} {alg}: {t:.1f} s over {len(seeds)} seed(s)")
    print("-> " + ", ".join(str(p) for p in written))
    return table


def print_log_tail(log: io.StringIO) -> None:
    """PFLlib's last lines of output, on stderr: what it said before a failure."""
    tail = log.getvalue().strip().splitlines()[-15:]
    if tail:
        print("PFLlib's last output:\n" + "\n".join(tail), file=sys.stderr)


def exit_status(run_command: Callable[[argparse.Namespace], str],
                args: argparse.Namespace) -> int:
    """`run_command(args)`'s exit status: 0, or 2 with a one-line error for bad input."""
    try:
        run_command(args)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return exit_status(run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
