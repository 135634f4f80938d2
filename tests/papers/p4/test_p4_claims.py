"""P4's claim rules: Eq. (4)'s bounded quantity against a slope of -1/2, its fall per step
of N/K, the replicate column, and the refusal when tau is off its tuned pick (the variance
ratio is the shared module's, tests/reports/test_verdicts.py)."""

from types import SimpleNamespace

import pytest

from clusterfl.papers.p4.report.claims import (
    check,
    claims_section,
    falls,
    rate,
    seed_slopes,
)
from clusterfl.reports.verdicts import FAILS, HOLDS, NOISE, ClaimRow, replicated

SWEEP = {1.0: [("a", "pfl_tc")], 4.0: [("b", "pfl_tc")]}


def norms(first: list[float], second: list[float]) -> dict:
    return {("a", "pfl_tc"): {"gradient_norm": first, "ari_rounds": [0.5, 0.7]},
            ("b", "pfl_tc"): {"gradient_norm": second, "ari_rounds": [1.0, 1.0]}}


def test_slopes_of_the_time_averaged_gradient_norm_against_minus_a_half():
    # seed 0 falls as (N/K)^-1/2 (8 -> 4), seed 1 as (N/K)^-1 (8 -> 2)
    final = norms([8.0, 8.0], [4.0, 2.0])
    values, slopes = seed_slopes(final, SWEEP)
    assert values == [1.0, 4.0] and slopes == pytest.approx([-0.5, -1.0], abs=1e-12)
    # -0.75 ± 12.706 x 0.25 (t interval of two slopes) reaches above -1/2
    text, verdict = rate(final, SWEEP, "fig2_b1")
    assert verdict == NOISE
    assert text == ("fig2_b1 (mini-batch 1): slope of log (1/T)Σ‖∇f_i‖² on log N/K -0.75 ± "
                    "0.25 over seeds, N/K = 1, 4; 2 of 2 seeds within [-∞, -0.50], mean slope "
                    "-0.75 (95 % interval -3.93 to +2.43); ARI (mean over rounds) by N/K 1: "
                    "0.60, 4: 1.00")
    # the bound is an upper bound: falling faster than -1/2 is consistent with it
    assert rate(norms([8.0, 8.0], [2.0, 2.0]), SWEEP, "s")[1] == HOLDS
    assert rate(norms([8.0, 8.0], [4.0, 4.0]), SWEEP, "s")[1] == HOLDS  # -1/2 exactly
    assert rate(norms([8.0, 8.0], [8.0, 8.0]), SWEEP, "s")[1] == FAILS  # flat: 0 > -1/2
    # the optimum error is not the bounded quantity: a sweep without the norm decides nothing
    assert rate({k: {"error": [1.0, 1.0]} for k in norms([1], [1])}, SWEEP, "s") is None


def test_more_clients_needs_a_fall_beyond_noise_at_every_step():
    sweep = {1.0: [("a", "pfl_tc")], 2.0: [("b", "pfl_tc")], 4.0: [("c", "pfl_tc")]}
    final = {("a", "pfl_tc"): {"gradient_norm": [8.0, 9.0, 8.0]},
             ("b", "pfl_tc"): {"gradient_norm": [4.0, 5.0, 4.0]},  # -4, -4, -4: falls
             ("c", "pfl_tc"): {"gradient_norm": [1.0, 6.0, 3.0]}}  # falls 3, -1, 1: noise
    text, verdict = falls(final, sweep, "fig2")
    assert verdict == NOISE
    assert text == ("fig2 (full batch): (1/T)Σ‖∇f_i‖² 8.33 → 4.33 → 3.33 over N/K 1, 2, 4; "
                    "falls per step: 1→2 holds (3 of 3 seeds, zero spread: the interval is "
                    "the value itself); 2→4 within noise (2 of 3 seeds, 95 % interval -3.97 to "
                    "+5.97)")
    final[("c", "pfl_tc")] = {"gradient_norm": [5.0, 6.0, 5.0]}  # +1 at every seed: rises
    assert falls(final, sweep, "fig2")[1] == FAILS
    final[("c", "pfl_tc")] = {"gradient_norm": [2.0, 3.0, 2.5]}
    assert falls(final, sweep, "fig2")[1] == HOLDS


def test_replicates_column_names_the_second_draws_verdict_and_a_flip():
    assert replicated(HOLDS, HOLDS, 5) == "holds (5 seeds)"
    assert replicated(HOLDS, NOISE, 3) == "within noise (3 seeds): flips (trials: holds)"
    trials = norms([8.0, 8.0], [4.0, 4.0])  # holds
    again = norms([8.0, 8.0], [8.0, 8.0])  # does not hold on the second draw
    again = {k: {**v, "error": [1.0, 2.0]} for k, v in again.items()}
    rows = check(trials, {"fig2": SWEEP}, again, {"fig2": SWEEP})
    assert [(r.claim_id, r.verdict, r.replicates) for r in rows] == [
        ("sqrt_rate", HOLDS, "does not hold (2 seeds): flips (trials: holds)"),
        ("more_clients", HOLDS, "within noise (2 seeds): flips (trials: holds)")]  # no step
    # no second draw: the column says so
    assert {r.replicates for r in check(trials, {"fig2": SWEEP})} == {"not run"}


def test_a_tau_off_its_tuned_pick_withholds_every_verdict():
    from clusterfl.papers.p4.report.tuning import tau_refusal

    tune = {0.1: [("t010", "pfl_tc")], 0.3: [("t030", "pfl_tc")], 0.5: [("t050", "pfl_tc")]}
    errors = {("t010", "pfl_tc"): {"error": [5.0, 5.0]}, ("t030", "pfl_tc"): {"error": [3.0, 3.0]},
              ("t050", "pfl_tc"): {"error": [9.0, 9.0]}}

    def params(tau: float) -> SimpleNamespace:
        return SimpleNamespace(algorithm=lambda a, paper: SimpleNamespace(
            hyper=SimpleNamespace(tau_scale=tau)))

    assert tau_refusal(tune, errors, params(0.3)) is None  # interior and the best
    assert tau_refusal(tune, errors, params(0.5)) == (
        "pfl_tc's tau scale 0.5 is not its tuned best 0.3")
    edge = dict(errors) | {("t010", "pfl_tc"): {"error": [1.0, 1.0]}}
    assert tau_refusal(tune, edge, params(0.1)) == (
        "pfl_tc's tau scale 0.1 sits at the tuning grid's edge [0.1, 0.5]")
    final = norms([8.0, 8.0], [4.0, 4.0])
    decided = claims_section(final, {"fig2": SWEEP}, {})
    assert any("| sqrt_rate |" in line and f"| {HOLDS} |" in line for line in decided)
    why = tau_refusal(tune, edge, params(0.1))
    lines = claims_section(final, {"fig2": SWEEP}, {}, refusal=why)
    assert lines[0].startswith("**NO VERDICT: pfl_tc's tau scale 0.1 sits at the tuning")
    rows = [line for line in lines if line.startswith("| sqrt_rate")]
    assert rows and all(f"| not decided: {why} |" in r and "(the rule would say: holds)" in r
                        for r in rows)
    assert ClaimRow("x", "y", HOLDS).replicates == "not run"


def test_tau_pick_is_the_largest_of_the_lowest_and_named_against_params():
    from clusterfl.papers.p4.report.tuning import (
        NEURAL,
        Tuning,
        best_tau,
        neural_sweep,
        tuning_line,
    )

    sweep = {0.1: [("t010", "pfl_tc")], 0.3: [("t030", "pfl_tc")], 0.5: [("t050", "pfl_tc")]}
    final = {("t010", "pfl_tc"): {"error": [2.0, 4.0]}, ("t030", "pfl_tc"): {"error": [3.0, 3.0]},
             ("t050", "pfl_tc"): {"error": [9.0, 9.0]}}
    assert best_tau(sweep, final, "pfl_tc") == 0.3  # 0.1 and 0.3 tie at 3: the largest
    params = SimpleNamespace(algorithm=lambda a, paper: SimpleNamespace(
        hyper=SimpleNamespace(tau_scale=0.5)))
    assert tuning_line(sweep, final, params).endswith(
        "pfl_tc 0.3, params 0.5 (differs: re-tune).")
    # accuracy: the highest mean is the pick (0.5 here), of equal ones again the largest
    accs = {("t010", "pfl_tc"): {"acc": [70.0, 72.0]}, ("t030", "pfl_tc"): {"acc": [71.0, 71.0]},
            ("t050", "pfl_tc"): {"acc": [75.0, 75.0]}}
    assert best_tau(sweep, accs, "pfl_tc", NEURAL) == 0.5
    assert best_tau(sweep, accs | {("t050", "pfl_tc"): {"acc": [60.0]}}, "pfl_tc", NEURAL) == 0.3
    # the same numbers where lower is better: 0.1 and 0.3 tie at 71, the larger is the pick
    assert best_tau(sweep, accs, "pfl_tc", Tuning("", "acc", higher=False)) == 0.3
    assert best_tau(sweep, accs, "pfl_tc") is None  # no final error recorded
    assert neural_sweep([("p4_rot_tune_tau_080", "a"), ("p4_fmnist_rot", "a"),
                         ("p4_tune_tau_080", "a"), ("p4_rot_tune_tau_150", "b")]) == {
        0.8: [("p4_rot_tune_tau_080", "a")], 1.5: [("p4_rot_tune_tau_150", "b")]}
