"""Mean ± std formatting and Markdown tables, for every paper's tables."""

from collections.abc import Iterable, Sequence

import numpy as np


def plus_minus(mean: float | np.floating, std: float | np.floating, digits: int = 2) -> str:
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def mean_std(values: Sequence[float], digits: int = 2) -> str:
    """"mean ± std" over `values` (population std, as every table here), "–" for none."""
    return plus_minus(np.mean(values), np.std(values), digits) if len(values) else "–"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table's lines: the header, the rule, one line per row."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]
