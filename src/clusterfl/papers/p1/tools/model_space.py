"""Where are P1's synthetic clusters visible? k-means ARI against the true clusters on three
views of the clients (issue 19; P1 Sec. 5: "the parameters of a well-trained model can
reflect the distribution of input data"):

- `input`: each client's mean training input v_k (a d-vector), and `input_level`: its
  average over the d features, ~B_k (the clusters are drawn in B_k);
- `local_R`: each client's model after one round of Local training (R = `local_steps` SGD
  steps from the common initial model, the models pFedKM's first k-means sees);
- `local_T`: the same after `rounds` rounds (R * T steps: a well-trained local model);
- `pfedkm_theta`: pFedKM's personalized models theta_i after `rounds` rounds, and
  `pfedkm_assign`: pFedKM's own cluster assignment then (what its runs log as `ari`).

Beside them, `majority`: the mean over clients of the share of a client's samples in its most
frequent class, the accuracy a personalized model reaches by predicting that class alone.

k-means here is scikit-learn's k-means++ (`clusterfl.steps.clustering.kmeans_plusplus`) with
`n_init` restarts and k = the number of true clusters, on the flattened vectors, so that a
low ARI means "not visible", not "unlucky seeding". Everything is a pure function of the
params, the dataset options and the seed.
"""

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clusterfl.core.errors import UserError, check_keys
from clusterfl.core.io import mapping, read_yaml
from clusterfl.core.types import SeedInputs
from clusterfl.data import build_dataset
from clusterfl.partition import build_partition
from clusterfl.partition.base import Partition
from clusterfl.run.config import SuiteConfig
from clusterfl.steps.clustering import flatten, kmeans_plusplus
from clusterfl.steps.recovery import adjusted_rand

# The diagnostic's own params file, in the paper's directory (data, not code)
CONFIG = Path(__file__).parents[1] / "model_space.yaml"
VIEWS = ("input", "input_level", "local_R", "local_T", "pfedkm_theta", "pfedkm_assign")


def kmeans_ari(points: np.ndarray, truth: np.ndarray, seed: int, n_init: int = 10) -> float:
    """ARI of k-means (k = number of true clusters) on the rows of `points` against `truth`."""
    k = len(np.unique(truth))
    labels = kmeans_plusplus(np.asarray(points, dtype=np.float64), k, seed, n_init).labels
    return adjusted_rand(truth, labels)


def client_input_means(x: np.ndarray, partition: Partition) -> np.ndarray:
    """[N, d]: the mean of each client's training inputs."""
    return np.stack([x[idx].reshape(len(idx), -1).mean(axis=0) for idx in partition.train])


def majority_share(y: np.ndarray, partition: Partition) -> float:
    """Mean over clients of the largest class share among the client's samples."""
    shares = []
    for train, test in zip(partition.train, partition.test, strict=True):
        labels = y[np.concatenate([train, test])]
        shares.append(np.bincount(labels).max() / len(labels))
    return float(np.mean(shares))


def trained_models(params: SuiteConfig, experiment: str, algorithm: str, dataset: Any,
                   partition: Partition, seed: int, rounds: int) -> tuple[np.ndarray, Any]:
    """([N, p] flattened client models, the final `View`) of `algorithm` after `rounds`."""
    exp = params.experiment(experiment)
    exp = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule, rounds=rounds))
    alg = params.algorithm(algorithm, experiment=experiment)
    ctx = alg.cls.make_context(SeedInputs(exp, dataset, partition, seed))
    instance = alg.cls(alg.hyper, ctx)
    instance.run(evaluators=[], callbacks=[])
    view = instance.view()
    assert view.client_models is not None  # every method of the model-space figures has them
    return flatten(view.client_models).double().numpy(), view


def measure(params: SuiteConfig, experiment: str, dataset_options: Mapping[str, Any], seed: int,
            rounds: int, clustered: str = "pfedkm_k3") -> dict[str, float]:
    """One row: the ARI of every view in `VIEWS` for the experiment's partition with its
    dataset's options overridden by `dataset_options`, data and partition drawn with `seed`."""
    part_name = params.experiment(experiment).partition
    part = params.partition(part_name)
    source, options = params.dataset(part["dataset"])
    dataset = build_dataset(source, {**options, **dataset_options, "seed": seed},
                            f"datasets.{part['dataset']}")
    scheme_opts = {k: v for k, v in part.items() if k not in ("dataset", "scheme")}
    partition = build_partition(dataset, part["scheme"], scheme_opts, seed,
                                f"partitions.{part_name}")
    truth = np.asarray(partition.cluster)
    means = client_input_means(dataset.x, partition)
    row = {"input": kmeans_ari(means, truth, seed),
           "input_level": kmeans_ari(means.mean(axis=1, keepdims=True), truth, seed),
           "majority": majority_share(dataset.y, partition)}
    for name, n in (("local_R", 1), ("local_T", rounds)):
        models, _ = trained_models(params, experiment, "local", dataset, partition, seed, n)
        row[name] = kmeans_ari(models, truth, seed)
    theta, view = trained_models(params, experiment, clustered, dataset, partition, seed, rounds)
    row["pfedkm_theta"] = kmeans_ari(theta, truth, seed)
    row["pfedkm_assign"] = adjusted_rand(truth, view.assignment.numpy())
    return row


def table(params: SuiteConfig, variants: Mapping[str, tuple[str, Mapping[str, Any]]],
          seeds: Sequence[int], rounds: int, clustered: str = "pfedkm_k3") -> pd.DataFrame:
    """Mean and std over `seeds` of every view's ARI; `variants`: name -> (experiment,
    dataset options). Rows are variants, columns `<view>` and `<view>_std`."""
    rows = []
    for name, (experiment, options) in variants.items():
        runs = pd.DataFrame([measure(params, experiment, options, s, rounds, clustered)
                             for s in seeds])
        row: dict[str, Any] = {"variant": name, "experiment": experiment,
                               "options": ", ".join(f"{k}={v}" for k, v in options.items())}
        for view in (*VIEWS, "majority"):
            row[view], row[f"{view}_std"] = runs[view].mean(), runs[view].std(ddof=0)
        rows.append(row)
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    """The table as Markdown: one row per variant, `mean ± std` per view."""
    columns = (*VIEWS, "majority")
    head = "| variant | options | " + " | ".join(columns) + " |"
    lines = [head, "|" + "---|" * (len(columns) + 2)]
    for _, r in frame.iterrows():
        cells = " | ".join(f"{r[v]:.2f} ± {r[f'{v}_std']:.2f}" for v in columns)
        lines.append(f"| {r['variant']} | {r['options'] or '(as in params)'} | {cells} |")
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class ModelSpaceConfig:
    """The diagnostic's own params file (`CONFIG`: `papers/p1/model_space.yaml`)."""

    seeds: tuple[int, ...]
    rounds: int
    clustered: str
    variants: dict[str, tuple[str, dict[str, Any]]]


def load_config(path: Path) -> ModelSpaceConfig:
    """Read and check `path` (closed keys; one-line errors naming the key)."""
    raw = read_yaml(path)
    check_keys(raw, ("seeds", "rounds", "clustered", "variants"), f"{path}:")
    variants = {}
    for name, entry in mapping(raw.get("variants") or {}, f"{path}:variants").items():
        key = f"{path}:variants.{name}"
        check_keys(mapping(entry, key), ("experiment", "options"), key)
        if "experiment" not in entry:
            raise UserError(f"{key}.experiment: missing")
        variants[name] = (str(entry["experiment"]),
                          mapping(entry.get("options") or {}, f"{key}.options"))
    if not variants:
        raise UserError(f"{path}:variants: must name at least one variant")
    rounds, seeds = raw.get("rounds", 30), raw.get("seeds", [0])
    if not isinstance(rounds, int) or rounds < 1:
        raise UserError(f"{path}:rounds: must be an integer >= 1, got {rounds!r}")
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise UserError(f"{path}:seeds: must be a non-empty list of integers, got {seeds!r}")
    return ModelSpaceConfig(tuple(seeds), rounds, str(raw.get("clustered", "pfedkm_k3")),
                            variants)
