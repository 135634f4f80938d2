"""The `clusterfl` command: one command per pipeline stage, plus `list`.

DVC runs exactly these commands (see dvc.yaml), so a stage run by hand is the same code.
User errors print one line and exit with status 2; nothing half-written is left behind.
"""

import errno
import math
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from clusterfl.core.errors import CorruptFile, UserError

app = typer.Typer(
    help="Reproduce clustered and personalized federated learning papers.",
    no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False,
)
list_app = typer.Typer(help="List what can be named in params.yaml.", no_args_is_help=True)
app.add_typer(list_app, name="list")

from pipeline.bench_cmd import bench_app  # noqa: E402  (after app, to keep it first in help)

app.add_typer(bench_app, name="bench")
from pipeline.diagnose import diagnose_app  # noqa: E402

app.add_typer(diagnose_app, name="diagnose")
console = Console(stderr=True)

ParamsOpt = Annotated[Path | None, typer.Option(
    "--params", "-p", help="A suite's params file (default: the one of --suite).")]
SuiteOpt = Annotated[str, typer.Option(
    "--suite", "-s", help="The suite: `default` (params.yaml) or a folder of suites/.")]
ThreadsOpt = Annotated[int | None, typer.Option(
    "--threads", help="torch threads for this process, >= 1 (default: CLUSTERFL_THREADS or "
                    "torch's).")]
DeviceOpt = Annotated[str, typer.Option(
    help="torch device: cpu, cuda, or auto (cuda where one is available).")]
JobsOpt = Annotated[int | None, typer.Option(
    help="Train this many runs (seeds or grid points) at once, >= 1, each in its own process "
         "with cores/jobs threads (default: CLUSTERFL_JOBS or 1).")]


# a read-only output directory (or disk): the user's to fix, like a bad params value; every
# write is atomic (clusterfl.core.io, pipeline.common.output_dir), so none is left half-written
UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a UserError into one line on stderr and exit status 2 (or its `exit_code`)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as err:
            message = str(err)
            if isinstance(err, CorruptFile):
                from pipeline.common import rebuild_command

                command = rebuild_command(err.path, _own_file(kwargs.get("params")))
                message += f"; rebuild it with `{command}`" if command else ""
            console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
            raise typer.Exit(getattr(err, "exit_code", 2)) from None
        except MemoryError as err:  # a size the checks before allocating did not foresee
            console.print(f"[red]error:[/red] out of memory ({err or type(err).__name__}); "
                          "lower the sizes in the params file", highlight=False,
                          soft_wrap=True)
            raise typer.Exit(2) from None
        except OSError as err:
            if err.errno not in UNWRITABLE:  # anything else is a bug: its traceback helps
                raise
            where = f"{err.filename}: " if err.filename else ""
            console.print(f"[red]error:[/red] {where}cannot write ({err.strerror}); nothing "
                          "was changed there", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper


def _own_file(params: Path | None) -> Path | None:
    """A -p file that `--suite` cannot name (not params.yaml nor suites/<name>/params.yaml
    here), so that hints say `-p FILE` instead of an unknown suite; else None."""
    if params is None:
        return None
    where = params.resolve()
    named = (where == Path("params.yaml").resolve()
             or (where.name == "params.yaml" and where.parent.parent == Path("suites").resolve()))
    return None if named else params


def _suite_file(params: Path | None, suite: str) -> Path:
    """-p if given, else the params file of --suite (a missing one is a one-line error)."""
    if params is not None:
        return params
    from clusterfl.core.suite import suite_file

    path = suite_file(suite)
    if not path.exists():
        names = ["default", *sorted(p.name for p in Path("suites").glob("*/") if p.is_dir())]
        raise UserError(f"--suite: unknown suite {suite!r} (no {path}); allowed: "
                        f"{', '.join(names)}")
    _require_own_stage(path, suite)
    return path


def _require_own_stage(path: Path, suite: str) -> None:
    """Under `dvc repro` (DVC names the stage in DVC_STAGE), a one-line error when the stage
    is not one of `--suite`'s own dvc.yaml: a suite folder copied with its dvc.yaml runs
    `--suite <the original>`, and would train and overwrite the original's outputs while
    DVC records them in the copy's lock."""
    import os

    stage = os.environ.get("DVC_STAGE")
    if not stage:
        return
    written = stage.rsplit(":", 1)[0] if ":" in stage else "dvc.yaml"
    here = Path(os.environ.get("DVC_ROOT", ".")) / written
    own = path.parent / "dvc.yaml"
    if here.resolve() != own.resolve():
        folder = here.parent.name if here.parent.parent.name == "suites" else None
        fix = (f"set suite.name: {folder} in {Path(written).parent / 'params.yaml'}, then run "
               f"`clusterfl render {folder}`" if folder else "run `clusterfl render`")
        raise UserError(f"{written}: its stage {stage.rsplit(':', 1)[-1]} runs `--suite "
                        f"{suite}`, whose pipeline is {own} (a suite folder copied with its "
                        f"dvc.yaml?); nothing was run: {fix}")


@app.command()
@user_errors
def download(
    dataset: Annotated[str, typer.Argument(help="A name under `datasets:` in params.yaml.")],
    suite: SuiteOpt = "default",
    params: ParamsOpt = None,
) -> None:
    """Download or generate one dataset into data/<suite>/raw/<dataset>/."""
    from pipeline import download as stage

    stage.run(dataset, _suite_file(params, suite), console)


@app.command()
@user_errors
def partition(
    name: Annotated[str, typer.Argument(help="A name under `partitions:` in params.yaml.")],
    suite: SuiteOpt = "default",
    params: ParamsOpt = None,
) -> None:
    """Split a dataset into clients (one file per seed) into data/<suite>/partitions/<name>/."""
    from pipeline import partition as stage

    stage.run(name, _suite_file(params, suite), console)


@app.command()
@user_errors
def train(
    experiment: Annotated[str, typer.Argument(help="A name under a paper's `experiments:`.")],
    algorithm: Annotated[str, typer.Argument(help="A name under that paper's `algorithms:`.")],
    suite: SuiteOpt = "default",
    params: ParamsOpt = None,
    seed: Annotated[list[int] | None, typer.Option(
        help="Run only these seeds (repeatable; the cell keeps its other seeds' "
             "results); default: the suite's seeds.")] = None,
    track: Annotated[bool, typer.Option(help="Log the runs to MLflow.")] = True,
    engine: Annotated[str, typer.Option(
        help="Local-training engine: vectorized or reference (per-client loop).")] = "vectorized",
    threads: ThreadsOpt = None,
    jobs: JobsOpt = None,
    device: DeviceOpt = "cpu",
    picks: Annotated[Path | None, typer.Option(
        help="A picks.json of `clusterfl tune`: train with its picked lr (and K).")] = None,
) -> None:
    """Train one cell into results/<suite>/<experiment>/<algorithm>/."""
    from clusterfl.core.errors import unknown_name
    from clusterfl.engine import ENGINES
    from clusterfl.run.devices import resolve_device
    from pipeline import train as stage

    if engine not in ENGINES:
        raise unknown_name("--engine", engine, list(ENGINES))
    from clusterfl.run.config import load_params
    from pipeline.common import SuitePaths, require_seeds, require_writable

    path = _suite_file(params, suite)
    loaded = load_params(path, load=())
    if seed:  # a seed the partition stage never made: say how to make it
        require_seeds(loaded, loaded.experiment(experiment).partition, seed)
    require_writable(SuitePaths(loaded.home).cell_dir(experiment, algorithm))
    stage.run(experiment, algorithm, path, console, seeds=seed,
              track=track, engine=engine, workers=jobs, threads=threads,
              device=resolve_device(device), picks=picks)


@app.command()
@user_errors
def tune(
    experiment: Annotated[str, typer.Argument(help="A name under a paper's `experiments:`.")],
    algorithm: Annotated[str, typer.Argument(help="A name under that paper's `algorithms:`.")],
    suite: Annotated[str, typer.Option(
        "--suite", "-s", help="A suite with a `tuning` grid: `benchmark` or a folder of "
                              "suites/ that extends it.")] = "benchmark",
    params: ParamsOpt = None,
    threads: ThreadsOpt = None,
    jobs: JobsOpt = None,
    device: DeviceOpt = "cpu",
) -> None:
    """Pick a cell's lr (and K) on the validation split from the suite's `tuning` grid, into
    results/<suite>/tuning/<experiment>/<algorithm>/picks.json (docs/benchmark.md)."""
    from clusterfl.run.devices import resolve_device
    from pipeline import tune as stage

    stage.run(experiment, algorithm, _suite_file(params, suite), console, workers=jobs,
              threads=threads, device=resolve_device(device))


PaperOpt = Annotated[str | None, typer.Option(
    help="Only this paper's cells of the suite (e.g. p5).")]
PlanJobsOpt = Annotated[int | None, typer.Option(
    help="Seeds trained at once, >= 1 (CLUSTERFL_JOBS of the repro; default: CLUSTERFL_JOBS "
         "or 1).")]
ProbeOpt = Annotated[bool, typer.Option(
    help="Time a cell without timings in logs/ by training 2 rounds of its first seed "
         "(cached in logs/<suite>/probes.json); --no-probe runs no new probe (a cell "
         "with neither timings nor a cached probe shows as unknown).")]


@app.command()
@user_errors
def sweep(
    suite: SuiteOpt = "default",
    params: ParamsOpt = None,
    paper: PaperOpt = None,
    executor: Annotated[str, typer.Option(
        help="ray (local Ray, or the cluster at --address / RAY_ADDRESS), process (worker "
             "processes here) or serial (one seed after another in this process).")] = "ray",
    address: Annotated[str | None, typer.Option(
        help="A running Ray cluster, e.g. 10.0.0.1:6379 or `auto` (default: RAY_ADDRESS, "
             "else a local Ray).")] = None,
    cpus: Annotated[int | None, typer.Option(
        help="CPUs of the local Ray, or worker processes of --executor process, >= 1 "
             "(default: every core).")] = None,
    cpus_per_task: Annotated[float, typer.Option(
        help="Ray: CPUs each seed task asks for (and its torch threads).")] = 1.0,
    gpus_per_task: Annotated[float | None, typer.Option(
        help="Ray: GPUs each seed task asks for, e.g. 0.25 to share one GPU by four "
             "(default: 1 with --device cuda, else 0).")] = None,
    retries: Annotated[int, typer.Option(
        help="Ray: times a task whose worker died is run again.")] = 3,
    device: DeviceOpt = "cpu",
    track: Annotated[bool, typer.Option(help="Log the runs to MLflow.")] = True,
) -> None:
    """Train every out-of-date cell of the suite (with --paper, of that paper alone) on one
    pool of seed tasks and record them in dvc.lock (`dvc repro` then runs only the report).
    Exit 1 if a cell failed."""
    from clusterfl.run.executors import choose_executor
    from pipeline import sweep as stage

    path = _suite_file(params, suite)
    pool, device = choose_executor(executor, cpus=cpus, device=device, address=address,
                                   cpus_per_task=cpus_per_task, gpus_per_task=gpus_per_task,
                                   retries=retries)
    status = stage.run(path, pool, console, device=device, track=track, paper=paper)
    if status:
        raise typer.Exit(status)


@app.command()
@user_errors
def report(
    suite: SuiteOpt = "default",
    params: ParamsOpt = None,
    partial: Annotated[bool, typer.Option(
        help="Leave out the suite's cells without results (listed in results.md) instead of "
             "stopping; for part of a suite trained by hand.")] = False,
    track: Annotated[bool, typer.Option(
        help="Log to MLflow the suite's trained cells it lacks (`track --replay`), then attach "
             "the figures and tables to the cells' runs and to a report run.")] = True,
    paper: Annotated[str | None, typer.Option(
        help="Only this paper's cells of the suite (e.g. p5), into reports/<suite>/<paper>/ "
             "(the suite's `report_<paper>` stage).")] = None,
) -> None:
    """Aggregate the suite's results into reports/<suite>/ (tables, figures, metrics.json,
    index.html)."""
    from clusterfl.run.config import load_params
    from pipeline import report as stage
    from pipeline.common import SuitePaths
    from pipeline.render import require_current

    path = _suite_file(params, suite)
    require_current(path)  # a grid edited without `clusterfl render` ran the old cell list
    loaded = load_params(path)
    home = SuitePaths(loaded.home)  # a suite that only adds cells reads its parent's too
    reports = SuitePaths(loaded.suite).reports
    loaded.paper_cells(paper)  # an unknown --paper is a one-line error
    if track:  # cells trained while the store was down are logged now, once
        from pipeline.track import replay_pending

        replay_pending(loaded.home, console)
    remove_orphans(loaded.home)
    stage.run(loaded, console, home.results, home.partitions,
              reports / paper if paper else reports, partial=partial, track=track,
              paper_key=paper)



# `plan`, `reproduce` and `leaderboard` took the suite as an argument; every command takes
# --suite now, and the argument is still read (with a warning) for one release
SuiteArg = Annotated[str | None, typer.Argument(
    metavar="[SUITE]", help="Deprecated: use --suite.", show_default=False)]
SuiteChoice = Annotated[str | None, typer.Option(
    "--suite", "-s", help="The suite: `default` (params.yaml) or a folder of suites/ "
                          "[default: default].", show_default=False)]


def _suite_name(command: str, positional: str | None, option: str | None,
                default: str = "default") -> str:
    """--suite, or the deprecated positional suite with a warning; both and unequal: an
    error."""
    if positional is None:
        return option or default
    if option is not None and option != positional:
        raise UserError(f"{command}: the suite is given twice ({positional!r} and --suite "
                        f"{option}); give --suite alone")
    console.print(f"[yellow]warning:[/yellow] `clusterfl {command} {positional}` is "
                  f"deprecated and will be removed in the next release; use `clusterfl "
                  f"{command} --suite {positional}`", highlight=False, soft_wrap=True)
    return positional


def remove_orphans(suite: str) -> None:
    """The checkpoints of suite `suite` (its data and results' home) whose seed is complete
    (`common.remove_orphan_checkpoints`), each said in a line."""
    from pipeline.common import SuitePaths, remove_orphan_checkpoints

    remove_orphan_checkpoints(SuitePaths(suite), lambda line: console.print(
        line, highlight=False, soft_wrap=True))


def _jobs(jobs: int | None) -> int:
    from clusterfl.core.options import count

    return count("--jobs", jobs, "CLUSTERFL_JOBS") or 1


def _print_plan(made: Any) -> None:
    from pipeline.plan import COLUMNS, table_rows, total_line

    table = Table(title=f"stale train cells of suite {made.suite!r} "
                        f"(cost: seconds per round x rounds x seeds; wall: {made.jobs} "
                        f"seed{'s' * (made.jobs > 1)} at a time)")
    for column in COLUMNS:
        table.add_column(column)
    for row in table_rows(made):
        table.add_row(*row)
    out = Console(width=None if sys.stdout.isatty() else 160)  # a pipe: no folded cells
    out.print(table)
    out.print(total_line(made), highlight=False)


@app.command()
@user_errors
def plan(
    suite_arg: SuiteArg = None,
    suite: SuiteChoice = None,
    paper: PaperOpt = None,
    jobs: PlanJobsOpt = None,
    probe: ProbeOpt = True,
    write: Annotated[bool, typer.Option(
        "--write", help="Keep the plan in logs/<suite>/plan.json: the `dvc repro` that "
                        "follows prints the suite's progress and ETA from it.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The plan as JSON on stdout.")]
        = False,
    params: ParamsOpt = None,
) -> None:
    """Before `dvc repro`: the suite's stale train cells (DVC's `status`), each one's cost on
    this machine, the total CPU time and the wall time with --jobs seeds at once."""
    import json

    from pipeline import plan as planning
    from pipeline.common import SuitePaths

    name = _suite_name("plan", suite_arg, suite)
    made = planning.make(_suite_file(params, name), _jobs(jobs), paper, probe, console)
    if write:
        written = planning.write(made, SuitePaths(made.suite))
        console.print(f"wrote {written}", highlight=False)
    if as_json:
        print(json.dumps(made.as_json(), indent=2))
    else:
        _print_plan(made)


@app.command()
@user_errors
def reproduce(
    suite_arg: SuiteArg = None,
    suite: SuiteChoice = None,
    paper: PaperOpt = None,
    jobs: PlanJobsOpt = None,
    probe: ProbeOpt = True,
) -> None:
    """Render the suite's dvc.yaml, write its plan (`plan --write`), then `dvc repro` it, or
    with --paper its `report_<paper>` stage: that paper's cells alone, at the suite's
    settings, ending in reports/<suite>/<paper>/ (`make paper-p5`)."""
    import os
    import subprocess

    from clusterfl.run.config import load_params
    from pipeline import plan as planning
    from pipeline.common import SuitePaths
    from pipeline.render import dvc_file
    from pipeline.render import run as render_all

    suite = _suite_name("reproduce", suite_arg, suite)
    path, jobs = _suite_file(None, suite), _jobs(jobs)
    for written in render_all(Path("."), only=[suite]):
        console.print(f"wrote {written}", highlight=False)
    made = planning.make(path, jobs, paper, probe, console)
    planning.write(made, SuitePaths(made.suite))
    _print_plan(made)
    target = dvc_file(path).as_posix()
    if paper is not None and len({c.paper for c in load_params(path).cells}) > 1:
        target += f":report_{paper}"
    env = {**os.environ, "CLUSTERFL_JOBS": str(jobs),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    console.print(f"dvc repro {target} (CLUSTERFL_JOBS={jobs})", highlight=False)
    lock = dvc_file(path).with_suffix(".lock")
    before = lock.read_text() if lock.is_file() else None
    status = subprocess.run([sys.executable, "-m", "dvc", "repro", target], env=env).returncode
    remove_orphans(load_params(path).home)  # e.g. of a cell DVC restored from its cache
    if status:
        raise typer.Exit(status)
    if before is not None:  # another CPU family's last bits: keep the committed lock
        from pipeline.lock_family import keep

        if (kept := keep(lock, before, suite)).line:
            console.print(kept.line, highlight=False, soft_wrap=True)


@app.command()
@user_errors
def render(
    suites: Annotated[list[str] | None, typer.Argument(
        help="Suites to render (default: every suite of the repository).")] = None,
    check: Annotated[bool, typer.Option(
        "--check", help="Write nothing; exit 1 listing the dvc.yaml files that are stale.")]
        = False,
) -> None:
    """Write each suite's dvc.yaml (the root one for the default suite, suites/<name>/dvc.yaml)
    from its grid: the cells, their partitions and datasets, and each stage's code deps."""
    from pipeline.render import run as render_all

    stale = render_all(Path("."), check=check, only=suites)
    for path in stale:
        console.print(f"{'stale' if check else 'wrote'} {path}", highlight=False)
    if not stale:
        console.print("every suite's dvc.yaml is current", highlight=False)
    if check and stale:
        raise typer.Exit(1)


@app.command()
@user_errors
def leaderboard(
    suite_arg: SuiteArg = None,
    suite: Annotated[str | None, typer.Option(
        "--suite", "-s", help="A suite whose grid names benchmark schemes, e.g. one that "
                              "extends `benchmark` with your algorithm (suites/my_method) "
                              "[default: benchmark].", show_default=False)] = None,
    run: Annotated[bool, typer.Option(
        "--run/--no-run", help="Tune and train the suite through DVC first (hours: the "
                               "benchmark is ~3 h on 2 cores). Without it nothing is trained: "
                               "the last report's leaderboard, else the committed "
                               "reference's.")] = False,
) -> None:
    """Print a suite's leaderboard with its own algorithms marked: your method ranked beside
    the baselines; with --run, tune and train its cells through DVC (`dvc repro`) first."""
    from clusterfl.run.config import load_params
    from pipeline import leaderboard as stage
    from pipeline.tables import show

    path = _suite_file(None, _suite_name("leaderboard", suite_arg, suite, "benchmark"))
    show(stage.run(load_params(path), Path("."), console, execute=run), keys=3)


@app.command()
@user_errors
def track(
    suite: SuiteOpt = "default",
    params: ParamsOpt = None,
    replay: Annotated[bool, typer.Option(
        "--replay", help="Log the suite's trained cells the MLflow store lacks (e.g. trained "
                         "while it was down) from their outputs; none is logged twice.")] = False,
) -> None:
    """MLflow and the suite's trained cells: `--replay` logs those the store lacks."""
    from clusterfl.run.config import load_params
    from pipeline import track as stage

    name = load_params(_suite_file(params, suite)).suite
    if not replay:
        raise UserError("track: nothing to do; add --replay to log the cells the store lacks")
    try:
        stage.run(name, console)
    except UserError:
        raise
    except Exception as err:  # the store: one line, not MLflow's traceback
        from clusterfl.run.tracking import reason

        raise UserError(f"MLflow store unreachable ({reason(err)}); "
                        "nothing was lost: run this again when it is up") from None


@app.command()
@user_errors
def ui(
    suite: SuiteOpt = "default",
    params: ParamsOpt = None,
    host: Annotated[str, typer.Option(help="Address the UI listens on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port the UI listens on.")] = 5000,
) -> None:
    """Start the MLflow UI on this repo's runs and print the link to the runs table."""
    from clusterfl.run.config import load_params
    from pipeline import ui as stage

    loaded = load_params(_suite_file(params, suite))
    stage.run(loaded.tracking.get("experiment", "clusterfl"), host, port, console)


@app.command()
@user_errors
def compare(
    a: Annotated[Path, typer.Argument(help="A results tree, e.g. results/default.")],
    b: Annotated[Path, typer.Argument(help="Another results tree.")],
    tolerance: Annotated[float, typer.Option(
        help="Largest difference counted as equal (>= 0).")] = 0.0,
    subset: Annotated[bool, typer.Option(
        "--subset", help="B may hold histories A lacks (e.g. a reference of one paper "
                         "against a whole suite's results); every history of A must still "
                         "be in B.")] = False,
) -> None:
    """Compare every seed history of two result trees; exit 1 if any number differs or a
    history is in one tree only (with --subset: missing from B)."""
    from pipeline.compare import compare as run_compare
    from pipeline.compare import unmatched

    if not math.isfinite(tolerance) or tolerance < 0:
        raise UserError(f"--tolerance: must be a finite number >= 0, got {tolerance}")
    for path in (a, b):
        if not path.is_dir():
            raise UserError(f"{path}: not a directory")
    rows = run_compare(a, b)
    compared = [r for r in rows if "missing" not in r]
    missing = unmatched(rows, subset, a, b)
    if not compared and not missing:  # empty trees: a pass would check nothing
        raise UserError(f"nothing to compare: no seed history (history.json) in {a}"
                        + ("" if subset else f" or {b}"))
    table = Table(title=f"{a} vs {b}")
    for col in ("history", "rounds", "metrics", "max metric diff", "arrays", "max array diff",
                "only in one"):
        table.add_column(col)
    differ = 0
    for r in compared:
        bad = (max(r["max_metric_diff"], r["max_array_diff"]) > tolerance
               or r["rounds"][0] != r["rounds"][1])
        differ += bad
        table.add_row(r["history"], "/".join(map(str, r["rounds"])), str(r["metrics"]),
                      f"{r['max_metric_diff']:.3g}", str(r["arrays"]),
                      f"{r['max_array_diff']:.3g}",
                      " ".join(r["only_a"] + r["only_b"]), style="red" if bad else None)
    from pipeline.tables import show

    show(table)
    for side, names in missing.items():
        console.print(f"[red]only in {side}:[/red] {len(names)} histories: "
                      f"{', '.join(names)}", highlight=False, soft_wrap=True)
    console.print(f"{len(compared) - differ} of {len(compared)} histories in both trees equal "
                  f"(tolerance {tolerance})"
                  + "".join(f"; {len(n)} only in {side}" for side, n in missing.items()),
                  highlight=False, soft_wrap=True)
    if differ or missing:
        raise typer.Exit(1)


def _print_registry(title: str, rows: list[tuple[str, str]]) -> None:
    from rich.markup import escape

    table = Table(title=title)
    table.add_column("name")
    table.add_column("description")
    for name, description in rows:
        table.add_row(name, escape(description))  # "[p1]" is text, not rich markup
    from pipeline.tables import show

    show(table)


@list_app.command("datasets")
def list_datasets() -> None:
    """Dataset sources (the `source:` of a dataset entry)."""
    from clusterfl.data import DATA_SOURCES

    _print_registry("dataset sources", [
        (n, s.description if s.offline else f"{s.description} [needs: {s.needs or 'download'}]")
        for n, s in DATA_SOURCES
    ])


@list_app.command("schemes")
def list_schemes() -> None:
    """Partition schemes (the `scheme:` of a partition entry)."""
    from clusterfl.partition import SCHEMES

    _print_registry("partition schemes", [(n, s.description) for n, s in SCHEMES])


@list_app.command("models")
def list_models() -> None:
    """Models (the `model:` of an experiment)."""
    from clusterfl.training.models import MODELS

    _print_registry("models", [(n, m.description) for n, m in MODELS])


@list_app.command("algorithms")
@user_errors
def list_algorithms(suite: SuiteOpt = "default", params: ParamsOpt = None) -> None:
    """Every algorithm name `train` takes: each paper's `algorithms:` keys (the built-in
    papers and those the repository's suites add, e.g. the benchmark's) and the active suite's
    own, with their method, hyperparameters and the suites that train each."""
    import dataclasses

    from clusterfl.core.suite import suite_papers, suite_root, trained_pairs
    from clusterfl.run.config import load_params

    p = load_params(_suite_file(params, suite))
    root = suite_root(p.file)
    configs = [p]  # and, for a paper only another suite adds, the first suite that adds it
    for path in _suite_files(root).values():
        if any(m not in c.modules.values() for m in suite_papers(path) for c in configs):
            configs.append(load_params(path))
    papers = {key: c for c in reversed(configs) for key in c.algorithms}
    paper_of = {e: k for c in configs for e, k in c.paper_of.items()}
    using: dict[tuple[str, str], list[str]] = {}
    for name, path in _suite_files(root).items():
        for experiment, algorithm in trained_pairs(path):
            owner = "suite" if algorithm in p.suite_algorithms and name == p.suite else (
                paper_of.get(experiment))
            suites = using.setdefault((str(owner), algorithm), [])
            suites += [] if name in suites else [name]
    table = Table(title="algorithms (clusterfl train <experiment> <algorithm>)")
    for column in ("paper", "algorithm", "method", "hyperparameters", "what it is",
                   "suites that train it"):
        table.add_column(column)
    rows = [(key, name, c.algorithm(name, paper=key), using.get((key, name), []))
            for key, c in papers.items() for name in c.algorithms[key]]
    # a suite's own (from its plugins), usable with any experiment
    rows += [(f"suite {p.suite}", name, p.algorithm(name), using.get(("suite", name), []))
             for name in p.suite_algorithms]
    for paper, name, config, suites in rows:
        hyper = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(config.hyper).items())
        doc = (sys.modules[config.cls.__module__].__doc__ or "").strip()
        table.add_row(paper, name, config.method, hyper,
                      doc.split("\n\n")[0].replace("\n", " "), ", ".join(suites))
    from pipeline.tables import show

    show(table, keys=2)


@list_app.command("experiments")
@user_errors
def list_experiments(suite: SuiteOpt = "default", params: ParamsOpt = None) -> None:
    """Every paper's experiments: which the active suite trains, and every suite using each."""
    from rich.markup import escape

    from clusterfl.core.suite import suite_root
    from clusterfl.run.config import load_params

    p = load_params(_suite_file(params, suite))
    in_suite = {e for _, e, _ in p.suite_cells()}
    root = suite_root(p.file)
    using = _suites_using(root)
    table = Table(title=f"experiments (* = trained by suite {p.suite!r}: "
                        f"{len(in_suite)} of {len(p.experiments)})")
    for column in ("", "name", "paper", "title", "suites that train it"):
        table.add_column(column)
    for n in p.experiments:
        table.add_row("*" if n in in_suite else "", n, p.paper_of[n],
                      escape(p.experiment(n).title), ", ".join(using.get(n, [])))
    from pipeline.tables import show

    show(table, keys=2)


def _suite_files(root: Path) -> dict[str, Path]:
    """Every suite of the repository at `root` by name (root params.yaml is `default`)."""
    files = {"default": root / "params.yaml"}
    return files | {f.parent.name: f for f in sorted((root / "suites").glob("*/params.yaml"))}


def _suites_using(root: Path) -> dict[str, list[str]]:
    """experiment -> the suites whose grids train it."""
    from clusterfl.core.suite import grid_experiments

    using: dict[str, list[str]] = {}
    for name, path in _suite_files(root).items():
        for exp in grid_experiments(path):
            using.setdefault(exp, []).append(name)
    return using


def main() -> None:
    app()


if __name__ == "__main__":
    main()
