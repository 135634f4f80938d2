"""`clusterfl list experiments` marks the active suite's cells and names every suite that
trains each experiment; `clusterfl list algorithms` names every paper's algorithms, the
benchmark's included, with the suites that train each; bracketed text stays text (rich
markup would eat "[p1]")."""

from typer.testing import CliRunner

from pipeline.cli import app


def _row(output: str, name: str) -> list[str]:
    line = next(ln for ln in output.splitlines() if f" {name} " in ln)
    return [cell.strip() for cell in line.split("│")[1:-1]]


def test_list_experiments_marks_the_suite_and_names_the_suites(root, monkeypatch):
    monkeypatch.chdir(root)
    monkeypatch.setenv("COLUMNS", "200")
    out = CliRunner().invoke(app, ["list", "experiments"]).output
    assert _row(out, "p1_synthetic_mlr") == [
        "*", "p1_synthetic_mlr", "p1", "P1 Table 2, Synthetic, MLR",
        "default, p1_synthetic, paper, paper_online"]
    assert _row(out, "p1_mnist_mlr")[0] == "" and _row(out, "p1_mnist_mlr")[-1] == "paper_online"
    out = CliRunner().invoke(app, ["list", "experiments", "--suite", "paper_online"]).output
    assert _row(out, "p1_mnist_mlr")[0] == "*" and _row(out, "p1_mnist_subset_dnn")[0] == ""
    assert _row(out, "p1_mnist_mlr")[-1] == "paper_online"  # the suites of the repository's root
    assert "trained by suite 'paper_online'" in out


def _algorithm_rows(output: str) -> dict[tuple[str, str], list[str]]:
    """(paper, algorithm) -> the row's cells, from each row's first line."""
    rows = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) == 6 and cells[0] and cells[1]:
            rows[(cells[0], cells[1])] = cells
    return rows


def test_list_algorithms_names_every_paper_and_the_benchmark_with_their_suites(root, monkeypatch):
    from clusterfl.algorithms import GENERAL_METHODS

    monkeypatch.chdir(root)
    monkeypatch.setenv("COLUMNS", "400")
    rows = _algorithm_rows(CliRunner().invoke(app, ["list", "algorithms"]).output)
    # the benchmark's baselines although the default suite does not load the benchmark
    for method in GENERAL_METHODS:
        assert rows[("benchmark", method)][2] == method
        assert rows[("benchmark", method)][-1] == "benchmark, benchmark_large"
    assert rows[("p1", "fedavg")][-1] == "default, p1_synthetic, paper, paper_online"
    assert rows[("p5", "fedcgds")][-1] == (
        "default, p5_fmnist_rep, p5_mnist_rep, p5_reduced, paper, paper_online, paper_seeds10")
    assert rows[("p1", "cfl")][-1] == ""  # defined, trained by no suite
    assert {paper for paper, _ in rows} == {"p1", "p2", "p3", "p4", "p5", "benchmark"}
    # a suite that only adds cells to the benchmark trains its own algorithm alone
    out = CliRunner().invoke(app, ["list", "algorithms", "--suite", "my_method"]).output
    rows = _algorithm_rows(out)
    assert rows[("suite my_method", "my_fedprox")][-1] == "my_method"
    assert rows[("benchmark", "fedprox")][-1] == "benchmark, benchmark_large"
