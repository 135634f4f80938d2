"""`clusterfl diagnose ...`: measurements that explain a gap to a paper.

Thin: read the suite's params, call the paper's pure functions, write a CSV and a Markdown
table (all or nothing) under results/<suite>/diagnostics/, where the suite's report reads them.
- `p1-model-space`: k-means ARI of P1's true synthetic clusters on inputs, local models and
  pFedKM's personalized models (`clusterfl.papers.p1.tools.model_space`, its `model_space.yaml`).
- `p2-draws`: P2's off-diagonal MSE against the distance D of the two drawn parameter
  vectors, over dataset seeds (`clusterfl.papers.p2.tools.draws`).
"""

from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from clusterfl.core.errors import UserError

diagnose_app = typer.Typer(help="Measurements that explain a gap to a paper (CSV + Markdown).",
                           no_args_is_help=True)
console = Console(stderr=True)
DIAGNOSTICS = "diagnostics"  # results/<suite>/diagnostics/

SuiteOpt = Annotated[str, typer.Option("--suite", "-s", help="The suite whose params to use.")]
ParamsOpt = Annotated[Path | None, typer.Option(
    "--params", "-p", help="A suite's params file (default: the one of --suite).")]
OutOpt = Annotated[Path | None, typer.Option(
    help="Output directory (default: results/<suite>/diagnostics).")]
RoundsOpt = Annotated[int | None, typer.Option(help="Rounds (default: the config's/the suite's).")]


def _errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as err:
            console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper


def _params(params: Path | None, suite: str) -> Any:
    from clusterfl.core.suite import suite_file
    from clusterfl.run.config import load_params

    path = params or suite_file(suite)
    if not path.exists():
        raise UserError(f"--suite: no params file {path}")
    return load_params(path)


def _write(directory: Path, name: str, frame: Any, text: str) -> Path:
    """`<name>.csv` and `<name>.md`, each written atomically."""
    from clusterfl.core.io import atomic_write_text

    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_text(directory / f"{name}.csv", frame.to_csv(index=False))
    atomic_write_text(directory / f"{name}.md", text)
    return directory / f"{name}.md"


@diagnose_app.command("p1-model-space")
@_errors
def p1_model_space(
    suite: SuiteOpt = "paper",
    params: ParamsOpt = None,
    config: Annotated[Path | None, typer.Option(
        help="The variants file (default: src/clusterfl/papers/p1/model_space.yaml).")] = None,
    rounds: RoundsOpt = None,
    seed: Annotated[list[int] | None, typer.Option(help="Seeds (default: the config's).")] = None,
    out: OutOpt = None,
) -> None:
    """k-means ARI of P1's synthetic clusters on inputs, local and pFedKM models."""
    from clusterfl.papers.p1.tools import model_space as ms
    from pipeline.common import SuitePaths

    p = _params(params, suite)
    cfg = ms.load_config(config or ms.CONFIG)
    frame = ms.table(p, cfg.variants, seed or list(cfg.seeds), rounds or cfg.rounds,
                     cfg.clustered)
    text = (f"k-means ARI against P1's three true clusters, mean ± std over seeds "
            f"{seed or list(cfg.seeds)}, T = {rounds or cfg.rounds} rounds, R = local steps "
            f"of the experiment, clustered algorithm {cfg.clustered}.\n\n"
            + ms.markdown(frame) + "\n")
    written = _write(out or SuitePaths(p.suite).results / DIAGNOSTICS, "p1_model_space",
                     frame, text)
    console.print(text, highlight=False)
    console.print(f"wrote {written}", highlight=False)


@diagnose_app.command("p2-draws")
@_errors
def p2_draws(
    suite: SuiteOpt = "paper",
    params: ParamsOpt = None,
    experiment: Annotated[str, typer.Option(help="A P2 synthetic experiment.")] = "p2_synth_1090",
    algorithm: Annotated[str, typer.Option(help="A P2 algorithm.")] = "fedsoft",
    draws: Annotated[int, typer.Option(help="Dataset seeds 0..draws-1.")] = 10,
    seed: Annotated[int, typer.Option(help="Partition and training seed.")] = 0,
    rounds: RoundsOpt = None,
    out: OutOpt = None,
) -> None:
    """P2's off-diagonal MSE against D = ||theta_0 - theta_1||^2 over parameter draws."""
    import pandas as pd

    from clusterfl.papers.p2.tools import draws as dr
    from pipeline.common import SuitePaths

    if draws < 2:
        raise UserError(f"--draws: must be >= 2 (a fit needs two points), got {draws}")
    p = _params(params, suite)
    from clusterfl.core.io import read_yaml

    refs = read_yaml(p.papers["p2"].references_file).get(experiment) or {}
    if "holdout_mse" not in refs:
        raise UserError(f"--experiment: {experiment!r} has no paper holdout_mse matrix in "
                        "P2's references.yaml")
    rows = []
    for draw in range(draws):
        rows.append(dr.draw_row(p, experiment, algorithm, draw, seed, rounds))
        console.print(f"draw {draw}: D {rows[-1]['D']:.1f}", highlight=False)
    frame = pd.DataFrame(rows)
    used = rounds or p.experiment(experiment).schedule.rounds
    text = (f"`{experiment}` / `{algorithm}`, partition and training seed {seed}, {used} "
            f"rounds; dataset seeds 0..{draws - 1}. MSE on each distribution's held-out "
            "set, centers matched to distributions.\n\n"
            + dr.markdown(frame, refs["holdout_mse"], refs.get("source", experiment)))
    written = _write(out or SuitePaths(p.suite).results / DIAGNOSTICS, "p2_draw_distance",
                     frame, text)
    console.print(text, highlight=False)
    console.print(f"wrote {written}", highlight=False)
