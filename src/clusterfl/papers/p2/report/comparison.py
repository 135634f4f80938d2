"""The P2 report's last section: FedSoft's synthetic numbers in forms the paper's can be set
beside (`comparable` says which and why), and how many agree within the tolerance.

Every number comes from the cells' histories, the draws regenerated from the datasets'
params, and the paper's numbers in references.yaml (its experiments' matrices, the σ0 sweep's
matrices and w̄, `p2_comparable`)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterfl.papers.p2.report import comparable as cmp
from clusterfl.papers.p2.report.cells import SeedResult, center_table
from clusterfl.papers.p2.report.tables import paper_matched
from clusterfl.reports.tables import markdown_table, mean_std
from clusterfl.reports.verdicts import estimate

HEADING = "## Against the paper: the numbers that can be compared\n"
EXCLUDED = (
    "Left out of this count: raw MSEs (each scales with its draw's D, and ours is not the "
    "paper's), Table 3 row by row or by sorted rank (each row is its own θ_s draw), the raw "
    "w̄ (the paper's is the official validator's ≈ MSE/5), FedEM and IFCA on synthetic data "
    "(the paper publishes no synthetic numbers for them, so ours check no claim of it) and the "
    "Fashion-MNIST stand-ins (other data than the paper's).\n")


@dataclass(frozen=True)
class Cell:
    """One synthetic experiment of FedSoft: its seeds, its draw, its distributions' names."""

    experiment: str
    seeds: Sequence[SeedResult]
    draw: cmp.Draw
    names: Sequence[str]


def paper_numbers(references: Mapping[str, Any]
                  ) -> tuple[dict[str, np.ndarray], dict[str, tuple[str, float]]]:
    """({experiment: the paper's MSE matrix}, {experiment: (σ0 label, the paper's w̄)}), from
    the experiments' entries and the MSE sweeps' values; stand-ins have none."""
    matrices: dict[str, np.ndarray] = {}
    local: dict[str, tuple[str, float]] = {}
    for exp, entry in references.items():
        if isinstance(entry, Mapping) and "holdout_mse" in entry:
            matrices[exp] = np.asarray(entry["holdout_mse"], dtype=float)
    for sweep in (references.get("p2_sweeps") or {}).values():
        for value in sweep.get("values", []) if "stand_in_for" not in sweep else []:
            if "holdout_mse" in value:
                matrices[value["experiment"]] = np.asarray(value["holdout_mse"], dtype=float)
                local[value["experiment"]] = (str(value["label"]), float(value["local"]))
    return matrices, local


def _ratio_part(cells: Sequence[Cell], matrices: Mapping[str, np.ndarray], tolerance: float
                ) -> tuple[list[str], list[cmp.Comparison]]:
    """The distances table and the (MSE − σ²)/D table of the two-distribution cells."""
    distances, ratios, rows = [], [], []
    for cell in cells:
        ours, _ = center_table(cell.seeds)
        paper, _ = paper_matched(matrices[cell.experiment].tolist())
        noise, theta = cell.draw.noise, cell.draw.theta
        heldout = [cmp.heldout_distance(x, theta) for x in cell.draw.heldout]
        theirs = cmp.paper_distance(paper, noise)
        distances.append([f"`{cell.experiment}`", f"{cmp.squared_distance(theta):.1f}",
                          ", ".join(f"{d:.1f}" for d in heldout),
                          ", ".join(f"{d:.1f}" for d in cmp.implied_distances(ours, noise)),
                          ", ".join(f"{d:.1f}" for d in cmp.implied_distances(paper, noise)),
                          f"{theirs:.1f}"])
        mine = cmp.ratio_comparisons(f"`{cell.experiment}`",
                                     cmp.excess_ratio(ours, heldout, noise),
                                     cmp.excess_ratio(paper, theirs, noise), cell.names)
        rows += mine
        agree, total = cmp.agreement(mine, tolerance)
        ratios.append([f"`{cell.experiment}`", *(f"{r.ours:.3f} ({r.paper:.3f})" for r in mine),
                       f"{agree} of {total}"])
    n0, n1 = cells[0].names[:2]
    lines = [
        "D per experiment: ‖θ0 − θ1‖² of our draw; D as each distribution's held-out inputs "
        "see it (what divides our ratios); the D each matched center implies, ours and the "
        "paper's, (√(MSE_0 − σ²) + √(MSE_1 − σ²))², which is D when the center lies between "
        "θ0 and θ1 and more otherwise; and the paper's D, the smallest of its centers' "
        "(the tightest bound its matrix gives).\n",
        *markdown_table(["experiment", "‖θ0 − θ1‖², ours", f"D on the held-out sets ({n0}, "
                         f"{n1})", "D our centers imply", "D the paper's centers imply",
                         "paper's D"], distances),
        "",
        "(MSE − σ²)/D per cell, ours (the paper's in brackets), σ² = 1 the noise variance; the "
        "center is the one the Hungarian matching assigns to a distribution:\n",
        *markdown_table(["experiment", f"{n0} on its center", f"{n0} on the other",
                         f"{n1} on the other", f"{n1} on its center",
                         f"within {tolerance:.0%}"], ratios)]
    return lines, rows


def _table3_part(cells: Sequence[Cell], matrices: Mapping[str, np.ndarray], tolerance: float
                 ) -> tuple[list[str], list[cmp.Comparison]]:
    """The mean of all cells of the cells with more than two distributions (`comparable`:
    compared by the range over draws, not row by row)."""
    table: list[list[str]] = []
    rows: list[cmp.Comparison] = []
    for cell in cells:
        per_seed = [float(s.holdout.mean()) for s in cell.seeds if s.holdout is not None]
        draw = cell.draw
        row = cmp.table3_comparison(f"`{cell.experiment}`", per_seed, matrices[cell.experiment],
                                    draw)
        own = draw.noise + float(np.mean(cmp.spread(draw.theta)))
        table.append([f"`{cell.experiment}`", f"{row.ours:.1f} "
                      f"({estimate(per_seed).interval('.1f')} over {len(per_seed)} "
                      f"seed{'s' if len(per_seed) != 1 else ''})",
                      f"{own:.1f}", f"{row.paper:.1f}",
                      f"{row.band[0]:.1f} to {row.band[1]:.1f}" if row.band else "",
                      cmp.mark(row, tolerance)])
        rows.append(row)
    first = cells[0].draw
    expected = first.noise + cmp.expected_spread(len(first.theta), first.theta.shape[1],
                                                 first.sigma0)
    lines = ["Table 3 (S distributions, each row its own θ_s): a row, or its rank among the "
             "sorted rows, is the draw's chance; what two independent draws share is the mean "
             "of all cells, σ² + mean_s ‖θ_s − θ̄‖² plus what the centers add beyond θ̄ "
             f"(expectation over draws σ² + (1 − 1/S) d σ0², {expected:.1f} for the first). "
             "Ours over seeds; our draw's σ² + mean ‖θ_s − θ̄‖²; the paper's; the 95 % range "
             "another draw's mean of all cells falls in (σ0² χ²_{d(S − 1)}/S, with our "
             "centers' excess); agreement: the paper's inside it:\n",
             *markdown_table(["experiment", "ours", "σ² + mean ‖θ_s − θ̄‖², our draw",
                              "paper", "95 % range over draws", "paper inside"], table), ""]
    return lines, rows


def _local_part(cells: Sequence[Cell], local: Mapping[str, tuple[str, float]],
                validator: Mapping[str, Any], tolerance: float
                ) -> tuple[list[str], list[cmp.Comparison]]:
    """Table 6's w̄: ours as measured and under the official validator's definition."""
    factor = cmp.official_factor(validator["client_sizes"], int(validator["client_batch"]),
                                 int(validator["eval_batch"]))
    table, rows = [], []
    for cell in cells:
        label, paper = local[cell.experiment]
        key = cell.seeds[0].measure.local_train.name
        plain = [s.last[key] for s in cell.seeds if key in s.last]
        row = cmp.Comparison("Table 6's w̄", f"σ0 = {label}", float(np.mean(plain)) * factor,
                             paper)
        table.append([label, f"`{cell.experiment}`", mean_std(plain, 2),
                      mean_std([factor * v for v in plain], 2), f"{paper:.2f}",
                      cmp.mark(row, tolerance)])
        rows.append(row)
    lo, hi = validator["client_sizes"]
    lines = [
        "Table 6's w̄ (local models on their own training data). The official validator "
        "(github.com/ycruan/FedSoft, validators.py, `ValidatorRegression.validate`) divides a "
        f"client's summed squared error over its loader (batch {validator['client_batch']}) by "
        f"len(loader) × {validator['eval_batch']}: n/({validator['eval_batch']} "
        f"⌈n/{validator['client_batch']}⌉) of the MSE, {factor:.4f} on average over n = "
        f"{lo}..{hi} (1/{1 / factor:.2f}). The paper's w̄ is that number; ours under it is "
        "our mean w̄ times the same factor:\n",
        *markdown_table(["σ0", "experiment", "ours, MSE", "ours, official definition", "paper",
                         f"within {tolerance:.0%}"], table)]
    return lines, rows


def section(cells: Sequence[Cell], references: Mapping[str, Any]) -> list[str]:
    """The section's Markdown parts; [] when no cell has the paper's numbers."""
    matrices, local = paper_numbers(references)
    settings = references["p2_comparable"]
    tolerance = float(settings["tolerance"])
    pairs = [c for c in cells if c.experiment in matrices and len(c.draw.theta) == 2]
    many = [c for c in cells if c.experiment in matrices and len(c.draw.theta) > 2]
    by_name = {c.experiment: c for c in cells}
    sweep = [by_name[exp] for exp in local if exp in by_name]  # in the sweep's order
    if not (pairs or many or sweep):
        return []
    parts, rows = [HEADING], []
    for chosen, build in ((pairs, lambda c: _ratio_part(c, matrices, tolerance)),
                          (many, lambda c: _table3_part(c, matrices, tolerance)),
                          (sweep, lambda c: _local_part(c, local, settings["official_validator"],
                                                        tolerance))):
        if chosen:
            lines, mine = build(chosen)
            parts.append("\n".join(lines).rstrip("\n") + "\n")
            rows += mine
    agree, total = cmp.agreement(rows, tolerance)
    banded = " (Table 3's inside its range over draws)" if any(r.band for r in rows) else ""
    parts.append(f"**{agree} of {total}** comparable numbers are within {tolerance:.0%} of the "
                 f"paper's{banded} ({', '.join(_per_table(rows, tolerance))}). " + EXCLUDED)
    return parts


def _per_table(rows: Sequence[cmp.Comparison], tolerance: float) -> list[str]:
    """'a of b in <table>' per table (experiment), in order of appearance."""
    out = []
    for table in dict.fromkeys(r.table for r in rows):
        agree, total = cmp.agreement([r for r in rows if r.table == table], tolerance)
        out.append(f"{agree} of {total} in {table}")
    return out
