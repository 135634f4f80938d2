"""Cluster-recovery metrics: how well an algorithm's clusters match a partition's ground truth.

Every clustered algorithm scores itself with these (scikit-learn / scipy implementations):
- `adjusted_rand`, `normalized_mutual_info`: label-permutation invariant;
- `matched_accuracy`: accuracy after the best one-to-one matching of predicted to true
  clusters (Hungarian algorithm, `scipy.optimize.linear_sum_assignment`) — FedC's
  "clustering accuracy (best label matching)"; `best_matching` returns the matching itself;
- `mixture_error`: mean over clients of the L1 distance between true and estimated mixture
  vectors, after the best matching of estimated to true components (FedSoft's importance
  weights u_ks come with arbitrary center indices).
"""

import numpy as np
from scipy.optimize import linear_sum_assignment


# scikit-learn is imported where it is used: at import it costs every stage process about as
# much as torch does (measured with `python -X importtime -c "import clusterfl.run.config"`).
def adjusted_rand(true: np.ndarray, predicted: np.ndarray) -> float:
    from sklearn.metrics import adjusted_rand_score

    return float(adjusted_rand_score(true, predicted))


def normalized_mutual_info(true: np.ndarray, predicted: np.ndarray) -> float:
    from sklearn.metrics import normalized_mutual_info_score

    return float(normalized_mutual_info_score(true, predicted))


def best_matching(true: np.ndarray, predicted: np.ndarray) -> dict[int, int]:
    """predicted cluster -> true cluster, maximising the number of agreements."""
    true_ids, true_codes = np.unique(true, return_inverse=True)
    pred_ids, pred_codes = np.unique(predicted, return_inverse=True)
    size = max(len(true_ids), len(pred_ids))
    from sklearn.metrics import confusion_matrix

    counts = confusion_matrix(true_codes, pred_codes, labels=np.arange(size))
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return {int(pred_ids[c]): int(true_ids[r]) for r, c in zip(rows, cols, strict=True)
            if r < len(true_ids) and c < len(pred_ids)}


def matched_accuracy(true: np.ndarray, predicted: np.ndarray) -> float:
    true, predicted = np.asarray(true), np.asarray(predicted)
    matching = best_matching(true, predicted)
    mapped = np.array([matching.get(int(p), -1) for p in predicted])
    return float(np.mean(mapped == true))


def mixture_error(true: np.ndarray, estimated: np.ndarray) -> float:
    """Mean L1 distance between mixture rows after the best permutation of estimated columns.

    `true` is (clients, S), `estimated` (clients, S'); missing columns count as zeros.
    """
    true, estimated = np.asarray(true, float), np.asarray(estimated, float)
    s = max(true.shape[1], estimated.shape[1])
    t = np.pad(true, ((0, 0), (0, s - true.shape[1])))
    e = np.pad(estimated, ((0, 0), (0, s - estimated.shape[1])))
    cost = np.abs(t[:, :, None] - e[:, None, :]).sum(axis=0)  # cost[i, j]: true i vs est j
    rows, cols = linear_sum_assignment(cost)
    return float(np.abs(t[:, rows] - e[:, cols]).sum(axis=1).mean())


def recovery_scores(true: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """ARI, NMI and matched accuracy in one dict (the names runs log them under)."""
    return {
        "ari": adjusted_rand(true, predicted),
        "nmi": normalized_mutual_info(true, predicted),
        "matched_accuracy": matched_accuracy(true, predicted),
    }
