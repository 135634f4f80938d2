"""`clusterfl.papers.benchmark.tools.peer_round` (seconds per round beside PFLlib's) without
PFLlib: the client arrays are written in PFLlib's format unchanged, `bench round`'s settings
become PFLlib's `args` under PFLlib's names, PFLlib's own `Budget` is read without its first
iteration, the table's ratio is PFLlib's median over ours, and bad input is one line."""

import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clusterfl.papers.benchmark.tools import peer_round

OURS_PFEDME = {"clients": 20, "batch": 10, "lr": 0.005, "local_epochs": 1, "rounds_timed": 3,
               "model": "dnn 784-100-10", "hidden": 100, "K": 5, "lambda": 15.0, "beta": 1.0,
               "personal_lr": 0.09}


def test_export_writes_each_clients_arrays_as_pfllib_reads_them(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    train = [(rng.random((3, 784)), np.array([1, 2, 1])), (rng.random((2, 784)), np.array([0, 0]))]
    test = [(rng.random((1, 784)), np.array([2])), (rng.random((1, 784)), np.array([0]))]
    peer_round.export_round_data(train, test, tmp_path)
    for part, clients in (("train", train), ("test", test)):
        for k, (x, y) in enumerate(clients):
            with (tmp_path / part / f"{k}.npz").open("rb") as f:
                data = np.load(f, allow_pickle=True)["data"].tolist()
            assert data["x"].dtype == np.float32 and data["y"].dtype == np.int64
            np.testing.assert_array_equal(data["x"], x.astype(np.float32))
            np.testing.assert_array_equal(data["y"], y)
    assert sorted(p.name for p in (tmp_path / "train").iterdir()) == ["0.npz", "1.npz"]


def test_pfllib_args_carry_our_settings_under_pfllib_names() -> None:
    args = peer_round.pfllib_round_args("pfedme", OURS_PFEDME, model="m")
    assert (args.K, args.lamda, args.beta, args.p_learning_rate) == (5, 15.0, 1.0, 0.09)
    assert (args.batch_size, args.local_learning_rate, args.local_epochs) == (10, 0.005, 1)
    assert (args.num_clients, args.join_ratio, args.global_rounds) == (20, 1.0, 3)
    assert (args.algorithm, args.eval_gap, args.model) == ("pFedMe", 1, "m")
    fedavg = peer_round.pfllib_round_args("fedavg", OURS_PFEDME, model="m")
    assert fedavg.algorithm == "FedAvg" and not hasattr(fedavg, "lamda")


def test_pfllib_seconds_is_the_median_of_its_budget_without_the_first(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    class FakeServer:
        def __init__(self, args: types.SimpleNamespace, times: int) -> None:
            seen["args"], seen["cwd"] = args, Path.cwd()
            self.Budget: list[float] = []

        def train(self) -> None:
            print("PFLlib's chatter goes to the log")
            self.Budget = [50.0, 4.0, 1.0, 3.0]  # the first (untimed by us) is the largest

    modules = {"pfedme": FakeServer,
               "models": types.SimpleNamespace(DNN=lambda d, h, c: (d, h, c))}
    log = peer_round.io.StringIO()
    seconds = peer_round.pfllib_seconds(modules, "pfedme", OURS_PFEDME, tmp_path, 0, log)
    assert seconds == 3.0
    assert seen["args"].model == (784, 100, 10) and seen["cwd"] == (tmp_path / "run").resolve()
    assert "chatter" in log.getvalue() and Path.cwd() != tmp_path / "run"
    short = {**OURS_PFEDME, "rounds_timed": 5}
    with pytest.raises(RuntimeError, match="ran 4 iterations, expected 6"):
        peer_round.pfllib_seconds(modules, "pfedme", short, tmp_path, 0, log)


def test_table_gives_every_run_and_the_ratio_of_medians() -> None:
    runs = {("ours", "fedavg"): [0.3, 0.5, 0.2], ("pfllib", "fedavg"): [6.0, 6.6, 9.0],
            ("ours", "pfedme"): [0.6], ("pfllib", "pfedme"): [18.0]}
    lines = peer_round.table(runs).splitlines()
    assert lines[2] == ("| fedavg | 0.300 (0.300, 0.500, 0.200) | 6.600 (6.000, 6.600, 9.000) "
                        "| 22.0x |")
    assert lines[3] == "| pfedme | 0.600 (0.600) | 18.000 (18.000) | 30.0x |"


@pytest.mark.parametrize(("extra", "expected"), [
    (["--algorithms", "ditto"], "--algorithms: unknown 'ditto'; allowed: fedavg, pfedme"),
    (["--pairs", "0"], "--pairs and --rounds: must be >= 1"),
    (["--pfllib", "{tmp}/nowhere"], "--pfllib {tmp}/nowhere: does not exist"),
    (["--pfllib", "{tmp}"], "--pfllib {tmp}: lacks flcore/servers/serveravg.py"),
])
def test_bad_input_is_one_line(tmp_path: Path, capsys, extra: list[str], expected: str) -> None:
    argv = ["--pfllib", str(tmp_path), *[a.format(tmp=tmp_path) for a in extra]]
    assert peer_round.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert expected.format(tmp=tmp_path) in err
