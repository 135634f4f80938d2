"""The K-means++ benchmark of P5 Sec. V-D ([47], Arthur & Vassilvitskii 2007), centralized,
via scikit-learn. Reading: one seeding per call (n_init=1), because Sec. V averages every
method over 10 random initialisations rather than keeping the best of several."""

import numpy as np

from clusterfl.steps.clustering import draw_seed, kmeans_plusplus


def kmeans_pp(rows: np.ndarray, clusters: int,
              rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """(labels of the rows of `rows` (samples x features), seconds spent fitting)."""
    result = kmeans_plusplus(rows, clusters, draw_seed(rng))
    return result.labels, result.seconds
