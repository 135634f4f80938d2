"""The paper registry: each paper is one package here that owns its experiments' params,
its references (the paper's own numbers) and its report section, and registers itself.

A paper package `clusterfl.papers.<key>` (or any importable module named in a suite's
`papers:` list) defines `PAPER = Paper(...)`. Importing it registers whatever it adds to the
shared registries (algorithms, evaluators, metrics, data sources). Its directory holds:
- `params.yaml`: `experiments`, `algorithms`, `presets` (named training blocks), and any
  `datasets` / `partitions` it adds to the shared catalogue in the root `params.yaml`;
- `references.yaml`: the paper's numbers, read by its report;
- `training/`: every module training imports (never report code, matplotlib or another
  paper), so that a train cell depends on `__init__.py` and `training/` only;
- `report/`: the report code named by `Paper.report` ("module:function", `report/__init__.py`'s
  `build`, imported by the report stage only, so that training never imports plotting code);
  what it takes and returns is defined in `clusterfl.reports.section`, since it names the
  suite's config, which reads this registry;
- `tools/` (some papers): code run by `clusterfl diagnose` / `clusterfl bench`, by no stage.
Adding a paper is a new package and one line in `BUILTIN`; nothing else is edited.
"""

import dataclasses
import importlib
import importlib.util
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from clusterfl.core.errors import UserError

BUILTIN = ("clusterfl.papers.p1", "clusterfl.papers.p2", "clusterfl.papers.p3",
           "clusterfl.papers.p4", "clusterfl.papers.p5")


@dataclass(frozen=True)
class Paper:
    key: str  # the `paper:` of a suite's cells, e.g. "p1"
    title: str
    directory: Path  # holds params.yaml and references.yaml
    # "module:function" taking a `clusterfl.reports.section.ReportInput`, returning a
    # `ReportOutput` (`clusterfl.reports.section.section_builder` imports it)
    report: str | None = None
    module: str = ""  # the module that defines it (set by `load_papers`)

    @property
    def params_file(self) -> Path:
        return self.directory / "params.yaml"

    @property
    def references_file(self) -> Path:
        return self.directory / "references.yaml"


def load_papers(modules: Iterable[str] = BUILTIN) -> dict[str, Paper]:
    """Import each paper module (registering what it adds) and return its PAPER by key."""
    papers: dict[str, Paper] = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError as err:
            raise UserError(f"papers: cannot import {name!r} ({err})") from None
        paper = getattr(module, "PAPER", None)
        if not isinstance(paper, Paper):
            raise UserError(f"papers: module {name!r} defines no PAPER = Paper(...)")
        if paper.key in papers:
            raise UserError(f"papers: key {paper.key!r} defined twice ({name})")
        papers[paper.key] = dataclasses.replace(paper, module=name)
    return papers


def paper_directory(module: str) -> Path:
    """The directory of paper package `module`, found without running its code (so that
    reading a paper's params imports none of its methods)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"papers: no package {module!r}")
    return Path(next(iter(spec.submodule_search_locations)))


def load_plugins(files: Iterable[str], root: Path, key: str) -> None:
    """Run each plugin file (a path from the repository root, e.g. a user's algorithm in
    `examples/`), registering what it adds (`ALGORITHMS.add(...)`); a file already run in
    this process is not run again. Plugins are files, not packages, so that a researcher's
    method needs no install and DVC can hash the file as a dep of the cells that use it."""
    for i, name in enumerate(files):
        path = root / str(name)
        if not (str(name).endswith(".py") and path.is_file()):
            raise UserError(f"{key}[{i}]: {name!r} is not a .py file under the repository "
                            "root")
        module = f"clusterfl_plugin_{path.resolve().relative_to(root.resolve()).as_posix()}"
        module = module.removesuffix(".py").replace("/", "_").replace("-", "_")
        if module in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(module, path)
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[module] = loaded
        try:
            spec.loader.exec_module(loaded)
        except ImportError as err:
            del sys.modules[module]
            raise UserError(f"{key}[{i}]: {name} cannot be imported ({err})") from None
        except BaseException:
            del sys.modules[module]
            raise
