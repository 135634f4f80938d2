"""Shared report helpers, written once for every paper (`clusterfl.papers.<key>.report`) and
for the report stage (`pipeline/report.py`):

- `runs`: reading a cell's seed histories: its primary metric, last/best values per seed,
  mean curves over seeds, cluster assignments;
- `tables`: mean ± std formatting and Markdown tables;
- `results`: the cross-paper results table (every cell beside its paper's number), its
  Table-2-style layout and the `metrics.json` entries;
- `figures`: `save_figure` and the convergence, curves, clustering and assignment figures.

Metric direction, label and percent scaling come from `clusterfl.steps.metrics`, never re-spelled.
Nothing here imports a paper: papers import this.
"""
