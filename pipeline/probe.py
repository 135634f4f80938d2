"""A cell's seconds per round on this machine, measured by a short run (`clusterfl plan`).

The suite's first seed of the cell trains `PROBE_ROUNDS` rounds with the suite's params,
without tracking, checkpoints or results (the round loop alone, `execution.SeedJob`), in a
temporary directory. Readings:
- the cost of a round is the probe's last round: round 1 also pays one-off costs (first
  allocations, caches, lazy imports), so it would overstate every later round; a cell whose
  rounds differ in cost (FedCAvg's schedule, a learning-rate search every round) is estimated
  from its first rounds all the same;
- an algorithm that runs fewer rounds than the probe asked (P5's K-means++ is one call, its
  run one round) is planned at the rounds it ran, not the schedule's (`rounds_run`);
- the data are the suite's own files where `dvc repro` has made them (data/<suite>/), else
  built in the temporary directory by the download and partition stages' own functions, once
  per dataset and partition for all the cells of one plan;
- threads: those a seed gets when `--jobs` runs N seeds at once (cores / N, as `clusterfl
  train --jobs` gives each worker), or CLUSTERFL_THREADS, or torch's default for one job;
- results are cached in logs/<suite>/probes.json (never a DVC out), keyed by what shapes the
  cost: the cell's resolved params (`train.run_params`), its dataset and partition entries,
  the threads and the probe's rounds. A code change does not re-probe: delete the file.
"""

import dataclasses
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from clusterfl.core.io import atomic_write_json
from clusterfl.core.options import count
from clusterfl.data import build_dataset, load_dataset, save_dataset
from clusterfl.engine.threads import configure_threads, split_threads
from clusterfl.partition import save_partition
from clusterfl.run.config import VALIDATION_KEY, SuiteConfig
from clusterfl.run.execution import SeedJob
from pipeline.common import SuitePaths
from pipeline.partition import seed_partition
from pipeline.train import run_params

PROBE_ROUNDS = 2
CACHE_FILE = "probes.json"


def probe_threads(jobs: int) -> int | None:
    """The torch threads of one seed when `jobs` seeds run at once (None: torch's default)."""
    given = count("--threads", None, "CLUSTERFL_THREADS")
    return given or (split_threads(jobs) if jobs > 1 else None)


class Prober:
    """Probes the cells of one suite, with the data built once and a cache on disk."""

    def __init__(self, params: SuiteConfig, jobs: int = 1, root: Path = Path(".")) -> None:
        self.params, self.paths = params, SuitePaths(params.home, root)
        self.cache_file = root / "logs" / params.suite / CACHE_FILE
        try:
            self.cache: dict[str, Any] = json.loads(self.cache_file.read_text())
        except (OSError, ValueError):
            self.cache = {}
        self.threads = configure_threads(probe_threads(jobs))
        self.seed = params.seeds[0]
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def key(self, experiment: str, algorithm: str) -> str:
        exp = self.params.experiment(experiment)
        alg = self.params.algorithm(algorithm, experiment=experiment)
        entry = self.params.partition(exp.partition)
        shape = {"run": run_params(self.params.suite, exp, alg, [self.seed], entry),
                 "dataset": self.params.dataset(str(entry["dataset"])),
                 "threads": self.threads, "rounds": PROBE_ROUNDS}
        text = json.dumps(shape, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def cached(self, experiment: str, algorithm: str) -> float | None:
        """The seconds per round cached for the cell as it is now; None if none."""
        hit = self.cache.get(f"{experiment}-{algorithm}")
        if hit and hit.get("key") == self.key(experiment, algorithm):
            return float(hit["seconds_per_round"])
        return None

    def rounds_run(self, experiment: str, algorithm: str) -> int | None:
        """The rounds the cell's cached probe ran (fewer than asked: a one-round algorithm)."""
        hit = self.cache.get(f"{experiment}-{algorithm}")
        if hit and hit.get("key") == self.key(experiment, algorithm):
            return int(hit.get("rounds_run", hit["rounds"]))
        return None

    def measure(self, experiment: str, algorithm: str) -> float:
        """Train the probe's rounds now; the last round's seconds, cached."""
        exp = self.params.experiment(experiment)
        alg = self.params.algorithm(algorithm, experiment=experiment)
        rounds = min(PROBE_ROUNDS, exp.schedule.rounds)
        short = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule,
                                                                      rounds=rounds))
        dataset = self._dataset(str(self.params.partition(exp.partition)["dataset"]))
        job = SeedJob(short, alg, dataset, self._partition(exp.partition, dataset), self.seed)
        timings = job().timings
        seconds = float(timings[-1]["round_seconds"])
        self.cache[f"{experiment}-{algorithm}"] = {
            "key": self.key(experiment, algorithm), "seconds_per_round": seconds,
            "threads": self.threads, "rounds": rounds, "rounds_run": len(timings)}
        atomic_write_json(self.cache_file, self.cache)
        return seconds

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()

    @property
    def tmp(self) -> Path:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="clusterfl-probe-")
        return Path(self._tmp.name)

    def _dataset(self, name: str) -> Path:
        path = self.paths.dataset_file(name)
        if path.exists():
            return path
        path = self.tmp / "raw" / name / "dataset.npz"
        if not path.exists():
            source, options = self.params.dataset(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            save_dataset(build_dataset(source, options, f"datasets.{name}"), path)
        return path

    def _partition(self, name: str, dataset: Path) -> Path:
        path = self.paths.partition_file(name, self.seed)
        if path.exists():
            return path
        path = self.tmp / "partitions" / name / f"seed{self.seed}.npz"
        if not path.exists():
            entry = self.params.partition(name)
            entry.pop("dataset")
            scheme, fraction = str(entry.pop("scheme")), entry.pop(VALIDATION_KEY, None)
            part, _ = seed_partition(load_dataset(dataset), scheme, entry, fraction, self.seed,
                                     f"partitions.{name}")
            path.parent.mkdir(parents=True, exist_ok=True)
            save_partition(part, path)
        return path
