"""P4's report `build` on fake histories: tables, sweeps, claims and figures are written."""

import json
from pathlib import Path
from types import SimpleNamespace

import yaml

from clusterfl.papers.p4 import PAPER
from clusterfl.papers.p4.report import build
from clusterfl.reports.section import ReportInput

FINAL = {("p4_fig1", "pfl_tc"): [5.0, 7.0], ("p4_fig1", "pdl_tc"): [6.0, 6.0],
         ("p4_fig1", "ifca_grad"): [10.0, 12.0], ("p4_fig1", "ifca_model"): [1.0, 30.0]}
FIG2 = {2: 8.0, 8: 4.0, 32: 2.0}  # slope -1/2 exactly
# s = 100 against p4_fig1's s = 1, per seed: pfl_tc +7, +5; pdl_tc 0, 0; ifca_model +154, +125
INIT = {("p4_init_s100", "pfl_tc"): [12.0, 12.0], ("p4_init_s100", "pdl_tc"): [6.0, 6.0],
        ("p4_init_s100", "ifca_model"): [155.0, 155.0]}


def write(results: Path, exp: str, alg: str, finals: list[float]) -> None:
    for seed, value in enumerate(finals):
        records = [{"round": 1, "optimum_error": 100.0, "ari": 0.5, "gradient_norm": value},
                   {"round": 2, "optimum_error": value, "ari": 1.0, "gradient_norm": value}]
        out = results / exp / alg / f"seed{seed}"
        out.mkdir(parents=True)
        (out / "history.json").write_text(json.dumps(
            {"primary": "optimum_error", "records": records, "arrays": {}}))


def test_build_writes_tables_claims_and_figures(tmp_path: Path) -> None:
    results = tmp_path / "results"
    cells = dict(FINAL) | INIT | {(f"p4_fig2_m{m}", "pfl_tc"): [v, v] for m, v in FIG2.items()}
    # the second draw: pfl_tc 1, 1 and pdl_tc 3, 3 against ifca_grad 9, 9 (+8, +6: holds)
    cells |= {("p4_rep_fig1", "pfl_tc"): [1.0, 1.0], ("p4_rep_fig1", "pdl_tc"): [3.0, 3.0],
              ("p4_rep_fig1", "ifca_grad"): [9.0, 9.0]}
    for (exp, alg), values in cells.items():
        write(results, exp, alg, values)
    params = SimpleNamespace(experiment=lambda e: SimpleNamespace(title=f"title {e}"))
    refs = yaml.safe_load(PAPER.references_file.read_text())
    out = build(ReportInput(params=params, paper=PAPER, cells=list(cells), results=results,
                            partitions=tmp_path, references=refs, tables=tmp_path / "t",
                            figures=tmp_path / "f"))
    md = out.markdown
    assert "| p4_fig1 | pfl_tc | 6.0 ± 1.0 | 1.000 ± 0.000 | 2 |" in md
    # per seed: ifca_grad 10, 12 minus pfl_tc 5, 7 (+5, +5: zero spread, holds) and minus
    # pdl_tc 6, 6 (+4, +6: 5 ± 12.706, within noise)
    assert ("p4_fig1: pfl_tc 6 ± 1, pdl_tc 6 ± 0; ifca_grad 11 ± 1; below ifca_grad: pfl_tc "
            "wins on 2 of 2 seeds, mean paired difference +5 (zero spread: the interval is the "
            "value itself); pdl_tc wins on 2 of 2 seeds, mean paired difference +5 (95 % "
            "interval -7.706 to +17.71) | within noise |") in md
    assert "| holds (2 seeds): flips (trials: within noise) |" in md  # the replicate's row
    # sample variances 2 and 0 against 420.5: ratio 210 within F(1, 1)'s 95 % interval
    # (quantiles 1/647.8 and 647.8); pdl_tc's none at all: ratio ∞
    assert ("p4_fig1: pfl_tc std 1.414, pdl_tc std 0; ifca_model std 20.51; ifca_model over "
            "ours: pfl_tc variance ratio 210 (95 % F interval 0.325 to 1.36e+05; unpaired: one "
            "variance over seeds per method); pdl_tc variance ratio ∞ (ours does not vary over "
            "seeds) | within noise |") in md
    # the gradient norm (averaged over rounds) falls as (N/K)^-1/2: at the bound's rate
    assert ("fig2 (full batch): slope of log (1/T)Σ‖∇f_i‖² on log N/K -0.50 ± 0.00 over seeds, "
            "N/K = 2, 8, 32; 2 of 2 seeds within [-∞, -0.50], mean slope -0.50 (zero spread: the "
            "interval is the value itself); ARI (mean over rounds) by N/K 2: 0.75, 8: 0.75, 32: "
            "0.75 | holds |") in md
    assert "| more_clients |" in md
    # changes s = 1 → 100 per seed: pfl_tc +7, +5, pdl_tc 0, 0, ifca_model +154, +125
    assert ("init_n9: final error at s = 1 → 100: pfl_tc 6 → 12, pdl_tc 6 → 6, ifca_model "
            "15.5 → 155; change below ifca_model's: pfl_tc wins on 2 of 2 seeds, mean paired "
            "difference +133.5 (95 % interval -38.03 to +305); pdl_tc wins on 2 of 2 seeds, "
            "mean paired difference +139.5 (95 % interval -44.74 to +323.7) | within noise |"
            ) in md
    assert "| reading | open choices | cause | replicates |" in md
    assert "| init_n9 | ifca_grad | ifca_model | pdl_tc | pfl_tc |" in md
    assert "| 100 | – | 155.000 ± 0.000 | 6.000 ± 0.000 | 12.000 ± 0.000 |" in md
    assert all(p.exists() for p in out.figures) and len(out.figures) == 7
    assert (tmp_path / "f/p4_fig1.png").exists() and (tmp_path / "f/p4_fig2.png").exists()
    assert out.metrics["p4/p4_fig1/ifca_grad/final_error"] == 11.0


def write_real(results: Path, alg: str, accs: list[float], aris: list[list[float]] | None,
               exp: str = "p4_fmnist_rot"):
    """Seeds of a real-data cell: 3 rounds, test accuracy rising to `accs[seed]`, ARI per round
    (None: an algorithm without clusters)."""
    for seed, acc in enumerate(accs):
        records = [{"round": r, "test_acc": acc - 0.1 * (3 - r)} for r in (1, 2, 3)]
        if aris is not None:
            records = [rec | {"ari": a} for rec, a in zip(records, aris[seed], strict=True)]
        out = results / exp / alg / f"seed{seed}"
        out.mkdir(parents=True)
        (out / "history.json").write_text(json.dumps(
            {"primary": "test_acc", "records": records, "arrays": {}}))


def test_build_reports_the_real_data_table_verdicts_and_figure(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write(results, "p4_fig1", "pfl_tc", [5.0, 7.0])
    write_real(results, "pfl_tc_nn", [0.70, 0.72, 0.74],
               [[1.0, 1.0, 0.5], [1.0, 0.9, 0.3], [1.0, 0.95, 0.4]])
    write_real(results, "pdl_tc_nn", [0.80, 0.80, 0.80], None)
    write_real(results, "oracle_fedavg", [0.798, 0.80, 0.802], [[1.0] * 3] * 3)
    write_real(results, "ifca_nn", [0.60] * 3, [[0.0, 0.5, 1.0]] * 3)
    write_real(results, "pfedkm_nn", [0.75] * 3, [[1.0] * 3] * 3)
    algs = ["pfl_tc_nn", "pdl_tc_nn", "oracle_fedavg", "ifca_nn", "pfedkm_nn"]
    cells = [("p4_fig1", "pfl_tc")] + [("p4_fmnist_rot", a) for a in algs]
    params = SimpleNamespace(experiment=lambda e: SimpleNamespace(title=f"title {e}"))
    out = build(ReportInput(params=params, paper=PAPER, cells=cells, results=results,
                            partitions=tmp_path, references={}, tables=tmp_path / "t",
                            figures=tmp_path / "f"))
    md = out.markdown
    # the linear table keeps only the linear cell
    assert "| p4_fig1 | pfl_tc | 6.0 ± 1.0 |" in md
    assert "| p4_fmnist_rot | pfl_tc_nn | – |" not in md
    # accuracy 72 ± 1.63 %, final ARI (0.5, 0.3, 0.4), ARI over rounds (2.5, 2.2, 2.35) / 3
    assert "| p4_fmnist_rot | pfl_tc_nn | 72.00 ± 1.63 | 0.400 ± 0.082 | 0.783 ± 0.041 | 3 |" in md
    assert "| p4_fmnist_rot | pdl_tc_nn | 80.00 ± 0.00 | – | – | 3 |" in md
    # final ARI 0.4 ± 4.303 x 0.1 / sqrt(3) lies below 0.9; the seed-mean curve starts at 1
    assert ("| finds the true clusters | p4_fmnist_rot | pfl_tc_nn: final ARI 0.400, mean over "
            "rounds 0.783, peak 1.000 (round 1); 0 of 3 seeds within [0.900, ∞], final ARI "
            "0.400 (95 % interval 0.152 to 0.648) | early rounds only |") in md
    # -9.8, -8, -6.2 points: -8 ± 4.47, wholly below -1
    assert ("pfl_tc_nn 72.00%, oracle_fedavg 80.00%; 0 of 3 seeds within [-1.00, +1.00] points, "
            "mean paired difference -8.00 points (95 % interval -12.47 to -3.53) | below by 8.0 "
            "points |") in md
    # +0.2, 0, -0.2 points: 0 ± 0.50, wholly within ±1
    assert ("pdl_tc_nn 80.00%, oracle_fedavg 80.00%; 3 of 3 seeds within [-1.00, +1.00] points, "
            "mean paired difference +0.00 points (95 % interval -0.50 to +0.50) | within 1 "
            "point |") in md
    # against ifca_nn +10, +12, +14 (12 ± 4.97); against pfedkm_nn -5, -3, -1 (-3 ± 4.97)
    assert ("pfl_tc_nn 72.00%; ifca_nn 60.00%, pfedkm_nn 75.00%; against ifca_nn: wins on 3 of 3 "
            "seeds, mean paired difference +12.00 points (95 % interval +7.03 to +16.97); "
            "against pfedkm_nn: wins on 0 of 3 seeds, mean paired difference -3.00 points (95 % "
            "interval -7.97 to +1.97) | above ifca_nn, within noise of pfedkm_nn |") in md
    assert "pfedkm_nn +5.00 points" not in md
    assert ("pdl_tc_nn 80.00%; ifca_nn 60.00%, pfedkm_nn 75.00%; against ifca_nn: wins on 3 of 3 "
            "seeds, mean paired difference +20.00 points (zero spread: the interval is the "
            "value itself); against pfedkm_nn: wins on 3 of 3 seeds, mean paired difference "
            "+5.00 points (zero spread: the interval is the value itself) | above all |") in md
    assert (tmp_path / "f/p4_real_p4_fmnist_rot.png").exists()
    assert not (tmp_path / "f/p4_fmnist_rot.png").exists()  # no Fig. 1 panel for real data
    assert out.metrics["p4/p4_fmnist_rot/pdl_tc_nn/final_acc"] == 80.0


def header_only_tables(markdown: str) -> list[str]:
    """The Markdown tables of `markdown` that have a header and no row."""
    tables, current = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
            continue
        if current and len(current) <= 2:
            tables.append(current[0])
        current = []
    return tables


def test_the_default_suites_single_cell_gets_a_sentence_not_an_empty_claims_table(tmp_path):
    """The default suite trains p4_fig1_n100 / pfl_tc alone: no claim can be checked."""
    results = tmp_path / "results"
    write(results, "p4_fig1_n100", "pfl_tc", [5.0, 7.0])
    params = SimpleNamespace(experiment=lambda e: SimpleNamespace(title=f"title {e}"))
    refs = yaml.safe_load(PAPER.references_file.read_text())
    out = build(ReportInput(params=params, paper=PAPER, cells=[("p4_fig1_n100", "pfl_tc")],
                            results=results, partitions=tmp_path, references=refs,
                            tables=tmp_path / "t", figures=tmp_path / "f"))
    assert header_only_tables(out.markdown) == []
    assert ("None of the paper's claims (Sec. 4: below_ifca_grad, lower_variance, "
            "initial_weights, sqrt_rate, more_clients) can be checked on this suite's cells"
            ) in out.markdown


def test_a_sweep_without_results_draws_no_legend_and_warns_nothing(tmp_path, monkeypatch):
    import warnings

    from matplotlib.axes import Axes

    from clusterfl.papers.p4.report.plots import sweep_figure

    legends = []
    monkeypatch.setattr(Axes, "legend", lambda self, *a, **k: legends.append(self))
    sweep = {1.0: [("e1", "pfl_tc")], 2.0: [("e2", "pfl_tc")]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sweep_figure("n", sweep, {("e1", "pfl_tc"): {"error": []},
                                  ("e2", "pfl_tc"): {"error": []}}, tmp_path / "empty.png")
        assert legends == []
        sweep_figure("n", sweep, {("e1", "pfl_tc"): {"error": [1.0, 2.0]},
                                  ("e2", "pfl_tc"): {"error": [0.5]}}, tmp_path / "full.png")
        assert len(legends) == 1


def test_the_neural_tau_is_picked_on_validation_and_withholds_the_real_verdicts_when_off(
        tmp_path: Path) -> None:
    results = tmp_path / "results"
    # validation accuracy per scale: pfl_tc_nn peaks at 0.5, pdl_tc_nn at the edge 0.8
    for exp, pfl, pdl in (("p4_rot_tune_tau_030", 0.60, 0.60), ("p4_rot_tune_tau_050", 0.70, 0.65),
                          ("p4_rot_tune_tau_080", 0.65, 0.66)):
        write_real(results, "pfl_tc_nn", [pfl, pfl + 0.02], None, exp)
        write_real(results, "pdl_tc_nn", [pdl, pdl], None, exp)
    write_real(results, "pfl_tc_nn", [0.70, 0.72], None)
    write_real(results, "oracle_fedavg", [0.80, 0.82], None)  # 10 points above, each seed
    tune = [(f"p4_rot_tune_tau_0{v}", a) for v in (30, 50, 80) for a in ("pfl_tc_nn", "pdl_tc_nn")]
    cells = [*tune, ("p4_fmnist_rot", "pfl_tc_nn"), ("p4_fmnist_rot", "oracle_fedavg")]

    def run(taus: dict[str, float]) -> tuple[str, dict]:
        params = SimpleNamespace(
            experiment=lambda e: SimpleNamespace(title=f"title {e}"),
            algorithm=lambda a, paper: SimpleNamespace(hyper=SimpleNamespace(tau_scale=taus[a])))
        out = build(ReportInput(params=params, paper=PAPER, cells=cells, results=results,
                                partitions=tmp_path, references={}, tables=tmp_path / "t",
                                figures=tmp_path / "f"))
        return out.markdown, out.metrics

    md, metrics = run({"pfl_tc_nn": 0.5, "pdl_tc_nn": 0.8})
    assert "| 0.5 | 65.00 ± 0.00 | 71.00 ± 1.00 |" in md  # columns pdl_tc_nn, pfl_tc_nn
    assert ("Chosen on a validation split (20 % of each client's training data in the place of "
            "its test split; no test number read): pdl_tc_nn 0.8 (a grid edge), params 0.8; "
            "pfl_tc_nn 0.5, params 0.5.") in md
    assert md.count("**NO VERDICT: pdl_tc_nn's tau scale 0.8 sits at the tuning grid's edge "
                    "[0.3, 0.8].**") == 1
    assert ("| not decided: pdl_tc_nn's tau scale 0.8 sits at the tuning grid's edge [0.3, 0.8] "
            "(the rule would say: below by 10.0 points) |") in md
    # the tuning cells are validation numbers: never in the trials' table, verdicts or metrics
    assert "| p4_rot_tune_tau" not in md
    assert "| p4_fmnist_rot | pfl_tc_nn | 71.00 ± 1.00 |" in md
    assert set(metrics) == {"p4/p4_fmnist_rot/pfl_tc_nn/final_acc",
                            "p4/p4_fmnist_rot/oracle_fedavg/final_acc"}
    assert (tmp_path / "f/p4_rot_tune_tau.png").exists()
    md, _ = run({"pfl_tc_nn": 0.5, "pdl_tc_nn": 0.5})
    assert "pdl_tc_nn's tau scale 0.5 is not its tuned best 0.8" in md
    # both at interior picks: decided
    write_real(results, "pdl_tc_nn", [0.6, 0.6], None, "p4_rot_tune_tau_100")
    cells += [("p4_rot_tune_tau_100", "pdl_tc_nn")]
    md, _ = run({"pfl_tc_nn": 0.5, "pdl_tc_nn": 0.8})
    assert "NO VERDICT" not in md and "| below by 10.0 points |" in md
