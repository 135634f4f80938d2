"""The shared verdict module (issue 55), on small hand-computed arrays: paired differences
with their Student t interval, k of n, one seed and zero spread, Welch where seeds do not
match, thresholds (close, band), censored targets, the variance ratio, and the claims table.

The t and F quantiles are written in closed form: with 1 degree of freedom
t(0.975) = tan(0.475 π); with 2, t(p) = (2p − 1) / sqrt(2p(1 − p)); F(2, 2)'s CDF is
x / (1 + x), so its 0.975 quantile is 39 and its 0.025 quantile 1/39."""

import math

import pytest

from clusterfl.reports.verdicts import (
    FAILS,
    HOLDS,
    NOISE,
    NOT_RUN,
    ClaimRow,
    Reach,
    band,
    by_seed,
    claims_table,
    close,
    compare,
    decide,
    estimate,
    fewest_seeds,
    reach_first,
    variance_ratio,
    welch,
    with_replicates,
)

T1 = math.tan(0.475 * math.pi)  # t(0.975) with 1 degree of freedom: 12.7062...
T2 = 0.95 / math.sqrt(2 * 0.975 * 0.025)  # with 2: 4.3026...


def test_paired_differences_give_k_of_n_and_the_t_interval():
    # diffs 2, 3, 1: mean 2, std (ddof 1) 1, half-width T2 / sqrt(3) = 2.4841
    c = compare([3.0, 5.0, 4.0], [1.0, 2.0, 3.0])
    assert (c.wins, c.n, c.paired) == (3, 3, True)
    assert c.estimate.mean == 2.0
    assert c.estimate.low == pytest.approx(2 - T2 / math.sqrt(3), rel=1e-12)
    assert c.estimate.high == pytest.approx(2 + T2 / math.sqrt(3), rel=1e-12)
    assert c.verdict == NOISE  # 3 of 3 wins, but the interval -0.48 to 4.48 holds 0
    assert c.describe() == ("wins on 3 of 3 seeds, mean paired difference +2.00 (95 % "
                            "interval -0.48 to +4.48)")
    # diffs 4, 5, 6: 5 ± 2.4841, wholly above 0
    held = compare([5.0, 6.0, 7.0], [1.0, 1.0, 1.0])
    assert held.verdict == HOLDS
    assert held.estimate.low == pytest.approx(5 - T2 / math.sqrt(3), rel=1e-12)
    # lower is better: the same numbers go against the claim
    lost = compare([5.0, 6.0, 7.0], [1.0, 1.0, 1.0], lower_is_better=True)
    assert (lost.wins, lost.verdict, lost.estimate.mean) == (0, FAILS, -5.0)
    assert lost.estimate.high == pytest.approx(-5 + T2 / math.sqrt(3), rel=1e-12)


def test_pairing_uses_the_seed_not_the_order():
    # seed 0: 3 - 1, seed 1: 5 - 2, seed 2: 4 - 3, whatever the order of the mappings
    c = compare({2: 4.0, 0: 3.0, 1: 5.0}, {0: 1.0, 1: 2.0, 2: 3.0}, scale=100.0)
    assert (c.wins, c.estimate.mean) == (3, 200.0)
    assert by_seed([7.0, 8.0]) == {0: 7.0, 1: 8.0}


def test_paired_beats_unpaired_where_one_seed_is_hard_for_both():
    # both methods lose 20 points on seed 2; paired, the gap is 1 on every seed
    c = compare([80.0, 81.0, 61.0], [79.0, 80.0, 60.0])
    assert (c.wins, c.verdict) == (3, HOLDS)
    assert (c.estimate.low, c.estimate.high) == (1.0, 1.0)  # zero spread


def test_one_seed_has_no_interval_and_zero_spread_is_the_value_itself():
    one = compare([5.0], [3.0])
    assert (one.wins, one.n, one.estimate.mean) == (1, 1, 2.0)
    assert (one.estimate.low, one.estimate.high) == (-math.inf, math.inf)
    assert one.verdict == NOISE
    assert one.describe() == ("wins on 1 of 1 seed, mean paired difference +2.00 (one seed: "
                              "no interval)")
    flat = compare([3.0, 4.0], [1.0, 2.0])
    assert (flat.estimate.low, flat.estimate.high, flat.verdict) == (2.0, 2.0, HOLDS)
    assert flat.describe().endswith("(zero spread: the interval is the value itself)")
    tie = compare([100.0, 100.0], [100.0, 100.0])
    assert (tie.wins, tie.verdict) == (0, NOISE)  # the interval is 0 itself


def test_seeds_that_do_not_match_are_compared_unpaired_and_say_so():
    # a = 1, 3 (var 2), b = 0, 0, 0 (var 0): se 1, Welch df 1, half-width T1
    c = compare({0: 1.0, 1: 3.0}, {0: 0.0, 1: 0.0, 2: 0.0})
    assert (c.paired, c.wins) == (False, None)
    assert c.estimate.mean == 2.0
    assert c.estimate.low == pytest.approx(2 - T1, rel=1e-12)
    assert c.verdict == NOISE
    assert c.describe() == ("mean difference +2.00 (Welch 95 % interval -10.71 to +14.71); "
                            "unpaired: seeds [0, 1] against [0, 1, 2] do not match")
    assert welch([1.0], [0.0, 2.0]).low == -math.inf  # one value: no interval


def test_close_needs_the_whole_interval_within_the_tolerance():
    # diffs 0, 2, 1: 1 ± 2.4841
    near = close([10.0, 12.0, 11.0], [10.0, 10.0, 10.0], tolerance=2.0)
    assert (near.inside, near.n, near.verdict) == (3, 3, NOISE)  # every seed within, the mean not
    assert near.describe(unit="points") == (
        "3 of 3 seeds within [-2.00, +2.00] points, mean +1.00 points (95 % interval -1.48 "
        "to +3.48)")
    assert close([10.0, 12.0, 11.0], [10.0, 10.0, 10.0], tolerance=4.0).verdict == HOLDS
    # diffs 6, 7, 8: 7 ± 2.4841 lies wholly above +2
    far = close([16.0, 17.0, 18.0], [10.0, 10.0, 10.0], tolerance=2.0)
    assert (far.inside, far.verdict) == (0, FAILS)
    assert close([100.0, 100.0], [100.0, 100.0], 2.0).verdict == HOLDS  # zero spread at 0


def test_band_of_a_per_seed_quantity():
    # slopes -0.5 and -1.0: std 0.35355, -0.75 ± T1 * 0.35355 / sqrt(2) = -0.75 ± 3.1766
    got = band([-0.5, -1.0], -0.75, -0.25)
    assert got.estimate.high == pytest.approx(-0.75 + T1 * 0.5 / 2, rel=1e-12)
    assert (got.inside, got.verdict) == (1, NOISE)  # -1.0 lies outside the band
    assert band([-0.5, -0.5], -0.75, -0.25).verdict == HOLDS
    assert band([0.0, 0.0], -0.75, -0.25).verdict == FAILS
    assert band([0.95, 0.97, 0.99], 0.9, math.inf).verdict == HOLDS  # 0.97 ± 0.0497


def test_a_run_that_never_reaches_the_target_is_censored_not_cheap():
    # a reaches at 10, 20, 30; b at 40, never (spent 50), 60: diffs 30, >= 30, 30
    a = [Reach(10.0, True), Reach(20.0, True), Reach(30.0, True)]
    b = [Reach(40.0, True), Reach(50.0, False), Reach(60.0, True)]
    c = reach_first(a, b, names=("m10", "m100"))
    assert (c.wins, c.n, c.estimate.mean, c.verdict) == (3, 3, 30.0, HOLDS)
    assert c.note == ("m100 never reached it on 1 of 3 seeds (censored: its whole spend, a "
                      "lower bound)")
    # a never reaches on seed 1 after spending 100, b reaches at 150 there: the old rule
    # counted a's 100 as its cost (cheaper); censored, seed 1 is no win and a cannot hold
    a[1] = Reach(100.0, False)
    b[1] = Reach(150.0, True)
    c = reach_first(a, b)
    assert c.wins == 2
    assert c.estimate.mean == pytest.approx(110 / 3, rel=1e-12)  # diffs 30, 50, 30
    assert c.estimate.low > 0 and c.verdict == NOISE
    # a costs more on every seed, b reaches everywhere: does not hold
    worse = reach_first([Reach(50.0, True), Reach(70.0, True)],
                        [Reach(10.0, True), Reach(20.0, True)])
    assert (worse.wins, worse.estimate.mean, worse.verdict) == (0, -45.0, NOISE)  # T1 wide
    worse = reach_first([Reach(50.0, True)] * 3, [Reach(10.0, True)] * 3)
    assert worse.verdict == FAILS
    # ... but not while b is censored: b's 10 is only a lower bound
    assert reach_first([Reach(50.0, True)] * 3, [Reach(10.0, False)] * 3).verdict == NOISE


def test_a_seed_where_neither_reaches_the_target_stays_out_of_the_interval():
    # seed 1: a spent 100, b 150, neither got there: b - a = 50 bounds nothing
    a = [Reach(10.0, True), Reach(100.0, False), Reach(30.0, True)]
    b = [Reach(40.0, True), Reach(150.0, False), Reach(60.0, True)]
    c = reach_first(a, b, names=("m50", "m100"))
    assert (c.wins, c.n, c.estimate.n, c.estimate.mean) == (2, 3, 2, 30.0)
    assert c.verdict == NOISE  # m50 is censored on seed 1: it cannot be the cheaper
    assert c.describe("+.3g", "numbers") == (
        "wins on 2 of 3 seeds, mean paired difference +30 numbers (zero spread: the interval "
        "is the value itself); m50 never reached it on 1 of 3 seeds (censored: its whole "
        "spend, a lower bound); m100 never reached it on 1 of 3 seeds (censored: its whole "
        "spend, a lower bound); neither reached it on seed 1: left out of the mean and "
        "interval")
    none = reach_first([Reach(5.0, False)] * 2, [Reach(9.0, False)] * 2)
    assert (none.wins, none.estimate.n, none.verdict) == (0, 0, NOISE)
    assert none.describe().startswith("wins on 0 of 2 seeds, mean paired difference none (no "
                                      "seed to compare)")


def test_reach_first_scales_either_side():
    # rounds: a 4, 5 against 2 x b's 3, 3: diffs 2, 1
    c = reach_first([Reach(4.0, True), Reach(5.0, True)], [Reach(3.0, True)] * 2,
                    scale_larger=2.0)
    assert (c.wins, c.estimate.mean) == (2, 1.5)
    # slowed: 2 x a's 2 on the i.i.d. set against a's censored 200 on the other
    slowed = reach_first([Reach(2.0, True)] * 2, [Reach(200.0, False)] * 2, scale_smaller=2.0)
    assert (slowed.wins, slowed.estimate.mean, slowed.verdict) == (2, 196.0, HOLDS)


def test_variance_ratio_and_its_f_interval():
    # var 1 against var 49 (3 seeds each): ratio 49, interval 49 / 39 to 49 x 39
    r = variance_ratio([0.0, 1.0, 2.0], [0.0, 7.0, 14.0])
    assert r.ratio == 49.0
    assert (r.low, r.high) == (pytest.approx(49 / 39, rel=1e-9), pytest.approx(49 * 39,
                                                                               rel=1e-9))
    assert r.verdict == HOLDS
    assert variance_ratio([0.0, 1.0, 2.0], [0.0, 5.0, 10.0]).verdict == NOISE  # 25 < 39
    assert variance_ratio([0.0, 7.0, 14.0], [0.0, 1.0, 2.0]).verdict == FAILS  # 39/49 < 1
    assert variance_ratio([1.0, 1.0], [0.0, 2.0]).verdict == HOLDS  # ours has none
    assert variance_ratio([1.0, 1.0], [0.0, 2.0]).describe() == (
        "variance ratio ∞ (ours does not vary over seeds)")
    assert r.describe() == ("variance ratio 49 (95 % F interval 1.26 to 1.91e+03; unpaired: "
                            "one variance over seeds per method)")
    assert variance_ratio([1.0, 1.0], [2.0, 2.0]).verdict == NOISE  # neither has any


def test_decide_needs_every_check_to_hold():
    assert decide([HOLDS, HOLDS]) == HOLDS
    assert decide([HOLDS, NOISE]) == NOISE
    assert decide([HOLDS, NOISE, FAILS]) == FAILS
    assert decide([]) == NOT_RUN


def test_estimate_of_one_value_and_of_none():
    assert estimate([3.0]).n == 1
    with pytest.raises(ValueError):
        estimate([])


def test_claims_table_shows_reading_choices_cause_and_replicates():
    claims = {"a": {"text": "A | beats B", "reading": ["Eq. 1 as coded", "x departs"],
                    "open_choices": "rate on validation", "cause": "genuine: fails always"},
              "b": {"text": "B", "cause": {"ablation": ["p4_shared"], "text": "the start"}},
              "c": {"text": "C"}}
    rows = [ClaimRow("a", "1 vs 2", HOLDS), ClaimRow("b", "3 vs 4", FAILS),
            ClaimRow("c", "5 vs 6", NOISE, replicates="holds (3 seeds)")]
    table = claims_table(rows, claims)
    assert table[0] == ("| claim | paper | ours | verdict | reading | open choices | cause | "
                        "replicates |")
    assert table[1] == "|---|---|---|---|---|---|---|---|"
    assert table[2] == ("| a | A \\| beats B | 1 vs 2 | holds | Eq. 1 as coded; x departs | "
                        "rate on validation |  | not run |")
    assert table[3].endswith("| does not hold |  |  | ablation `p4_shared`: the start | "
                             "not run |")
    assert table[4].endswith("| within noise |  |  | not yet isolated | holds (3 seeds) |")


def test_a_claim_in_several_rows_is_stated_once_and_explained_once():
    claims = {"a": {"text": "A", "reading": "r", "cause": "genuine: always"}}
    rows = [ClaimRow("a", "e1", HOLDS), ClaimRow("a", "e2", FAILS), ClaimRow("a", "e3", NOISE)]
    table = claims_table(rows, claims)
    assert table[2] == "| a | A | e1 | holds | r |  |  | not run |"
    assert table[3] == ("| a | as above | e2 | does not hold | as above | as above | "
                        "genuine: always | not run |")
    assert table[4] == ("| a | as above | e3 | within noise | as above | as above | as above | "
                        "not run |")


def test_each_row_is_decided_again_under_its_own_key():
    rows = [("a/x", ClaimRow("a", "x", HOLDS)), ("b/y", ClaimRow("b", "y", NOISE)),
            ("c/z", ClaimRow("c", "z", NOT_RUN)), ("d/w", ClaimRow("d", "w", HOLDS))]
    # the second draw lists its rows in another order, and lacks d/w
    again = [("b/y", ClaimRow("b", "y2", FAILS)), ("c/z", ClaimRow("c", "z2", HOLDS)),
             ("a/x", ClaimRow("a", "x2", HOLDS))]
    got = with_replicates(rows, again, 3)
    assert [r.replicates for r in got] == [
        "holds (3 seeds)", "does not hold (3 seeds): flips (trials: within noise)",
        NOT_RUN, NOT_RUN]
    assert [r.ours for r in got] == ["x", "y", "z", "w"]  # the trials' numbers stay


def test_fewest_seeds_is_the_smallest_count_of_the_metric():
    finals = [{"acc": [1.0, 2.0, 3.0]}, {"acc": [1.0, 2.0]}, {"loss": [1.0]}, {"acc": []}]
    assert fewest_seeds(finals, "acc") == 2
    assert fewest_seeds(finals, "error") == 0
