"""P4 beyond the paper: the real-data part of the report (PFL-TC / PDL-TC on Fashion-MNIST
rotation clusters beside IFCA, pFedKM and the true-cluster FedAvg oracle).

An experiment belongs here when its runs record test accuracy and no optimum error (a
neural experiment: the paper's linear ones record the optimum error). Per cell and seed:
the last round's test accuracy and ARI, the ARI averaged over rounds and the per-round
curves; the table gives mean ± std over seeds, the figure accuracy and ARI per round.
"""

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from clusterfl.reports.figures import pyplot, save_figure
from clusterfl.reports.runs import read_cell
from clusterfl.reports.tables import markdown_table, mean_std
from clusterfl.steps.metrics import ARI, TEST_ACC

RealFinals = Mapping[tuple[str, str], Mapping[str, list[float]]]


def real_finals(results: Path, experiment: str, algorithm: str) -> dict[str, list[float]]:
    """Every seed's final test accuracy (%), final ARI and ARI averaged over rounds (ARI only
    where the algorithm forms clusters), and the per-round ARI averaged over seeds ("curve")."""
    seeds = [s for s in read_cell(results, experiment, algorithm) if s.records]
    aris = [[r[ARI.name] for r in s.records] for s in seeds if ARI.name in s.records[-1]]
    return {"acc": [100 * s.records[-1][TEST_ACC.name] for s in seeds
                    if TEST_ACC.name in s.records[-1]],
            "ari": [a[-1] for a in aris], "ari_mean": [float(np.mean(a)) for a in aris],
            "ari_curve": list(np.mean(aris, axis=0)) if aris else []}


def is_real(final: Mapping[str, list[float]]) -> bool:
    return bool(final.get("acc"))


def real_table(finals: RealFinals) -> list[str]:
    rows = [[exp, alg, mean_std(f["acc"], 2), mean_std(f["ari"], 3) if f["ari"] else "–",
             mean_std(f["ari_mean"], 3) if f["ari"] else "–", str(len(f["acc"]))]
            for (exp, alg), f in finals.items()]
    return markdown_table(["experiment", "algorithm", "final test acc. (%)", "final ARI",
                           "ARI, mean over rounds", "seeds"], rows)


def real_figure(results: Path, exp: str, algs: list[str], title: str, path: Path) -> None:
    """Test accuracy per round (mean, ± std band over seeds) and ARI per round (mean)."""
    plt = pyplot()
    fig, (acc, ari) = plt.subplots(1, 2, figsize=(11, 4))
    for alg in algs:
        seeds = [s for s in read_cell(results, exp, alg) if s.records]
        if not seeds:
            continue
        values = 100 * np.array([[r[TEST_ACC.name] for r in s.records] for s in seeds])
        rounds = np.arange(1, values.shape[1] + 1)
        line, = acc.plot(rounds, values.mean(0), label=alg)
        acc.fill_between(rounds, values.mean(0) - values.std(0), values.mean(0) + values.std(0),
                         alpha=0.2, color=line.get_color())
        if ARI.name in seeds[0].records[-1]:
            curve = np.mean([[r[ARI.name] for r in s.records] for s in seeds], axis=0)
            ari.plot(rounds, curve, label=alg, color=line.get_color())
    acc.set(xlabel="round", ylabel=TEST_ACC.label)
    acc.legend(fontsize=7)
    ari.set(xlabel="round", ylabel=ARI.label + ", mean over seeds", ylim=(-0.1, 1.05))
    if ari.lines:  # no algorithm forms clusters: no legend to draw
        ari.legend(fontsize=7)
    save_figure(fig, path, title)
