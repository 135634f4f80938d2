"""What a user sees: progress where the output is not a terminal (periodic plain lines with
the primary metric), and `list algorithms` naming what `train` takes."""

from clusterfl.training.callbacks import LineProgress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_line_progress_prints_every_interval_and_at_the_last_round():
    lines: list[str] = []
    clock = Clock()
    progress = LineProgress("exp/alg/seed0", total=4, interval=30.0, write=lines.append,
                            clock=clock)
    progress.on_run_start({"rounds": 4, "primary": "test_mse"})
    for round_, now in ((1, 10.0), (2, 31.0), (3, 40.0), (4, 50.0)):
        clock.now = now
        progress.on_round_end(round_, {"round": round_, "test_mse": 2.0 / round_})
    assert lines == ["exp/alg/seed0: round 2/4 test_mse=1 elapsed 31s eta 31s",
                     "exp/alg/seed0: round 4/4 test_mse=0.5 elapsed 50s eta 0s"]


def test_line_progress_eta_counts_only_the_rounds_trained_after_a_resume():
    lines: list[str] = []
    clock = Clock()
    progress = LineProgress("s", total=10, interval=30.0, write=lines.append, clock=clock)
    progress.on_run_start({"rounds": 10, "primary": None, "resumed_at": 6})
    for round_ in range(1, 7):  # the restored rounds, replayed at once
        progress.on_round_end(round_, {"round": round_})
    clock.now = 40.0  # round 7 and 8 took 20 s each
    progress.on_round_end(8, {"round": 8})
    assert lines == ["s: round 8/10 elapsed 40s eta 40s"]


def test_list_algorithms_shows_the_names_train_takes():
    from typer.testing import CliRunner

    from pipeline.cli import app

    result = CliRunner().invoke(app, ["list", "algorithms"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    for paper, name, method in (("p1", "pfedkm_k3", "pfedkm"), ("p2", "ifca_p2", "ifca"),
                                ("p4", "pfl_tc", "pfl_tc"), ("p5", "fedcgds", "p5_fedcgds")):
        row = [f" {paper} ", f" {name} ", f" {method} "]
        assert any([c.ljust(len(r))[:len(r)] for c, r in zip(line.split("│")[1:4], row,
                                                            strict=False)] == row
                   for line in result.output.splitlines()), name
    assert "num_clusters=3" in result.output  # pfedkm_k3's hyperparameters
