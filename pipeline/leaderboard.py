"""`clusterfl leaderboard --suite SUITE [--run]`: a suite that adds algorithms to the
benchmark, run through DVC to its report (`--run`: hours) and printed as the leaderboard with
its own algorithms marked. Without `--run` it trains nothing: it prints the suite's last
report's leaderboard, or without one the committed reference's (reference/benchmark/).

The suite (e.g. suites/my_method, README "Your method on the leaderboard") names the user's
plugin file and algorithm entries and extends the benchmark's grid; since it only adds cells
it shares the benchmark's data and results (`clusterfl.core.suite.home`), so `dvc repro` tunes
and trains just its own cells (and any benchmark cell not yet trained or pulled), then writes
the report whose leaderboard ranks everything. This command is that `dvc repro` plus the
table: no scheduling of its own.
"""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from clusterfl.core.errors import UserError
from clusterfl.run.config import SuiteConfig

BOARD = "tables/benchmark_leaderboard.csv"  # written by the benchmark's report section


def reproduce(params: SuiteConfig, root: Path, console: Console) -> None:
    """`dvc repro` of the suite's dvc.yaml, its output shown as it comes; a failure is one
    line naming the exit status (DVC has printed the stage that failed)."""
    bin_dir = Path(sys.executable).parent  # the stages call `clusterfl`: the same install's
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    dvc = bin_dir / "dvc" if (bin_dir / "dvc").exists() else Path("dvc")
    target = params.file.parent / "dvc.yaml"
    console.print(f"dvc repro {target} (suite {params.suite!r}: {len(params.own_cells)} cells "
                  f"of its own, {len(params.cells) - len(params.own_cells)} shared with "
                  f"{params.home!r})", highlight=False)
    code = subprocess.call([str(dvc), "repro", str(target)], cwd=root, env=env)
    if code != 0:
        raise UserError(f"dvc repro {target} failed with exit status {code} (see above)")


def board(path: Path, own: set[str], suite: str) -> Table:
    """The leaderboard CSV as a table: algorithms by average rank with their family, mean ±
    std per scheme, this suite's own algorithms marked with *."""
    if not path.exists():
        raise UserError(f"{path}: no leaderboard yet; `clusterfl leaderboard --suite {suite} "
                        "--run` tunes and trains the suite first (hours: the benchmark is "
                        "~3 h on 2 cores)")
    frame = pd.read_csv(path, index_col=0).sort_values("rank_average")
    schemes = [c.removesuffix("_mean") for c in frame.columns
               if c.endswith("_mean") and c != "average_mean"]
    table = Table(title="leaderboard (test accuracy %, mean ± std over seeds; ranks count "
                        "only differences the seeds bear out, paired by seed at 95 %; * = "
                        "this suite's own)")
    families = frame.get("family")  # None in a report written before families
    for column in ("", "#", "algorithm", *(["family"] if families is not None else []),
                   *(s.removeprefix("bm_") for s in schemes), "average rank"):
        table.add_column(column, justify="left" if column in ("algorithm", "family")
                         else "right")
    averages = frame["rank_average"]
    for name, row in frame.iterrows():
        place = 1 + int((averages < row["rank_average"]).sum())  # equal averages share it
        cells = [("-" if pd.isna(row[f"{s}_mean"]) else
                  f"{row[f'{s}_mean']:.2f} ± {row[f'{s}_std']:.2f}") for s in schemes]
        family = [str(families[name])] if families is not None else []
        table.add_row("*" if name in own else "", str(place), str(name), *family, *cells,
                      f"{row['rank_average']:.2f}")
    return table


def run(params: SuiteConfig, root: Path, console: Console, execute: bool = False) -> Table:
    """The leaderboard of the suite's report; with `execute`, render the suite's dvc.yaml and
    reproduce it first. Without, and without a report here, the committed reference's
    (reference/<suite>/benchmark/, the benchmark as trained once), said so."""
    from pipeline.reference import reference_dir
    from pipeline.render import run as render

    if "benchmark" not in {c.paper for c in params.cells}:
        raise UserError(f"{params.file}:suite.grid: no benchmark experiment (bm_*); the "
                        "leaderboard ranks algorithms on the benchmark's schemes")
    if execute:
        render(root, only=[params.suite])
        reproduce(params, root, console)
    # marked: what the suite adds to the one whose results it shares (none for the benchmark)
    own = {c.algorithm for c in params.own_cells} if params.home != params.suite else set()
    path = root / "reports" / params.suite / BOARD
    reference = reference_dir(params.home, "benchmark", root) / "report" / BOARD
    if not execute and not path.exists() and reference.exists():
        lacks = (f"; it lacks this suite's own {', '.join(sorted(own))}" if own else "")
        console.print(f"note: no report of suite {params.suite!r} here: the committed "
                      f"reference leaderboard ({reference.parents[2]}){lacks}; "
                      f"`clusterfl leaderboard --suite {params.suite} --run` trains the "
                      "suite (hours)", highlight=False, soft_wrap=True)
        return board(reference, own, params.suite)
    return board(path, own, params.suite)
