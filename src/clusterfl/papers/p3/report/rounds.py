"""P3's scored round, picked on the validation experiment, never on the test split (issue 55).

The paper states no number of rounds, and the watch data's FL is still rising at 40. So the
round a cell is scored at is one more setting picked on validation: a cell that also ran on
the validation experiment (its *twin*: the same cell name, the same clients scored on the
validation view) is scored at the round where its twin's mean validation accuracy over seeds
is highest (a tie goes to the earlier round), on validation and on test alike; a cell
without a twin is scored at its last round. The rates (`selection.py`) are then picked on
the validation finals at those rounds: each (rate, round) pair is one point of the grid.

A pick at the last round run sits at the grid's edge: accuracy was still rising when the run
stopped, so the round is not a choice, and every claims row that compares such a cell is
marked not decided (`refuse_at_edge`) until the cells run longer.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from clusterfl.reports.verdicts import NOT_RUN, ClaimRow

Curves = Mapping[str, Mapping[str, np.ndarray]]  # algorithm -> metric -> [seeds, rounds]
Finals = dict[str, dict[str, list[float]]]  # algorithm -> metric -> value per seed
METRIC = "test_acc"  # on the validation experiment: accuracy on the validation view


@dataclass(frozen=True)
class ScoredRound:
    """A cell's round picked on validation (1-based) of the `rounds` its twin ran."""

    round: int
    rounds: int
    score: float  # mean validation accuracy (%) at `round`
    last: float  # ... at the last round

    @property
    def at_edge(self) -> bool:
        return self.round == self.rounds


def best_round(curve: np.ndarray) -> ScoredRound:
    """The round of highest mean over seeds of `curve` ([seeds, rounds], accuracy 0-1);
    the earliest of equals."""
    means = np.asarray(curve, dtype=float).mean(axis=0)
    i = int(np.argmax(means))
    return ScoredRound(i + 1, len(means), 100 * float(means[i]), 100 * float(means[-1]))


def scored_rounds(validation: Curves) -> dict[str, ScoredRound]:
    """Every validation cell's picked round."""
    return {alg: best_round(c[METRIC]) for alg, c in validation.items() if METRIC in c}


def finals_at(curves: Curves, rounds: Mapping[str, ScoredRound]) -> Finals:
    """Each cell's every metric per seed at its scored round (`rounds`, the twin's pick),
    the last round where it has no twin; a run shorter than its pick at its last round."""
    out: Finals = {}
    for alg, metrics in curves.items():
        pick = rounds.get(alg)
        out[alg] = {k: (v[:, min(pick.round, v.shape[1]) - 1] if pick else v[:, -1]).tolist()
                    for k, v in metrics.items()}
    return out


def rounds_table(validation: str, rounds: Mapping[str, ScoredRound]) -> list[str]:
    """Markdown: each validation cell's picked round, its accuracy there and at the last."""
    lines = [f"Scored rounds picked on `{validation}` (mean validation accuracy %, over seeds; "
             "each test cell is scored at its twin's round; a pick at the last round run is "
             "a grid edge: still rising when the run stopped):", "",
             "| cell | round picked | rounds run | at the pick | at the last round |",
             "|---|---|---|---|---|"]
    for alg, r in rounds.items():
        edge = " (grid edge)" if r.at_edge else ""
        lines.append(f"| {alg} | {r.round}{edge} | {r.rounds} | {r.score:.2f} | {r.last:.2f} |")
    return lines


def cells_of(key: str) -> list[str]:
    """The cells a keyed claims row compares (`claims.checked`: `claim/a/b+c`)."""
    return [c for part in key.split("/")[1:] for c in part.split("+")]


def edge_cells(rounds: Mapping[str, ScoredRound]) -> set[str]:
    return {alg for alg, r in rounds.items() if r.at_edge}


def refuse_at_edge(rows: Sequence[tuple[str, ClaimRow]], edges: set[str]
                   ) -> list[tuple[str, ClaimRow]]:
    """Each keyed row that compares a cell in `edges` marked not decided, what the rule
    would say kept beside (verdict and a replicate that ran)."""
    out = []
    for key, row in rows:
        hit = [c for c in cells_of(key) if c in edges]
        if hit and not row.verdict.startswith("not"):
            why = (f"not decided: the round picked on validation for {', '.join(hit)} is the "
                   "last run (still rising); run longer")
            again = (row.replicates if row.replicates == NOT_RUN else
                     f"not decided (would say: {row.replicates})")
            row = replace(row, verdict=f"{why} (the rule would say: {row.verdict})",
                          replicates=again)
        out.append((key, row))
    return out
