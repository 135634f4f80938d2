"""P5: federated clustering by matrix factorization (Wang & Chang 2021, "Federated Clustering
via Matrix Factorization Models: From Model Averaging to Gradient Sharing"; FedCAvg /
FedCGds, with centralized SNCP and K-means++ as benchmarks; Sec. V, Figs. 4-6).

In `training/`, the numerical core (pure functions, state in, state out): the orthogonal-NMF
objective and its projected-gradient block steps (`onmf`), all clients' local steps batched
in one tensor program (`clients`), the round functions of centralized SNCP (`sncp`),
FedCAvg (`fedcavg`), FedCGds (`fedcgds`) and the K-means++ baseline (`kmeans`). On the round
loop: `methods` (algorithms `p5_sncp`, `p5_fedcavg`, `p5_fedcgds`, `p5_kmeanspp`), `evaluators`
(`p5_clustering`, `p5_objective`), `metrics`. In `report/` (the report stage only): `build`,
`figures`, `claims`; in `tools/` (`clusterfl bench`): `bench.bench_fedcgds_round`.
"""

from pathlib import Path

from clusterfl.papers import Paper
from clusterfl.papers.p5.training import evaluators, methods, metrics  # noqa: F401  (registers them)

PAPER = Paper(
    key="p5",
    title="P5 FedC: federated clustering by matrix factorization (FedCAvg, FedCGds)",
    directory=Path(__file__).parent,
    report="clusterfl.papers.p5.report:build",
)
