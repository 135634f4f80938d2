"""Reference results: a paper's run at the suite's settings, kept small enough to commit, so
that a fresh clone shows the paper's report as measured and any cell trained again can be
checked against it (`clusterfl compare reference/<suite>/<paper>/histories results/<suite>`).

`python -m pipeline.reference SUITE --paper KEY` (`make reference-KEY` for the paper suite),
after `clusterfl reproduce SUITE --paper KEY`, writes reference/<suite>/<paper>/:
- `histories/histories.tar.xz`: every seed's history file as
  `<experiment>/<algorithm>/seed<k>/history.json`, byte for byte (its checksum still holds),
  and a tuned cell's `tuning/<experiment>/<algorithm>/picks.json` (the benchmark's),
  in one xz-compressed tar with sorted members and no times, owners or modes of this
  machine, so the same run gives the same bytes (one solid archive is half the size of a
  gzip file per history: the seeds of a cell share most of their text);
- `report/`: the paper's report (tables/, figures/, curves/, index.html, metrics.json)
  rendered by the report stage's own code from those histories, not copied from reports/
  (its figures rewritten as 256-colour palette PNGs, a third of the bytes):
  `--check` renders it again and fails when a committed report is stale (report code or the
  paper's references.yaml changed since);
- `partitions/<name>/seed<k>.mixture.json`: the true mixtures of the partitions that have
  them (P2's), which its report reads (`clusterfl.reports.mixtures`), and every partition's
  `seed<k>.sizes.json` (features' shape, classes, clients: the benchmark's cost table sizes
  the model with them, `clusterfl.papers.benchmark.report.sizes`): the partition files
  themselves are generated data and stay out;
- `costs.md`: wall-clock seconds per round of each cell on the machine that trained it, and
  `provenance.json`: the git commit each cell was trained at (from logs/).

README.md and docs/*.md show reference tables between markers that name a reference, one of
its report's Markdown files and which table of it (`#N`, counted from 1):
`<!-- reference paper/p4 tables/p4.md#1 -->` ... `<!-- end reference -->`. `--render` fills
them from the committed reports, `--check` fails when one differs: no table is copied by hand.
"""

import argparse
import filecmp
import io
import json
import lzma
import re
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from rich.console import Console

from clusterfl.core.errors import UserError
from clusterfl.core.io import atomic_write_json
from clusterfl.papers.benchmark.report.sizes import dataset_shape, from_files, write_sizes
from clusterfl.papers.benchmark.report.sizes import summary_file as sizes_file
from clusterfl.reports.figures import placeholder_figures
from clusterfl.reports.mixtures import read_mixtures, summary_file, write_summary
from clusterfl.reports.runs import histories_read_once, seed_dirs
from clusterfl.run.config import SuiteConfig, load_params
from clusterfl.training.history import load_history_json
from pipeline.common import SuitePaths, output_dir

REFERENCE = Path("reference")
ARCHIVE = "histories.tar.xz"  # inside reference/<suite>/<paper>/histories/
REPORT_FILES = ("tables", "figures", "curves", "index.html", "metrics.json")  # not costs.md
DOCUMENTS = ("README.md", "docs/*.md")  # where reference tables are shown
BLOCK = re.compile(r"(<!-- reference (\S+)/(\S+) (\S+?)#(\d+) -->\n)(.*?)(<!-- end reference -->)",
                   re.S)


def reference_dir(suite: str, paper: str, root: Path = Path(".")) -> Path:
    return root / REFERENCE / suite / paper


def pack(histories: dict[str, Path], target: Path) -> None:
    """`histories` ({member name: history.json or a tune stage's picks.json}, each history
    validated first: a damaged file is never committed) as one reproducible tar.xz at
    `target`."""
    for path in histories.values():
        if path.name == "history.json":
            load_history_json(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(target, "wb", preset=9 | lzma.PRESET_EXTREME) as packed, \
            tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(histories):
            data = histories[name].read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))


@contextmanager
def unpacked(tree: Path) -> Iterator[Path]:
    """`tree` as a results tree of plain `history.json` files: itself when it holds no
    `histories.tar.xz`, else a temporary directory with the archive unpacked."""
    archive = tree / ARCHIVE
    if not archive.is_file():
        yield tree
        return
    with tempfile.TemporaryDirectory() as tmp, lzma.open(archive) as raw, \
            tarfile.open(fileobj=raw, mode="r") as tar:
        tar.extractall(tmp, filter="data")
        yield Path(tmp)


def packed_files(results: Path, cells: list[tuple[str, str]]) -> dict[str, Path]:
    """What a reference packs of a results tree: every seed's history of `cells` and, where
    a tune stage picked the cell's hyperparameters, its `tuning/<exp>/<alg>/picks.json` (the
    benchmark's report reads the picks), each under its path in that tree."""
    files = {f"{exp}/{alg}/{seed.name}/history.json": seed / "history.json"
             for exp, alg in cells for seed in seed_dirs(results, exp, alg)}
    for exp, alg in cells:
        picks = results / "tuning" / exp / alg / "picks.json"
        if picks.is_file():
            files[picks.relative_to(results).as_posix()] = picks
    return files


def _cells(params: SuiteConfig, paper: str) -> list[tuple[str, str]]:
    return [(c.experiment, c.algorithm) for c in params.paper_cells(paper)]


def export(params: SuiteConfig, paper: str, root: Path = Path(".")) -> Path:
    """Pack the paper's seed histories from results/<home>/, write its costs and provenance
    from logs/, and render its report; every cell of the paper must have results."""
    home = SuitePaths(params.home, root)
    target = reference_dir(params.suite, paper, root)
    cells = _cells(params, paper)
    missing = [f"{e}/{a}" for e, a in cells if not seed_dirs(home.results, e, a)]
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise UserError(f"{home.results}: no results for {len(missing)} cells of paper "
                        f"{paper!r} ({shown}); run `clusterfl reproduce --suite "
                        f"{params.suite} --paper {paper}` first")
    commits: dict[str, str | None] = {}
    files = packed_files(home.results, cells)
    with output_dir(target / "histories") as out:
        pack(files, out / ARCHIVE)
    for exp, alg in cells:
        record = home.log_dir(exp, alg) / "tracking.json"
        tags = json.loads(record.read_text()).get("tags", {}) if record.exists() else {}
        commits[f"{exp}/{alg}"] = tags.get("git_commit")
    shapes: dict[str, tuple[tuple[int, ...], int]] = {}  # per dataset: read once
    with output_dir(target / "partitions") as out:
        for name, seed in sorted({(params.experiment(e).partition, int(s.name[4:]))
                                  for e, a in cells for s in seed_dirs(home.results, e, a)}):
            if read_mixtures(home.partitions, name, seed).mixture is not None:
                write_summary(home.partition_file(name, seed), summary_file(out, name, seed))
            # every partition's: the benchmark's cost table sizes the model, counts clients
            dataset = params.partition(name)["dataset"]
            if dataset not in shapes:
                shapes[dataset] = dataset_shape(home.dataset_file(dataset))
            write_sizes(from_files(home.partition_file(name, seed), shapes[dataset]),
                        sizes_file(out, name, seed))
    atomic_write_json(target / "provenance.json", {"suite": params.suite, "paper": paper,
                                                   "git_commit": commits})
    from pipeline.report import write_costs

    write_costs(home.results, cells, target / "costs.md")
    render(params, paper, target, target / "report")
    return target


def render(params: SuiteConfig, paper: str, reference: Path, report: Path,
           location: Path | None = None, figures: bool = True) -> None:
    """The paper's report from the packed histories under `reference`, into `report` (swapped
    in whole), without MLflow; its links into the repository are made for `location`
    (default: `report`). `figures=False` writes each figure as an empty file of its name
    (`placeholder_figures`): enough for `stale_files`, which compares text files only."""
    from pipeline import report as stage

    with unpacked(reference / "histories") as results, \
            tempfile.TemporaryDirectory() as tmp, \
            (nullcontext() if figures else placeholder_figures()), histories_read_once():
        written = Path(tmp) / "report"
        # partial: a reference is a snapshot of one run; cells the suite gained since it
        # are listed as missing in its results.md until the next `export` packs them
        stage.run(params, Console(stderr=True, quiet=True), results,
                  reference / "partitions", written, partial=True, paper_key=paper,
                  location=location or report)
        with output_dir(report) as out:
            for name in REPORT_FILES:
                source = written / name
                if source.is_dir():
                    shutil.copytree(source, out / name)
                elif source.exists():
                    shutil.copy(source, out / name)
            for figure in sorted((out / "figures").glob("*.png")) if figures else ():
                palette_png(figure)


def palette_png(path: Path) -> None:
    """Rewrite a figure as a 256-colour palette PNG: line plots and heatmaps lose nothing
    that shows, and the committed figures shrink to a third (`--check` compares text files
    only, so the figures may differ in bytes from the report stage's)."""
    from PIL import Image

    with Image.open(path) as image:
        image.load()
    quantized = image.quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    buffer = io.BytesIO()
    quantized.save(buffer, format="PNG", optimize=True)
    path.write_bytes(buffer.getvalue())


def stale_files(params: SuiteConfig, paper: str, reference: Path) -> list[str]:
    """The report's text files (tables, curves, metrics.json, index.html) that differ from a
    fresh rendering of the committed histories, or exist on one side only."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "report"
        committed = reference / "report"
        render(params, paper, reference, fresh, location=committed,  # linked as committed
               figures=False)  # not compared: built, not drawn (half the time)

        def texts(base: Path) -> set[str]:
            return {p.relative_to(base).as_posix() for p in base.rglob("*")
                    if p.is_file() and p.suffix != ".png"}

        names = texts(fresh) | (texts(committed) if committed.exists() else set())
        return sorted(n for n in names if not (committed / n).exists() or not (fresh / n).exists()
                      or not filecmp.cmp(committed / n, fresh / n, shallow=False))


def markdown_tables(text: str) -> list[str]:
    """The Markdown tables of `text` (runs of lines starting with `|`), in order."""
    tables, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append("\n".join(current) + "\n")
            current = []
    return tables


def fill_blocks(text: str, root: Path = Path("."), where: str = "") -> str:
    """`text` with every reference block's table taken from its committed report; a block
    naming a missing reference, file or table is an error."""

    def table(match: re.Match[str]) -> str:
        suite, paper, name, number = match[2], match[3], match[4], int(match[5])
        path = reference_dir(suite, paper, root) / "report" / name
        if not path.is_file():
            raise UserError(f"{where}: reference block names {path}, which does not exist")
        tables = markdown_tables(path.read_text())
        if not 1 <= number <= len(tables):
            raise UserError(f"{where}: {path} has {len(tables)} tables, not #{number}")
        return match[1] + tables[number - 1] + match[7]

    return BLOCK.sub(table, text)


def documents(root: Path = Path(".")) -> list[Path]:
    return sorted({p for pattern in DOCUMENTS for p in root.glob(pattern)})


def committed(root: Path = Path(".")) -> list[tuple[str, str]]:
    """(suite, paper) of every reference under reference/."""
    return sorted((d.parent.name, d.name) for d in (root / REFERENCE).glob("*/*")
                  if (d / "histories" / ARCHIVE).is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.reference", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", nargs="?", help="the suite whose results to pack, e.g. paper")
    parser.add_argument("--paper", help="the paper's key, e.g. p4")
    parser.add_argument("--check", action="store_true",
                        help="render every committed reference report again; exit 1 if any "
                             "differs (report code or references.yaml changed)")
    parser.add_argument("--render", action="store_true",
                        help="re-render the committed reference reports (no results needed)")
    args = parser.parse_args(argv)
    from clusterfl.core.suite import suite_file

    try:
        if args.check or args.render:
            stale = 0
            for suite, paper in committed():
                params, ref = load_params(suite_file(suite)), reference_dir(suite, paper)
                if args.render:
                    render(params, paper, ref, ref / "report")
                    print(f"rendered {ref / 'report'}")
                    continue
                differ = stale_files(params, paper, ref)
                stale += bool(differ)
                print(f"{ref}/report: " + (f"stale ({', '.join(differ)}); run `python -m "
                                           f"pipeline.reference --render`" if differ else
                                           "current"))
            for path in documents():
                text = path.read_text()
                filled = fill_blocks(text, where=str(path))
                if args.render and filled != text:
                    path.write_text(filled)
                    print(f"rendered the reference tables of {path}")
                elif args.check and filled != text:
                    stale += 1
                    print(f"{path}: reference tables stale; run `python -m pipeline.reference "
                          "--render`")
            return 1 if stale else 0
        if not args.suite or not args.paper:
            parser.error("name a suite and --paper (or --check / --render)")
        target = export(load_params(suite_file(args.suite)), args.paper)
        size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
        print(f"wrote {target} ({size / 1e6:.1f} MB)")
        return 0
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
