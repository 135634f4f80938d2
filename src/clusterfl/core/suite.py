"""A suite as a grid: experiments x algorithms, expanded into the cells DVC runs.

A suite file's `suite:` block says what to run, never the lists that follow from it:

    suite:
      name: benchmark_large
      extends: benchmark          # optional: another suite's name (suites/<name>/params.yaml)
      seeds: [0, 1, 2]
      training: {rounds: 100}     # overrides every experiment's training block
      grid:                       # each entry: every experiment x every algorithm
        - experiments: [bm_iid, bm_patho2]
          algorithms: [fedavg, ifca]
      partitions: [p4_fmnist_rot] # optional: partitions to prepare beyond the cells' own

The cells (`<experiment>-<algorithm>`, in grid order), the partitions they need and the
datasets those need are derived (`expand`), and `clusterfl render` writes them into the
suite's dvc.yaml for DVC's `foreach`. `extends` reads the parent's block first: the child's
keys replace the parent's, except `grid`, `partitions` and `plugins`, which add to the
parent's, and `algorithms` (entries of the suite's own, e.g. a user's method), whose entries
add to the parent's (so a suite that extends the benchmark with one more algorithm names only
that algorithm).

A suite that only adds cells to the one it extends (its block sets nothing but `name`,
`extends`, `grid`, `plugins`, `algorithms`) changes nothing about the parent's cells, so it
shares the parent's data and results (`home`): its pipeline trains only its own cells and
its report ranks them beside the parent's, which are trained (or pulled) once.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterfl.core.errors import UserError, check_keys
from clusterfl.core.io import mapping, read_yaml, shown

GRID_KEYS = ("experiments", "algorithms")
ADDITIVE = ("grid", "partitions", "plugins")  # a child's entries add to its parent's
# the keys of a suite that only adds cells: it shares its parent's data and results
ADDS_CELLS_ONLY = frozenset({"name", "extends", "grid", "plugins", "algorithms"})


@dataclass(frozen=True)
class Cell:
    paper: str
    experiment: str
    algorithm: str

    @property
    def name(self) -> str:
        return f"{self.experiment}-{self.algorithm}"


def merge(parent: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    """The child's suite block over its parent's: keys replace, `grid`/`partitions`/`plugins`
    add, and so do the entries of `algorithms`."""
    merged = {k: v for k, v in parent.items() if k != "name"}
    for key, value in child.items():
        if key == "extends":
            continue
        if key in ADDITIVE:
            merged[key] = [*parent.get(key, []), *value]
        elif key == "algorithms" and isinstance(value, Mapping):
            merged[key] = {**parent.get(key, {}), **value}
        else:
            merged[key] = value
    return merged


def home(chain: list[tuple[Path, dict[str, Any]]]) -> tuple[str, int]:
    """(the suite whose data and results directories chain[0] uses, how many of the merged
    grid's entries it inherits: 0 for a suite that is its own home). A suite that only adds
    cells (`ADDS_CELLS_ONLY`) to the one it extends uses that one's home, and every cell of
    its ancestors is theirs to train (their pipelines write those outputs); any other suite
    is its own home."""
    for i, (_, block) in enumerate(chain):
        if "extends" not in block or not set(block) <= ADDS_CELLS_ONLY:
            inherited = sum(len(b.get("grid") or []) for _, b in chain[1:]) if i else 0
            return str(block.get("name", "")), inherited
    raise AssertionError("a suite chain ends in a suite that extends none")


def _list_of_names(value: Any, key: str) -> list[str]:
    if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
        raise UserError(f"{key}: expected a non-empty list of names")
    return list(value)


def grid_cells(grid: Any, key: str, paper_of: Mapping[str, str],
               algorithms_of: Mapping[str, Iterable[str]],
               unknown: Callable[[str, str, list[str]], UserError]) -> list[Cell]:
    """Every experiment x algorithm of each grid entry, in order. An experiment is looked up
    in `paper_of` (experiment -> paper), an algorithm in its paper's `algorithms_of`; a cell
    named twice is an error."""
    if not isinstance(grid, list):
        raise UserError(f"{key}: expected a list of {{experiments: [...], algorithms: [...]}}")
    cells: dict[str, Cell] = {}
    for i, entry in enumerate(grid):
        where = f"{key}[{i}]"
        if not isinstance(entry, Mapping):
            raise UserError(f"{where}: expected a mapping with keys experiments, algorithms")
        check_keys(entry, GRID_KEYS, where)
        for field in GRID_KEYS:
            if field not in entry:
                raise UserError(f"{where}.{field}: missing")
        experiments = _list_of_names(entry["experiments"], f"{where}.experiments")
        algorithms = _list_of_names(entry["algorithms"], f"{where}.algorithms")
        for experiment in experiments:
            if experiment not in paper_of:
                raise unknown(f"{where}.experiments", experiment, list(paper_of))
            for algorithm in algorithms:
                known = list(algorithms_of[paper_of[experiment]])
                if algorithm not in known:
                    raise unknown(f"{where}.algorithms (paper {paper_of[experiment]})",
                                  algorithm, known)
                cell = Cell(paper_of[experiment], experiment, algorithm)
                if cell.name in cells:
                    raise UserError(f"{where}: cell {cell.name!r} is already in the grid")
                cells[cell.name] = cell
    return list(cells.values())


def needed(cells: list[Cell], extra_partitions: list[str], partition_of: Callable[[str], str],
           dataset_of: Callable[[str], str]) -> tuple[list[str], list[str]]:
    """(datasets, partitions) the suite prepares: the cells' partitions (first use first),
    then the extra ones, and the datasets of all of them, without repeats."""
    partitions = list(dict.fromkeys([*(partition_of(c.experiment) for c in cells),
                                     *extra_partitions]))
    datasets = list(dict.fromkeys(dataset_of(p) for p in partitions))
    return datasets, partitions


def suite_chain(path: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(file, its `suite:` block) of suite `path` and of each suite it `extends`, nearest
    first."""
    chain: list[tuple[Path, dict[str, Any]]] = []
    while True:
        raw = read_yaml(path)
        if "suite" not in raw:
            raise UserError(f"{path}: missing top-level key 'suite'")
        chain.append((path, mapping(raw["suite"], f"{path}:suite")))
        check_folder_name(path, chain[-1][1].get("name"))
        parent = chain[-1][1].get("extends")
        if parent is None:
            return chain
        where = f"{path}:suite.extends"
        path = suite_file(str(parent), suite_root(path))
        if not path.exists():
            raise UserError(f"{where}: no suite {parent!r} ({shown(path)} does not exist)")
        if path.resolve() in {p.resolve() for p, _ in chain}:
            raise UserError(f"{where}: suite {parent!r} extends itself")


def folder_name(path: Path) -> str | None:
    """The name suite file `path` must have: its folder's for suites/<name>/params.yaml (the
    name `--suite` finds it by and the folders its data, results and reports go to), None for
    any other file (the root params.yaml is `default`; a file of your own names itself)."""
    where = path.resolve()
    if where.name == "params.yaml" and where.parent.parent.name == "suites":
        return where.parent.name
    return None


def check_folder_name(path: Path, name: Any) -> None:
    """A one-line error when suite file `path` lies in suites/<folder>/ and names another
    suite: a copied folder whose `suite.name` was not changed would run (and overwrite) the
    other suite's data, results and reports under DVC."""
    folder = folder_name(path)
    if folder is not None and name is not None and name != folder:
        raise UserError(f"{path}:suite.name: {name!r} is not its folder's name {folder!r} (a "
                        f"copied suite folder keeps the name it was copied from: the commands "
                        f"would train and overwrite suite {name!r}); set name: {folder}")


def _merged_block(path: Path) -> dict[str, Any]:
    block: dict[str, Any] = {}
    for _, own in reversed(suite_chain(path)):
        block = merge(block, own)
    return block


def grid_experiments(path: Path) -> list[str]:
    """The experiments suite `path`'s grid names (its own and the suites it extends), first
    use first, read without loading any paper (for listings)."""
    return list(dict.fromkeys(str(e) for entry in _merged_block(path).get("grid") or []
                              if isinstance(entry, Mapping)
                              for e in entry.get("experiments") or []))


def trained_pairs(path: Path) -> list[tuple[str, str]]:
    """(experiment, algorithm) of every cell suite `path` trains (its grid's, with those of
    the suites it extends unless it only adds cells to them: `home`), read without loading
    any paper (for listings)."""
    _, inherited = home(suite_chain(path))
    grid = (_merged_block(path).get("grid") or [])[inherited:]
    return list(dict.fromkeys((str(e), str(a)) for entry in grid if isinstance(entry, Mapping)
                              for e in entry.get("experiments") or []
                              for a in entry.get("algorithms") or []))


def suite_papers(path: Path) -> list[str]:
    """The paper modules suite `path` adds (`papers:`, its own and the suites it extends)."""
    return [str(m) for m in _merged_block(path).get("papers") or []]


def suite_root(path: Path) -> Path:
    """The repository root of suite file `path`: suites/<name>/params.yaml lies two levels
    below it, the default suite's params.yaml at it."""
    parent = path.resolve().parent
    return parent.parent.parent if parent.parent.name == "suites" else parent


def suite_file(name: str, root: Path = Path(".")) -> Path:
    """The params file of suite `name`: the root params.yaml for `default`."""
    return root / "params.yaml" if name == "default" else root / "suites" / name / "params.yaml"
