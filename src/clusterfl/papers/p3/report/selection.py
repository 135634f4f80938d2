"""P3's open rates chosen on a validation experiment, never on the test split (issue 37).

The paper gives mmFL's candidate rates and no rate for the methods without selection
(unimodal FL, standalone, centralized, multimodal FL at a fixed rate). references.yaml
`rate_selection` names, per experiment, its validation experiment (the same clients on a
validation view of the data: `datasets.watch_val`) and the families whose rate is open: a
family `f` is the cells `f_lr<rate>` (`mmfl` -> `mmfl_lr0_3`, ...). On the validation
experiment:
- each family's rate is the one whose cell has the highest mean accuracy over seeds at its
  scored round (the round picked on validation, `rounds.py`; "final" below means that round);
  a pick at the lowest or highest rate run is flagged as a grid edge (the grid did not
  bracket the best rate, so the pick is not a choice);
- mmFL's candidate grid is the one, of the mmFL cells named in `grids`, that holds the fixed
  rate picked for `mmfl` strictly inside its range ("a candidate grid that brackets the best
  fixed rate");
- T_temp (the copy's steps) and |d|/|D| (the share held out to score the copies), which the
  paper leaves open, are picked for that grid among its `settings` variants run on the
  validation experiment (the grid's cell and cells that change one of the two): the best mean
  final accuracy, a setting whose pick is the lowest or highest value tried flagged as a grid
  edge (issue 55); the grid is widened there and run again, unless it has plateaued: where
  the best sits at an edge and the variant one value inwards is within noise of it (the
  paired 95 % interval of their per-seed difference holds 0), the pick is that inner
  variant, and the report says so (docs/p3.md: T_temp on the watch data).
The test experiment then compares each family at its picked rate, and mmFL at its picked
grid and settings.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from clusterfl.reports.verdicts import NOISE, compare

Finals = Mapping[str, Mapping[str, list[float]]]  # algorithm -> metric -> final per seed


def rate_of(cell: str, family: str) -> float | None:
    """The rate of `family`'s cell `cell` (`<family>_lr0_3` -> 0.3), None if not one of its."""
    prefix = f"{family}_lr"
    if not cell.startswith(prefix):
        return None
    try:
        return float(cell[len(prefix):].replace("_", "."))
    except ValueError:
        return None


@dataclass(frozen=True)
class Pick:
    family: str
    cell: str  # its cell at the picked rate, e.g. unimodal_fl_lr0_3
    rate: float
    scores: dict[float, float]  # rate -> mean final validation accuracy (%) of its cell

    @property
    def at_edge(self) -> bool:
        return self.rate in (min(self.scores), max(self.scores))


def pick_rate(finals: Finals, family: str) -> Pick | None:
    """The family's best rate on the validation experiment's `finals` (None: fewer than one
    cell ran)."""
    scores = {rate: 100 * float(np.mean(f["test_acc"])) for cell, f in finals.items()
              if (rate := rate_of(cell, family)) is not None and f.get("test_acc")}
    if not scores:
        return None
    best = max(sorted(scores), key=lambda r: scores[r])  # a tie goes to the smaller rate
    cell = next(c for c in finals if rate_of(c, family) == best)
    return Pick(family, cell, best, scores)


def bracketing_grid(grids: Mapping[str, Sequence[float]], rate: float) -> str | None:
    """The first cell of `grids` (cell -> its candidate rates) whose rates hold `rate`
    strictly inside their range."""
    return next((cell for cell, rates in grids.items()
                 if rates and min(rates) < rate < max(rates)), None)


@dataclass(frozen=True)
class Variant:
    """An mmFL cell's candidate rates, T_temp and |d|/|D| (its params)."""

    rates: tuple[float, ...]
    temp_steps: int
    holdout: float


# the two settings picked on validation, each read off a variant
SETTINGS: dict[str, Callable[[Variant], float]] = {"T_temp": lambda v: v.temp_steps,
                                                   "|d|": lambda v: v.holdout}


@dataclass(frozen=True)
class SettingsPick:
    """mmFL's T_temp and |d|/|D| picked on validation among its grid's variants."""

    cell: str  # the picked variant's cell
    variants: dict[str, Variant]  # every variant run on validation, the grid's cell first
    scores: dict[str, float]  # cell -> mean final validation accuracy (%)
    plateau: str = ""  # where the best sat at an edge within noise of its inner neighbour

    def edges(self) -> list[str]:
        """The settings whose picked value is the lowest or highest value tried (of two or
        more): the grid did not bracket them."""
        picked = self.variants[self.cell]
        out = []
        for name, value in SETTINGS.items():
            tried = {value(v) for v in self.variants.values()}
            if len(tried) > 1 and value(picked) in (min(tried), max(tried)):
                out.append(name)
        return out

    @property
    def picked(self) -> bool:
        """Whether there was a choice: one variant run alone is not a pick (a suite that
        carries settings picked elsewhere runs just that one)."""
        return len(self.variants) > 1

    def describe(self) -> str:
        v, edges = self.variants[self.cell], self.edges()
        if not self.picked:
            return (f"T_temp {v.temp_steps}, |d| {v.holdout:g}|D|: the one variant run "
                    "there, not picked there")
        return (f"T_temp {v.temp_steps}{' (grid edge)' if 'T_temp' in edges else ''}, "
                f"|d| {v.holdout:g}|D|{' (grid edge)' if '|d|' in edges else ''}"
                + (f"; {self.plateau}" if self.plateau else ""))


def inner_neighbour(variants: Mapping[str, Variant], cell: str, name: str) -> str | None:
    """The variant one value of setting `name` inwards from `cell`'s, the other setting
    alike, where `cell`'s value is the lowest or highest of two or more tried; else None."""
    value, other = SETTINGS[name], next(f for n, f in SETTINGS.items() if n != name)
    mine = variants[cell]
    line = {value(v): c for c, v in variants.items() if other(v) == other(mine)}
    tried = sorted(line)
    if len(tried) < 2 or value(mine) not in (tried[0], tried[-1]):
        return None
    return line[tried[1] if value(mine) == tried[0] else tried[-2]]


def pick_settings(finals: Finals, grid: str, grid_rates: Sequence[float],
                  variants: Mapping[str, Variant]) -> SettingsPick | None:
    """Of `variants` with the grid's rates that ran on validation (`finals`), the best mean
    final accuracy (the first listed wins a tie), stepped one value inwards where the grid
    has plateaued at an edge (the module's docstring). None where none ran."""
    ran = {c: v for c, v in variants.items()
           if v.rates == tuple(grid_rates) and finals.get(c, {}).get("test_acc")}
    if not ran:
        return None
    scores = {c: 100 * float(np.mean(finals[c]["test_acc"])) for c in ran}
    best = max(ran, key=lambda c: (scores[c], -list(ran).index(c)))
    ordered = dict(sorted(ran.items(), key=lambda cv: cv[0] != grid))
    for name in SETTINGS:
        inner = inner_neighbour(ran, best, name)
        if inner is None:
            continue
        gap = compare(finals[best]["test_acc"], finals[inner]["test_acc"], scale=100.0)
        if gap.verdict == NOISE:
            plateau = (f"{name} plateaued at the grid's edge: `{best}` against `{inner}` "
                       f"{gap.describe(unit='points')}")
            return SettingsPick(inner, ordered, scores, plateau)
    return SettingsPick(best, ordered, scores)


@dataclass(frozen=True)
class Selection:
    validation: str  # the validation experiment
    picks: dict[str, Pick]  # family -> its pick
    grid: str | None  # the mmFL cell whose grid brackets the fixed rate picked for `mmfl`
    settings: SettingsPick | None = None  # the grid's T_temp and |d| picked on validation

    @property
    def meta(self) -> str | None:
        """mmFL's test cell: the grid at its picked settings (the grid's own cell where no
        variant ran on validation)."""
        return self.settings.cell if self.settings else self.grid

    def cell(self, family: str) -> str | None:
        pick = self.picks.get(family)
        return pick.cell if pick else None

    def describe(self, family: str) -> str:
        pick = self.picks[family]
        return f"{pick.rate:g}" + (" (grid edge)" if pick.at_edge else "")


def select(validation: str, finals: Finals, families: Sequence[str],
           grids: Mapping[str, Sequence[float]],
           variants: Mapping[str, Variant] | None = None) -> Selection:
    picks = {f: p for f in families if (p := pick_rate(finals, f)) is not None}
    fixed = picks.get("mmfl")
    grid = bracketing_grid(grids, fixed.rate) if fixed else None
    settings = (pick_settings(finals, grid, grids[grid], variants)
                if grid is not None and variants else None)
    return Selection(validation, picks, grid, settings)


def selection_table(selection: Selection) -> list[str]:
    """Markdown: each family's mean validation accuracy per rate, and its pick."""
    rates = sorted({r for p in selection.picks.values() for r in p.scores})
    lines = [f"Rates chosen on `{selection.validation}` (mean validation accuracy % at each "
             "cell's round picked there, over seeds; the pick in bold):", "",
             "| family | " + " | ".join(f"{r:g}" for r in rates) + " | pick |",
             "|---|" + "---|" * (len(rates) + 1)]
    for family, pick in selection.picks.items():
        cells = [("" if r not in pick.scores else
                  f"**{pick.scores[r]:.2f}**" if r == pick.rate else f"{pick.scores[r]:.2f}")
                 for r in rates]
        lines.append(f"| {family} | " + " | ".join(cells) + f" | {selection.describe(family)} |")
    grid = (f"mmFL's candidate grid: `{selection.grid}`, the one that brackets the fixed rate "
            f"picked for mmfl" if selection.grid else
            "mmFL's candidate grid: none of the grids run brackets the fixed rate picked")
    return [*lines, "", grid + ".", *settings_table(selection)]


def settings_table(selection: Selection) -> list[str]:
    """Markdown: the grid's T_temp and |d| variants on validation, and the pick."""
    pick = selection.settings
    if pick is None:
        return []
    if not pick.picked:
        v = pick.variants[pick.cell]
        return ["", f"mmFL's T_temp and |d| are not chosen on `{selection.validation}`: only "
                f"`{pick.cell}` ran there for `{selection.grid}` (T_temp {v.temp_steps}, |d| "
                f"{v.holdout:g}|D|; mean validation accuracy {pick.scores[pick.cell]:.2f} % at "
                "its round picked there)."]
    lines = ["", f"mmFL's T_temp and |d| chosen on `{selection.validation}` for "
             f"`{selection.grid}` (mean validation accuracy % at each cell's round picked "
             "there, over seeds; the pick in bold):", "",
             "| cell | T_temp | \\|d\\| / \\|D\\| | accuracy (%) |", "|---|---|---|---|"]
    for cell, v in pick.variants.items():
        score = f"{pick.scores[cell]:.2f}"
        lines.append(f"| {cell} | {v.temp_steps} | {v.holdout:g} | "
                     f"{f'**{score}**' if cell == pick.cell else score} |")
    return [*lines, "", f"Pick: `{pick.cell}` ({pick.describe()})."]
