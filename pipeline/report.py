"""Stage `report`: the suite's run histories -> one report, every registered paper's section
built by the paper's own `build` (`clusterfl.papers`); nothing here knows a paper.

Under `reports_dir`:
- `tables/results.md`, `results.csv`: every cell by its primary metric beside its paper's
  number; `tables/seeds.csv`: one row per seed; `tables/<paper>.md`: each paper's section
  (and whatever tables its `build` writes beside it);
- `figures/convergence.png` and the papers' figures;
- `curves/<primary metric>/<experiment>__<algorithm>.csv`: mean curves over seeds, one folder
  per primary metric so that each `dvc plots` entry has one y column;
- `metrics.json`: {experiment: {algorithm: numbers}} for `dvc metrics`, papers' added;
- `index.html`: one page with every table and figure above, from the same Markdown;
- `costs.md`: each cell's wall-clock seconds per round on the machine that trained it (from
  logs/<suite>/, `reports.runs.cost_rows`). Not a DVC out: every other file here is the
  same on every run, so the outs' hashes are too.
With a paper key (`clusterfl report --paper p5`, the `report_<paper>` stages of a suite with
several papers), the same files for that paper's cells alone, under reports/<suite>/<paper>/.
Every directory is swapped in whole (`output_dir`): a failed report leaves the last one.
With `track`, each cell's figures and summary table become artifacts of its MLflow parent
run, and the tables, figures and page artifacts of a run `report/<suite>` (stage=report).
"""

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from rich.console import Console

from clusterfl.core.errors import UserError
from clusterfl.core.io import atomic_write_json, atomic_write_text
from clusterfl.papers import Paper
from clusterfl.reports import html
from clusterfl.reports.context import Links, committed_references, gap_notes, header, links_for
from clusterfl.reports.figures import convergence_figure
from clusterfl.reports.results import (
    merge_metrics,
    metrics_json,
    results_markdown,
    scored,
    summary_table,
)
from clusterfl.reports.runs import cost_rows, mean_curve, seed_dirs, seed_rows
from clusterfl.reports.section import ReportInput, ReportOutput, section_builder
from clusterfl.reports.tables import markdown_table
from clusterfl.run.config import SuiteConfig
from pipeline.common import output_dir, suite_flag

INTRO = """# Results

{header}
Every cell of the suite by its primary metric (`metric`): the model each client uses, on its \
clients' test splits, weighted by test samples, mean ± std over seeds; the paper's number where \
its references.yaml gives one. `ours` is scored as the cell's paper section scores it (`scored \
as`: the last round, or for P1 the official pFedMe protocol, whose pFedMe/pFedKM number is the \
local w_i at its best round), and the diff is `ours` minus the paper's; `ours, last round` and \
`best round` are the primary metric itself (θ_i for pFedMe/pFedKM). Each paper's own tables: \
{sections}.

"""


@dataclass
class Loaded:
    """A suite's results as the report reads them: the cells with histories (paper key,
    experiment, algorithm), the cells left out (`partial`), one row per seed, the summary
    table, each cell's mean curve and its paper's references."""
    cells: list[tuple[str, str, str]]
    missing: list[str]
    seeds: pd.DataFrame
    table: pd.DataFrame
    curves: dict[tuple[str, str], Any]
    references: dict[str, dict[str, Any]]
    experiment_references: dict[str, Any]


def run(params: SuiteConfig, console: Console, results_dir: Path, partitions_dir: Path,
        reports_dir: Path, partial: bool = False, track: bool = False,
        paper_key: str | None = None, location: Path | None = None) -> None:
    """`partial`: leave out the suite's cells that have no results (listed in results.md)
    instead of stopping at the first, for a report on part of a suite run by hand.
    `track`: publish the figures and tables to MLflow (the suite's `tracking` store).
    `paper_key`: the report of that paper's cells of the suite alone (the `report_<paper>`
    stage; `reports_dir` is then reports/<suite>/<paper>). `location`: where the report
    will live relative to the repository root, for its links into reference/ and docs/
    (default: `reports_dir`; one written elsewhere and moved says so)."""
    if not params.suite_cells():  # a data-only suite (e.g. `schemes`): nothing to report
        _write_empty(params, partitions_dir, reports_dir)
        return
    loaded = load(params, results_dir, partial, paper_key)
    place = location if location is not None else reports_dir
    committed = committed_references(list(dict.fromkeys(k for k, _, _ in loaded.cells)))
    metrics = metrics_json(loaded.table)
    with (output_dir(reports_dir / "tables") as tables,
          output_dir(reports_dir / "figures") as figures,
          output_dir(reports_dir / "curves") as curve_dir):
        sections, page = _paper_sections(params, loaded, results_dir, partitions_dir, tables,
                                         figures, metrics)
        partly = (f"Partial report: {len(loaded.missing)} cells of the suite have no results "
                  f"and are left out: {', '.join(loaded.missing)}.\n\n"
                  if loaded.missing else "")
        intro, results_table = _overview(params, loaded.cells, loaded.table,
                                         loaded.experiment_references,
                                         links_for(place, 1, committed),
                                         ", ".join(sections) or "none", partly)
        _write_tables(loaded, tables, figures, curve_dir, intro + results_table)
    atomic_write_json(reports_dir / "metrics.json", metrics)
    _write_page(params, loaded, reports_dir, page, paper_key,
                links_for(place, 0, committed, page=True), partly)
    write_costs(results_dir, [(e, a) for _, e, a in loaded.cells], reports_dir / "costs.md")
    console.print(results_table)
    console.print(f"wrote {reports_dir}/tables/results.md, {len(sections)} paper sections "
                  f"and {reports_dir}/index.html")
    if track:
        _publish(params, console, reports_dir, [(e, a) for _, e, a in loaded.cells],
                 loaded.table, loaded.experiment_references, paper_key)


def _write_empty(params: SuiteConfig, partitions_dir: Path, reports_dir: Path) -> None:
    """The report of a suite that trains no cells: where its partitions are."""
    text = f"This suite trains no cells; its partitions are under {partitions_dir}.\n"
    with output_dir(reports_dir / "tables") as out:
        atomic_write_text(out / "results.md", "# Results\n\n" + text)
    for folder in ("figures", "curves"):
        with output_dir(reports_dir / folder):
            pass
    atomic_write_json(reports_dir / "metrics.json", {})
    atomic_write_text(reports_dir / "index.html",
                      html.render(_page_title(params), [html.Section("Results", text)]))


def load(params: SuiteConfig, results_dir: Path, partial: bool, paper_key: str | None
         ) -> Loaded:
    """The suite's (or one paper's) cells with results, their seeds, summary and curves."""
    cells, missing = _cells_with_results(params, results_dir, partial, paper_key)
    if not cells:
        raise UserError(f"{results_dir}: no trained cells of the suite")
    references = {key: _references(paper) for key, paper in params.papers.items()}
    experiment_references = {exp: references[key].get(exp) or {} for key, exp, _ in cells}
    seeds = pd.DataFrame([row for _, exp, alg in cells
                          for row in seed_rows(results_dir, exp, alg)])
    return Loaded(cells, missing, seeds, summary_table(seeds, experiment_references),
                  {(exp, alg): mean_curve(results_dir, exp, alg) for _, exp, alg in cells},
                  references, experiment_references)


def _paper_sections(params: SuiteConfig, loaded: Loaded, results_dir: Path,
                    partitions_dir: Path, tables: Path, figures: Path,
                    metrics: dict[str, Any]) -> tuple[list[str], list[html.Section]]:
    """Each paper's section, built by its own `build`: written to tables/<paper>.md, its
    metrics merged into `metrics`, its scores into `loaded.table`; (the links to the
    sections, the page's sections)."""
    sections: list[str] = []
    page: list[html.Section] = []
    for key, paper in params.papers.items():
        build = section_builder(paper)
        mine = [(exp, alg) for k, exp, alg in loaded.cells if k == key]
        if build is None or not mine:
            continue
        section = build(ReportInput(params, paper, mine, results_dir, partitions_dir,
                                    loaded.references[key], tables, figures))
        atomic_write_text(tables / f"{key}.md", _section(paper, section, figures))
        merge_metrics(metrics, section.metrics)
        if section.scores:  # the results table scores these cells as the section does
            loaded.table = scored(loaded.table, pd.DataFrame(section.scores), section.scoring)
        sections.append(f"[{paper.title}]({key}.md)")
        page.append(html.Section(paper.title, section.markdown,
                                 [f"figures/{f}" for f in html.relative(section.figures,
                                                                        figures)]))
    return sections, page


def _write_tables(loaded: Loaded, tables: Path, figures: Path, curve_dir: Path,
                  results_md: str) -> None:
    """results.md, results.csv, seeds.csv, the convergence figure and the mean curves."""
    atomic_write_text(tables / "results.md", results_md)
    atomic_write_text(tables / "results.csv", loaded.table.to_csv(index=False))
    atomic_write_text(tables / "seeds.csv", loaded.seeds.to_csv(index=False))
    convergence_figure(loaded.curves, figures / "convergence.png")
    for (exp, alg), curve in loaded.curves.items():
        atomic_write_text(curve_dir / curve.primary.name / f"{exp}__{alg}.csv",
                          curve.frame.to_csv(index=False))


def _write_page(params: SuiteConfig, loaded: Loaded, reports_dir: Path,
                page: list[html.Section], paper_key: str | None, links: Links,
                partly: str) -> None:
    """index.html: the overview (the papers' sections as anchors on the page, a folder up
    from tables/), each paper's section, and any figure no section names."""
    anchors = ", ".join(f"[{s.title}](#{s.anchor})" for s in page) or "none"
    on_page = "".join(_overview(params, loaded.cells, loaded.table,
                                loaded.experiment_references, links, anchors, partly))
    results = html.Section("Results", html.strip_heading(on_page), ["figures/convergence.png"])
    shown = {f for s in [results, *page] for f in s.figures}
    others = [f"figures/{f}" for f in html.relative(sorted((reports_dir / "figures").rglob(
        "*.png")), reports_dir / "figures") if f"figures/{f}" not in shown]
    if others:  # a figure no section names still belongs on the page
        page.append(html.Section("Other figures", "", others))
    atomic_write_text(reports_dir / "index.html",
                      html.render(_page_title(params, paper_key), [results, *page]))


def _overview(params: SuiteConfig, cells: list[tuple[str, str, str]], table: pd.DataFrame,
              references: Any, links: Links, papers: str, partly: str) -> tuple[str, str]:
    """(the intro, the results table with its notes) for a file whose links into the
    repository are `links` (tables/results.md, or the page a folder up); `papers`: the links
    to the papers' sections; `partly`: the partial report's line, if any."""
    notes = gap_notes(table, params, references, links)
    intro = INTRO.format(header=header(params, cells, links), sections=papers)
    return intro + partly, results_markdown(table, references, notes)


def _page_title(params: SuiteConfig, paper: str | None = None) -> str:
    title = f"clusterfl report: suite {getattr(params, 'suite', '')}".rstrip(": ")
    return f"{title}, paper {paper}" if paper else title


def _cell_files(reports_dir: Path, cell: tuple[str, str], experiments: list[str]
                ) -> list[tuple[Path, str]]:
    """A cell's figures: those of its experiment (the longest experiment name that prefixes
    the file's stem, so `e_lam0_curves.png` is `e_lam0`'s, not `e`'s), and its mean curve."""
    exp, alg = cell
    files = []
    for path in sorted((reports_dir / "figures").rglob("*.png")):
        owners = [e for e in experiments if path.stem == e or path.stem.startswith(f"{e}_")]
        if owners and max(owners, key=len) == exp:
            files.append((path, "figures"))
    files += [(p, "curves") for p in sorted((reports_dir / "curves").glob(f"*/{exp}__{alg}.csv"))]
    return files


def _publish(params: SuiteConfig, console: Console, reports_dir: Path, cells: list[tuple[str, str]],
             table: pd.DataFrame, references: Any, paper: str | None = None) -> None:
    """Each cell's figures and summary table to its parent run; the report to a report run."""
    from clusterfl.run.tracking import git_commit, publish_report

    experiments = sorted({e for e, _ in cells})
    name = params.tracking.get("experiment", "clusterfl")
    with tempfile.TemporaryDirectory() as tmp:  # each cell's own summary table
        files = {}
        for exp, alg in cells:
            mine = table[(table["experiment"] == exp) & (table["algorithm"] == alg)]
            summary = Path(tmp) / exp / alg / "summary.md"
            atomic_write_text(summary, f"# {exp}/{alg}\n\n" + results_markdown(mine, references))
            files[(exp, alg)] = [*_cell_files(reports_dir, (exp, alg), experiments),
                                 (summary, "tables")]
        report = [(reports_dir / "index.html", ""), (reports_dir / "metrics.json", "")]
        report += [(p, p.parent.relative_to(reports_dir).as_posix())
                   for folder in ("tables", "figures")
                   for p in sorted((reports_dir / folder).rglob("*")) if p.is_file()]
        try:
            run_id, missing = publish_report(name, params.suite, files, report,
                                             {"git_commit": git_commit()}, paper=paper)
        except Exception as err:  # the report is written; the store is a convenience
            console.print(f"[yellow]warning:[/yellow] report written, but not published to "
                          f"MLflow ({type(err).__name__}: {err})")
            return
    console.print(f"MLflow: figures and tables of {len(cells) - len(missing)} cells attached "
                  f"to their parent runs; report run {run_id} (experiment {name!r})")
    if missing:
        console.print(f"[yellow]note:[/yellow] no tracked run for {', '.join(missing)} "
                      "(trained with --no-track or into another store)")


def _cells_with_results(params: SuiteConfig, results_dir: Path, partial: bool,
                        paper: str | None = None
                        ) -> tuple[list[tuple[str, str, str]], list[str]]:
    """The suite's (paper, experiment, algorithm) cells (of `paper` alone if given) that
    have seed histories, and the others as "experiment/algorithm"; without `partial` a
    missing cell is an error."""
    cells, missing = [], []
    for key, exp, alg in params.suite_cells():
        if paper is not None and key != paper:
            continue
        if key not in params.papers:
            raise UserError(f"cell {exp}/{alg}: paper {key!r} is not among the suite's papers")
        cell = results_dir / exp / alg
        if seed_dirs(results_dir, exp, alg):
            cells.append((key, exp, alg))
        elif partial:
            missing.append(f"{exp}/{alg}")
        else:
            raise UserError(f"{cell}: missing; run `clusterfl train {exp} {alg} "
                            f"{suite_flag(params)}` first (or report without it: --partial)")
    return cells, missing


def _references(paper: Paper) -> dict[str, Any]:
    path = paper.references_file
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def _section(paper: Paper, section: ReportOutput, figures: Path) -> str:
    """A paper's Markdown under its heading, its figures linked (tables/ and figures/ are
    siblings)."""
    links = [f"- [{p.relative_to(figures)}](../figures/{p.relative_to(figures)})"
             for p in section.figures]
    text = f"# {paper.title}\n\n{section.markdown.rstrip()}\n"
    return text + ("\n## Figures\n\n" + "\n".join(links) + "\n" if links else "")


def write_costs(results_dir: Path, cells: list[tuple[str, str]], path: Path) -> None:
    """The costs page: wall-clock means per cell, measured on the machine that trained it
    (outside the DVC outs; absent for results pulled from a remote)."""
    rows = cost_rows(results_dir, cells)
    header = list(dict.fromkeys(k for row in rows for k in row))
    body = ("\n".join(markdown_table(header, [[str(r.get(k, "")) for k in header]
                                               for r in rows])) if rows else
            "No timings: these results were not trained here (e.g. `dvc pull`ed).")
    atomic_write_text(path, "# Wall-clock costs (seconds, this machine)\n\n"
                      "Means over each cell's seeds and rounds, from logs/; not a DVC output, "
                      "since they differ on every run.\n\n" + body + "\n")
