"""P4's figures: Fig. 1's shape (error per round, mean ± std band, log y; every trial's final
error as dots), Fig. 2's (final error vs N/K, log-log, a 1/sqrt(N/K) reference line through
PFL-TC's first point), and a sweep's final error (or accuracy) against its value."""

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from clusterfl.papers.p4.training.evaluator import GRADIENT_NORM, OPTIMUM_ERROR
from clusterfl.reports.figures import pyplot, save_figure
from clusterfl.reports.runs import read_cell

Finals = Mapping[tuple[str, str], Mapping[str, list[float]]]


def fig1_figure(results: Path, exp: str, algs: list[str], title: str, path: Path) -> None:
    plt = pyplot()
    fig, (curve, dots) = plt.subplots(1, 2, figsize=(11, 4), width_ratios=[2, 1])
    for i, alg in enumerate(algs):
        runs = [[r[OPTIMUM_ERROR.name] for r in s.records] for s in read_cell(results, exp, alg)]
        if not runs:
            continue
        values = np.array(runs)
        mean, std = values.mean(0), values.std(0)
        rounds = np.arange(1, values.shape[1] + 1)
        curve.plot(rounds, mean, label=alg)
        curve.fill_between(rounds, np.maximum(mean - std, mean.min() * 1e-3), mean + std,
                           alpha=0.2)
        dots.scatter(np.full(len(values), i), values[:, -1], s=12)
    curve.set(yscale="log", xlabel="round", ylabel=OPTIMUM_ERROR.label)
    curve.legend(fontsize=7)
    dots.set(yscale="log", xticks=range(len(algs)), ylabel="final error, every trial")
    dots.set_xticklabels(algs, rotation=45, ha="right", fontsize=7)
    save_figure(fig, path, title)


def fig2_figure(sweep: Mapping[float, list[tuple[str, str]]], final: Finals,
                path: Path, title: str = "P4 Fig. 2 (d=20, n=10)") -> None:
    """Final error (left) and the time-averaged squared gradient norm that Eq. (4) bounds
    (right, where recorded) against N/K, log-log, with a 1/sqrt(N/K) line through PFL-TC."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, label in ((axes[0], "error", "final " + OPTIMUM_ERROR.label),
                           (axes[1], "gradient_norm", "mean over rounds of " +
                            GRADIENT_NORM.label)):
        for alg in sorted({a for cells in sweep.values() for _, a in cells}):
            pts = sorted((v, np.mean(final[(e, a)][key])) for v, cells in sweep.items()
                         for e, a in cells if a == alg and final[(e, a)].get(key))
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=alg)
                if alg == "pfl_tc":
                    x = np.array([p[0] for p in pts])
                    ax.plot(x, pts[0][1] * np.sqrt(x[0] / x), "k--", label="∝ 1/sqrt(N/K)")
        ax.set(xscale="log", yscale="log", xlabel="clients per cluster N/K", ylabel=label)
        ticks = sorted(sweep)  # label the swept values alone: log minor labels overlap
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        if ax.lines:  # no cell recorded this quantity: empty axes, no legend
            ax.legend(fontsize=7)
    save_figure(fig, path, f"{title}: final error and gradient norm vs N/K")


def sweep_figure(name: str, sweep: Mapping[float, list[tuple[str, str]]], final: Finals,
                 path: Path, key: str = "error", ylabel: str | None = None) -> None:
    """Each algorithm's final `key` (mean ± std over seeds) against the sweep's value; the
    optimum error on a log axis."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for alg in sorted({a for cells in sweep.values() for _, a in cells}):
        pts = sorted((v, np.mean(final[(e, a)][key]), np.std(final[(e, a)][key]))
                     for v, cells in sweep.items() for e, a in cells
                     if a == alg and final[(e, a)].get(key))
        if pts:
            v, m, s = map(np.array, zip(*pts, strict=True))
            ax.errorbar(v, m, yerr=s, marker="o", capsize=3, label=alg)
    ax.set(xscale="log" if name.startswith("init") else "linear",
           yscale="log" if key == "error" else "linear",
           xlabel=name, ylabel=ylabel or "final " + OPTIMUM_ERROR.label)
    if ax.lines:  # a sweep none of whose cells has results yet draws empty axes, no legend
        ax.legend(fontsize=7)
    save_figure(fig, path, f"P4 sweep {name}")
