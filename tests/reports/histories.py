"""Test helpers: seed histories written as the round loop writes them, and a stand-in for
the loaded suite with just what the report stage reads (`papers`, `suite_cells()`,
`experiment(name).title`, what its header says: seeds, rounds, data) plus what P2's report
reads (`.partition`, `algorithm().method`)."""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from clusterfl.core.io import content_sha256
from clusterfl.papers import Paper
from clusterfl.training.history import RunHistory


def write_accuracy_run(results: Path, exp: str, alg: str, seed: int, accs: Sequence[float],
                       clusters: Sequence[Sequence[int]] | None = None,
                       ari: Sequence[float] | None = None) -> None:
    """A classification run: accuracy recorded as a fraction, loss, optional assignments."""
    h = RunHistory()
    for r, acc in enumerate(accs, start=1):
        record = {"round": r, "test_acc": acc, "test_loss": 1.0, "train_loss": 2.0 / r}
        if ari is not None:
            record["ari"] = ari[r - 1]
        h.append(record, {"cluster": clusters[r - 1]} if clusters else None)
    h.write(results / exp / alg / f"seed{seed}")


def declare_primary(seed_dir: Path, name: str) -> None:
    """Add the top-level `"primary"` the round loop writes into a history.json."""
    path = seed_dir / "history.json"
    data = json.loads(path.read_text()) | {"primary": name}
    data.pop("checksum")
    path.write_text(json.dumps(data | {"checksum": content_sha256(data)}))


@dataclass
class StandInSuite:
    papers: dict[str, Paper]
    cells: list[tuple[str, str, str]]  # (paper, experiment, algorithm)
    partitions: dict[str, str] = field(default_factory=dict)  # experiment -> partition
    methods: dict[str, str] = field(default_factory=dict)  # algorithm -> method
    suite: str = "stand-in"
    # what the report's header says of the suite (`reports.context`)
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    rounds: int = 2  # every experiment's, after the suite's override
    own_rounds: int | None = None  # every experiment's own `training.rounds`
    lr: float = 0.005  # every experiment's learning rate
    file: Path = Path("suites/stand-in/params.yaml")

    def suite_cells(self) -> list[tuple[str, str, str]]:
        return list(self.cells)

    @property
    def suite_raw(self) -> dict:
        return {"training": {"rounds": self.rounds}}

    @property
    def experiments(self) -> dict:
        own = {} if self.own_rounds is None else {"training": {"rounds": self.own_rounds}}
        return {e: own for _, e, _ in self.cells}

    def experiment(self, name: str) -> SimpleNamespace:
        return SimpleNamespace(title=f"title of {name}", partition=self.partitions.get(name),
                               schedule=SimpleNamespace(rounds=self.rounds, lr=self.lr))

    def partition(self, name: str | None) -> dict:
        return {"dataset": "digits"}

    def dataset(self, name: str) -> tuple[str, dict]:
        return "digits", {}

    def algorithm(self, name: str) -> SimpleNamespace:
        return SimpleNamespace(method=self.methods.get(name, name))
