"""params.yaml -> validated, typed configuration. Every user error is one line naming its key.

Layout (see params.yaml): `suite` picks the active suite; `suites.<s>` lists its `seeds`,
`datasets`, `experiments` and `training` overrides (applied to every experiment's `training`
block, so the default suite is the paper's grid shrunk to run offline in minutes);
`datasets`, `partitions`, `experiments` and `algorithms` are name -> settings maps; `grid`
has one group per paper (`grid.<group>.experiments` x `grid.<group>.algorithms`), each a
`train_<group>` matrix stage in dvc.yaml. An experiment's `algorithm_options` set a
hyperparameter for every algorithm of its cells that has it (e.g. pFedMe's and pFedKM's
`personal_lr`, which the papers tune per dataset). A suite's optional `skip` maps an
experiment to algorithms whose cells it leaves out (they write `skipped.json` like cells of
experiments outside the suite), e.g. a costly baseline in the small default suite.
"""

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from clusterfl.algorithms import ALGORITHMS, FederatedAlgorithm, Schedule
from clusterfl.data import DATA_SOURCES
from clusterfl.errors import UserError, unknown_name
from clusterfl.models import MODELS
from clusterfl.options import build_options
from clusterfl.partition import SCHEMES

SECTIONS = ("suite", "suites", "datasets", "partitions", "experiments", "algorithms", "grid")


@dataclass(frozen=True)
class Experiment:
    """One row of a paper's table: a partition, a model and a training schedule."""

    name: str
    partition: str
    model: str
    model_options: dict[str, Any]
    schedule: Schedule
    title: str
    algorithm_options: dict[str, Any]


@dataclass(frozen=True)
class AlgorithmConfig:
    name: str
    method: str
    cls: type[FederatedAlgorithm]
    hyper: Any


def _mapping(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise UserError(f"{key}: expected a mapping, got {type(value).__name__}")
    return dict(value)


def _names(value: Any, key: str, allowed: Mapping[str, Any]) -> list[str]:
    if not isinstance(value, list):
        raise UserError(f"{key}: expected a list of names")
    for name in value:
        if name not in allowed:
            raise unknown_name(key, name, list(allowed))
    return list(value)


class Params:
    """The parsed params.yaml. Construction validates everything the active suite uses."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        raw = _mapping(raw, "params.yaml")
        for section in SECTIONS:
            if section not in raw:
                raise UserError(f"params.yaml: missing top-level key {section!r}")
        self.raw = raw
        self.suites = _mapping(raw["suites"], "suites")
        self.suite = raw["suite"]
        if self.suite not in self.suites:
            raise unknown_name("suite", self.suite, list(self.suites))
        self.datasets = _mapping(raw["datasets"], "datasets")
        self.partitions = _mapping(raw["partitions"], "partitions")
        self.experiments = _mapping(raw["experiments"], "experiments")
        self.algorithms = _mapping(raw["algorithms"], "algorithms")
        self.grid: dict[str, tuple[list[str], list[str]]] = {}
        for group, cells in _mapping(raw["grid"], "grid").items():
            cells = _mapping(cells, f"grid.{group}")
            self.grid[group] = (
                _names(cells.get("experiments"), f"grid.{group}.experiments", self.experiments),
                _names(cells.get("algorithms"), f"grid.{group}.algorithms", self.algorithms),
            )
        self._validate_entries()
        for name in self.suites:
            self._validate_suite(name)

    def _validate_entries(self) -> None:
        """Check every entry's names and options now, before any stage writes anything."""
        for name in self.datasets:
            source, options = self.dataset(name)
            build_options(DATA_SOURCES.get(source).options, options, f"datasets.{name}")
        for name in self.partitions:
            entry = self.partition(name)
            scheme = SCHEMES.get(entry.pop("scheme"))
            entry.pop("dataset")
            build_options(scheme.options, entry, f"partitions.{name}")
        for name in self.experiments:
            self.experiment(name)
        for name in self.algorithms:
            self.algorithm(name)

    def _validate_suite(self, name: str) -> None:
        key = f"suites.{name}"
        suite = _mapping(self.suites[name], key)
        seeds = suite.get("seeds")
        if not (isinstance(seeds, list) and seeds and all(isinstance(s, int) for s in seeds)):
            raise UserError(f"{key}.seeds: expected a non-empty list of integers")
        datasets = _names(suite.get("datasets"), f"{key}.datasets", self.datasets)
        for exp in _names(suite.get("experiments"), f"{key}.experiments", self.experiments):
            experiment = self.experiment(exp, suite=name)
            dataset = self.partition(experiment.partition)["dataset"]
            if dataset not in datasets:
                raise UserError(
                    f"{key}.datasets: experiment {exp!r} needs dataset {dataset!r}; add it"
                )
        for experiments, algorithms in self.grid.values():
            for exp in experiments:
                for alg in algorithms:
                    self.algorithm(alg, experiment=exp)
        for exp, algs in _mapping(suite.get("skip") or {}, f"{key}.skip").items():
            _names([exp], f"{key}.skip", self.experiments)
            _names(algs, f"{key}.skip.{exp}", self.algorithms)

    def cells(self) -> list[tuple[str, str]]:
        """Every (experiment, algorithm) cell of every grid group, in params order."""
        return list(dict.fromkeys(
            (exp, alg) for exps, algs in self.grid.values() for exp in exps for alg in algs))

    # -- the active suite -------------------------------------------------------------------
    @property
    def seeds(self) -> list[int]:
        return list(self.suites[self.suite]["seeds"])

    def dataset_in_suite(self, name: str) -> bool:
        return name in self.suites[self.suite]["datasets"]

    def partition_in_suite(self, name: str) -> bool:
        return self.dataset_in_suite(self.partition(name)["dataset"])

    def experiment_in_suite(self, name: str) -> bool:
        return name in self.suites[self.suite]["experiments"]

    def cell_in_suite(self, experiment: str, algorithm: str) -> bool:
        """The experiment is in the active suite and the suite does not `skip` this cell."""
        skip = self.suites[self.suite].get("skip") or {}
        return self.experiment_in_suite(experiment) and algorithm not in skip.get(experiment, [])

    # -- entries ------------------------------------------------------------------------------
    def dataset(self, name: str) -> tuple[str, dict[str, Any]]:
        """(source name, its options) of dataset `name`."""
        if name not in self.datasets:
            raise unknown_name("dataset", name, list(self.datasets))
        entry = _mapping(self.datasets[name], f"datasets.{name}")
        source = entry.pop("source", None)
        DATA_SOURCES.get(str(source), f"datasets.{name}.source")
        return str(source), entry

    def partition(self, name: str) -> dict[str, Any]:
        if name not in self.partitions:
            raise unknown_name("partition", name, list(self.partitions))
        key = f"partitions.{name}"
        entry = _mapping(self.partitions[name], key)
        if entry.get("dataset") not in self.datasets:
            raise unknown_name(f"{key}.dataset", entry.get("dataset"), list(self.datasets))
        SCHEMES.get(str(entry.get("scheme")), f"{key}.scheme")
        return entry

    def experiment(self, name: str, suite: str | None = None) -> Experiment:
        if name not in self.experiments:
            raise unknown_name("experiment", name, list(self.experiments))
        key = f"experiments.{name}"
        entry = _mapping(self.experiments[name], key)
        for required in ("partition", "model", "training"):
            if required not in entry:
                raise UserError(f"{key}.{required}: missing")
        if entry["partition"] not in self.partitions:
            raise unknown_name(f"{key}.partition", entry["partition"], list(self.partitions))
        MODELS.get(str(entry["model"]), f"{key}.model")
        overrides = _mapping(self.suites[suite or self.suite].get("training") or {}, "training")
        training = {**_mapping(entry["training"], f"{key}.training"), **overrides}
        schedule = build_options(Schedule, training, f"{key}.training")
        options = _mapping(entry.get("algorithm_options") or {}, f"{key}.algorithm_options")
        known = {f.name for _, cls in ALGORITHMS for f in dataclasses.fields(cls.Hyper)}
        for option in options:
            if option not in known:
                raise unknown_name(f"{key}.algorithm_options", option, sorted(known))
        return Experiment(
            name=name,
            partition=str(entry["partition"]),
            model=str(entry["model"]),
            model_options=_mapping(entry.get("model_options") or {}, f"{key}.model_options"),
            schedule=schedule,
            title=str(entry.get("title", name)),
            algorithm_options=options,
        )

    def algorithm(self, name: str, experiment: str | None = None) -> AlgorithmConfig:
        """Algorithm `name`, with `experiment`'s `algorithm_options` applied where they fit."""
        if name not in self.algorithms:
            raise unknown_name("algorithm", name, list(self.algorithms))
        key = f"algorithms.{name}"
        entry = _mapping(self.algorithms[name], key)
        method = entry.pop("method", None)
        cls = ALGORITHMS.get(str(method), f"{key}.method")
        if experiment is not None:
            fields = {f.name for f in dataclasses.fields(cls.Hyper)}
            options = self.experiment(experiment).algorithm_options
            entry |= {k: v for k, v in options.items() if k in fields}
            key = f"{key} (with experiments.{experiment}.algorithm_options)"
        return AlgorithmConfig(name, str(method), cls, build_options(cls.Hyper, entry, key))

    @property
    def tracking(self) -> dict[str, Any]:
        return _mapping(self.raw.get("tracking") or {}, "tracking")


def load_params(path: Path = Path("params.yaml")) -> Params:
    """Read and validate `path`; a missing file or malformed YAML is a one-line UserError."""
    try:
        text = path.read_text()
    except OSError as err:
        raise UserError(f"{path}: cannot read ({err.strerror})") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"{path}: not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    return Params(raw)
