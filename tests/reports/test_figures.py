"""Shared figures: written only when there is something to draw; the clustering figure's
panels are the metrics of its list that some cell records."""

from clusterfl.reports import figures
from clusterfl.reports.runs import assignments, mean_curve
from clusterfl.steps.metrics import ARI, KMEANS_SECONDS
from tests.reports.histories import write_accuracy_run

PNG = b"\x89PNG"


def test_figures_are_written_only_when_there_is_something_to_draw(tmp_path):
    write_accuracy_run(tmp_path, "e", "pfedkm_k2", 0, [0.5, 0.7], [[0, 1], [1, 1]], ari=[0, 1])
    write_accuracy_run(tmp_path, "e", "fedavg", 0, [0.5, 0.6])
    curves = {alg: mean_curve(tmp_path, "e", alg) for alg in ("pfedkm_k2", "fedavg")}
    figures.curves_figure("t", curves, tmp_path / "c.png")
    assert figures.clustering_figure("t", curves, tmp_path / "k.png")
    assert not figures.clustering_figure("t", {"fedavg": curves["fedavg"]}, tmp_path / "n.png")
    assert not figures.clustering_figure("t", curves, tmp_path / "m.png", [KMEANS_SECONDS])
    grid = assignments(tmp_path, "e", "pfedkm_k2")
    assert figures.assignment_figure("t", {"pfedkm_k2": grid}, tmp_path / "a.png")
    assert not figures.assignment_figure("t", {}, tmp_path / "b.png")
    for name in ("c.png", "k.png", "a.png"):
        assert (tmp_path / name).read_bytes()[:4] == PNG
    for name in ("n.png", "m.png", "b.png"):
        assert not (tmp_path / name).exists()


def test_clustering_panels_are_titled_by_the_metric_registry(tmp_path, monkeypatch):
    write_accuracy_run(tmp_path, "e", "pfedkm_k2", 0, [0.5, 0.7], [[0, 1], [1, 1]], ari=[0, 1])
    curves = {"pfedkm_k2": mean_curve(tmp_path, "e", "pfedkm_k2")}
    titles = []
    monkeypatch.setattr(figures, "save_figure", lambda fig, path, title=None: titles.append(
        [ax.get_title() for ax in fig.axes]))
    assert figures.clustering_figure("t", curves, tmp_path / "k.png", [KMEANS_SECONDS, ARI])
    assert titles == [[ARI.label]]


def test_experiment_figures_lists_what_it_wrote(tmp_path):
    write_accuracy_run(tmp_path, "e", "fedavg", 0, [0.5, 0.6])
    write_accuracy_run(tmp_path, "e", "pfedkm_k2", 0, [0.5, 0.7], [[0, 1], [1, 1]])
    out = tmp_path / "figures"
    written = figures.experiment_figures(tmp_path, "e", ["fedavg"], "t", out)
    assert written == [out / "e_curves.png"]
    written = figures.experiment_figures(tmp_path, "e", ["fedavg", "pfedkm_k2"], "t", out)
    assert written == [out / "e_curves.png", out / "e_assignments.png"]  # no clustering metric
    assert sorted(p.name for p in out.iterdir()) == ["e_assignments.png", "e_curves.png"]
    figures.convergence_figure({("e", "fedavg"): mean_curve(tmp_path, "e", "fedavg")},
                               out / "convergence.png")
    assert (out / "convergence.png").read_bytes()[:4] == PNG


def test_placeholder_figures_builds_each_figure_and_writes_an_empty_file(tmp_path, monkeypatch):
    """`python -m pipeline.reference --check` compares a report's text only: inside
    `placeholder_figures` a figure is built (titled, its axes drawn into) but written as an
    empty file of its name, never laid out or rasterized; outside it, a PNG again."""
    write_accuracy_run(tmp_path, "e", "fedavg", 0, [0.5, 0.6])
    curves = {"fedavg": mean_curve(tmp_path, "e", "fedavg")}
    plt = figures.pyplot()
    before = len(plt.get_fignums())
    rasterized = []
    monkeypatch.setattr(plt.Figure, "savefig", lambda fig, *a, **k: rasterized.append(fig))
    with figures.placeholder_figures():
        figures.curves_figure("t", curves, tmp_path / "sub" / "c.png")
    assert (tmp_path / "sub" / "c.png").read_bytes() == b"" and rasterized == []
    assert len(plt.get_fignums()) == before  # released all the same
    monkeypatch.undo()
    figures.curves_figure("t", curves, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:4] == PNG
