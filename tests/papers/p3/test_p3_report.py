"""P3's report `build` on hand-made histories: Table 1 rows, paper numbers beside the
paper's data only, the four claims' verdicts, and the figures."""

import json
from pathlib import Path
from types import SimpleNamespace

import yaml

from clusterfl.algorithms.base import Schedule
from clusterfl.papers.p3 import PAPER
from clusterfl.papers.p3.report import build
from clusterfl.reports.section import ReportInput

# final (acc, gyro) accuracy per seed; overall = the mean of the two (equal test sizes)
FINAL = {
    "mmfl": [(0.9, 0.8), (0.8, 0.8)],
    "mmfl_lr0_01": [(0.7, 0.6), (0.7, 0.6)],
    "mmfl_lr0_001": [(0.5, 0.5), (0.5, 0.5)],
    "mmfl_lr0_0001": [(0.3, 0.2), (0.3, 0.2)],
    "unimodal_fl": [(0.6, 0.5), (0.6, 0.5)],
    "unimodal_meta_fl": [(0.8, 0.9), (0.8, 0.85)],  # beats mmfl on gyroscope
    "standalone": [(0.4, 0.3), (0.4, 0.3)],
}


def write(results: Path, exp: str, alg: str, finals: list[tuple[float, float]],
          after: float | None = None) -> None:
    """Each seed's history: round 1 at 0.25, round 2 at its `finals` entry and, with
    `after`, a round 3 at that entry + `after`."""
    for seed, (acc, gyro) in enumerate(finals):
        shown = [(0.25, 0.25), (acc, gyro)] + ([] if after is None else
                                               [(acc + after, gyro + after)])
        records = [{"round": r, "test_acc": (a + g) / 2, "test_loss": 1.0 - (a + g) / 2,
                    "test_acc_accelerometer": a, "test_loss_accelerometer": 1.0 - a,
                    "test_acc_gyroscope": g, "test_loss_gyroscope": 1.0 - g}
                   for r, (a, g) in enumerate(shown, start=1)]
        arrays = {"selected_lr": [[0.01, 0.001, 0.01], [0.0001, 0.01, 0.01]]}
        out = results / exp / alg / f"seed{seed}"
        out.mkdir(parents=True)
        (out / "history.json").write_text(json.dumps(
            {"primary": "test_acc", "records": records, "arrays": arrays}))


def experiment(name: str) -> SimpleNamespace:
    """What the report reads of an experiment; `<base>_mse`/`<base>_bce`: that loss."""
    loss = name.rsplit("_", 1)[-1]
    return SimpleNamespace(name=name, title=f"title {name}", partition=name.split("_")[1],
                           model="p3_net", model_options={}, algorithm_options={},
                           schedule=Schedule(loss=loss if loss in ("mse", "bce") else None))


def report(tmp_path: Path, cells: list[tuple[str, str]]):
    refs = yaml.safe_load(PAPER.references_file.read_text())
    return build(ReportInput(params=SimpleNamespace(experiment=experiment), paper=PAPER,
                             cells=cells, results=tmp_path / "results",
                             partitions=tmp_path, references=refs, tables=tmp_path / "t",
                             figures=tmp_path / "f"))


def run(tmp_path: Path, exp: str) -> str:
    results = tmp_path / "results"
    for alg, finals in FINAL.items():
        write(results, exp, alg, finals)
    out = report(tmp_path, [(exp, a) for a in FINAL])
    assert [p.name for p in out.figures] == [f"{exp}_{n}.png" for n in
                                             ("fig2", "fig3", "fig4", "fig5", "rates",
                                              "rounds")]
    assert all(p.exists() for p in out.figures)
    assert abs(out.metrics[f"p3/{exp}/mmfl/test_acc"] - 0.825) < 1e-12
    return out.markdown


def test_stand_in_table_and_claims(tmp_path: Path) -> None:
    md = run(tmp_path, "p3_basic_motions")
    assert "a stand-in dataset: no paper numbers" in md and "paper loss" not in md
    assert "| mmfl | accelerometer | 0.1500 ± 0.0500 | 85.00 ± 5.00 |" in md
    # every seed +20 points: zero spread, the interval is +20 itself
    assert ("| fl_beats_standalone | " in md and
            "accelerometer: FL 60.00 ± 0.00 vs standalone 40.00 ± 0.00, FL wins on 2 of 2 "
            "seeds, mean paired difference +20.00 points (zero spread: the interval is the "
            "value itself)" in md)
    # mmfl 85, 80 against mmfl_lr0_01 65, 65: +20, +15, 17.5 ± 12.706 x 2.5 (two seeds)
    assert ("mmfl 82.50 ± 2.50; mmfl_lr0_01 65.00 ± 0.00: mmfl wins on 2 of 2 seeds, mean "
            "paired difference +17.50 points (95 % interval -14.27 to +49.27); mmfl_lr0_001 "
            "50.00 ± 0.00: mmfl wins on 2 of 2 seeds, mean paired difference +32.50 points "
            "(95 % interval +0.73 to +64.27); mmfl_lr0_0001 25.00 ± 0.00: mmfl wins on 2 of 2 "
            "seeds, mean paired difference +57.50 points (95 % interval +25.73 to +89.27) | "
            "within noise |") in md
    # gyroscope: mmfl 80, 80 against unimodal meta-FL 90, 85: -10, -5, both seeds lost, but
    # two seeds' interval holds 0
    assert ("gyroscope: mmfl 80.00 ± 0.00 vs unimodal meta-FL 87.50 ± 2.50, mmfl wins on 0 of 2 "
            "seeds, mean paired difference -7.50 points (95 % interval -39.27 to +24.27) | "
            "within noise |") in md
    assert ("best other unimodal_meta_fl 83.75 ± 1.25 (paper: about +7.18 points); mmfl "
            "against mmfl_lr0_01: wins on 2 of 2 seeds") in md
    # Fig. 5's list only: standalone (+47.50 points on both seeds) is not among them
    row = next(line for line in md.splitlines() if line.startswith("| mmfl_beats_others"))
    assert [part.split(":")[0] for part in row.split(" | ")[2].split("; ")[2:]] == [
        "mmfl against mmfl_lr0_01", "mmfl_lr0_001", "mmfl_lr0_0001", "unimodal_fl",
        "unimodal_meta_fl", "not run"]
    # the stand-in ran no pooled model: the row says so (its verdict is not a "holds")
    assert ("unimodal_meta_fl: wins on 0 of 2 seeds, mean paired difference -1.25 points (95 % "
            "interval -17.13 to +14.63); not run: the pooled model | within noise |") in row
    assert ("| claim | paper | ours | verdict | reading | open choices | cause | replicates |"
            in md)


def test_paper_numbers_beside_the_papers_data(tmp_path: Path) -> None:
    md = run(tmp_path, "p3_har")
    assert "paper numbers from P3 Table 1, HAR (cross-entropy)" in md
    assert "| mmfl | gyroscope | 0.2000 ± 0.0000 | 80.00 ± 0.00 | 0.1602 | 92.49 |" in md
    assert "| unimodal_fl | gyroscope | 0.5000 ± 0.0000 | 50.00 ± 0.00 | – | – |" in md


def test_fixed_rate_runs_are_found_by_name_largest_rate_first() -> None:
    from clusterfl.papers.p3.report.claims import fixed_rates

    finals = {"mmfl": {}, "mmfl_lr0_001": {}, "mmfl_lr0_1": {}, "mmfl_rest": {},
              "mmfl_lr0_01": {}, "mmfl_lr_sweep": {}}  # not a fixed rate: no number
    assert fixed_rates(finals) == ["mmfl_lr0_1", "mmfl_lr0_01", "mmfl_lr0_001"]


def test_table1_shape_one_row_per_method_and_modality_a_column_pair_per_loss(tmp_path: Path):
    cells = []
    for base in ("p3_har", "p3_basic_motions"):
        for exp, shift in ((base, 0.0), (f"{base}_mse", 0.05), (f"{base}_bce", -0.1)):
            for alg in ("mmfl_lr0_01", "mmfl"):
                write(tmp_path / "results", exp, alg,
                      [(a + shift, g + shift) for a, g in FINAL[alg]])
                cells.append((exp, alg))
    md = report(tmp_path, cells).markdown
    head = ("| method | modality | numbers | cross-entropy loss | cross-entropy accuracy (%) | "
            "MSE loss | MSE accuracy (%) | BCE loss | BCE accuracy (%) |")
    assert md.count(head) == 2  # one Table 1 per setup run under several losses
    har, stand_in = md.split("### Table 1's shape: title p3_basic_motions")
    # the paper's data: our row, then the paper's own Table 1 row under it
    assert ("| MmFL (mmfl) | gyroscope | ours | 0.2000 ± 0.0000 | 80.00 ± 0.00 | "
            "0.1500 ± 0.0000 | 85.00 ± 0.00 | 0.3000 ± 0.0000 | 70.00 ± 0.00 |\n"
            "| MmFL (mmfl) | gyroscope | paper | 0.1602 | 92.49 | 0.0808 | 76.45 | 0.0829 | "
            "89.82 |") in har
    assert "cross-entropy: `p3_har`, MSE: `p3_har_mse`, BCE: `p3_har_bce`" in har
    # the stand-in: our numbers only, said so
    stand_in = stand_in.split("### title")[0]
    assert "a stand-in dataset: no paper numbers" in stand_in and "| paper |" not in stand_in
    assert ("| Multimodal FL (mmfl_lr0_01) | accelerometer | ours | 0.3000 ± 0.0000 | "
            "70.00 ± 0.00 | 0.2500 ± 0.0000 | 75.00 ± 0.00 | 0.4000 ± 0.0000 | 60.00 ± 0.00 |"
            ) in stand_in
    # each loss experiment's own table has the paper's numbers of its loss
    assert "paper numbers from P3 Table 1, HAR (MSE)" in md
    assert "| mmfl | gyroscope | 0.1500 ± 0.0000 | 85.00 ± 0.00 | 0.0808 | 76.45 |" in md


def test_no_claims_table_without_the_claims_methods() -> None:
    from clusterfl.papers.p3.report.claims import claims_section

    finals = {"mmfl_lr0_01": {"test_acc": [0.5], "test_acc_a": [0.5]}}
    assert claims_section(finals, ["a"], {}, "e") == [
        "No claim of Sec. 3.2 has all its methods among `e`'s cells."]


def test_fl_against_standalone_is_checked_at_every_rate_both_ran_at() -> None:
    from clusterfl.papers.p3.report.claims import check, rate_pairs

    def cell(acc: float, gyro: float) -> dict[str, list[float]]:
        return {"test_acc": [(acc + gyro) / 2] * 2, "test_acc_accelerometer": [acc] * 2,
                "test_acc_gyroscope": [gyro] * 2}

    finals = {"unimodal_fl": cell(0.3, 0.2), "standalone": cell(0.4, 0.3),
              "unimodal_fl_lr0_1": cell(0.8, 0.7), "standalone_lr0_1": cell(0.6, 0.5),
              "unimodal_fl_lr0_3": cell(0.9, 0.9)}  # no standalone at 0.3: no pair
    assert rate_pairs(finals, "unimodal_fl", "standalone") == [
        ("unimodal_fl", "standalone"), ("unimodal_fl_lr0_1", "standalone_lr0_1")]
    rows = [r for r in check(finals, ["accelerometer", "gyroscope"])
            if r.claim_id == "fl_beats_standalone"]
    assert [r.verdict for r in rows] == ["does not hold", "holds"]
    assert rows[0].ours.startswith("accelerometer: FL 30.00 ± 0.00 vs standalone 40.00")
    assert rows[1].ours.startswith("unimodal_fl_lr0_1 vs standalone_lr0_1: accelerometer: "
                                   "FL 80.00 ± 0.00 vs standalone 60.00")


def test_an_experiments_reading_leads_each_of_its_claims_rows() -> None:
    from clusterfl.papers.p3.report.claims import claims_section

    finals = {"unimodal_fl_lr0_3": {"test_acc": [0.7, 0.8], "test_acc_a": [0.7, 0.8]},
              "standalone_lr0_3": {"test_acc": [0.9, 0.9], "test_acc_a": [0.9, 0.9]}}
    refs = {"experiment_readings": {"pooled": "scored on\n  the pooled tails"}}
    pooled = [line for line in claims_section(finals, ["a"], refs, "pooled")
              if line.startswith("| fl_beats_standalone")]
    own = [line for line in claims_section(finals, ["a"], refs, "own")
           if line.startswith("| fl_beats_standalone")]
    # -20 and -10 points: 0 of 2 seeds, mean -15, 95 % interval -15 ± 12.706 x 5
    assert pooled == [own[0].replace("| unimodal_fl_lr0_3 vs", "| scored on the pooled tails: "
                                     "unimodal_fl_lr0_3 vs")]
    assert ("unimodal_fl_lr0_3 vs standalone_lr0_3: a: FL 75.00 ± 5.00 vs standalone 90.00 ± "
            "0.00, FL wins on 0 of 2 seeds, mean paired difference -15.00 points (95 % interval "
            "-78.53 to +48.53) | within noise |") in own[0]


def test_each_claim_is_decided_again_on_the_replicate_deal(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for alg, finals in FINAL.items():
        write(results, "p3_basic_motions", alg, finals)
    # the replicate: FL now loses to standalone on both modalities and seeds (-10 points),
    # every other method as in the trials
    again = {**FINAL, "unimodal_fl": [(0.3, 0.2), (0.3, 0.2)]}
    for alg, finals in again.items():
        write(results, "p3_rep_basic_motions", alg, finals)
    cells = [(e, a) for e in ("p3_basic_motions", "p3_rep_basic_motions") for a in FINAL]
    md = report(tmp_path, cells).markdown
    assert "### title p3_rep_basic_motions" not in md  # read through its trials' claims only
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[-1][:-2] for line in md.splitlines()
            if line.startswith("| ") and " | " in line and line.split(" | ")[0][2:] in (
                "fl_beats_standalone", "meta_beats_fixed", "mmfl_beats_unimodal_meta")}
    assert rows == {"fl_beats_standalone": "does not hold (2 seeds): flips (trials: holds)",
                    "meta_beats_fixed": "within noise (2 seeds)",
                    "mmfl_beats_unimodal_meta": "within noise (2 seeds)"}
    assert "replicates: the same rule on `p3_rep_basic_motions`, the complementary deal" in md
    assert "The replicate `p3_rep_basic_motions`: final round" in md
    assert "| unimodal_fl | accelerometer | 0.7000 ± 0.0000 | 30.00 ± 0.00 |" in md
    # without a replicate in the suite the column says so
    alone = report(tmp_path, cells[:len(FINAL)]).markdown
    assert "replicates: not run: the suite has no `p3_rep_basic_motions`" in alone
    assert "The replicate" not in alone


def test_the_replicate_deal_shows_each_recording_through_the_other_modality() -> None:
    """suites/paper's P3 replicate (partition p3_basic_motions_rep): the trials' draw with the
    modalities listed in reverse, so every (recording, modality) pair it trains or tests on
    is one the trials never used, and each modality's clients are new."""
    from clusterfl.partition.schemes import build_partition
    from clusterfl.partition.views import decode
    from tests.partition.test_all_schemes import multimodal

    params = yaml.safe_load(Path("params.yaml").read_text())["partitions"]
    trials, again = params["p3_basic_motions"], params["p3_basic_motions_rep"]
    assert {k: v for k, v in again.items() if k != "modalities"} == trials
    assert again["modalities"] == ["gyroscope", "accelerometer"]  # BasicMotions' in reverse
    ds = multimodal()  # modalities (acc, gyro)
    opts = {k: v for k, v in trials.items() if k not in ("dataset", "scheme")} | {"min_size": 5}
    first = build_partition(ds, "modality", opts, 3, "p")
    second = build_partition(ds, "modality", opts | {"modalities": ["gyro", "acc"]}, 3, "p")

    def pairs(part):
        return {(int(s), part.views[int(c)]) for k, c in enumerate(part.cluster)
                for split in (part.train, part.test) for s in decode(split[k], len(ds.y))[1]}

    used, reused = pairs(first), pairs(second)
    assert len(used) == len(reused) == len(ds.y) and not used & reused
    assert {s for s, _ in used} == {s for s, _ in reused}


def test_meta_beats_fixed_reads_the_papers_rates_first_and_larger_ones_in_a_row_of_its_own():
    """Sec. 3.2 names the fixed rates 0.01, 0.001, 0.0001: mmFL beating those is the stated
    claim; a larger fixed rate (0.3, here better than mmFL) is our reading, its own row."""
    from clusterfl.papers.p3.report.claims import check

    def cell(*accs: float) -> dict[str, list[float]]:
        return {"test_acc": list(accs), "test_acc_a": list(accs)}

    finals = {"mmfl": cell(0.8, 0.9, 0.85), "mmfl_lr0_3": cell(0.95, 0.97, 0.96),
              "mmfl_lr0_01": cell(0.5, 0.5, 0.5)}
    rows = [r for r in check(finals, ["a"]) if r.claim_id == "meta_beats_fixed"]
    assert [r.ours.split(":")[0] for r in rows] == [
        "the paper's fixed rates", "every fixed rate run, beyond the paper's list (our reading)"]
    # +30, +40, +35 against 0.01: mean 35, sd 5, 4.303 x 5 / sqrt 3 = 12.42
    assert rows[0].ours == ("the paper's fixed rates: mmfl 85.00 ± 4.08; mmfl_lr0_01 50.00 ± "
                            "0.00: mmfl wins on 3 of 3 seeds, mean paired difference +35.00 "
                            "points (95 % interval +22.58 to +47.42)")
    assert rows[0].verdict == "holds"
    # -15, -7, -11 against 0.3: mean -11, sd 4, t(0.975, 2) 4.303 x 4 / sqrt 3 = 9.94
    assert ("mmfl_lr0_3 96.00 ± 0.82: mmfl wins on 0 of 3 seeds, mean paired difference -11.00 "
            "points (95 % interval -20.94 to -1.06)") in rows[1].ours
    assert rows[1].verdict == "does not hold"


def test_fig4_is_drawn_only_where_both_of_its_pair_ran(tmp_path: Path) -> None:
    """Fig. 4 compares unimodal meta-FL with mmFL: with one of the two alone it is left out
    (the other figures are drawn as before)."""
    exp = "p3_basic_motions"
    alone = {a: f for a, f in FINAL.items() if a != "mmfl"}
    for alg, finals in alone.items():
        write(tmp_path / "results", exp, alg, finals)
    out = report(tmp_path, [(exp, a) for a in alone])
    names = [p.name for p in out.figures]
    assert f"{exp}_fig4.png" not in names and f"{exp}_fig5.png" in names
    assert not (tmp_path / "f" / f"{exp}_fig4.png").exists()


def test_fig3_sets_the_fixed_rates_against_a_meta_cell_or_is_left_out(tmp_path: Path) -> None:
    """Fig. 3 (fixed rates vs meta) without any mmFL selection cell compares nothing."""
    exp = "p3_basic_motions"
    fixed = {a: f for a, f in FINAL.items() if a not in ("mmfl", "unimodal_meta_fl")}
    for alg, finals in fixed.items():
        write(tmp_path / "results", exp, alg, finals)
    names = [p.name for p in report(tmp_path, [(exp, a) for a in fixed]).figures]
    assert f"{exp}_fig3.png" not in names and f"{exp}_fig2.png" in names
