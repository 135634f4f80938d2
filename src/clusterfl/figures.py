"""Per-experiment figures for clustered algorithms, shaped like P1's Figs. 1-5.

- `curves_figure`: test accuracy and training loss over rounds per algorithm (Figs. 1-2);
  test and training MSE for regression experiments (P2).
- `clustering_figure`: cluster recovery (ARI vs the partition's ground truth), mean distance
  between the generalized models and from local models to their cluster's model (Fig. 4),
  k-means time and iterations per server round (Fig. 5); only algorithms that record them.
- `assignment_figure`: every client's cluster in every round as a colour map (Fig. 3).
Inputs are the mean curves and assignment arrays of `clusterfl.report`.
"""

import textwrap
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

PANELS = {
    "ari": "cluster recovery (ARI)",
    "center_distance": "mean distance between cluster models",
    "local_distance": "mean distance, local to cluster model",
    "kmeans_seconds": "k-means time per round (s)",
    "kmeans_iterations": "k-means iterations per round",
}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path, title: str | None = None) -> None:
    """Title (if any, wrapped to the figure's width), lay out, write `path`, release."""
    if title is not None:  # ~9 characters per inch at the default 12 pt title
        fig.suptitle(textwrap.fill(title, max(20, int(fig.get_figwidth() * 9)),
                                   break_on_hyphens=False))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)


def curves_figure(title: str, curves: Mapping[str, pd.DataFrame], path: Path) -> None:
    plt = _pyplot()
    fig, (acc, loss) = plt.subplots(1, 2, figsize=(11, 3.8))
    regression = any("test_acc" not in c for c in curves.values())  # P2: MSE curves
    test, train = ("test_mse", "train_mse") if regression else ("test_acc", "train_loss")
    for alg, curve in curves.items():
        acc.plot(curve["round"], curve[test], label=alg)
        loss.plot(curve["round"], curve[train], label=alg)
    acc.set_ylabel("test MSE" if regression else "test accuracy (%)")
    loss.set_ylabel("training MSE" if regression else "training loss")
    loss.set_yscale("log")
    for ax in (acc, loss):
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, path, title)


def clustering_figure(title: str, curves: Mapping[str, pd.DataFrame], path: Path) -> bool:
    """Write the figure if any algorithm recorded a clustering metric; say whether it did."""
    panels = [m for m in PANELS if any(m in c for c in curves.values())]
    if not panels:
        return False
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, metric in zip(axes[0], panels, strict=True):
        for alg, curve in curves.items():
            if metric in curve:
                ax.plot(curve["round"], curve[metric], label=alg)
        ax.set_title(PANELS[metric], fontsize=10)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, path, title)
    return True


def assignment_figure(title: str, assignments: Mapping[str, np.ndarray], path: Path) -> bool:
    """Clients (rows) x rounds (columns) coloured by cluster, one panel per algorithm."""
    if not assignments:
        return False
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(assignments), figsize=(4.5 * len(assignments), 4),
                             squeeze=False)
    for ax, (alg, grid) in zip(axes[0], assignments.items(), strict=True):
        k = int(grid.max()) + 1
        image = ax.imshow(grid.T, aspect="auto", interpolation="nearest",
                          cmap=plt.get_cmap("tab10", max(k, 2)), vmin=-0.5,
                          vmax=max(k, 2) - 0.5, extent=(0.5, grid.shape[0] + 0.5,
                                                        grid.shape[1] - 0.5, -0.5))
        ax.set_title(f"{alg} (seed 0)", fontsize=10)
        ax.set_xlabel("round")
        ax.set_ylabel("client")
        fig.colorbar(image, ax=ax, ticks=range(max(k, 2)), label="cluster")
    save_figure(fig, path, title)
    return True
