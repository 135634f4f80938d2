"""A paper's claim checked with our numbers, and the evidence that goes with its verdict.

One rule for every paper (issue 37): a claim "holds" only when every comparison it makes
goes its way by more than the seeds' spread, "does not hold" when some comparison goes
against it by more than that spread, and is "within noise" otherwise. The spread of a
comparison is the larger of the two std-over-seeds (the intervals mean ± std are apart).

Each claim in a paper's `references.yaml: claims` may carry, beside `text` and `source`:
- `reading`: what the paper states, as coded, with every departure named;
- `open_choices`: each setting the paper leaves open and how it was picked;
- `cause`: why a verdict other than "holds" comes out: the suite's ablation that isolates
  it (`ablation: <experiment>` plus `text`), or a string that starts with "genuine".
`claims_table` renders them as columns beside the verdict.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

HOLDS, FAILS, NOISE, NOT_RUN = "holds", "does not hold", "within noise", "not run"
Sample = Sequence[float] | np.ndarray  # one number per seed
VERDICTS = (HOLDS, FAILS, NOISE, NOT_RUN)


@dataclass(frozen=True)
class Gap:
    """One comparison of a claim: `diff` > 0 goes the claim's way; `spread` is the noise."""

    diff: float
    spread: float

    @property
    def clear(self) -> bool:
        return abs(self.diff) > self.spread


def gap(claimed: Sample, other: Sample, lower_is_better: bool = False) -> Gap:
    """The comparison 'claimed beats other' of two per-seed samples."""
    sign = -1.0 if lower_is_better else 1.0
    diff = sign * (float(np.mean(claimed)) - float(np.mean(other)))
    return Gap(diff, max(float(np.std(claimed)), float(np.std(other))))


def decide(gaps: Sequence[Gap]) -> str:
    """The verdict of a claim made of `gaps` (all must go its way, beyond the noise)."""
    if not gaps:
        return NOT_RUN
    if all(g.diff > g.spread for g in gaps):
        return HOLDS
    if any(g.diff < -g.spread for g in gaps):
        return FAILS
    return NOISE


@dataclass(frozen=True)
class ClaimRow:
    claim_id: str
    ours: str
    verdict: str


def _cell(value: Any) -> str:
    """A references.yaml field as one table cell (lists joined, pipes escaped)."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        ablation = value.get("ablation")
        named = ", ".join(ablation) if isinstance(ablation, list) else ablation
        text = str(value.get("text", "")).strip()
        return (f"ablation `{named}`: {text}" if named else text).replace("|", "\\|")
    if isinstance(value, list):
        return "; ".join(str(v).strip() for v in value).replace("|", "\\|")
    return " ".join(str(value).split()).replace("|", "\\|")


def cause_missing(row: ClaimRow, claims: Mapping[str, Any]) -> bool:
    """A verdict other than holds/not run whose claim names no cause."""
    return row.verdict in (FAILS, NOISE) and not claims.get(row.claim_id, {}).get("cause")


def claims_table(rows: Sequence[ClaimRow], claims: Mapping[str, Any]) -> list[str]:
    """Markdown rows: claim, what the paper says, our numbers, verdict, and its evidence. A
    claim checked in several rows (experiments) states its text, reading and open choices
    in the first, its cause in the first whose verdict needs one; later rows say "as above"."""
    lines = ["| claim | paper | ours | verdict | reading | open choices | cause |",
             "|---|---|---|---|---|---|---|"]
    stated: set[str] = set()
    explained: set[str] = set()
    for row in rows:
        claim = claims.get(row.claim_id, {})
        first = row.claim_id not in stated
        stated.add(row.claim_id)
        cause = ""
        if row.verdict in (FAILS, NOISE):
            cause = ("not yet isolated" if cause_missing(row, claims) else
                     "as above" if row.claim_id in explained else _cell(claim.get("cause")))
            explained.add(row.claim_id)
        text, reading, choices = ((_cell(claim.get("text")), _cell(claim.get("reading")),
                                   _cell(claim.get("open_choices"))) if first else
                                  ("as above",) * 3)
        lines.append(f"| {row.claim_id} | {text} | {row.ours} | {row.verdict} | {reading} | "
                     f"{choices} | {cause} |")
    return lines
