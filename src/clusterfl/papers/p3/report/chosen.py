"""Which candidate rate mmFL's temporary copies chose, before and after a cell's scored
round, and which of its seeds diverged.

mmFL (Eq. 1-4) lets each client's copies try every candidate rate and keeps the best on d;
the `selected_lr` array a selection cell records ([rounds, clients] per seed) says which
rate won each client-round. The shares show what drives a selection cell's curve: on the
watch data's validation view at 160 rounds the grid {1.0, 0.3, 0.1} picks 1.0 on at most 1 %
of client-rounds up to round 50 and on up to 79 % after it on some seeds, and 4 of 10 seeds
diverge (docs/p3.md, "160 rounds"). A seed has diverged where `training.history.divergence`
says so (a loss non-finite or exploded).
"""

from collections.abc import Mapping, Sequence

import numpy as np

from clusterfl.training.history import Divergence


def shares(selected: np.ndarray, upto: int) -> tuple[dict[float, float], dict[float, float]]:
    """Per candidate rate, its share of client-rounds (0-1) over every seed in rounds
    1..`upto` and in the rounds after it (empty where none follow); `selected` is
    [seeds, rounds, clients]."""
    rates = sorted({float(r) for r in np.unique(selected)}, reverse=True)
    before, after = selected[:, :upto], selected[:, upto:]

    def share(part: np.ndarray) -> dict[float, float]:
        return {r: float(np.mean(part == r)) for r in rates} if part.size else {}

    return share(before), share(after)


def _describe(share: Mapping[float, float]) -> str:
    return ", ".join(f"{r:g}: {100 * s:.1f} %" for r, s in share.items()) or "–"


def chosen_table(selected: Mapping[str, np.ndarray], rounds: Mapping[str, int],
                 diverged: Mapping[str, Sequence[Divergence | None]]) -> list[str]:
    """Markdown: for each cell that chose among two or more rates, the share of
    client-rounds at each rate up to its scored round (`rounds`: the round picked on
    validation, else its last) and after it, and its diverged seeds. Empty where no cell
    chose."""
    rows = []
    for cell, sel in selected.items():
        if len(np.unique(sel)) < 2:
            continue
        upto = rounds.get(cell, sel.shape[1])
        before, after = shares(sel, upto)
        hit = sorted(d.round for d in diverged.get(cell, []) if d is not None)
        gone = (f"{len(hit)} of {sel.shape[0]} (rounds {', '.join(map(str, hit))})" if hit
                else f"0 of {sel.shape[0]}")
        rows.append(f"| {cell} | {upto} of {sel.shape[1]} | {_describe(before)} | "
                    f"{_describe(after)} | {gone} |")
    if not rows:
        return []
    return ["Rates the copies chose (share of client-rounds over seeds, Eq. 4's pick), up to "
            "each cell's scored round and after it, and the seeds whose loss diverged:", "",
            "| cell | scored round | up to it | after it | seeds diverged |",
            "|---|---|---|---|---|", *rows, ""]
