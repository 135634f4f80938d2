"""`clusterfl reproduce` on a CPU family other than the one that wrote the committed lock.

MKL, torch's BLAS, picks its code path by the CPU's vendor and vector width, and pinning it
(`CLUSTERFL_CPU_PINS=exact`) doubles a round (docs/reliability.md). So a run on an Intel CPU
writes other last bits than the AMD machine that wrote a committed `dvc.lock`: the hash of
every trained output changes while no command, code file or parameter did, and DVC rewrites
the lock. After `dvc repro`, `keep` restores the lock as it was before the run when
1. the two locks differ only in the hashes of files the pipeline writes itself (an output of
   one of its stages, or a dependency on such an output: a report reads the histories), and
2. every seed history under the changed training outputs is in the suite's committed
   references (reference/<suite>/<paper>/histories) and agrees with it within `TOLERANCE`
   (`clusterfl compare`'s rule: every metric of every round, every per-round array).
It then prints one line, and `git status` stays clean; `dvc status` lists those outputs as
changed, which is what they are. Anything else (a changed command, code file or parameter,
a number beyond the tolerance, an output no reference holds) leaves the lock as DVC wrote it.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from clusterfl.core.io import atomic_write_text
from pipeline.compare import compare
from pipeline.reference import REFERENCE

# The largest |difference| (any metric, any round) between a history trained here and its
# committed reference that counts as "the same numbers on another CPU". Measured: a fresh
# clone's default suite under `MKL_CBWR=COMPATIBLE` (another MKL code path, as on another CPU
# family) differed from reference/default by at most 0.0036 (test accuracy, as a fraction,
# of p1_mnist_subset_dnn/pfedkm_k4, 30 rounds; 1e-3 to 1e-9 elsewhere, docs/reliability.md).
# Rounding differences grow over rounds, so the tolerance leaves about 3x room.
TOLERANCE = 1e-2
HASH_KEYS = ("hash", "md5", "size", "nfiles")


@dataclass(frozen=True)
class Kept:
    """What `keep` decided: `kept` the old lock, the changed outputs, and why (one line)."""

    kept: bool
    changed: tuple[str, ...]
    line: str


def _by_path(entries: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    return {e["path"]: e for e in entries or []}


def _strip(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in HASH_KEYS}


def hash_only_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str] | None:
    """The outputs whose hashes differ between two lock documents, when that is all that
    differs, else None: the same stages, commands and params; the same deps and outs by path
    and, beyond their hash fields, by content; a dep's hash may differ only where it is an
    output of some stage (produced by the pipeline, so it follows the outputs)."""
    old, new = before.get("stages") or {}, after.get("stages") or {}
    if set(old) != set(new):
        return None
    produced = {path for stage in old.values() for path in _by_path(stage.get("outs"))}
    changed: list[str] = []
    for name, stage in old.items():
        other = new[name]
        if _strip({**stage, "deps": 0, "outs": 0}) != _strip({**other, "deps": 0, "outs": 0}):
            return None
        for key in ("deps", "outs"):
            mine, theirs = _by_path(stage.get(key)), _by_path(other.get(key))
            if set(mine) != set(theirs):
                return None
            for path, entry in mine.items():
                if entry == theirs[path]:
                    continue
                if _strip(entry) != _strip(theirs[path]) or path not in produced:
                    return None
                if key == "outs":
                    changed.append(path)
    return sorted(changed)


def reference_rows(suite: str, results: Path, root: Path = Path(".")) -> dict[str, float]:
    """Largest difference of each seed history ("<experiment>/<algorithm>/seed<k>") that a
    committed reference of `suite` shares with `results`; inf where the round counts differ."""
    rows: dict[str, float] = {}
    for histories in sorted((root / REFERENCE / suite).glob("*/histories")):
        for row in compare(histories, results):
            if "missing" in row or row["history"].startswith("("):
                continue
            diff = max(row["max_metric_diff"], row["max_array_diff"])
            same_rounds = row["rounds"][0] == row["rounds"][1]
            rows[row["history"]] = diff if same_rounds else float("inf")
    return rows


def keep(lock: Path, before: str, suite: str, root: Path = Path("."),
         tolerance: float = TOLERANCE) -> Kept:
    """After `dvc repro`: write `before` (the lock's text before the run) back to `lock` when
    only output hashes changed and every changed cell's histories match the references."""
    after = lock.read_text()
    if after == before:
        return Kept(False, (), "")
    changed = hash_only_changes(yaml.safe_load(before) or {}, yaml.safe_load(after) or {})
    if not changed:
        return Kept(False, (), "")
    results = root / "results" / suite
    cells = [p for p in changed if Path(p).parent.parent == Path("results") / suite]
    rows = reference_rows(suite, results, root)
    seeds = {cell: sorted(h for h in rows if (Path("results") / suite / h).parent.as_posix()
                          == cell) for cell in cells}
    uncovered = [c for c, found in seeds.items()
                 if not found or len(found) != len(list((root / c).glob("*/history.json")))]
    worst = max((rows[h] for found in seeds.values() for h in found), default=0.0)
    if uncovered or worst > tolerance:
        why = (f"{len(uncovered)} of them ({uncovered[0]}, ...) in no committed reference"
               if uncovered else f"a history differs from its committed reference by "
                                 f"{worst:.3g} > {tolerance:g}")
        return Kept(False, tuple(changed), (
            f"note: {lock}: {len(changed)} outputs have other hashes than the committed lock "
            f"and {why}: the lock is as DVC wrote it (`git diff {lock}`)"))
    atomic_write_text(lock, before)
    return Kept(True, tuple(changed), (
        f"note: this CPU wrote other last bits than {lock} records for {len(changed)} outputs "
        f"(MKL picks its code path by CPU); all {sum(map(len, seeds.values()))} histories of "
        f"its {len(cells)} trained cells agree with reference/{suite} within {worst:.2g} "
        f"(tolerance {tolerance:g}), so {lock} is left as committed and `dvc status` lists "
        "them as changed (docs/reliability.md)"))
