"""The metrics P5 runs record (`clusterfl.steps.metrics` registry), one constant per name.

Clustering quality is scored per *sample* (each sample's cluster against its true label:
the generator's cluster for the synthetic sets, the digit or garment class for images), not
per client as the shared `ari`/`nmi` of `cluster_recovery` are; hence separate names.
"""

from clusterfl.steps.metrics import METRICS, Metric, register


def _register(metric: Metric) -> Metric:
    """Register once: a re-import (tests reloading the package) keeps the first entry."""
    return METRICS.get(metric.name) if metric.name in METRICS else register(metric)


CLUSTERING_ACCURACY = _register(
    Metric("clustering_accuracy", "clustering accuracy (%)", False, percent=True))
CLUSTERING_ARI = _register(Metric("clustering_ari", "clustering ARI (samples)", False))
CLUSTERING_NMI = _register(Metric("clustering_nmi", "clustering NMI (samples)", False))
OBJECTIVE = _register(Metric("objective", "ONMF objective F(W, H)", True))
UPLOAD_FLOATS = _register(Metric("upload_floats", "real numbers uploaded this round", True))
UPLOAD_TOTAL = _register(
    Metric("upload_floats_total", "communication cost (real numbers uploaded)", True))
RHO = _register(Metric("rho", "SNCP penalty rho", False))
CONVERGED = _register(Metric("converged", "stop rule met (0/1)", False))
