"""P5's figures (imported by the report stage only), from mean curves over seeds:

- `convergence_figure` (Figs. 4-5's shape): the objective against rounds and against the
  communication cost (cumulative real numbers uploaded), log scales; methods that upload
  nothing are centralized and appear in the rounds panel only;
- `clustering_figure` (Fig. 6's shape, ARI and NMI beside it): clustering accuracy against
  rounds and against cost, ARI and NMI against rounds; centralized methods (SNCP, K-means++)
  as horizontal lines at their final mean, as the paper draws its benchmarks.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from clusterfl.papers.p5.training.metrics import (
    CLUSTERING_ACCURACY,
    CLUSTERING_ARI,
    CLUSTERING_NMI,
    OBJECTIVE,
    UPLOAD_TOTAL,
)
from clusterfl.reports.figures import pyplot, save_figure
from clusterfl.reports.runs import Curve
from clusterfl.steps.metrics import Metric

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def centralized(curve: Curve) -> bool:
    """A method that never uploads a number (centralized SNCP, K-means++)."""
    return UPLOAD_TOTAL.name not in curve or float(curve[UPLOAD_TOTAL.name].max()) == 0.0


def convergence_figure(title: str, curves: Mapping[str, Curve], path: Path) -> None:
    plt = pyplot()
    fig, (by_round, by_cost) = plt.subplots(1, 2, figsize=(11, 3.8))
    for i, (alg, curve) in enumerate(curves.items()):
        if len(curve.frame) == 1:  # a one-round run (K-means++): a level, not a curve
            by_round.axhline(float(curve[OBJECTIVE.name].iloc[0]), linestyle="--", label=alg,
                             color=f"C{i}")
        else:
            by_round.plot(curve["round"], curve[OBJECTIVE.name], label=alg, color=f"C{i}")
        if not centralized(curve):
            by_cost.plot(curve[UPLOAD_TOTAL.name], curve[OBJECTIVE.name], label=alg,
                         color=f"C{i}")
    for ax, xlabel in ((by_round, "round"), (by_cost, UPLOAD_TOTAL.label)):
        ax.set_xlabel(xlabel)
        ax.set_ylabel(OBJECTIVE.label)
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    by_cost.set_xscale("log")
    save_figure(fig, path, title)


def _panel(ax: "Axes", curves: Mapping[str, Curve], shown: Metric, x: str) -> None:
    for alg, curve in curves.items():
        if centralized(curve):
            ax.axhline(float(curve[shown.name].iloc[-1]), linestyle="--", label=alg,
                       color=f"C{list(curves).index(alg)}")
        else:
            ax.plot(curve[x], curve[shown.name], label=alg, color=f"C{list(curves).index(alg)}")
    ax.set_ylabel(shown.label)
    ax.set_xlabel("round" if x == "round" else UPLOAD_TOTAL.label)
    if x != "round":
        ax.set_xscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def clustering_figure(title: str, curves: Mapping[str, Curve], path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(18, 3.8))
    _panel(axes[0], curves, CLUSTERING_ACCURACY, "round")
    _panel(axes[1], curves, CLUSTERING_ACCURACY, UPLOAD_TOTAL.name)
    _panel(axes[2], curves, CLUSTERING_ARI, "round")
    _panel(axes[3], curves, CLUSTERING_NMI, "round")
    save_figure(fig, path, title)
