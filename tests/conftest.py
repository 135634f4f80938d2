"""Shared fixtures: the repository root and a tiny federated problem."""

# isort: off
import clusterfl  # noqa: F401  (first: it pins the math libraries' CPU paths before they load)
# isort: on
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from clusterfl.engine import ClientData

ROOT = Path(__file__).resolve().parents[1]

# Every `dvc` command the tests run (about 40) otherwise collects the machine's details and
# leaves a daemon behind that imports DVC to send them (measured: 43 daemons, 17 s of CPU of
# a `make test` on 2 cores; and no network here to send them to). The tests' subprocesses
# inherit this from the worker's environment.
os.environ["DVC_NO_ANALYTICS"] = "1"


# `make test` runs the files on 2 workers (-n 2 --dist loadfile --no-loadscope-reorder): a
# file goes whole to the next free worker, in collection order. xdist's default order (files
# with the most tests first) started the DVC, server and CLI files (1 to 4 tests each, most
# of the suite's time) last, so one worker finished minutes before the other. These files
# start first instead, longest first (CPU seconds of each file alone on the 2-core machine,
# in brackets), then the other files with `slow` tests, then the rest, whose many short tests
# fill the end evenly. A new long file: add it here, or mark its tests `slow`.
LONGEST_FIRST = (
    "tests/test_pipeline_e2e.py",       # 240 s: dvc repro of 3 cells, then 5 more runs of DVC
    "tests/test_benchmark_e2e.py",      # 135
    "tests/test_ray_sweep.py",          # 104 (partly on both cores)
    "tests/test_browser.py",            # 77 (skipped without Chromium)
    "tests/test_mlflow_server.py",      # 77
    "tests/test_p1_sweep_dvc.py",       # 75
    "tests/test_toy_paper_training.py",  # 55
    "tests/test_fresh_clone.py",        # 46
    "tests/test_corrupt_files.py",      # 45
    "tests/test_checkpoints.py",        # 36
    "tests/test_kill_resume.py",        # 36
    "tests/test_config_errors.py",      # 33
    "tests/test_traps.py",              # 33
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest files first (see LONGEST_FIRST); a stable sort, so each file's tests stay
    together and in their order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}

    def key(item: pytest.Item) -> tuple[int, int]:
        file = item.nodeid.split("::")[0]
        return (0, rank[file]) if file in rank else (1, 0) if file in slow else (2, 0)

    items.sort(key=key)


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def tiny_data() -> ClientData:
    """Three clients of unequal sizes (5, 9, 3 train samples), 4 features, 3 classes."""
    rng = np.random.default_rng(0)
    sizes = [(5, 2), (9, 3), (3, 1)]
    train, test = [], []
    for n_train, n_test in sizes:
        train.append((rng.normal(size=(n_train, 4)).astype(np.float32),
                      rng.integers(0, 3, n_train)))
        test.append((rng.normal(size=(n_test, 4)).astype(np.float32), rng.integers(0, 3, n_test)))
    return ClientData.from_lists(train, test)


@pytest.fixture(autouse=True)
def _single_thread() -> None:
    torch.set_num_threads(1)
