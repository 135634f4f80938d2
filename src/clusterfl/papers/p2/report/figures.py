"""P2 (FedSoft) figures from `cells.SeedResult`s.

- `importance_figure` (like P2 Fig. 2): every client's estimated importance weight on the
  center serving the first distribution (matched as in the tables), against the client's
  true share of that distribution from the partition; one panel per algorithm, seed 0.
- `mixture_error_figure`: importance-weight MAE over rounds, mean over seeds.
- `evolution_figure` (like Fig. 1): one run's centers on each held-out set over rounds (top)
  and its importance weights over rounds, averaged over clients of alike true mixture
  (bottom; `mixture_groups`).
"""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from clusterfl.papers.p2.report.cells import SeedResult, aligned_importance
from clusterfl.reports.figures import pyplot, save_figure
from clusterfl.steps.metrics import MIXTURE_MAE

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def importance_figure(title: str, cells: Mapping[str, Sequence[SeedResult]],
                      true_mixture: np.ndarray, first: str, path: Path) -> bool:
    """`true_mixture` [N, D] of seed 0's partition; `first` names distribution 0."""
    have = {alg: seeds[0] for alg, seeds in cells.items()
            if seeds and seeds[0].importance is not None and seeds[0].match is not None}
    if not have:
        return False
    plt = pyplot()
    fig, axes = plt.subplots(1, len(have), figsize=(4.5 * len(have), 3.6), squeeze=False)
    clients = np.arange(len(true_mixture))
    for ax, (alg, seed) in zip(axes[0], have.items(), strict=True):
        assert seed.importance is not None and seed.match is not None  # as `have` keeps
        estimate = aligned_importance(seed.importance, seed.match)[:, 0]
        ax.scatter(clients, estimate, s=10, label="estimated")
        ax.plot(clients, true_mixture[:, 0], color="black", lw=1, drawstyle="steps-mid",
                label="true mixture")
        ax.set_title(f"{alg} (seed {seed.seed})", fontsize=10)
        ax.set_xlabel("client")
        ax.set_ylabel(f"weight on the center of {first}")
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, path, title)
    return True


def mixture_error_figure(title: str, cells: Mapping[str, Sequence[SeedResult]],
                         path: Path) -> bool:
    curves = {alg: np.mean([s.mixture_mae for s in seeds], axis=0)
              for alg, seeds in cells.items() if seeds and all(s.mixture_mae for s in seeds)}
    if not curves:
        return False
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for alg, curve in curves.items():
        ax.plot(np.arange(1, len(curve) + 1), curve, label=alg)
    ax.set_xlabel("round")
    ax.set_ylabel(MIXTURE_MAE.label)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    save_figure(fig, path)
    return True


def mixture_groups(true_mixture: np.ndarray, first: str, bins: int = 4
                   ) -> list[tuple[str, np.ndarray]]:
    """Clients of alike true mixture, as (label, client indices). One group per distinct
    mixture when there are at most `bins` (10:90 and 30:70: two, labelled "10:90" in percent
    like the paper's u-bar_{a:b}); else (linear, random) clients binned by their true share
    of distribution 0 (named `first`) into `bins` equal bins, empty bins left out."""
    distinct, inverse = np.unique(true_mixture.round(6), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)  # its shape differs between NumPy versions
    if len(distinct) <= bins:
        return [(":".join(f"{100 * x:.0f}" for x in row), np.flatnonzero(inverse == g))
                for g, row in enumerate(distinct)]
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.digitize(true_mixture[:, 0], edges[1:-1])
    return [(f"{first} share {100 * edges[b]:.0f}–{100 * edges[b + 1]:.0f}%",
             np.flatnonzero(which == b)) for b in range(bins) if (which == b).any()]


def evolution_figure(title: str, seed: SeedResult, names: Sequence[str],
                     true_mixture: np.ndarray, path: Path) -> bool:
    """P2 Fig. 1 for one run (the pipeline draws FedSoft's first seed, as the paper shows
    FedSoft): top, every center's number on each distribution's held-out set over rounds,
    centers by their index (the run's own, unmatched: the paper's point is that they sort
    themselves out); bottom, the importance weight on each center over rounds, averaged over
    the clients of each `mixture_groups` group, dotted: the group's mean true shares."""
    if seed.holdout_rounds is None or seed.importance_rounds is None:
        return False
    groups = mixture_groups(true_mixture, names[0])
    cols = max(len(names), len(groups))
    plt = pyplot()
    fig, axes = plt.subplots(2, cols, figsize=(3.4 * cols, 6.4), squeeze=False)
    rounds = np.arange(1, len(seed.holdout_rounds) + 1)
    for d, name in enumerate(names):
        _center_lines(axes[0, d], rounds, seed.holdout_rounds[:, d, :])
        axes[0, d].set_title(f"centers on {name}", fontsize=9)
        axes[0, d].set_ylabel(f"held-out {seed.measure.unit}")
    for g, (label, members) in enumerate(groups):
        ax = axes[1, g]
        _center_lines(ax, rounds, seed.importance_rounds[:, members, :].mean(axis=1))
        for share in true_mixture[members].mean(axis=0):
            ax.axhline(share, color="gray", ls=":", lw=1)
        ax.set_title(f"{len(members)} clients, {label}", fontsize=9)
        ax.set_ylabel("mean importance weight")
        ax.set_ylim(-0.05, 1.05)
    for ax in [*axes[0, len(names):], *axes[1, len(groups):]]:
        ax.axis("off")
    save_figure(fig, path, f"{title} (seed {seed.seed})")
    return True


def _center_lines(ax: "Axes", rounds: np.ndarray, values: np.ndarray) -> None:
    """One line per center (`values` [R, S]); default colours, so center s has one colour in
    every panel."""
    for s in range(values.shape[1]):
        ax.plot(rounds, values[:, s], label=f"c{s}")
    ax.set_xlabel("round")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
