"""What a report is, said on its first page: the suite, its rounds, data and seeds, where the
papers' scale lives (the committed references, `reference/<suite>/<paper>/`), and, for every
gap between a cell and its paper's number, the note that explains it.

Links point into the repository (reference/, docs/) relative to the Markdown file that holds
them (`Links.to_root`); a report written outside the repository's layout names the paths
instead. Each link's text is the repository path, so a copied report still says where to look.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from clusterfl.core.io import shown
from clusterfl.data import DATA_SOURCES

DOCS = "docs/results.md"  # why each paper's numbers differ from ours, measured
PAPER_SUITE = "paper"  # the suite that runs the papers' own scale (suites/paper)


@dataclass(frozen=True)
class Links:
    """`to_root`: the relative path from a Markdown file to the repository root ("../../"),
    None where the file is not inside it; `references`: paper key -> its committed reference
    report's folder, relative to the root; `page`: the links are for the HTML page, where a
    Markdown file is named, not linked (a browser shows it as raw text)."""

    to_root: str | None = None
    references: Mapping[str, str] = field(default_factory=dict)
    page: bool = False

    def to(self, path: str, target: str | None = None) -> str:
        """`path` (relative to the root) as a link, or as a path where no link can be made."""
        if self.to_root is None or (self.page and (target or path).endswith(".md")):
            return f"`{path}`"
        return f"[{path}]({self.to_root}{target or path})"

    def reference(self, key: str) -> str | None:
        folder = self.references.get(key)
        return None if folder is None else self.to(f"{folder}/", f"{folder}/index.html")


def links_for(location: Path | None, depth: int, references: Mapping[str, str],
              page: bool = False) -> Links:
    """Links from a file `depth` folders below a report written at `location` (relative to
    the repository root; None or absolute: outside it); `page`: for the HTML page."""
    if location is None or location.is_absolute() or ".." in location.parts:
        return Links(None, references, page)
    return Links("../" * (len(location.parts) + depth), references, page)


def committed_references(keys: Sequence[str], root: Path = Path(".")) -> dict[str, str]:
    """Paper key -> `reference/<suite>/<key>/report` for each committed reference report of
    those papers at the papers' scale: the `paper` suite's where it has one (the other suites
    are side studies of it, such as `p1_table2_val`'s validation runs), else the first suite
    in name order; the default suite's snapshot, `reference/default/`, is no paper-scale run."""
    out = {}
    for key in keys:
        found = sorted((p for p in root.glob(f"reference/*/{key}/report/index.html")
                        if p.parts[-4] != "default"),
                       key=lambda p: (p.parts[-4] != PAPER_SUITE, p.parts[-4]))
        if found:
            out[key] = found[0].parent.relative_to(root).as_posix()
    return out


def own_rounds(params: Any, experiment: str) -> int | None:
    """The rounds of an experiment's own training block (the papers' settings), before a
    suite's `training` override; None where it sets none."""
    block = (params.experiments.get(experiment) or {}).get("training") or {}
    rounds = block.get("rounds") if isinstance(block, Mapping) else None
    return int(rounds) if isinstance(rounds, int | float) else None


def _span(values: Sequence[int]) -> str:
    low, high = min(values), max(values)
    return f"{low}" if low == high else f"{low}–{high}"


def header(params: Any, cells: Sequence[tuple[str, str, str]], links: Links,
           root: Path = Path(".")) -> str:
    """The report's opening paragraph: suite, cells, seeds, rounds, data, this suite's own
    committed run (found under `root`) and the paper-scale runs."""
    experiments = list(dict.fromkeys(e for _, e, _ in cells))
    rounds = {e: params.experiment(e).schedule.rounds for e in experiments}
    own = [r for e in experiments if (r := own_rounds(params, e)) is not None]
    override = (params.suite_raw.get("training") or {}).get("rounds")
    said = f"{_span(list(rounds.values()))} rounds"
    if override is not None and own and set(own) != {override}:
        said += (f" (the suite's `training` override; the experiments' own settings run "
                 f"{_span(own)})")
    datasets: dict[str, list[str]] = {}  # the source's description -> its datasets
    for e in experiments:
        name = params.partition(params.experiment(e).partition)["dataset"]
        source, _ = params.dataset(name)
        named = datasets.setdefault(DATA_SOURCES.get(source).description, [])
        named += [name] if name not in named else []
    data = "; ".join(", ".join(f"`{n}`" for n in names) + f" ({what})"
                     for what, names in datasets.items())
    papers = list(dict.fromkeys(k for k, _, _ in cells))
    seeds = list(params.seeds)
    text = (f"**This report:** suite `{params.suite}` (`{shown(Path(params.file))}`), "
            f"{len(cells)} cells of {', '.join(papers)}; {len(seeds)} seeds "
            f"({', '.join(map(str, seeds))}); {said}; data: {data}.")
    # this suite's own committed run (reference/<suite>/<key>/report), and the papers' scale
    # (`links.references`) where that is another suite's
    mine = {k: links.to(f"{folder}/", f"{folder}/index.html") for k in papers
            if (root / (folder := f"reference/{params.suite}/{k}/report") / "index.html"
                ).is_file() or links.references.get(k) == folder}
    if mine:
        text += " Its committed run: " + ", ".join(f"{k} {mine[k]}" for k in sorted(mine)) + "."
    scale = {k: link for k in papers if (link := links.reference(k)) is not None
             and links.references[k].split("/")[1] != params.suite}
    if scale:
        text += (" The papers' own scale, committed and rendered by this code: "
                 + ", ".join(f"{k} {link}" for k, link in scale.items()) + ".")
    return text + f" {links.to(DOCS)} says why numbers differ from the papers'.\n"


def gap_notes(table: pd.DataFrame, params: Any, references: Mapping[str, Mapping[str, Any]],
              links: Links) -> dict[tuple[str, str], list[str]]:
    """(experiment, algorithm) -> the notes on the gap between the cell and its paper's
    number, for every cell that has one: scale (fewer rounds than the experiment's own
    settings, with its paper's committed reference), the references entry's own `note`
    (stand-in data, protocol), else where the differences are measured (`DOCS`)."""
    notes: dict[tuple[str, str], list[str]] = {}
    paper_of = {(e, a): k for k, e, a in params.suite_cells()}
    for r in table.itertuples():
        if _missing(r.diff_vs_paper) or f"{abs(r.diff_vs_paper):.2f}" == "0.00":
            continue  # no paper number, or none that the table shows apart from ours
        mine = []
        rounds, own = params.experiment(r.experiment).schedule.rounds, own_rounds(
            params, r.experiment)
        if own is not None and rounds < own:
            ref = links.reference(paper_of.get((r.experiment, r.algorithm), ""))
            mine.append(f"scale: {rounds} rounds here, {own} in the experiment's own settings"
                        + (f" (paper scale: {ref})" if ref else ""))
        note = (references.get(r.experiment) or {}).get("note")
        if note:
            mine.append(" ".join(str(note).split()))
        notes[(r.experiment, r.algorithm)] = mine or [
            f"no note in the paper's references.yaml; {links.to(DOCS)} measures the built-in "
            "papers' differences"]
    return notes


def _missing(value: Any) -> bool:
    return value is None or bool(pd.isna(value))
