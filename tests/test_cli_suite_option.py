"""One form for the suite (issue 38): `--suite` on every command, the old positional suite of
`plan`, `reproduce` and `leaderboard` still read with a deprecation warning; a bare
`leaderboard` trains nothing; hints and help say what is true."""

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app

ROOT = Path(__file__).resolve().parents[1]


def _cli(cwd: Path, *args: str):
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        mp.setenv("COLUMNS", "250")
        return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("command", ["plan", "reproduce", "leaderboard"])
def test_every_suite_command_takes_suite_and_still_reads_the_old_argument(tmp_path, command):
    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    new = _cli(tmp_path, command, "--suite", "nosuch")
    assert new.exit_code == 2 and "No such option" not in new.output, new.output
    assert new.output.startswith("error: --suite: unknown suite 'nosuch'"), new.output
    old = _cli(tmp_path, command, "nosuch")
    assert old.exit_code == 2, old.output
    assert old.output.splitlines()[0] == (
        f"warning: `clusterfl {command} nosuch` is deprecated and will be removed in the next "
        f"release; use `clusterfl {command} --suite nosuch`")
    assert "unknown suite 'nosuch'" in old.output
    both = _cli(tmp_path, command, "a", "--suite", "b")
    assert both.exit_code == 2 and "the suite is given twice" in both.output


def _benchmark_clone(tmp_path: Path, reference: bool) -> Path:
    """The files `leaderboard` reads on a fresh clone: no results, no reports."""
    for name in ("params.yaml", "suites/benchmark/params.yaml", "suites/benchmark/dvc.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    if reference:
        board = "reference/benchmark/benchmark/report/tables/benchmark_leaderboard.csv"
        (tmp_path / board).parent.mkdir(parents=True)
        shutil.copy(ROOT / board, tmp_path / board)
    return tmp_path


def test_a_bare_leaderboard_trains_nothing_and_shows_the_committed_reference(tmp_path):
    """A bare `clusterfl leaderboard` started the ~3-hour benchmark (`dvc repro`); --no-run
    failed on a fresh clone although the reference leaderboard is committed."""
    ws = _benchmark_clone(tmp_path, reference=True)
    before = sorted(p for p in ws.rglob("*"))
    for args in ([], ["--no-run"], ["--suite", "benchmark"]):
        result = _cli(ws, "leaderboard", *args)
        assert result.exit_code == 0, (args, result.output, result.exception)
        assert "the committed reference leaderboard (reference/benchmark/benchmark)" in (
            " ".join(result.output.split()))
        assert "fedavg" in result.output and "average rank" in result.output
    assert sorted(p for p in ws.rglob("*")) == before  # no dvc.yaml rendered, nothing run


def test_leaderboard_without_results_or_reference_names_run(tmp_path):
    ws = _benchmark_clone(tmp_path, reference=False)
    result = _cli(ws, "leaderboard")
    assert result.exit_code == 2
    assert "`clusterfl leaderboard --suite benchmark --run` tunes and trains" in result.output


def test_tune_help_shows_its_true_default_and_its_error_names_the_suite():
    help_text = " ".join(_cli(ROOT, "tune", "--help").output.split())
    assert "A suite with a `tuning` grid: `benchmark`" in help_text
    assert "[default: benchmark]" in help_text
    assert "`default` (params.yaml)" not in help_text
    result = _cli(ROOT, "tune", "p1_synthetic_mlr", "fedavg")
    assert result.exit_code == 2
    assert result.output.startswith(
        "error: p1_synthetic_mlr: its partition 'p1_synthetic' has no validation_fraction "
        "(suite 'benchmark', suites/benchmark/params.yaml); tuning needs a validation split; "
        "the suite's experiments with one: bm_dir01, "), result.output


def test_report_hint_keeps_the_suite(tmp_path):
    """`report --suite paper` said to run `clusterfl train EXP ALG`, which trains the
    default suite's cell."""
    from clusterfl.core.errors import UserError
    from clusterfl.run.config import load_params
    from pipeline.report import _cells_with_results

    params = load_params(ROOT / "suites/paper/params.yaml")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        with pytest.raises(UserError, match=r"run `clusterfl train p1_synthetic_mlr fedavg "
                                            r"--suite paper` first \(or report without it"):
            _cells_with_results(params, tmp_path / "results/paper", partial=False)
