"""Printing a table that may not fit: whole where it fits the console's width, else as records.

A pipe gets 80 columns (`COLUMNS` where set), and rich squeezes a wide table into them by
cutting every cell ("f…"); `clusterfl list algorithms` grew to 2,331 lines of folded
cells. `show` prints a table as rich draws it where no cell need be cut, else as one record
per row: the row's key cells on a line, then its other cells as `column: value`, packed
side by side and wrapped at the width, so that nothing is cut and no line is longer than
the width.
"""

import textwrap

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

SEPARATOR = "; "
INDENT = "  "


def _plain(cell: object) -> str:
    """A cell as text: rich markup parsed (the tables escape their brackets), lines joined."""
    text = cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain
    return " ".join(text.split())


def least_width(table: Table, console: Console) -> int:
    """The width below which rich must cut a cell of `table`: each column as wide as its
    longest word (wider, rich wraps cells at spaces and cuts nothing)."""
    return Measurement.get(console, console.options.update_width(1 << 16), table).minimum


def records(table: Table, width: int, keys: int = 1) -> list[tuple[str, str | None]]:
    """(line, style) of `table` as records, no line longer than `width`: its title, then per
    row the cells of its first `keys` columns on a line (in the row's style), then the
    others that are not empty as `column: value` (a column without a header: the value),
    packed side by side, `; ` apart, each wrapped where it is longer than a line."""
    width = max(width, 20)
    lines: list[tuple[str, str | None]] = [
        (line, None) for line in textwrap.wrap(_plain(table.title or ""), width)]
    headers = [_plain(column.header) for column in table.columns]
    columns = [[_plain(cell) for cell in column.cells] for column in table.columns]
    for i, row in enumerate(table.rows):
        cells = [column[i] if i < len(column) else "" for column in columns]
        key = "  ".join(c for c in cells[:keys] if c)
        style = str(row.style) if row.style else None
        lines += [(line, style) for line in textwrap.wrap(key, width)] or [("", style)]
        fields = [f"{h}: {c}" if h else c
                  for h, c in zip(headers[keys:], cells[keys:], strict=True) if c]
        current = ""
        for field in fields:
            joined = f"{current}{SEPARATOR}{field}" if current else field
            if len(INDENT) + len(joined) <= width:
                current = joined
                continue
            if current:
                lines.append((INDENT + current, None))
            if len(INDENT) + len(field) <= width:
                current = field
            else:  # longer than a line: wrapped on its own, indented under its name
                lines += [(line, None) for line in textwrap.wrap(
                    field, width, initial_indent=INDENT, subsequent_indent=INDENT * 2)]
                current = ""
        if current:
            lines.append((INDENT + current, None))
    return lines


def show(table: Table, console: Console | None = None, keys: int = 1) -> None:
    """Print `table` on `console` (default: stdout's): as a table where it fits the
    console's width without a cell cut (`least_width`; its cells may wrap), else as `records`
    (keys: the leading columns that name a row)."""
    console = console or Console()
    if least_width(table, console) <= console.width:
        console.print(table)
        return
    for line, style in records(table, console.width, keys):
        console.print(Text(line, style=style or ""), soft_wrap=True, highlight=False)
