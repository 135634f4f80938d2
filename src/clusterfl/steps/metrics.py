"""Metric names shared by the code that records them (evaluators, algorithms) and the code
that reads them (reports, figures, progress lines): one `Metric` per name, never re-spelled.

A metric knows its direction (`lower_is_better`) and how it is shown: `percent` metrics are
recorded as fractions and shown x100. Papers register the metrics they add (`register`).
"""

from dataclasses import dataclass

from clusterfl.core.registry import Registry


@dataclass(frozen=True)
class Metric:
    name: str
    label: str  # axis and table label, unit included
    lower_is_better: bool
    percent: bool = False  # recorded as a fraction, shown in %
    wall_clock: bool = False  # a timing: kept apart from the metrics (history `timings.json`)

    @property
    def scale(self) -> float:
        return 100.0 if self.percent else 1.0

    def best(self, values: "list[float]") -> float:
        return min(values) if self.lower_is_better else max(values)


METRICS: Registry[Metric] = Registry("metric")


def register(metric: Metric) -> Metric:
    METRICS.add(metric.name)(metric)
    return metric


def is_wall_clock(name: str) -> bool:
    """Whether `name` is a registered timing (differs between any two runs of one seed)."""
    return name in METRICS and METRICS.get(name).wall_clock


def metric(name: str) -> Metric:
    """The registered metric `name`; an unknown name is a one-line UserError."""
    return METRICS.get(name)


# Every client's model on its own samples (the `clients` evaluator).
TEST_ACC = register(Metric("test_acc", "test accuracy (%)", False, percent=True))
TEST_LOSS = register(Metric("test_loss", "test loss", True))
TRAIN_ACC = register(Metric("train_acc", "training accuracy (%)", False, percent=True))
TRAIN_LOSS = register(Metric("train_loss", "training loss", True))
TEST_MSE = register(Metric("test_mse", "test MSE", True))
TRAIN_MSE = register(Metric("train_mse", "training MSE", True))
# P2's protocol (the `holdout` evaluator): w-bar per client, centers on held-out sets.
LOCAL_TRAIN_ACC = register(Metric("local_train_acc", "w̄, own training data (%)", False, True))
LOCAL_TEST_ACC = register(Metric("local_test_acc", "w̄, local test split (%)", False, True))
LOCAL_TRAIN_MSE = register(Metric("local_train_mse", "w̄ MSE, own training data", True))
LOCAL_TEST_MSE = register(Metric("local_test_mse", "w̄ MSE, local test split", True))
HOLDOUT_BEST_ACC = register(Metric("holdout_best_acc", "best center, held-out (%)", False, True))
HOLDOUT_MATCHED_ACC = register(
    Metric("holdout_matched_acc", "matched center, held-out (%)", False, True))
HOLDOUT_BEST_MSE = register(Metric("holdout_best_mse", "best center, held-out MSE", True))
HOLDOUT_MATCHED_MSE = register(
    Metric("holdout_matched_mse", "matched center, held-out MSE", True))
MIXTURE_MAE = register(Metric("mixture_mae", "importance-weight MAE", True))
# Cluster recovery against the partition's ground truth (the `cluster_recovery` evaluator).
ARI = register(Metric("ari", "cluster recovery (ARI)", False))
NMI = register(Metric("nmi", "cluster recovery (NMI)", False))
# Algorithms' own diagnostics (pFedKM, P1 Figs. 4-5).
KMEANS_SECONDS = register(Metric("kmeans_seconds", "k-means time per round (s)", True,
                                 wall_clock=True))
# The loop's own timing: seconds of a round's work (selection excluded, evaluation excluded).
ROUND_SECONDS = register(Metric("round_seconds", "training time per round (s)", True,
                                wall_clock=True))
KMEANS_ITERATIONS = register(Metric("kmeans_iterations", "k-means iterations per round", True))
CENTER_DISTANCE = register(
    Metric("center_distance", "mean distance between cluster models", False))
LOCAL_DISTANCE = register(
    Metric("local_distance", "mean distance, local to cluster model", True))
# The number of cluster models (CFL, FL+HC) and APFL's mean mixing weight, per round: named
# here rather than in the algorithms' files, so that a report knows them without importing
# an algorithm (the registry imports one only when a cell names it).
CFL_CLUSTERS = register(Metric("cfl_clusters", "CFL: number of clusters", False))
FLHC_CLUSTERS = register(Metric("flhc_clusters", "FL+HC: number of clusters", False))
APFL_ALPHA = register(Metric("apfl_alpha", "APFL: the clients' mean mixing weight", False))
# Each model an algorithm exposes in `View.extras` (the `model_views` evaluator; pFedMe,
# pFedKM): view name -> (test accuracy, test MSE).
VIEW_LABELS = {"theta": "θ_i (personalized)", "local_w": "local w_i after local training",
               "global": "global model before the β-mix",
               "global_mixed": "global model after the β-mix"}
VIEW_METRICS = {
    name: (register(Metric(f"{name}_test_acc", f"{label}, test accuracy (%)", False, True)),
           register(Metric(f"{name}_test_mse", f"{label}, test MSE", True)))
    for name, label in VIEW_LABELS.items()}
