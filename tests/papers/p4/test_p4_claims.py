"""P4's claim rules: the per-seed slope band (the variance ratio is the shared module's,
tests/reports/test_verdicts.py)."""

import pytest

from clusterfl.papers.p4.report.claims import rate, seed_slopes
from clusterfl.reports.verdicts import FAILS, HOLDS, NOISE


def test_slopes_per_seed_and_the_band_around_minus_a_half():
    sweep = {1.0: [("a", "pfl_tc")], 4.0: [("b", "pfl_tc")]}
    # seed 0 falls as (N/K)^-1/2 (8 -> 4), seed 1 as (N/K)^-1 (8 -> 2)
    final = {("a", "pfl_tc"): {"error": [8.0, 8.0]}, ("b", "pfl_tc"): {"error": [4.0, 2.0]}}
    values, slopes = seed_slopes(final, sweep)
    assert values == [1.0, 4.0] and slopes == pytest.approx([-0.5, -1.0], abs=1e-12)
    # -0.75 ± 12.706 x 0.25 (t interval of two slopes) reaches outside the band
    text, verdict = rate(final, sweep, "s")
    assert verdict == NOISE
    assert text == ("s: log-log slope -0.75 ± 0.25 over seeds, N/K = ['1', '4']; 1 of 2 seeds "
                    "within [-0.75, -0.25], mean slope -0.75 (95 % interval -3.93 to +2.43)")
    flat = {("a", "pfl_tc"): {"error": [8.0, 8.0]}, ("b", "pfl_tc"): {"error": [8.0, 8.0]}}
    assert rate(flat, sweep, "s")[1] == FAILS  # 0 exactly, outside
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
