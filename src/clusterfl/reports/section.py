"""A paper's section of the report: what its `build` function (named by `Paper.report`) is
given by the report stage, and what it returns.

These live here, not beside `Paper` in `clusterfl.papers`, because `ReportInput` holds the
suite's `SuiteConfig`, and `clusterfl.run.config` imports the paper registry to read the papers'
params: defined there, the two would import each other.
"""

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterfl.papers import Paper
from clusterfl.run.config import SuiteConfig


@dataclass(frozen=True)
class ReportInput:
    """What a paper's report function is given by the report stage."""

    params: SuiteConfig  # the suite's validated params
    paper: Paper
    cells: list[tuple[str, str]]  # (experiment, algorithm) of this paper with results
    results: Path  # results/<suite>: a cell's seeds are <results>/<exp>/<alg>/seed<k>/
    partitions: Path  # data/<suite>/partitions: <partitions>/<name>/seed<k>.npz
    references: Mapping[str, Any]  # the paper's references.yaml
    tables: Path  # the directory its tables go to (Markdown, CSV)
    figures: Path  # the directory its figures go to (PNG)


@dataclass
class ReportOutput:
    """A paper's section of the suite's report."""

    markdown: str  # tables (and figure links) as Markdown, under the paper's heading
    metrics: dict[str, Any] = field(default_factory=dict)  # merged into metrics.json
    figures: list[Path] = field(default_factory=list)  # files written under `figures`
    # how the section scores its cells against the paper, where not by the last round: per
    # seed, `runs.seed_rows`-shaped rows whose `last` holds the number; the suite's results
    # table shows them as `ours` (`results.scored`), labelled `scoring`, so the two agree
    scores: list[dict[str, Any]] = field(default_factory=list)
    scoring: str = ""


SectionBuilder = Callable[[ReportInput], ReportOutput]


def section_builder(paper: Paper) -> SectionBuilder | None:
    """The function `paper.report` names ("module:function"), imported now; None without."""
    if paper.report is None:
        return None
    module, _, name = paper.report.partition(":")
    builder: SectionBuilder = getattr(importlib.import_module(module), name)
    return builder
