"""Every claims table of a committed reference gives each verdict its evidence (issue 37): a
"does not hold" or "within noise" row names its cause (an ablation the suite runs, or
"genuine"), never "not yet isolated"; and every ablation a cause names is an experiment or
algorithm that some suite trains."""

import re
from pathlib import Path

import yaml

from clusterfl.reports.verdicts import FAILS, NOISE
from clusterfl.run.config import load_params

ROOT = Path(__file__).resolve().parents[1]
HEADER = "| claim | paper | ours | verdict | reading | open choices | cause | replicates |"


def claim_rows(text: str) -> list[list[str]]:
    """The cells of every row of every claims table in a Markdown text."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith(HEADER):
            inside = True
            continue
        if inside and line.startswith("|---"):
            continue
        if inside and line.startswith("| "):
            rows.append([c.strip() for c in line.strip("|").split(" | ")])
        else:
            inside = False
    return rows


def test_claim_rows_are_read_cell_by_cell():
    text = "\n".join([HEADER, "|---|---|---|---|---|---|---|---|",
                      "| a | A | 1 | holds | r | c |  | not run |", "", "| b | not a claims row |"])
    assert claim_rows(text) == [["a", "A", "1", "holds", "r", "c", "", "not run"]]


def test_every_verdict_short_of_holds_names_its_cause():
    tables = sorted(ROOT.glob("reference/*/*/report/tables/*.md"))
    rows = [(t, r) for t in tables for r in claim_rows(t.read_text())]
    assert rows, "no claims table in the committed references"
    missing = [f"{t.relative_to(ROOT)}: {r[0]} ({r[3]})" for t, r in rows
               if r[3] in (FAILS, NOISE) and (not r[6] or r[6] == "not yet isolated")]
    assert missing == []


def test_every_claims_row_states_its_comparisons_seed_by_seed_and_its_replication():
    """Issue 55: each row states its comparisons as "k of n seeds" with an interval (P4's
    variance claim: the variance ratio with its interval), or says none of its cells ran; and
    has a replicates cell."""
    tables = sorted(ROOT.glob("reference/*/*/report/tables/*.md"))
    rows = [(t, r) for t in tables for r in claim_rows(t.read_text())]
    assert rows
    seeds = re.compile(r"\d+ of \d+ seeds?\b|variance ratio")
    bare = [f"{t.relative_to(ROOT)}: {r[0]}" for t, r in rows if r[3] != "not run"
            and not (seeds.search(r[2]) and ("interval" in r[2] or "zero spread" in r[2]))]
    assert bare == []
    assert {len(r) for _, r in rows} == {8} and all(r[7] for _, r in rows)


def test_every_ablation_a_cause_names_is_trained_by_a_suite():
    trained: set[str] = set()
    for params in [ROOT / "params.yaml", *sorted(ROOT.glob("suites/*/params.yaml"))]:
        suite = load_params(params)
        trained |= {c.experiment for c in suite.cells} | {c.algorithm for c in suite.cells}
    named = []
    for refs in sorted(ROOT.glob("src/clusterfl/papers/*/references.yaml")):
        claims = yaml.safe_load(refs.read_text()).get("claims") or {}
        entries = claims.values() if isinstance(claims, dict) else claims
        for claim in entries:
            cause = claim.get("cause")
            if isinstance(cause, dict):
                ablation = cause["ablation"]
                named += [(refs.parent.name, a) for a in
                          (ablation if isinstance(ablation, list) else [ablation])]
    assert named and [n for n in named if n[1] not in trained] == []
