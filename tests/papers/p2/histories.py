"""Test helper: P2-shaped regression histories (holdout matrices, importance weights)."""

from pathlib import Path

import numpy as np

from clusterfl.steps.clustering import match_centers
from clusterfl.training.history import RunHistory


def write_soft_run(root: Path, alg: str, seed: int, holdout: list[list[float]] | None,
                   mse: list[float], mae: list[float], importance: list[list[float]] | None,
                   exp: str = "e") -> None:
    """Rounds of `mse` (w̄ = mse - 1); without `holdout`, an IFCA-like run with no arrays."""
    h = RunHistory()
    for r, (m, e) in enumerate(zip(mse, mae, strict=True), start=1):
        record = {"round": r, "train_mse": m + 1, "test_mse": m}
        arrays = None
        if holdout is not None:
            record |= {"local_train_mse": m - 1, "mixture_mae": e}
            match = match_centers(np.asarray(holdout), lower_is_better=True)
            arrays = {"holdout_mse": holdout, "center_of_distribution": match.tolist(),
                      "importance": importance}
        h.append(record, arrays)
    h.write(root / exp / alg / f"seed{seed}")
