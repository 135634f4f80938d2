"""The shared claim verdict: beyond the seeds' spread, or within noise; evidence columns."""

from clusterfl.reports.verdicts import (
    FAILS,
    HOLDS,
    NOISE,
    NOT_RUN,
    ClaimRow,
    Gap,
    claims_table,
    decide,
    gap,
)


def test_gap_is_mean_difference_in_the_claims_direction_with_the_larger_std():
    g = gap([1.0, 3.0], [0.0, 0.0])
    assert (g.diff, g.spread) == (2.0, 1.0)
    lower = gap([1.0, 3.0], [0.0, 0.0], lower_is_better=True)
    assert (lower.diff, lower.spread) == (-2.0, 1.0)


def test_decide_needs_every_gap_beyond_its_spread_to_hold():
    assert decide([Gap(2.0, 1.0), Gap(0.5, 0.1)]) == HOLDS
    assert decide([Gap(2.0, 1.0), Gap(0.5, 0.6)]) == NOISE
    assert decide([Gap(2.0, 1.0), Gap(-0.7, 0.6)]) == FAILS
    assert decide([Gap(-0.5, 0.6)]) == NOISE
    assert decide([Gap(1.0, 1.0)]) == NOISE  # touching intervals are not apart
    assert decide([]) == NOT_RUN


def test_claims_table_shows_reading_choices_and_cause_only_where_it_explains():
    claims = {"a": {"text": "A | beats B", "reading": ["Eq. 1 as coded", "x departs"],
                    "open_choices": "rate on validation", "cause": "genuine: fails always"},
              "b": {"text": "B", "cause": {"ablation": ["p4_shared"], "text": "the start"}},
              "c": {"text": "C"}}
    rows = [ClaimRow("a", "1 vs 2", HOLDS), ClaimRow("b", "3 vs 4", FAILS),
            ClaimRow("c", "5 vs 6", NOISE)]
    table = claims_table(rows, claims)
    assert table[0].startswith("| claim | paper | ours | verdict | reading |")
    assert table[2] == ("| a | A \\| beats B | 1 vs 2 | holds | Eq. 1 as coded; x departs | "
                        "rate on validation |  |")
    assert table[3].endswith("| does not hold |  |  | ablation `p4_shared`: the start |")
    assert table[4].endswith("| within noise |  |  | not yet isolated |")


def test_a_claim_in_several_rows_is_stated_once_and_explained_once():
    claims = {"a": {"text": "A", "reading": "r", "cause": "genuine: always"}}
    rows = [ClaimRow("a", "e1", HOLDS), ClaimRow("a", "e2", FAILS), ClaimRow("a", "e3", NOISE)]
    table = claims_table(rows, claims)
    assert table[2] == "| a | A | e1 | holds | r |  |  |"
    assert table[3] == ("| a | as above | e2 | does not hold | as above | as above | "
                        "genuine: always |")
    assert table[4] == "| a | as above | e3 | within noise | as above | as above | as above |"
