"""The cross-scheme benchmark (docs/benchmark.md): every supervised algorithm under every
non-IID scheme on one dataset (Fashion-MNIST), one model and one budget, with each
algorithm's lr (and K) picked on a validation split (`clusterfl tune`). Not a paper: a
suite (`suites/benchmark`) adds it with `papers: [clusterfl.papers.benchmark]`, and its
report section is the leaderboard, the cluster-recovery and the cost tables. It brings no
training code: its baselines are general methods (`clusterfl.algorithms`, one file each),
and `tools/` holds a research tool no stage runs (`clusterfl.papers.benchmark.tools.peer`)."""

from pathlib import Path

from clusterfl.papers import Paper

PAPER = Paper(
    key="benchmark",
    title="Benchmark: every algorithm under every non-IID scheme",
    directory=Path(__file__).parent,
    report="clusterfl.papers.benchmark.report:build",
)
