"""P5's report `build` on hand-made histories: the accuracy table's exact lines, the claims'
verdicts with their numbers, and the figures written."""

from pathlib import Path
from types import SimpleNamespace

import yaml

from clusterfl.history import RunHistory
from clusterfl.papers import load_papers
from clusterfl.papers.p5.report import build
from clusterfl.reports.section import ReportInput

PAPER = load_papers()["p5"]
ACCURACY = {  # (experiment, algorithm) -> final accuracy per seed
    ("p5_syn_unf", "fedcgds"): [0.9, 0.8], ("p5_syn_unf", "fedcavg"): [0.8, 0.8],
    ("p5_syn_unf", "sncp"): [0.86, 0.84], ("p5_syn_unf", "kmeanspp"): [0.5, 0.7],
    ("p5_syn_noniid", "fedcgds"): [0.84, 0.82], ("p5_syn_noniid", "fedcavg"): [0.4, 0.6],
    ("p5_syn_noniid", "sncp"): [0.9, 0.9], ("p5_syn_noniid", "kmeanspp"): [0.6, 0.6],
}
CONVERGENCE = {  # objective and cumulative upload per round, the same for both seeds
    "fedcgds_m10": ([10.0, 5.0, 2.0], [100, 200, 300]),
    "fedcgds_m100_q10": ([8.0, 4.0, 2.0], [1000, 2000, 3000]),
}


def write(results: Path, exp: str, alg: str, seed: int, accuracy: list[float],
          objective: list[float], upload: list[int]) -> None:
    history = RunHistory(primary="clustering_accuracy")
    for r, (acc, obj, up) in enumerate(zip(accuracy, objective, upload, strict=True), 1):
        history.append({"round": r, "clustering_accuracy": acc, "clustering_ari": acc / 2,
                        "clustering_nmi": acc / 4, "objective": obj,
                        "upload_floats_total": up})
    history.write(results / exp / alg / f"seed{seed}")


def test_build_writes_the_table_and_checks_the_claims(tmp_path) -> None:
    results = tmp_path / "results"
    for (exp, alg), finals in ACCURACY.items():
        for seed, final in enumerate(finals):
            upload = [0, 0] if alg in ("sncp", "kmeanspp") else [10, 20]
            write(results, exp, alg, seed, [0.1, final], [3.0, 2.0], upload)
    for alg, (objective, upload) in CONVERGENCE.items():
        for seed in (0, 1):
            write(results, "p5_conv_syn_unf", alg, seed, [0.5] * 3, objective, upload)
    cells = [*ACCURACY, *[("p5_conv_syn_unf", alg) for alg in CONVERGENCE]]
    references = yaml.safe_load(PAPER.references_file.read_text())
    params = SimpleNamespace(experiment=lambda name: SimpleNamespace(title=f"title {name}"))
    tables, figures = tmp_path / "tables", tmp_path / "figures"
    tables.mkdir()
    out = build(ReportInput(params, PAPER, cells, results, tmp_path / "partitions",
                            references, tables, figures))

    assert (tables / "p5_accuracy.md").read_text().splitlines() == [
        "| algorithm | p5_syn_unf | p5_syn_noniid | p5_conv_syn_unf |",
        "|---|---|---|---|",
        "| fedcgds | 85.00 ± 5.00 | 83.00 ± 1.00 |  |",
        "| fedcavg | 80.00 ± 0.00 | 50.00 ± 10.00 |  |",
        "| sncp | 85.00 ± 1.00 | 90.00 ± 0.00 |  |",
        "| kmeanspp | 60.00 ± 10.00 | 60.00 ± 0.00 |  |",
        "| fedcgds_m10 |  |  | 50.00 ± 0.00 |",
        "| fedcgds_m100_q10 |  |  | 50.00 ± 0.00 |",
    ]
    text = out.markdown
    assert "- **holds**: FedCGds outperforms FedCAvg in clustering accuracy" in text
    assert "  - p5_syn_noniid: fedcgds 83.00 % vs fedcavg 50.00 %" in text
    assert "  - p5_syn_unf → p5_syn_noniid: fedcgds +2.00 pp lost, fedcavg +30.00" in text
    assert "- **fails**: FedCGds yields clustering accuracy comparable to centralized SNCP" in text
    assert "  - p5_syn_noniid: fedcgds 83.00 % vs sncp 90.00 %" in text
    assert "- **not run**: on MNIST_ubls FedCGds even performs better" in text
    assert ("  - p5_conv_syn_unf: objective 2 reached after 300 (fedcgds_m10) vs 3e+03 "
            "(fedcgds_m100_q10) numbers uploaded") in text
    assert "- **holds**: partial client participation considerably improves" in text
    assert "| fedcgds | 0.43 ± 0.02 / 0.21 ± 0.01 | 0.41 ± 0.01 / 0.21 ± 0.00 |  |" in text
    assert sorted(p.name for p in out.figures) == sorted(
        f"{exp}_{kind}.png" for exp in ("p5_syn_unf", "p5_syn_noniid", "p5_conv_syn_unf")
        for kind in ("objective", "clustering"))
    assert all(p.stat().st_size > 0 for p in out.figures)
    assert (tables / "p5_final.csv").read_text().count("\n") == 1 + 2 * len(cells)
