"""P2 (FedSoft) figures from `report_p2.SeedResult`s.

- `importance_figure` (like P2 Fig. 2): every client's estimated importance weight on the
  center serving the first distribution (matched as in the tables), against the client's
  true share of that distribution from the partition; one panel per algorithm, seed 0.
- `mixture_error_figure` (like Fig. 1): importance-weight MAE over rounds, mean over seeds.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from clusterfl.figures import _pyplot, save_figure
from clusterfl.report_p2 import SeedResult, aligned_importance


def importance_figure(title: str, cells: Mapping[str, Sequence[SeedResult]],
                      true_mixture: np.ndarray, first: str, path: Path) -> bool:
    """`true_mixture` [N, D] of seed 0's partition; `first` names distribution 0."""
    have = {alg: seeds[0] for alg, seeds in cells.items()
            if seeds and seeds[0].importance is not None and seeds[0].match is not None}
    if not have:
        return False
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(have), figsize=(4.5 * len(have), 3.6), squeeze=False)
    clients = np.arange(len(true_mixture))
    for ax, (alg, seed) in zip(axes[0], have.items(), strict=True):
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
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for alg, curve in curves.items():
        ax.plot(np.arange(1, len(curve) + 1), curve, label=alg)
    ax.set_xlabel("round")
    ax.set_ylabel("importance-weight MAE")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    save_figure(fig, path)
    return True
