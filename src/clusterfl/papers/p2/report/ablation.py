"""P2's participation/λ ablation (references.yaml `p2_ablation`, docs/p2.md): where FedSoft's
centers sit between θ0 and θ1 when every client takes part each round and when λ = 0.1,
beside Table 1's setting (K = 60 of 100 per cluster, λ = 1) and FedEM's centers.

The measure is the own-center excess (MSE − σ²)/D: a center's held-out MSE on the
distribution it serves (Hungarian matching, per seed) minus the noise variance, over that
distribution's D (`comparable.heldout_distance`), averaged over the distributions. It is
free of the draw's D: 0 is a center at its θ, 0.25 one halfway to the other θ (squared), so
it says how much of the other distribution a center has mixed in.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from clusterfl.papers.p2.report import comparable as cmp
from clusterfl.papers.p2.report.cells import SeedResult, matched_order
from clusterfl.reports.tables import markdown_table, mean_std


def own_center_excess(seed: SeedResult, distances: Sequence[float], noise: float) -> float:
    """Mean over distributions d of (MSE of d's matched center on d − σ²)/D_d."""
    assert seed.holdout is not None and seed.match is not None
    matrix = matched_order(seed.holdout, seed.match)
    own = np.diag(matrix[:, : len(distances)])
    return float(np.mean((own - noise) / np.asarray(distances, dtype=float)))


def section(ablation: Mapping[str, Any], cells: Mapping[str, Mapping[str, list[SeedResult]]],
            draws: Mapping[str, cmp.Draw]) -> list[str]:
    """The ablation's table, one row per partition with results; [] when none has any.
    `cells`: {experiment: {algorithm: seeds}}; `draws`: {experiment: its draw}."""
    settings = list(ablation["settings"])
    algorithm, baseline = ablation["algorithm"], ablation["baseline"]

    def value(exp: str, alg: str) -> str:
        seeds = [s for s in cells.get(exp, {}).get(alg, [])
                 if s.holdout is not None and s.match is not None]
        if not seeds or exp not in draws:
            return "not run"
        draw = draws[exp]
        distances = [cmp.heldout_distance(x, draw.theta) for x in draw.heldout]
        return mean_std([own_center_excess(s, distances, draw.noise) for s in seeds], 3)

    rows = []
    for name, row in ablation["partitions"].items():
        values = [value(row[label], algorithm) for label in settings]
        if all(v == "not run" for v in values):
            continue
        rows.append([name, *values, value(row[settings[0]], baseline)])
    if not rows:
        return []
    return [f"## Ablation: {ablation['title']}\n",
            f"`{algorithm}`'s own-center (MSE − σ²)/D, mean ± std over seeds (0: each center "
            "at its distribution's θ; 0.25: halfway to the other's, squared), under Table 1's "
            f"setting and the ablation's; `{baseline}` on Table 1's partition beside it. "
            "Experiments: " + "; ".join(
                f"{name}: " + ", ".join(f"`{row[s]}`" for s in settings)
                for name, row in ablation["partitions"].items()) + ".\n",
            *markdown_table(["partition", *settings, f"{baseline}, {settings[0]}"], rows), ""]
