"""P3's figures: Fig. 2 (standalone vs FL per modality, accuracy per round), Fig. 3 (fixed
rates vs meta-selected, accuracy per round), Figs. 4-5 (final accuracy per modality and
method, bars with std over seeds) and the distribution of the selected rates per round."""

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from clusterfl.reports.figures import pyplot, save_figure

Curves = Mapping[str, Mapping[str, np.ndarray]]  # algorithm -> metric -> [seeds, rounds]


def curves_figure(curves: Curves, algorithms: Sequence[str], metrics: Sequence[str],
                  title: str, path: Path) -> bool:
    """One panel per metric, each algorithm's mean accuracy (%) per round ± std."""
    algs = [a for a in algorithms if a in curves]
    if not algs:
        return False
    plt = pyplot()
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.6), squeeze=False)
    for ax, name in zip(axes[0], metrics, strict=True):
        for alg in algs:
            values = 100 * curves[alg][name]
            mean, std = values.mean(0), values.std(0)
            rounds = np.arange(1, len(mean) + 1)
            ax.plot(rounds, mean, label=alg)
            ax.fill_between(rounds, mean - std, mean + std, alpha=0.15)
        ax.set(title=name, xlabel="round", ylabel="test accuracy (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, path, title)
    return True


def bars_figure(finals: Mapping[str, Mapping[str, list[float]]], algorithms: Sequence[str],
                metrics: Sequence[str], title: str, path: Path) -> bool:
    """Grouped bars: one group per metric (modality), one bar per algorithm, ± std."""
    algs = [a for a in algorithms if a in finals]
    if not algs:
        return False
    plt = pyplot()
    # at least wide enough for the title and the metrics' tick labels
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 + 1.1 * len(algs) * len(metrics) / 2), 3.8))
    width = 0.8 / len(algs)
    for i, alg in enumerate(algs):
        means = [100 * np.mean(finals[alg][m]) for m in metrics]
        stds = [100 * np.std(finals[alg][m]) for m in metrics]
        ax.bar(np.arange(len(metrics)) + i * width, means, width, yerr=stds, capsize=2,
               label=alg)
    ax.set_xticks(np.arange(len(metrics)) + 0.4 - width / 2, metrics)
    ax.set(ylabel="final test accuracy (%)")
    ax.legend(fontsize=7)
    save_figure(fig, path, title)
    return True


def rates_figure(selected: Mapping[str, np.ndarray], title: str, path: Path) -> bool:
    """Share of clients on each candidate rate per round (all seeds and clients pooled), one
    panel per algorithm; `selected[alg]` is [seeds, rounds, clients]."""
    if not selected:
        return False
    plt = pyplot()
    fig, axes = plt.subplots(1, len(selected), figsize=(5 * len(selected), 3.6), squeeze=False)
    for ax, (alg, chosen) in zip(axes[0], selected.items(), strict=True):
        rates = sorted(np.unique(chosen), reverse=True)
        rounds = np.arange(1, chosen.shape[1] + 1)
        shares = [(chosen == r).mean(axis=(0, 2)) for r in rates]
        ax.stackplot(rounds, shares, labels=[f"{r:g}" for r in rates])
        ax.set(title=alg, xlabel="round", ylabel="share of clients", ylim=(0, 1))
        ax.legend(fontsize=7, title="selected rate")
    save_figure(fig, path, title)
    return True
