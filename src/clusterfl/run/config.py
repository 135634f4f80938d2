"""Params files -> validated, typed configuration. Every user error is one line naming its
file and key; params are closed (an unknown key is an error).

Three kinds of file, read together:
- a **suite file**: the root `params.yaml` (the default suite, what `dvc repro` runs) or
  `suites/<name>/params.yaml`. Its `suite:` block names the suite, its `seeds`, the
  `training` overrides applied to every experiment of the suite, the `grid` of
  experiments x algorithms it trains (`clusterfl.core.suite`: the cells, their partitions and
  datasets are derived), optional extra `partitions`, extra paper modules (`papers`) and
  the suite it `extends`; a benchmark suite adds `tuning` (`clusterfl.training.tuning`) and may
  override catalogue entries' options by name (`dataset_options`, `partition_options`);
- the **catalogue**, the root `params.yaml`: shared `datasets`, `partitions`, `tracking`,
  `checkpoints` (how often a seed writes a round checkpoint; shapes no number); any
  partition may carry `validation_fraction` (`clusterfl.partition.validation`);
- each **paper's** `params.yaml` (`clusterfl.papers`): its `experiments`, `algorithms` and
  named training `presets` (YAML anchors: `training: *table2`, `{<<: *table2, rounds: 200}`;
  DVC records the merged values, so a preset's change re-runs the cells that use it).
  Datasets and partitions are shared by papers (P2's Fashion-MNIST mixtures serve any
  soft-clustering method), so they stay in the one catalogue.
Experiment names are unique across papers; algorithm names are a paper's own (a cell's
algorithm is looked up in its paper). An experiment's `algorithm_options` set a
hyperparameter for every algorithm of its cells that has it (an option that no algorithm of
its paper or suite has is an error).

Every paper's params file is read (it is data), but a paper's code is imported only when
one of its experiments or algorithms is used: construction imports the papers of the
suite's cells (or those named in `load`: a train stage loads its cell's paper alone), so a
cell never runs code of a paper it does not belong to.
"""

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterfl.algorithms import ALGORITHMS, Schedule
from clusterfl.core.errors import UserError, check_keys, unknown_name
from clusterfl.core.io import mapping, read_yaml, shown
from clusterfl.core.options import build_options
from clusterfl.core.suite import Cell, grid_cells, home, merge, needed, suite_chain, suite_root
from clusterfl.data import DATA_SOURCES
from clusterfl.papers import BUILTIN, Paper, load_papers, load_plugins, paper_directory
from clusterfl.partition import SCHEMES
from clusterfl.training.loop import FederatedAlgorithm
from clusterfl.training.models import MODELS
from clusterfl.training.tuning import Tuning, parse_tuning

SUITE_KEYS = ("name", "extends", "seeds", "training", "grid", "partitions", "papers",
              "tuning", "dataset_options", "partition_options", "plugins", "algorithms")
VALIDATION_KEY = "validation_fraction"  # any partition: carve a validation split (benchmark)
CATALOGUE_KEYS = ("suite", "datasets", "partitions", "tracking", "checkpoints")
PAPER_KEYS = ("experiments", "algorithms", "presets")
EXPERIMENT_KEYS = ("title", "partition", "model", "model_options", "training",
                   "algorithm_options", "evaluators", "validation_fraction")


@dataclass(frozen=True)
class Experiment:
    """One row of a paper's table: a partition, what is measured, and (for neural
    algorithms) a model; the schedule has the suite's overrides applied."""

    name: str
    paper: str
    partition: str
    model: str | None
    model_options: dict[str, Any]
    schedule: Schedule
    title: str
    algorithm_options: dict[str, Any]
    evaluators: tuple[str, ...] | None  # None: each algorithm's default for the data
    # a share of each client's training data that replaces its test split (tuning runs,
    # `partition.validation`); None: the partition's own test split
    validation_fraction: float | None = None


@dataclass(frozen=True)
class AlgorithmConfig:
    name: str
    method: str
    cls: type[FederatedAlgorithm]
    hyper: Any


MAX_SEED = 2**32 - 1  # numpy's legacy generators (and scikit-learn's) take 0 .. 2**32 - 1


def check_seeds(seeds: Any, key: str) -> list[int]:
    """`suite.seeds`: a non-empty list of distinct integers in 0 .. 2**32 - 1 (a negative
    seed is no numpy seed; a repeated one trains the same run twice and reports its std as
    0). Anything else is a one-line error naming the entry."""
    if not (isinstance(seeds, list) and seeds):
        raise UserError(f"{key}: expected a non-empty list of integers (distinct, >= 0), "
                        f"got {seeds!r}")
    for i, seed in enumerate(seeds):
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise UserError(f"{key}[{i}]: expected an integer in 0 .. {MAX_SEED} (seeds are "
                            f"distinct non-negative integers), got {seed!r}")
        if seed in seeds[:i]:
            raise UserError(f"{key}[{i}]: seed {seed} is listed twice (seeds are distinct: "
                            "a repeated seed trains the same run again)")
    return list(seeds)


def _names(value: Any, key: str, allowed: Mapping[str, Any]) -> list[str]:
    if not isinstance(value, list):
        raise UserError(f"{key}: expected a list of names")
    for name in value:
        if name not in allowed:
            raise unknown_name(key, name, list(allowed))
    return list(value)



class SuiteConfig:
    """A suite with the catalogue and the papers it uses. Construction validates the suite,
    the catalogue and every paper it imports (`load`, default: the papers of its cells)."""

    def __init__(self, suite_file: Path, raw: Mapping[str, Any],
                 catalogue: Mapping[str, Any] | None = None,
                 paper_params: Mapping[str, Mapping[str, Any]] | None = None,
                 catalogue_file: Path | None = None,
                 load: Iterable[str] | None = None,
                 home: tuple[str, int] | None = None) -> None:
        """`raw`: the suite file's mapping, with any `extends` already merged
        (`load_params`); `catalogue`: the root params.yaml (read from `catalogue_file`) when
        `raw` is another suite's file; `paper_params`: papers' params as mappings instead of
        their files (tests); `load`: the paper keys to import now; `home`: the suite whose
        data and results this one uses and how many grid entries are its (`suite.home`;
        default: its own). Every error names the file the key was written in."""
        self.file = suite_file
        catalogue = self._read_suite(raw, catalogue, catalogue_file)
        extra = self._read_papers(catalogue, paper_params)
        self._validate_catalogue()
        self.tuning: Tuning | None = None  # the suite's `tuning` block, if it has one
        self.cells, self.suite_datasets, self.suite_partitions = self._validate_suite()
        # `home`: where this suite's data and results live; `own_cells`: what it trains there
        self.home, home_entries = home or (self.suite, 0)
        inherited = set(grid_cells((self.suite_raw.get("grid") or [])[:home_entries], "",
                                   self.paper_of, self._algorithms_of(), unknown_name))
        self.own_cells = [c for c in self.cells if c not in inherited]
        for key in dict.fromkeys([*extra, *(load if load is not None
                                             else (c.paper for c in self.cells))]):
            self.paper(key)
        for cell in self.cells:
            if cell.paper in self.papers:
                self.algorithm(cell.algorithm, experiment=cell.experiment)

    def _read_suite(self, raw: Mapping[str, Any], catalogue: Mapping[str, Any] | None,
                    catalogue_file: Path | None) -> Mapping[str, Any]:
        """The suite block's keys, name, training overrides and tracking settings checked,
        its plugin files run; returns the catalogue (the root params.yaml's mapping)."""
        where = str(self.file)
        check_keys(raw, CATALOGUE_KEYS if catalogue is None else ("suite",), f"{where}:")
        self.catalogue_file = (self.file if catalogue is None
                               else catalogue_file or Path("params.yaml"))
        cat = f"{self.catalogue_file}:"
        catalogue = raw if catalogue is None else catalogue
        if catalogue is not raw:
            check_keys(catalogue, CATALOGUE_KEYS, cat)
        if "suite" not in raw:
            raise UserError(f"{where}: missing top-level key 'suite'")
        self.suite_raw = mapping(raw["suite"], f"{where}:suite")
        if "cells" in self.suite_raw:
            raise UserError(f"{where}:suite.cells: a suite names a grid instead: grid: "
                            "[{experiments: [...], algorithms: [...]}] (clusterfl.core.suite)")
        check_keys(self.suite_raw, SUITE_KEYS, f"{where}:suite")
        self.suite = str(self.suite_raw.get("name", ""))
        if not self.suite:
            raise UserError(f"{where}:suite.name: missing")
        # the suite's overrides alone, so that an error in them names the suite's file
        build_options(Schedule, mapping(self.suite_raw.get("training") or {},
                                        f"{where}:suite.training"), f"{where}:suite.training")
        self.raw = catalogue
        check_keys(self.tracking, ("experiment",), f"{cat}tracking")
        experiment = self.tracking.get("experiment", "clusterfl")
        if not (isinstance(experiment, str) and experiment.strip()):
            raise UserError(f"{cat}tracking.experiment: expected the name of an MLflow "
                            f"experiment (a non-empty string; default: clusterfl), got "
                            f"{experiment!r}")
        load_plugins(self.suite_raw.get("plugins") or [], suite_root(self.file),
                     f"{where}:suite.plugins")
        return catalogue

    def _read_papers(self, catalogue: Mapping[str, Any],
                     paper_params: Mapping[str, Mapping[str, Any]] | None
                     ) -> dict[str, Paper]:
        """Every paper's params file read (not yet imported), the catalogue's datasets and
        partitions and the suite's own algorithm entries; returns the suite's own papers
        (`papers:`, imported now)."""
        where, cat = str(self.file), f"{self.catalogue_file}:"
        # the suite's own algorithm entries (a user's method), usable with any experiment
        self.suite_algorithms = mapping(self.suite_raw.get("algorithms") or {},
                                        f"{where}:suite.algorithms")
        extra = load_papers(self.suite_raw.get("papers", []))  # a suite's own: always imported
        self.modules = {m.rsplit(".", 1)[-1]: m for m in BUILTIN} | {
            key: paper.module for key, paper in extra.items()}
        self.papers: dict[str, Paper] = {}  # the imported ones, by key
        self.datasets = mapping(catalogue.get("datasets") or {}, f"{cat}datasets")
        self.partitions = mapping(catalogue.get("partitions") or {}, f"{cat}partitions")
        self.experiments: dict[str, dict[str, Any]] = {}
        self.paper_of: dict[str, str] = {}
        self.paper_file: dict[str, str] = {}  # paper -> its params file, as errors show it
        self.paper_params_file: dict[str, Path] = {}
        self.algorithms: dict[str, dict[str, dict[str, Any]]] = {}
        for key, module in self.modules.items():
            given = (paper_params or {}).get(key)
            directory = extra[key].directory if key in extra else paper_directory(module)
            self._add_paper(key, directory / "params.yaml", None if given is None else dict(given))
        for name in self.suite_algorithms:
            owners = [k for k, table in self.algorithms.items() if name in table]
            if owners:
                raise UserError(f"{where}:suite.algorithms.{name}: already an algorithm of "
                                f"paper {owners[0]!r}; name yours differently")
        return extra

    # -- reading ------------------------------------------------------------------------------
    def _add_paper(self, key: str, params_file: Path, raw: dict[str, Any] | None) -> None:
        path = shown(params_file)
        self.paper_file[key] = str(path)
        self.paper_params_file[key] = params_file.resolve()
        if raw is None:
            raw = read_yaml(path) if path.exists() else {}
        check_keys(raw, PAPER_KEYS, f"{path}:")
        for name, entry in mapping(raw.get("experiments") or {}, f"{path}:experiments").items():
            if name in self.experiments:
                raise UserError(f"{path}:experiments.{name}: already defined by paper "
                                f"{self.paper_of[name]!r}; experiment names are unique")
            if "-" in name:
                raise UserError(f"{path}:experiments.{name}: '-' separates experiment and "
                                "algorithm in cell names; use '_'")
            self.experiments[name] = mapping(entry, f"{path}:experiments.{name}")
            self.paper_of[name] = key
        self.algorithms[key] = mapping(raw.get("algorithms") or {}, f"{path}:algorithms")
        mapping(raw.get("presets") or {}, f"{path}:presets")  # anchors only, merged with <<

    def paper(self, key: str) -> Paper:
        """Paper `key`, imported (registering what it adds) and its entries validated on
        first use."""
        if key not in self.papers:
            if key not in self.modules:
                raise unknown_name("paper", key, list(self.modules))
            (paper,) = load_papers([self.modules[key]]).values()
            if paper.key != key:
                raise UserError(f"papers: module {self.modules[key]!r} defines key "
                                f"{paper.key!r}; the built-in paper's key is its module name")
            self.papers[key] = paper
            for name, owner in self.paper_of.items():
                if owner == key:
                    self.experiment(name)
            for name in self.algorithms[key]:
                self.algorithm(name, paper=key)
        return self.papers[key]

    def _validate_catalogue(self) -> None:
        """Check every dataset and partition entry now, before any stage writes anything."""
        cat = f"{self.catalogue_file}:"
        for name in self.datasets:
            source, options = self.dataset(name)
            cls = DATA_SOURCES.get(source).options
            check_keys(options, [*_fields(cls), "source"], f"{cat}datasets.{name}")
            build_options(cls, options, f"{cat}datasets.{name}")
        for name in self.partitions:
            entry = self.partition(name)
            cls = SCHEMES.get(entry.pop("scheme")).options
            entry.pop("dataset")
            fraction = entry.pop(VALIDATION_KEY, None)
            if fraction is not None and not (isinstance(fraction, float) and 0 < fraction < 1):
                raise UserError(f"{cat}partitions.{name}.{VALIDATION_KEY}: expected a number "
                                f"in (0, 1), got {fraction!r}")
            check_keys(entry, [*_fields(cls), "dataset", "scheme"], f"{cat}partitions.{name}")
            build_options(cls, entry, f"{cat}partitions.{name}")

    def _validate_suite(self) -> tuple[list[Cell], list[str], list[str]]:
        s, key = self.suite_raw, f"{self.file}:suite"
        check_seeds(s.get("seeds"), f"{key}.seeds")
        cells = grid_cells(s.get("grid") or [], f"{key}.grid", self.paper_of,
                           self._algorithms_of(), unknown_name)
        for cell in cells:
            partition = self.experiments[cell.experiment].get("partition")
            if partition not in self.partitions:
                where = f"{self.paper_file[cell.paper]}:experiments.{cell.experiment}.partition"
                raise unknown_name(where, partition, list(self.partitions))
        extra = _names(s.get("partitions", []), f"{key}.partitions", self.partitions)
        datasets, partitions = needed(
            cells, extra, lambda e: str(self.experiments[e]["partition"]),
            lambda p: str(self.partition(p)["dataset"]))
        mapping(s.get("training") or {}, f"{key}.training")
        if "tuning" in s:
            self.tuning = parse_tuning(mapping(s["tuning"], f"{key}.tuning"), f"{key}.tuning")
        for name, options in mapping(s.get("dataset_options") or {},
                                     f"{key}.dataset_options").items():
            if name not in datasets:
                raise unknown_name(f"{key}.dataset_options", name, datasets)
            source, entry = self.dataset(name)
            mapping(options, f"{key}.dataset_options.{name}")
            build_options(DATA_SOURCES.get(source).options, entry,
                          f"{key}.dataset_options.{name}")
        for name in mapping(s.get("partition_options") or {}, f"{key}.partition_options"):
            if name not in partitions:
                raise unknown_name(f"{key}.partition_options", name, partitions)
        return cells, datasets, partitions

    def _algorithms_of(self) -> dict[str, list[str]]:
        """paper -> the algorithm names its experiments may use in this suite."""
        return {k: [*table, *self.suite_algorithms] for k, table in self.algorithms.items()}

    # -- the suite ----------------------------------------------------------------------------
    @property
    def seeds(self) -> list[int]:
        return list(self.suite_raw["seeds"])

    def suite_cells(self) -> list[tuple[str, str, str]]:
        """(paper, experiment, algorithm) of every cell the suite trains, in file order."""
        return [(c.paper, c.experiment, c.algorithm) for c in self.cells]

    def paper_cells(self, paper: str | None) -> list[Cell]:
        """The cells of paper `paper` (all of them for None); a paper with no cell in the
        suite is an error naming the suite's papers."""
        if paper is None:
            return list(self.cells)
        papers = list(dict.fromkeys(c.paper for c in self.cells))
        if paper not in papers:
            raise unknown_name(f"--paper (papers of suite {self.suite!r})", paper, papers)
        return [c for c in self.cells if c.paper == paper]

    def paper_file_from_root(self, key: str, root: Path) -> str:
        """Paper `key`'s params file relative to the repository root (DVC's params path)."""
        return self.paper_params_file[key].relative_to(root.resolve()).as_posix()

    # -- entries ------------------------------------------------------------------------------
    def dataset(self, name: str) -> tuple[str, dict[str, Any]]:
        """(source name, its options) of dataset `name`."""
        if name not in self.datasets:
            raise unknown_name("dataset", name, list(self.datasets))
        key = f"{self.catalogue_file}:datasets.{name}"
        entry = mapping(self.datasets[name], key)
        entry |= mapping((self.suite_raw.get("dataset_options") or {}).get(name) or {}, key)
        source = entry.pop("source", None)
        DATA_SOURCES.get(str(source), f"{key}.source")
        return str(source), entry

    def partition(self, name: str) -> dict[str, Any]:
        if name not in self.partitions:
            raise unknown_name("partition", name, list(self.partitions))
        key = f"{self.catalogue_file}:partitions.{name}"
        entry = mapping(self.partitions[name], key)
        entry |= mapping((self.suite_raw.get("partition_options") or {}).get(name) or {}, key)
        if entry.get("dataset") not in self.datasets:
            raise unknown_name(f"{key}.dataset", entry.get("dataset"), list(self.datasets))
        SCHEMES.get(str(entry.get("scheme")), f"{key}.scheme")
        return entry

    def training(self, block: Any, key: str) -> dict[str, Any]:
        """An experiment's training block with the suite's overrides applied."""
        overrides = mapping(self.suite_raw.get("training") or {}, f"{self.file}:suite.training")
        return {**mapping(block or {}, key), **overrides}

    def experiment(self, name: str) -> Experiment:
        if name not in self.experiments:
            raise unknown_name("experiment", name, list(self.experiments))
        paper = self.paper_of[name]
        self.paper(paper)
        key = f"{self.paper_file[paper]}:experiments.{name}"
        entry = dict(self.experiments[name])
        check_keys(entry, EXPERIMENT_KEYS, key)
        if "partition" not in entry:
            raise UserError(f"{key}.partition: missing")
        if entry["partition"] not in self.partitions:
            raise unknown_name(f"{key}.partition", entry["partition"], list(self.partitions))
        model = entry.get("model")
        model_options = mapping(entry.get("model_options") or {}, f"{key}.model_options")
        if model is not None:
            spec = MODELS.get(str(model), f"{key}.model")
            build_options(spec.options, model_options, f"{key}.model_options")
        elif model_options:
            raise UserError(f"{key}.model_options: set without a model")
        training = self.training(entry.get("training"), f"{key}.training")
        schedule = build_options(Schedule, training, f"{key}.training")
        if model is not None:
            schedule.validate_neural(f"{key}.training")
        options = mapping(entry.get("algorithm_options") or {}, f"{key}.algorithm_options")
        # the hyperparameters of the algorithms its cells may use (its paper's, the suite's)
        entries = [*self.algorithms[paper].values(), *self.suite_algorithms.values()]
        methods = {str(e.get("method")) for e in entries if isinstance(e, Mapping)}
        known = {f.name for m in methods if m in ALGORITHMS
                 for f in dataclasses.fields(ALGORITHMS.get(m).Hyper)}
        for option in options:
            if option not in known:
                raise unknown_name(f"{key}.algorithm_options", option, sorted(known))
        evaluators = entry.get("evaluators")
        if evaluators is not None:
            from clusterfl.evaluators import EVALUATORS

            _names(evaluators, f"{key}.evaluators", dict(EVALUATORS))
        validation = entry.get("validation_fraction")
        if validation is not None and (not isinstance(validation, float)
                                       or not 0.0 < validation < 1.0):
            raise UserError(f"{key}.validation_fraction: expected a number in (0, 1) (a share "
                            f"of each client's training data), got {validation!r}")
        return Experiment(
            name=name, paper=paper, partition=str(entry["partition"]),
            model=None if model is None else str(model),
            model_options=model_options,
            schedule=schedule, title=str(entry.get("title", name)),
            algorithm_options=options,
            evaluators=None if evaluators is None else tuple(evaluators),
            validation_fraction=validation,
        )

    def algorithm(self, name: str, experiment: str | None = None,
                  paper: str | None = None) -> AlgorithmConfig:
        """Algorithm `name` of `paper` (default: `experiment`'s paper), with `experiment`'s
        `algorithm_options` applied where they fit."""
        paper = paper or (self.paper_of.get(experiment) if experiment else None)
        if name in self.suite_algorithms:  # the suite's own: any experiment may use it
            return self._configure(name, dict(mapping(
                self.suite_algorithms[name], f"{self.file}:suite.algorithms.{name}")),
                f"{self.file}:suite.algorithms.{name}", experiment)
        if paper is None:  # the one paper that defines it
            owners = [k for k, algorithms in self.algorithms.items() if name in algorithms]
            if len(owners) != 1:
                raise UserError(f"algorithm {name!r}: defined by papers {owners}; name one")
            paper = owners[0]
        if paper not in self.algorithms:
            raise unknown_name("paper", paper, list(self.algorithms))
        self.paper(paper)
        key = f"{self.paper_file[paper]}:algorithms.{name}"
        if name not in self.algorithms[paper]:
            raise unknown_name(f"algorithm (paper {paper})", name, list(self.algorithms[paper]))
        return self._configure(name, mapping(self.algorithms[paper][name], key), key,
                               experiment)

    def _configure(self, name: str, entry: dict[str, Any], key: str,
                   experiment: str | None) -> AlgorithmConfig:
        """Algorithm entry `entry` (written at `key`) built, with `experiment`'s
        `algorithm_options` applied where they fit."""
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
        return mapping(self.raw.get("tracking") or {}, f"{self.catalogue_file}:tracking")

    @property
    def checkpoint_every(self) -> int:
        """`checkpoints.every`: rounds between a seed's checkpoints (0: only on a signal)."""
        entry = mapping(self.raw.get("checkpoints") or {}, "params.yaml:checkpoints")
        check_keys(entry, ("every",), "params.yaml:checkpoints")
        every = entry.get("every", 10)
        if not isinstance(every, int) or isinstance(every, bool) or every < 0:
            raise UserError(f"params.yaml:checkpoints.every: expected an integer >= 0 (0: "
                            f"only when SIGTERM/SIGINT stops a run), got {every!r}")
        return every


def load_params(path: Path = Path("params.yaml"), load: Iterable[str] | None = None
                ) -> SuiteConfig:
    """Read and validate suite file `path`, with the suites it `extends` merged in and the
    catalogue (the root params.yaml) beside it; `load`: the papers to import (default: the
    papers of the suite's cells)."""
    chain = suite_chain(path)
    suite: dict[str, Any] = {}
    for _, block in reversed(chain):  # the farthest parent first, `path` last
        suite = {**merge(suite, block), "name": block.get("name")}
    raw = {**read_yaml(path), "suite": suite}
    catalogue_path = suite_root(path) / "params.yaml"
    if catalogue_path.resolve() == path.resolve() or {"datasets", "partitions"} & set(raw):
        return SuiteConfig(path, raw, load=load)  # the root file or a copy: its own catalogue
    return SuiteConfig(path, raw, read_yaml(catalogue_path),
                       catalogue_file=shown(catalogue_path), load=load, home=home(chain))


def _fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]
