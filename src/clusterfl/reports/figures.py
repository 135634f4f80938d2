"""Figures shared by every paper, from mean curves (`runs.Curve`) and assignment arrays.

- `convergence_figure`: one panel per experiment, each cell's primary metric over rounds,
  ± std band (the suite's overview);
- `curves_figure`: the primary metric and its training companion over rounds (P1 Figs. 1-2);
- `clustering_figure`: cluster recovery, distances between and to cluster models (Fig. 4),
  k-means time and iterations (Fig. 5): a panel per metric of `CLUSTERING` some cell records;
- `assignment_figure`: every client's cluster in every round as a colour map (Fig. 3);
- `experiment_figures`: the last three for one experiment's cells, read from its results.
"""

import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from clusterfl.reports.runs import Curve, assignments, mean_curve
from clusterfl.steps.metrics import (
    ARI,
    CENTER_DISTANCE,
    KMEANS_ITERATIONS,
    KMEANS_SECONDS,
    LOCAL_DISTANCE,
    TEST_ACC,
    TEST_MSE,
    TRAIN_LOSS,
    TRAIN_MSE,
    Metric,
)

if TYPE_CHECKING:  # matplotlib is imported late (`pyplot`)
    from matplotlib.figure import Figure

CLUSTERING = (ARI, CENTER_DISTANCE, LOCAL_DISTANCE, KMEANS_SECONDS, KMEANS_ITERATIONS)
# What `curves_figure` draws beside a primary metric: how the training went (the papers plot
# classification runs' training loss, regression runs' training MSE). Other primaries: alone.
TRAINING = {TEST_ACC: TRAIN_LOSS, TEST_MSE: TRAIN_MSE}


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the file-only backend (imported late: training never needs it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# False inside `placeholder_figures()`: figures are built but written as empty files.
_RASTERIZE: ContextVar[bool] = ContextVar("rasterize_figures", default=True)


@contextmanager
def placeholder_figures() -> Iterator[None]:
    """Within it, `save_figure` builds every figure (all the plotting code runs) but writes an
    empty file at its path instead of laying it out and rasterizing it, which is half of a
    report's time. For checks that compare a report's text files only (`python -m
    pipeline.reference --check`): the page lists the same figure names."""
    token = _RASTERIZE.set(False)
    try:
        yield
    finally:
        _RASTERIZE.reset(token)


def save_figure(fig: "Figure", path: Path, title: str | None = None, dpi: int = 110) -> None:
    """Title (if any, wrapped to the figure's width), lay out, write `path`, release."""
    if title is not None:  # ~9 characters per inch at the default 12 pt title
        fig.suptitle(textwrap.fill(title, max(20, int(fig.get_figwidth() * 9)),
                                   break_on_hyphens=False))
    path.parent.mkdir(parents=True, exist_ok=True)
    if _RASTERIZE.get():
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    else:
        path.write_bytes(b"")
    pyplot().close(fig)


def convergence_figure(curves: Mapping[tuple[str, str], Curve], path: Path) -> None:
    """One panel per experiment: each algorithm's mean primary metric over rounds, ± std."""
    plt = pyplot()
    experiments = list(dict.fromkeys(exp for exp, _ in curves))
    cols = min(3, len(experiments))
    rows = int(np.ceil(len(experiments) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, exp in zip(axes.flat, experiments, strict=False):
        for (e, alg), curve in curves.items():
            if e != exp:
                continue
            y, std = curve[curve.primary.name], curve[f"{curve.primary.name}_std"]
            ax.plot(curve["round"], y, label=alg)
            ax.fill_between(curve["round"], y - std, y + std, alpha=0.2)
            ax.set_ylabel(curve.primary.label)
        ax.set_title(exp)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(experiments):]:
        ax.set_visible(False)
    save_figure(fig, path, dpi=120)


def curves_figure(title: str, curves: Mapping[str, Curve], path: Path) -> None:
    """The primary metric (of the first cell: an experiment has one task) and, on a log
    scale, its `TRAINING` companion, per algorithm over rounds."""
    primary = next(iter(curves.values())).primary
    panels = [primary, *([TRAINING[primary]] if primary in TRAINING else [])]
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.8), squeeze=False)
    for ax, shown in zip(axes[0], panels, strict=True):
        for alg, curve in curves.items():
            ax.plot(curve["round"], curve[shown.name], label=alg)
        ax.set_ylabel(shown.label)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if len(panels) > 1:
        axes[0, 1].set_yscale("log")
    save_figure(fig, path, title)


def clustering_figure(title: str, curves: Mapping[str, Curve], path: Path,
                      candidates: Sequence[Metric] = CLUSTERING) -> bool:
    """A panel per metric of `candidates` that some cell recorded; False (and no file) if
    none did."""
    panels = [m for m in candidates if any(m.name in c for c in curves.values())]
    if not panels:
        return False
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, shown in zip(axes[0], panels, strict=True):
        for alg, curve in curves.items():
            if shown.name in curve:
                ax.plot(curve["round"], curve[shown.name], label=alg)
        ax.set_title(shown.label, fontsize=10)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, path, title)
    return True


def assignment_figure(title: str, grids: Mapping[str, np.ndarray], path: Path) -> bool:
    """Clients (rows) x rounds (columns) coloured by cluster, one panel per algorithm; False
    (and no file) without assignments."""
    if not grids:
        return False
    plt = pyplot()
    fig, axes = plt.subplots(1, len(grids), figsize=(4.5 * len(grids), 4), squeeze=False)
    for ax, (alg, grid) in zip(axes[0], grids.items(), strict=True):
        k = max(int(grid.max()) + 1, 2)
        image = ax.imshow(grid.T, aspect="auto", interpolation="nearest",
                          cmap=plt.get_cmap("tab10", k), vmin=-0.5, vmax=k - 0.5,
                          extent=(0.5, grid.shape[0] + 0.5, grid.shape[1] - 0.5, -0.5))
        ax.set_title(f"{alg} (seed 0)", fontsize=10)
        ax.set_xlabel("round")
        ax.set_ylabel("client")
        fig.colorbar(image, ax=ax, ticks=range(k), label="cluster")
    save_figure(fig, path, title)
    return True


def experiment_figures(results: Path, experiment: str, algorithms: Sequence[str], title: str,
                       out: Path) -> list[Path]:
    """`<experiment>_{curves,clustering,assignments}.png` of its cells (P1 Figs. 1-5's
    shapes), those with something to draw; the files written."""
    curves = {alg: mean_curve(results, experiment, alg) for alg in algorithms}
    grids = {alg: grid for alg in algorithms
             if (grid := assignments(results, experiment, alg)) is not None}
    drawn = out / f"{experiment}_curves.png"
    curves_figure(title, curves, drawn)
    written = [drawn]
    if clustering_figure(title, curves, drawn := out / f"{experiment}_clustering.png"):
        written.append(drawn)
    if assignment_figure(title, grids, drawn := out / f"{experiment}_assignments.png"):
        written.append(drawn)
    return written
