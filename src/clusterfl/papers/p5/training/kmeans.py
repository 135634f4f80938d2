"""The K-means++ benchmark of P5 Sec. V-D ([47], Arthur & Vassilvitskii 2007), centralized,
via scikit-learn. Reading: one seeding per call (n_init=1), because Sec. V averages every
method over 10 random initialisations rather than keeping the best of several."""

import time

import numpy as np
from sklearn.cluster import KMeans


def kmeans_pp(rows: np.ndarray, clusters: int,
              rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """(labels of the rows of `rows` (samples x features), seconds spent fitting)."""
    seed = int(rng.integers(0, 2**31 - 1))
    model = KMeans(n_clusters=clusters, init="k-means++", n_init=1, random_state=seed)
    start = time.perf_counter()
    labels = model.fit_predict(rows)
    return labels.astype(np.int64), time.perf_counter() - start
