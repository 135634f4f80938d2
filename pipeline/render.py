"""`clusterfl render`: each suite's dvc.yaml, written from its grid and the import graph.

One template (below) serves every suite: download -> partition -> [tune] -> train -> report.
What DVC's `foreach` iterates over (datasets, partitions, cells) is derived from the suite's
grid (`clusterfl.core.suite`), and each stage's code deps from what its process can import
(`pipeline.imports`): a train cell depends on the shared core, on its own paper's
`__init__.py` and `training/` and on its own algorithm's file (`code`: the algorithm
registry imports a method only when a cell names it, so editing FedRep's file re-runs
FedRep's cells alone), never on report code or another paper. The data and report stages,
which take seconds, depend on whole packages (`Code.paths(coarse=True)`): each shared package
they reach, and each paper's package whole, so a paper's edit still re-runs its own report
alone. A suite whose cells belong to several papers also gets a report stage per paper,
`report_<paper>` (`clusterfl report --paper`, into reports/<suite>/<paper>/), that depends on
that paper's cells alone: `dvc repro <dvc.yaml>:report_p5` trains the suite's P5
cells and no other, into the suite's own results and lock (so a later `dvc repro` of the
whole suite does not train them again). Params are tracked by key in every file of the
suite's `extends` chain, so a change to one algorithm's entry re-runs its cells only. The
committed files are checked against a fresh rendering (`render --check`,
tests/test_render.py), so they are never typed by hand, and the report stage refuses a stale
one.

The files stay readable: a cell's loop item keeps only what its stages cannot derive
(`compact_items`: a value the same for every cell is written into the template, a path of
the cell's paper as `src/clusterfl/papers/${item.paper}/...`), cells that are a whole
experiments x algorithms grid are a DVC `matrix` (stage names `train@<experiment>-
<algorithm>` as before), other cells a `foreach` of one line each, and the one YAML anchor
is the named `&cells` that tune and train share. DVC expands each file to exactly the
stages of one full item per cell (tests/test_render.py), so params and deps stay exact.
"""

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import product
from pathlib import Path
from typing import Any

import yaml

from clusterfl.core.errors import UserError, unknown_name
from clusterfl.core.io import read_yaml
from clusterfl.core.suite import Cell, suite_chain, suite_root
from clusterfl.run.config import SuiteConfig, load_params
from pipeline.imports import closure, function_imports, graph

HEADER = ("# Written by `clusterfl render` from {suite} (its grid) and the import graph: do not\n"
          "# edit. Change the suite's params file or pipeline/render.py, then run\n"
          "# `clusterfl render` (`make reproduce` does). docs/architecture.md explains it.\n")
CLI = "pipeline.cli"  # imported by every stage's process
WIDTH = 200  # a loop item, one cell, stays on one line
ITEM = "${{item.{}}}"  # DVC's reference to a field of a loop's item
CELL_KEYS = ("experiment", "algorithm")  # a cell's name, `<experiment>-<algorithm>`


class Row(dict):
    """A mapping written on one line (`{paper: p1, experiment: ...}`): a loop item."""


class Line(list):
    """A list written on one line (`[fedavg, ifca, ...]`): an axis of a matrix."""


class Named(dict):
    """A mapping written once under the YAML anchor `anchor` and aliased where it recurs."""

    def __init__(self, anchor: str, content: dict[str, Any]) -> None:
        super().__init__(content)
        self.anchor = anchor


class _Dumper(yaml.SafeDumper):
    """Anchors only a `Named` mapping, by its name: a reader sees `*cells`, never PyYAML's
    `*id001` for an object that happens to be shared."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.anchor_names: dict[int, str] = {}  # id of a Named mapping's node -> its anchor

    def ignore_aliases(self, data: Any) -> bool:
        return not isinstance(data, Named)

    def generate_anchor(self, node: yaml.Node) -> str:
        return self.anchor_names[id(node)]

    def represent_named(self, data: Named) -> yaml.Node:
        node = self.represent_dict(data)
        self.anchor_names[id(node)] = data.anchor
        return node

    def represent_row(self, data: Row) -> yaml.Node:
        return self.represent_mapping("tag:yaml.org,2002:map", data, flow_style=True)

    def represent_line(self, data: Line) -> yaml.Node:
        return self.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


_Dumper.add_representer(Named, _Dumper.represent_named)
_Dumper.add_representer(Row, _Dumper.represent_row)
_Dumper.add_representer(Line, _Dumper.represent_line)


def suite_files(root: Path) -> list[Path]:
    """Every suite of the repository: the default one, then suites/<name>/params.yaml."""
    return [root / "params.yaml", *sorted((root / "suites").glob("*/params.yaml"))]


def dvc_file(suite_file: Path) -> Path:
    return suite_file.parent / "dvc.yaml"


class Code:
    """The code deps of stages: project files a process can import, as few paths as cover
    them (a directory stands for all of its files when every module in it is covered)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules = graph(root)

    def reach(self, command: str, also: Iterable[str] = ()) -> set[str]:
        """What `clusterfl <command>` can import: the CLI module, the command's own imports
        and what they import in turn, and `also` (modules it loads by name: papers)."""
        starts = [*function_imports(self.modules, CLI, command), *also]
        return closure(self.modules, starts) | closure(self.modules, [CLI], lazy=False)

    def paths(self, names: set[str], coarse: bool = False) -> list[str]:
        """The files of modules `names`, folded into directories. `coarse`: `pipeline/`,
        each package of the core but `algorithms/` and each paper's package stand whole
        where any module of theirs is reached, for the data and report stages: there a
        re-run after an edit that cannot change their outputs costs less than a long exact
        list costs a reader. A paper stays its own package, so that one paper's edit re-runs
        its own report alone, and `algorithms/` stays exact, so that editing one method
        re-runs its cells alone (never a download); train and tune stages are exact."""
        files = {self.modules[n].path.resolve() for n in names}
        if coarse:
            files |= {f for package in self._packages if package & files for f in package}
        return [self._relative(p) for p in self._cover([self.root / "src/clusterfl",
                                                        self.root / "pipeline"], files)]

    @cached_property
    def _packages(self) -> list[set[Path]]:
        """The module files of pipeline/, of each package of the core but papers/ and
        algorithms/, and of each paper's package (papers/<key>/): read once per `Code`."""
        core, papers = self.root / "src/clusterfl", self.root / "src/clusterfl/papers"
        exact = {papers, core / "algorithms"}
        packages = [self.root / "pipeline",
                    *(d for d in [*core.iterdir(), *papers.iterdir()]
                      if d.is_dir() and d not in exact and (d / "__init__.py").exists())]
        return [{p.resolve() for p in d.rglob("*.py") if "__pycache__" not in p.parts}
                for d in packages]

    def _cover(self, directories: list[Path], files: set[Path]) -> list[Path]:
        out: list[Path] = []
        for directory in directories:
            inside = {p.resolve() for p in directory.rglob("*.py") if "__pycache__" not in p.parts}
            if inside and inside <= files:
                out.append(directory)
                continue
            out += sorted(p for p in directory.glob("*.py") if p.resolve() in files)
            out += self._cover(sorted(d for d in directory.iterdir()
                                      if d.is_dir() and d.name != "__pycache__"), files)
        return out

    def _relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.root.resolve()).as_posix()


def _paper_code(params: SuiteConfig, key: str, code: Code) -> tuple[str, str | None]:
    """(the paper's __init__.py, its training/ directory or None where it has none), checked
    against what importing the paper can run: its own package, never its report code or
    another paper."""
    module = params.paper(key).module
    package = code.modules.get(module)
    if package is None:  # a paper outside the repository (a suite's `papers:`): not hashed
        raise UserError(f"papers: {module!r} is not under src/clusterfl; `clusterfl render` "
                        "can only derive deps for the repository's own papers")
    prefix = f"{module}."
    reached = {n for n in closure(code.modules, [module]) if n.startswith(prefix)}
    allowed = f"{module}.training"
    stray = sorted(n for n in reached if n != allowed and not n.startswith(f"{allowed}."))
    if stray:
        raise UserError(f"papers: {module} imports {', '.join(stray)} outside its "
                        "training/ package; training code must not reach report code")
    init = code._relative(package.path)
    training = Path(init).parent / "training"
    return init, training.as_posix() if (code.root / training).is_dir() else None


def _algorithm_code(params: SuiteConfig, cell: Cell, code: Code) -> tuple[str, set[str]]:
    """(the file that defines the cell's algorithm, the project modules beyond that file and
    its paper's package that the two import): the file is the cell's own dep, the modules go
    to the shared deps of the suite's cells (a base class such as FedAvg for FedProx)."""
    cls = params.algorithm(cell.algorithm, experiment=cell.experiment).cls
    name, paper = cls.__module__, params.paper(cell.paper).module
    own = code.modules.get(name)
    path = own.path if own else Path(str(sys.modules[name].__file__))  # a plugin file
    reached = closure(code.modules, [paper, *([name] if own else [])])
    return code._relative(path), {m for m in reached if m != name and m != paper
                                  and not m.startswith(f"{paper}.")}


def _params(chain: list[tuple[Path, dict[str, Any]]], keys: list[str], root: Path,
            catalogue: Iterable[str] = ()) -> list[dict[str, list[str]]]:
    """`keys` of the suite block, tracked in each file of the chain that sets them, and
    `catalogue` keys of the root params.yaml; one entry per file."""
    files: dict[str, list[str]] = {}
    for path, block in chain:
        present = [f"suite.{k}" for k in keys if k in block]
        if present:
            files.setdefault(path.resolve().relative_to(root.resolve()).as_posix(),
                             []).extend(present)
    if catalogue:
        files.setdefault("params.yaml", []).extend(catalogue)
    return [{path: names} for path, names in files.items()]


def _fill(template: Any, fill: dict[str, str]) -> Any:
    """`template` with each `${item.<field>}` of `fill` replaced by its text, in strings and
    mapping keys alike."""
    if isinstance(template, str):
        for field, text in fill.items():
            template = template.replace(ITEM.format(field), text)
        return template
    if isinstance(template, list):
        return [_fill(value, fill) for value in template]
    if isinstance(template, dict):
        return {_fill(key, fill): _fill(value, fill) for key, value in template.items()}
    return template


def _in_terms_of(value: str, field: str, source: str) -> str:
    """`value` with each path or key segment (between `/` and `.`) equal to `source` written
    as `${item.<field>}`: `src/clusterfl/papers/p1/params.yaml` in terms of paper `p1`."""
    return "".join(ITEM.format(field) if part == source else part
                   for part in re.split(r"([/.])", value))


def compact_items(items: dict[str, dict[str, str]], keys: Sequence[str]
                  ) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The loop's items with only the fields a stage cannot derive, and the text the template
    gets for each dropped field: the same in every item (a suite of one paper: its paths), or
    written in terms of a kept field (`src/clusterfl/papers/${item.paper}/__init__.py`).
    `keys` (what a cell's name is made of) are always kept. Each derivation holds for every
    item, so DVC expands the loop to exactly the stages of the full items."""
    first = next(iter(items.values()))
    kept, fill = list(keys), {}
    for field in first:
        if field in keys:
            continue
        values = [item[field] for item in items.values()]
        if all(value == values[0] for value in values):
            fill[field] = values[0]
            continue
        for source in kept:
            text = _in_terms_of(first[field], source, first[source])
            if text != first[field] and all(
                    text.replace(ITEM.format(source), item[source]) == item[field]
                    for item in items.values()):
                fill[field] = text
                break
        else:
            kept.append(field)
    return {name: {f: v for f, v in item.items() if f in kept}
            for name, item in items.items()}, fill


def cell_loop(cells: dict[str, dict[str, str]]) -> tuple[dict[str, Any], dict[str, str]]:
    """DVC's loop over the cells (`compact_items`), named `cells` (tune and train share it),
    and the text its template gets for the dropped fields: a `matrix` of experiments x
    algorithms when the cells are that whole grid in order and nothing else varies (DVC names
    its stages `<stage>@<experiment>-<algorithm>`, as a `foreach` over the cells does), else
    a `foreach` of one line per cell."""
    rows, fill = compact_items(cells, CELL_KEYS)
    axes = {key: Line(dict.fromkeys(row[key] for row in rows.values())) for key in CELL_KEYS}
    grid = [("-".join(values), dict(zip(CELL_KEYS, values, strict=True)))
            for values in product(*axes.values())]
    if list(rows.items()) == grid:
        return {"matrix": Named("cells", axes)}, fill
    return {"foreach": Named("cells", {name: Row(row) for name, row in rows.items()})}, fill


def _looped(loop: dict[str, Any], fill: dict[str, str], template: dict[str, Any]
            ) -> dict[str, Any]:
    """A stage that runs `template` for each item of `loop` (`cell_loop`)."""
    body = _fill(template, fill)
    return {**loop, **body} if "matrix" in loop else {**loop, "do": body}


def _data_stages(params: SuiteConfig, root: Path, code: Code,
                 chain: list[tuple[Path, dict[str, Any]]], wdir_text: str) -> dict[str, Any]:
    """The download and partition stages of a suite with data of its own."""
    name, data = params.suite, f"data/{params.suite}"
    out: dict[str, Any] = {}
    out["download"] = {"foreach": params.suite_datasets, "do": {
        "wdir": wdir_text, "cmd": f"clusterfl download ${{item}} --suite {name}",
        "params": _params(chain, ["dataset_options"], root, ["datasets.${item}"]),
        "deps": code.paths(code.reach("download"), coarse=True),
        "outs": [f"{data}/raw/${{item}}"]}}
    out["partition"] = {"foreach": {p: Row(dataset=params.partition(p)["dataset"])
                                    for p in params.suite_partitions}, "do": {
        "wdir": wdir_text, "cmd": f"clusterfl partition ${{key}} --suite {name}",
        "params": _params(chain, ["seeds", "partition_options"], root,
                          ["partitions.${key}"]),
        "deps": [*code.paths(code.reach("partition"), coarse=True),
                 f"{data}/raw/${{item.dataset}}"],
        "outs": [f"{data}/partitions/${{key}}"]}}
    return out


@dataclass
class Layout:
    """Where a suite's stages run and write: its dvc.yaml's `wdir`, the suite that owns its
    data and results (`home`: a suite that only adds cells uses its parent's), and the
    params files of its `extends` chain."""
    wdir: str
    home: str
    chain: list[tuple[Path, dict[str, Any]]]

    @property
    def data(self) -> str:
        return f"data/{self.home}"


def stages(params: SuiteConfig, root: Path, code: Code, compact: bool = True
           ) -> dict[str, Any]:
    """The suite's dvc.yaml as a mapping (its stages and plots). With `compact=False` the
    cells are a `foreach` whose items carry every field; the compact form (`cell_loop`) must
    expand to the same stages (tests/test_render.py checks it with DVC's own parser)."""
    wdir = Path(*[".."] * len(params.file.resolve().parent.relative_to(root.resolve()).parts))
    layout = Layout(wdir.as_posix() if wdir.parts else ".", params.home,
                    suite_chain(params.file))
    papers = {c.paper for c in params.cells}
    paper_code = {key: _paper_code(params, key, code) for key in sorted(papers)}
    out: dict[str, Any] = {}
    if layout.home == params.suite:  # else the parent's pipeline prepares the data
        out |= _data_stages(params, root, code, layout.chain, layout.wdir)
    out |= _cell_stages(params, root, code, layout, paper_code, compact)
    out |= _report_stages(params, root, code, layout, paper_code, sorted(papers))
    for stage in out.values():  # `wdir: .` is DVC's default: written only where it differs
        body = stage.get("do", stage)
        if body.get("wdir") == ".":
            del body["wdir"]
    # top-level plots are paths from the dvc.yaml's own directory, not from its `wdir`
    reports = f"reports/{params.suite}/curves"
    plots = reports if layout.wdir == "." else f"{layout.wdir}/{reports}"
    return {"stages": out, "plots": [{plots: {"x": "round"}}]}


def _cell_stages(params: SuiteConfig, root: Path, code: Code, layout: Layout,
                 paper_code: dict[str, tuple[str, str | None]], compact: bool
                 ) -> dict[str, Any]:
    """The train stages of the suite's own cells (and their tune stages where the suite has
    a tuning grid): one loop item per cell, with only what its stages cannot derive."""
    if not params.own_cells:
        return {}
    algorithm_code = {c.name: _algorithm_code(params, c, code) for c in params.own_cells}
    shared = set().union(*(needs for _, needs in algorithm_code.values()))
    train_code = code.paths({m for m in code.reach("train") | shared
                             if not m.startswith("clusterfl.papers.")})
    # a paper without training code (the benchmark) repeats its __init__ in the slot
    trained = any(paper_code[c.paper][1] for c in params.own_cells)
    plugins = [str(p) for p in params.suite_raw.get("plugins") or []]  # a user's own code
    # no `code` slot where every cell's file is already a dep of all (a plugin's method)
    coded = any(not any(f == d or f.startswith(f"{d}/") for d in [*train_code, *plugins])
                for f, _ in algorithm_code.values())
    cells = {c.name: {"paper": c.paper, "experiment": c.experiment, "algorithm": c.algorithm,
                      "init": paper_code[c.paper][0],
                      **({"training": paper_code[c.paper][1] or paper_code[c.paper][0]}
                         if trained else {}),
                      **({"code": algorithm_code[c.name][0]} if coded else {}),
                      "paper_params": params.paper_file_from_root(c.paper, root),
                      "dataset": params.partition(params.experiment(c.experiment).partition)
                      ["dataset"],
                      "partition": params.experiment(c.experiment).partition}
             for c in params.own_cells}
    cell_params = _cell_params(params, root, cells)
    cell_deps = [*train_code, "${item.init}", *(["${item.training}"] if trained else []),
                 *(["${item.code}"] if coded else []), *plugins,
                 f"{layout.data}/raw/${{item.dataset}}",
                 f"{layout.data}/partitions/${{item.partition}}"]
    name, home, out = params.suite, layout.home, {}
    train_cmd = f"clusterfl train ${{item.experiment}} ${{item.algorithm}} --suite {name}"
    loop, fill = cell_loop(cells) if compact else ({"foreach": cells}, {})
    picks = f"results/{home}/tuning/${{item.experiment}}/${{item.algorithm}}"
    tuned = params.tuning is not None
    if tuned:
        out["tune"] = _looped(loop, fill, {
            "wdir": layout.wdir, "cmd": f"clusterfl tune ${{item.experiment}} "
            f"${{item.algorithm}} --suite {name} --device auto",
            "params": [*_params(layout.chain, ["tuning", "training"], root), *cell_params],
            "deps": [*code.paths({m for m in code.reach("tune") | shared
                                  if not m.startswith("clusterfl.papers.")}),
                     *cell_deps[len(train_code):]],
            "outs": [picks]})
        train_cmd += f" --device auto --picks {picks}/picks.json"
    out["train"] = _looped(loop, fill, {
        "wdir": layout.wdir, "cmd": train_cmd,
        "params": [*_params(layout.chain, ["seeds", "training"], root, ["tracking"]),
                   *cell_params],
        "deps": [*cell_deps, *([picks] if tuned else [])],
        "outs": [f"results/{home}/${{item.experiment}}/${{item.algorithm}}"]})
    return out


def _cell_params(params: SuiteConfig, root: Path, cells: dict[str, dict[str, str]]
                 ) -> list[dict[str, list[str]]]:
    """The params a cell's stages read by key: its experiment's and its algorithm's entries
    (an algorithm the suite file defines itself is read from there; its loop items say
    where)."""
    if not params.suite_algorithms:
        return [{"${item.paper_params}": ["experiments.${item.experiment}",
                                          "algorithms.${item.algorithm}"]}]
    suite_file = params.file.resolve().relative_to(root.resolve()).as_posix()
    for item in cells.values():
        mine = item["algorithm"] in params.suite_algorithms
        item["algorithm_params"] = suite_file if mine else item["paper_params"]
        item["algorithm_key"] = f"{'suite.' if mine else ''}algorithms.{item['algorithm']}"
    return [{"${item.paper_params}": ["experiments.${item.experiment}"]},
            {"${item.algorithm_params}": ["${item.algorithm_key}"]}]


def _report_stages(params: SuiteConfig, root: Path, code: Code, layout: Layout,
                   paper_code: dict[str, tuple[str, str | None]], papers: list[str]
                   ) -> dict[str, Any]:
    """`report` on every cell and, where the suite has several papers, `report_<paper>` on
    one paper's cells alone (`dvc repro <dvc.yaml>:report_p5` trains P5's cells only)."""
    def report(keys: list[str], reports: str, cmd: str, partitions: list[str]) -> dict[str, Any]:
        modules = [m for key in keys if (m := (params.paper(key).report or "").partition(":")[0])]
        report_code = code.paths(code.reach("report", modules), coarse=True)
        references = [ref for key in keys  # data the reports read
                      if (root / (ref := f"{Path(paper_code[key][0]).parent.as_posix()}"
                                         "/references.yaml")).exists()
                      and not any(ref.startswith(f"{dep}/") for dep in report_code)]
        return {
            "wdir": layout.wdir, "cmd": cmd,
            "params": _params(layout.chain, ["grid"], root) or [{"params.yaml": ["tracking"]}],
            "deps": [*report_code, *references,
                     *(f"results/{layout.home}/{c.experiment}/{c.algorithm}"
                       for c in params.cells if c.paper in keys), *partitions],
            "outs": [f"{reports}/tables", f"{reports}/figures", f"{reports}/curves",
                     f"{reports}/index.html"],
            "metrics": [{f"{reports}/metrics.json": {"cache": False}}]}

    name, reports = params.suite, f"reports/{params.suite}"
    out = {"report": report(papers, reports, f"clusterfl report --suite {name}",
                            [f"{layout.data}/partitions"])}
    if len(papers) > 1:  # one paper alone: `dvc repro <dvc.yaml>:report_<paper>`
        for key in papers:
            mine = dict.fromkeys(params.experiment(c.experiment).partition
                                 for c in params.cells if c.paper == key)
            out[f"report_{key}"] = report(
                [key], f"{reports}/{key}", f"clusterfl report --suite {name} --paper {key}",
                [f"{layout.data}/partitions/{p}" for p in mine])
    return out


def render(params: SuiteConfig, root: Path, code: Code | None = None) -> str:
    """The text of the suite's dvc.yaml."""
    code = code or Code(root)
    shown = params.file.resolve().relative_to(root.resolve()).as_posix()
    body: str = yaml.dump(stages(params, root, code), Dumper=_Dumper, sort_keys=False,
                          width=WIDTH)
    return HEADER.format(suite=shown) + body


def run(root: Path, check: bool = False, only: Iterable[str] | None = None) -> list[Path]:
    """Render every suite (or those named in `only`); with `check`, write nothing and return
    the stale dvc.yaml files."""
    code, stale = Code(root), []
    files = suite_files(root)
    if only:
        by_name = {("default" if f.parent == root else f.parent.name): f for f in files}
        for name in only:
            if name not in by_name:
                raise unknown_name("suite", name, list(by_name))
        files = [by_name[name] for name in only]
    for suite in files:
        text = render(load_params(suite), root, code)
        target = dvc_file(suite)
        current = target.read_text() if target.exists() and not target.is_symlink() else None
        if current != text:
            stale.append(target)
            if not check:
                target.unlink(missing_ok=True)
                target.write_text(text)
    return stale


def require_inside(suite_file: Path, repo: Path = Path(".")) -> None:
    """A one-line error for a suite file outside the repository `repo` (the working
    directory): DVC runs a suite's dvc.yaml, beside its params file, from the repository."""
    if not suite_file.resolve().is_relative_to(repo.resolve()):
        raise UserError(f"{suite_file}: outside the repository ({repo.resolve()}); DVC "
                        "runs a suite from there: put it at suites/<name>/params.yaml and "
                        "run `clusterfl render`")


def render_hint(suite_file: Path) -> str:
    """The command that writes suite file `suite_file`'s dvc.yaml: `clusterfl render
    <suite>` for a suite of the repository (root params.yaml, suites/<name>/params.yaml);
    a file of your own has none (render writes the repository's suites only)."""
    where = suite_file.resolve()
    if where == (suite_root(suite_file) / "params.yaml").resolve():
        return "`clusterfl render default`"
    if where.name == "params.yaml" and where.parent.parent.name == "suites":
        return f"`clusterfl render {where.parent.name}`"
    return ("`clusterfl render` after moving it to suites/<name>/params.yaml (render writes "
            "the repository's suites)")


def require_rendered(suite_file: Path) -> None:
    """A one-line error naming the render command when the suite has no dvc.yaml yet."""
    target = dvc_file(suite_file)
    if not target.exists():
        raise UserError(f"{target}: does not exist (suite {suite_file} is not rendered yet); "
                        f"run {render_hint(suite_file)} first")


def require_current(suite_file: Path) -> None:
    """A one-line error when the suite's dvc.yaml is not what its grid renders to (the
    grid was edited and `clusterfl render` not run): DVC would run the old cell list."""
    root = suite_root(suite_file)
    target = dvc_file(suite_file)
    if read_yaml(target) if target.exists() else None:
        text = render(load_params(suite_file), root)
        if target.read_text() != text:
            raise UserError(f"{target}: stale: it does not match {suite_file}'s grid; run "
                            f"{render_hint(suite_file)}")
