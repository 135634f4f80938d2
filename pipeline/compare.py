"""`clusterfl compare A B`: are two result trees the same numbers? (e.g. before and after a
code change). Every cell/seed history under both is compared metric by metric, round by
round; per-round arrays (assignments, importance, holdout matrices) too. Both trees must hold
the same histories (`--subset`: B may hold more), and two empty trees are an error, so that a
pass always means something was compared. Wall-clock metrics
(`kmeans_seconds`, kept in `timings.json` since histories keep timings apart; older
histories held them in the records) are skipped: they differ between any two runs. A tree of
packed histories (`history.json.gz`, a committed reference: `pipeline.reference`) is read as
its unpacked copy.
"""

from pathlib import Path
from typing import Any

import numpy as np

from clusterfl.training.history import load_history_json
from pipeline.reference import unpacked

WALL_CLOCK = {"kmeans_seconds"}


def _histories(root: Path) -> dict[str, Path]:
    return {str(p.parent.relative_to(root)): p for p in sorted(root.rglob("history.json"))}


def _max_diff(a: Any, b: Any) -> float:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        return float("inf")
    return float(np.max(np.abs(x - y), initial=0.0))


def compare(a: Path, b: Path) -> list[dict[str, Any]]:
    """One row per seed history present in both trees: the largest difference over shared
    metrics and arrays, the names only one side has, and the round counts."""
    with unpacked(a) as left_tree, unpacked(b) as right_tree:
        return _compare(left_tree, right_tree)


def _compare(a: Path, b: Path) -> list[dict[str, Any]]:
    left, right = _histories(a), _histories(b)
    rows = []
    for key in sorted(set(left) & set(right)):
        ha, hb = (load_history_json(p) for p in (left[key], right[key]))
        ra, rb = ha["records"], hb["records"]
        names_a = set(ra[0]) - WALL_CLOCK if ra else set()
        names_b = set(rb[0]) - WALL_CLOCK if rb else set()
        shared = sorted(names_a & names_b)
        diff = max((_max_diff([r[m] for r in ra], [r[m] for r in rb]) for m in shared),
                   default=0.0)
        arrays = sorted(set(ha["arrays"]) & set(hb["arrays"]))
        array_diff = max((_max_diff(ha["arrays"][n], hb["arrays"][n]) for n in arrays),
                         default=0.0)
        rows.append({"history": key, "rounds": (len(ra), len(rb)), "metrics": len(shared),
                     "max_metric_diff": diff, "arrays": len(arrays),
                     "max_array_diff": array_diff,
                     "only_a": sorted(names_a - names_b), "only_b": sorted(names_b - names_a)})
    if set(left) ^ set(right):
        rows.append({"history": "(in one tree only)",
                     "missing": {"a": sorted(set(left) - set(right)),
                                 "b": sorted(set(right) - set(left))}})
    return rows


def unmatched(rows: list[dict[str, Any]], subset: bool, a: Path, b: Path
              ) -> dict[str, list[str]]:
    """The histories that fail the comparison by being in one tree only, by the tree that
    holds them: any of either tree; with `subset` only those of `a` that `b` lacks (b may
    hold more, e.g. a whole suite's results against one paper's reference)."""
    found: dict[str, list[str]] = next((r["missing"] for r in rows if "missing" in r),
                                       {"a": [], "b": []})
    out = {str(a): found["a"], str(b): [] if subset else found["b"]}
    return {side: names for side, names in out.items() if names}
