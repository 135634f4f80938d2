"""P4's claim rules: the variance F test and the per-seed slope band, at their edges."""

import pytest

from clusterfl.papers.p4.report.claims import rate, seed_slopes, variance_verdict
from clusterfl.reports.verdicts import FAILS, HOLDS, NOISE


def test_variance_needs_the_f_quantile_either_way():
    # 3 seeds each: F(2, 2)'s 95 % quantile is 19.0
    assert variance_verdict([0.0, 1.0, 2.0], [0.0, 5.0, 10.0]) == HOLDS  # ratio 25
    assert variance_verdict([0.0, 1.0, 2.0], [0.0, 4.0, 8.0]) == NOISE  # ratio 16
    assert variance_verdict([0.0, 5.0, 10.0], [0.0, 1.0, 2.0]) == FAILS


def test_slopes_per_seed_and_the_band_around_minus_a_half():
    sweep = {1.0: [("a", "pfl_tc")], 4.0: [("b", "pfl_tc")]}
    # seed 0 falls as (N/K)^-1/2 (8 -> 4), seed 1 as (N/K)^-1 (8 -> 2)
    final = {("a", "pfl_tc"): {"error": [8.0, 8.0]}, ("b", "pfl_tc"): {"error": [4.0, 2.0]}}
    values, slopes = seed_slopes(final, sweep)
    assert values == [1.0, 4.0] and slopes == pytest.approx([-0.5, -1.0], abs=1e-12)
    assert rate(final, sweep, "s")[1] == NOISE  # -0.75 ± 0.25 reaches outside the band
    flat = {("a", "pfl_tc"): {"error": [8.0, 8.0]}, ("b", "pfl_tc"): {"error": [8.0, 8.0]}}
    assert rate(flat, sweep, "s")[1] == FAILS  # 0 ± 0
    half = {("a", "pfl_tc"): {"error": [8.0, 8.0]}, ("b", "pfl_tc"): {"error": [4.0, 4.0]}}
    assert rate(half, sweep, "s")[1] == HOLDS


def test_tau_pick_is_the_largest_of_the_lowest_and_named_against_params():
    from types import SimpleNamespace

    from clusterfl.papers.p4.report import best_tau, tuning_line

    sweep = {0.1: [("t010", "pfl_tc")], 0.3: [("t030", "pfl_tc")], 0.5: [("t050", "pfl_tc")]}
    final = {("t010", "pfl_tc"): {"error": [2.0, 4.0]}, ("t030", "pfl_tc"): {"error": [3.0, 3.0]},
             ("t050", "pfl_tc"): {"error": [9.0, 9.0]}}
    assert best_tau(sweep, final, "pfl_tc") == 0.3  # 0.1 and 0.3 tie at 3: the largest
    params = SimpleNamespace(algorithm=lambda a, paper: SimpleNamespace(
        hyper=SimpleNamespace(tau_scale=0.5)))
    assert tuning_line(sweep, final, params).endswith(
        "pfl_tc 0.3, params 0.5 (differs: re-tune).")
