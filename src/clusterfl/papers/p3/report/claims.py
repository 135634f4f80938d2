"""P3 Sec. 3.2's four claims (references.yaml `claims`), each checked with our numbers.

Everything compares the final round's test accuracy, mean over seeds (per modality where the
claim is per modality). Verdict: "holds" when the claimed winner's mean is higher in every
comparison, "does not hold" otherwise. "(within noise)" marks a verdict the seeds cannot
settle: a win where some gap is smaller than the larger of the two stds over seeds, or a
loss where every losing gap is.
"""

from collections.abc import Mapping
from typing import Any

import numpy as np

Finals = Mapping[str, Mapping[str, list[float]]]  # algorithm -> metric -> final per seed
FIXED = ("mmfl_lr0_01", "mmfl_lr0_001", "mmfl_lr0_0001")


def _cmp(finals: Finals, winner: str, loser: str, metric: str) -> tuple[float, float, bool]:
    """(winner mean - loser mean, in points, and whether the gap is within the stds)."""
    a, b = finals[winner][metric], finals[loser][metric]
    gap = 100 * (np.mean(a) - np.mean(b))
    return gap, 100 * max(np.std(a), np.std(b)), abs(gap) < 100 * max(np.std(a), np.std(b))


def _verdict(gaps: list[tuple[float, float, bool]]) -> str:
    held = all(g > 0 for g, _, _ in gaps)
    # a fragile win: some gap is within the noise; a fragile loss: every losing gap is
    noisy = any(n for _, _, n in gaps) if held else all(n for g, _, n in gaps if g <= 0)
    return ("holds" if held else "does not hold") + (" (within noise)" if noisy else "")


def check(finals: Finals, modalities: list[str]) -> list[tuple[str, str, str]]:
    """(claim, our numbers, verdict) for each claim whose algorithms all ran."""
    rows = []
    per_mod = [f"test_acc_{m}" for m in modalities]

    def have(*algs: str) -> bool:
        return all(a in finals and finals[a].get("test_acc") for a in algs)

    def mean(alg: str, metric: str) -> str:
        return f"{100 * np.mean(finals[alg][metric]):.2f}"

    if have("unimodal_fl", "standalone"):
        gaps = [_cmp(finals, "unimodal_fl", "standalone", k) for k in per_mod]
        text = "; ".join(f"{m}: FL {mean('unimodal_fl', k)} vs standalone "
                         f"{mean('standalone', k)}" for m, k in zip(modalities, per_mod,
                                                                     strict=True))
        rows.append(("fl_beats_standalone", text, _verdict(gaps)))
    fixed = [f for f in FIXED if have(f)]
    if have("mmfl") and fixed:
        gaps = [_cmp(finals, "mmfl", f, "test_acc") for f in fixed]
        text = f"mmfl {mean('mmfl', 'test_acc')}; " + ", ".join(
            f"{f} {mean(f, 'test_acc')}" for f in fixed)
        rows.append(("meta_beats_fixed", text, _verdict(gaps)))
    if have("mmfl", "unimodal_meta_fl"):
        gaps = [_cmp(finals, "mmfl", "unimodal_meta_fl", k) for k in per_mod]
        text = "; ".join(f"{m}: mmfl {mean('mmfl', k)} vs unimodal meta-FL "
                         f"{mean('unimodal_meta_fl', k)}" for m, k in zip(modalities, per_mod,
                                                                          strict=True))
        rows.append(("mmfl_beats_unimodal_meta", text, _verdict(gaps)))
    others = [a for a in finals if a != "mmfl" and have(a)]
    if have("mmfl") and others:
        gaps = [_cmp(finals, "mmfl", a, "test_acc") for a in others]
        best = max(others, key=lambda a: np.mean(finals[a]["test_acc"]))
        text = (f"mmfl {mean('mmfl', 'test_acc')}; best other {best} "
                f"{mean(best, 'test_acc')} (gap {min(g for g, _, _ in gaps):+.2f} points; "
                "paper: about +7.18)")
        rows.append(("mmfl_beats_others", text, _verdict(gaps)))
    return rows


def claims_section(finals: Finals, modalities: list[str], references: Mapping[str, Any],
                   experiment: str) -> list[str]:
    rows = check(finals, modalities)
    if not rows:
        return [f"No claim of Sec. 3.2 has all its methods among `{experiment}`'s cells."]
    text = {k: v.get("text", "") for k, v in (references.get("claims") or {}).items()}
    lines = [f"The paper's claims (Sec. 3.2) against `{experiment}` (final test accuracy %, "
             "mean over seeds):", "", "| claim | paper | ours | verdict |", "|---|---|---|---|"]
    return lines + [f"| {k} | {text.get(k, '')} | {n} | {v} |"
                    for k, n, v in rows]
