"""Synthetic generators: pure functions of an explicit `numpy.random.Generator`.

Five generators, each with its paper's parameters as defaults:
- `synthetic` (FedProx/pFedMe plain synthetic(alpha, beta)) and `clustered_synthetic` (P1);
- `fedsoft_regression` (P2): S linear-regression distributions;
- `threshold_regression` (P4): K clusters of noiseless linear regressions;
- `fedc_nmf` (P5): X = W H + E at a target SNR.

`clustered_synthetic` is P1's (pFedKM, Sec. 5) variant of the FedProx/pFedMe synthetic(alpha,
beta) generator (Li et al. 2020, "Federated Optimization in Heterogeneous Networks", Sec. 5.1;
the official FedProx/pFedMe scripts `generate_niid` were read to pin the details below).

FedProx, per client k: u_k ~ N(0, alpha), B_k ~ N(0, beta) (numpy `scale`, i.e. std);
W_k ~ N(u_k, 1)^{d x C}, b_k ~ N(u_k, 1)^C; v_k ~ N(B_k, 1)^d; x ~ N(v_k, Sigma) with
Sigma_jj = j^(-1.2); y = argmax softmax(W_k^T x + b_k); client sizes lognormal(4, 2) + 50.

P1's changes, and how we read them:
- "B_k of the first 20 clients from N(-3 beta, beta), the second 20 from N(0, beta), the
  third 20 from N(3 beta, beta)": B_k ~ N(offset_g * beta, beta) with offsets (-3, 0, 3),
  giving three ground-truth clusters of input distributions.
- "we set mu_k = alpha / beta": read as the mean of the model prior, u_k = alpha / beta for
  every client (instead of u_k ~ N(0, alpha)), so that clients differ through their inputs
  and a trained model reflects its input cluster, which is the stated purpose.
- 60 clients (20 per cluster) as the text says; the Table 2 caption's N=40 is one key away
  (`clients_per_cluster`).
- `labeling`: "client" (default, the text) draws W_k, b_k per client as FedProx does. Then
  the label function is client-specific noise around a common mean, and k-means on trained
  models finds no cluster structure (measured ARI ~0 with pFedKM/IFCA, see
  docs/algorithms.md). "cluster" draws one (W, b) per cluster, so that "a well-trained model
  reflects the distribution of input data" holds; the recovery tests use it.
- `input_spread`: the std of v_k around B_k (FedProx: 1). With "cluster" labeling and a
  small spread the clients of a cluster share one distribution.
- Sizes: lognormal(4, 2) + 50 as in the official scripts, capped at `max_size` so that one
  client cannot hold most of the data (the official pFedMe script caps too; the cap is ours).
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np

from clusterfl.data.dataset import Dataset
from clusterfl.options import require


@dataclass(frozen=True)
class ClusteredSyntheticOptions:
    alpha: float = 0.5
    beta: float = 0.5
    cluster_offsets: tuple[float, ...] = (-3.0, 0.0, 3.0)
    clients_per_cluster: int = 20
    dimension: int = 60
    num_classes: int = 10
    max_size: int = 3000
    labeling: Literal["client", "cluster"] = "client"
    input_spread: float = 1.0
    seed: int = 0

    def validate(self, key: str) -> None:
        require(self.clients_per_cluster > 0, f"{key}.clients_per_cluster", "must be > 0")
        require(self.dimension > 0, f"{key}.dimension", "must be > 0")
        require(self.num_classes > 1, f"{key}.num_classes", "must be > 1")
        require(self.max_size >= 50, f"{key}.max_size", "must be >= 50")
        require(len(self.cluster_offsets) > 0, f"{key}.cluster_offsets", "must not be empty")


def clustered_synthetic(opts: ClusteredSyntheticOptions, rng: np.random.Generator) -> Dataset:
    """Generate P1's clustered synthetic data; `groups` = client, `group_cluster` = cluster."""
    clusters = np.repeat(np.arange(len(opts.cluster_offsets)), opts.clients_per_cluster)
    n_clients = len(clusters)
    sizes = np.minimum(rng.lognormal(4, 2, n_clients).astype(np.int64) + 50, opts.max_size)
    offsets = np.asarray(opts.cluster_offsets)[clusters]
    model_mean = opts.alpha / opts.beta
    cov_diag = np.arange(1, opts.dimension + 1, dtype=np.float64) ** -1.2
    xs, ys = [], []
    per_cluster = [
        (rng.normal(model_mean, 1.0, (opts.dimension, opts.num_classes)),
         rng.normal(model_mean, 1.0, opts.num_classes))
        for _ in opts.cluster_offsets
    ] if opts.labeling == "cluster" else []
    for k in range(n_clients):
        if per_cluster:
            w, b = per_cluster[clusters[k]]
        else:
            w = rng.normal(model_mean, 1.0, (opts.dimension, opts.num_classes))
            b = rng.normal(model_mean, 1.0, opts.num_classes)
        b_k = rng.normal(offsets[k] * opts.beta, opts.beta)
        v = rng.normal(b_k, opts.input_spread, opts.dimension)
        x = v + rng.standard_normal((sizes[k], opts.dimension)) * np.sqrt(cov_diag)
        ys.append(np.argmax(x @ w + b, axis=1))  # argmax of softmax = argmax of logits
        xs.append(x)
    return Dataset(
        name="clustered_synthetic",
        x=np.concatenate(xs).astype(np.float32),
        y=np.concatenate(ys).astype(np.int64),
        num_classes=opts.num_classes,
        groups=np.repeat(np.arange(n_clients), sizes),
        group_cluster=clusters,
        info={"source": "P1 clustered synthetic(alpha, beta)"},
    )


@dataclass(frozen=True)
class SyntheticOptions:
    alpha: float = 0.5
    beta: float = 0.5
    num_clients: int = 30
    dimension: int = 60
    num_classes: int = 10
    max_size: int = 3000
    seed: int = 0

    def validate(self, key: str) -> None:
        require(self.num_clients > 0, f"{key}.num_clients", "must be > 0")
        require(self.dimension > 0, f"{key}.dimension", "must be > 0")
        require(self.num_classes > 1, f"{key}.num_classes", "must be > 1")
        require(self.max_size >= 50, f"{key}.max_size", "must be >= 50")
        require(self.alpha >= 0 and self.beta >= 0, f"{key}.alpha", "alpha, beta must be >= 0")


def synthetic(opts: SyntheticOptions, rng: np.random.Generator) -> Dataset:
    """The plain FedProx synthetic(alpha, beta): u_k ~ N(0, alpha), B_k ~ N(0, beta), no
    clusters (alpha = beta = 0 is FedProx's synthetic-IID only in the model/input means)."""
    sizes = np.minimum(rng.lognormal(4, 2, opts.num_clients).astype(np.int64) + 50, opts.max_size)
    cov_diag = np.arange(1, opts.dimension + 1, dtype=np.float64) ** -1.2
    xs, ys = [], []
    for k in range(opts.num_clients):
        u_k = rng.normal(0.0, opts.alpha)
        b_k = rng.normal(0.0, opts.beta)
        w = rng.normal(u_k, 1.0, (opts.dimension, opts.num_classes))
        b = rng.normal(u_k, 1.0, opts.num_classes)
        v = rng.normal(b_k, 1.0, opts.dimension)
        x = v + rng.standard_normal((sizes[k], opts.dimension)) * np.sqrt(cov_diag)
        ys.append(np.argmax(x @ w + b, axis=1))
        xs.append(x)
    return Dataset(
        name="synthetic",
        x=np.concatenate(xs).astype(np.float32),
        y=np.concatenate(ys).astype(np.int64),
        num_classes=opts.num_classes,
        groups=np.repeat(np.arange(opts.num_clients), sizes),
        info={"source": "FedProx synthetic(alpha, beta)"},
    )


@dataclass(frozen=True)
class FedSoftRegressionOptions:
    num_distributions: int = 2
    sigma0: float = 10.0
    dimension: int = 10
    samples_per_distribution: int = 20000
    test_per_distribution: int = 1000
    noise_std: float = 1.0
    seed: int = 0

    def validate(self, key: str) -> None:
        require(self.num_distributions > 0, f"{key}.num_distributions", "must be > 0")
        require(self.sigma0 > 0, f"{key}.sigma0", "must be > 0")
        require(self.dimension > 0, f"{key}.dimension", "must be > 0")
        require(
            0 <= self.test_per_distribution < self.samples_per_distribution,
            f"{key}.test_per_distribution", "must be in [0, samples_per_distribution)",
        )


def fedsoft_regression(opts: FedSoftRegressionOptions, rng: np.random.Generator) -> Dataset:
    """FedSoft (Sec. 5, after Ghosh et al. 2020): y = <x, theta_s> + eps with
    theta_s ~ N(0, sigma0^2 I_d), x ~ N(0, I_d), eps ~ N(0, noise_std^2), no intercept.

    Each distribution s gets `samples_per_distribution` samples (`domain` = s); the last
    `test_per_distribution` of each are marked `split` = 1, the held-out test set of s.
    `extras["theta"]` holds the true (S, d) parameters.
    """
    s, n, d = opts.num_distributions, opts.samples_per_distribution, opts.dimension
    theta = rng.normal(0.0, opts.sigma0, (s, d))
    x = rng.standard_normal((s, n, d))
    y = np.einsum("snd,sd->sn", x, theta) + rng.normal(0.0, opts.noise_std, (s, n))
    split = np.tile((np.arange(n) >= n - opts.test_per_distribution).astype(np.int8), s)
    return Dataset(
        name="fedsoft_regression",
        x=x.reshape(s * n, d).astype(np.float32),
        y=y.reshape(-1),
        num_classes=0,
        split=split,
        domain=np.repeat(np.arange(s), n),
        domain_names=tuple(f"theta{i}" for i in range(s)),
        extras={"theta": theta},
        info={"source": "FedSoft linear-regression mixture"},
    )


@dataclass(frozen=True)
class ThresholdRegressionOptions:
    num_clusters: int = 4
    clients_per_cluster: int = 9
    samples_per_client: int = 9
    dimension: int = 10
    optimum_values: tuple[float, ...] = (0.0, 100.0)
    seed: int = 0

    def validate(self, key: str) -> None:
        require(self.num_clusters > 0, f"{key}.num_clusters", "must be > 0")
        require(self.clients_per_cluster > 0, f"{key}.clients_per_cluster", "must be > 0")
        require(self.samples_per_client > 0, f"{key}.samples_per_client", "must be > 0")
        require(self.dimension > 0, f"{key}.dimension", "must be > 0")
        require(len(self.optimum_values) == 2, f"{key}.optimum_values", "must be [low, high]")


def threshold_regression(opts: ThresholdRegressionOptions, rng: np.random.Generator) -> Dataset:
    """PFL-TC (Sec. 4, Fig. 1): client i of cluster k has y_i = a_i^T x_k^*, no noise.

    Readings: "a_i in R^{d x n} is a random matrix containing agent i's samples" -> standard
    Gaussian entries, n = `samples_per_client` (the paper reuses n, the clients per cluster,
    so the default is 9 too); "x_k^* generated from a binomial distribution with {0, 100} in
    each coordinate" -> each coordinate is low or high with probability 1/2. The optima are in
    `extras["optima"]` (K, d); `groups` = client, `group_cluster` = its cluster.
    """
    k, m = opts.num_clusters, opts.clients_per_cluster
    n, d = opts.samples_per_client, opts.dimension
    low, high = opts.optimum_values
    optima = np.where(rng.integers(0, 2, (k, d)) == 1, high, low).astype(np.float64)
    clusters = np.repeat(np.arange(k), m)
    a = rng.standard_normal((k * m, n, d))
    y = np.einsum("cnd,cd->cn", a, optima[clusters])
    return Dataset(
        name="threshold_regression",
        x=a.reshape(-1, d).astype(np.float32),
        y=y.reshape(-1),
        num_classes=0,
        groups=np.repeat(np.arange(k * m), n),
        group_cluster=clusters,
        extras={"optima": optima},
        info={"source": "PFL-TC synthetic linear regression"},
    )


@dataclass(frozen=True)
class FedcNmfOptions:
    features: int = 2000
    samples: int = 10000
    clusters: int = 20
    snr_db: float = -3.0
    seed: int = 0

    def validate(self, key: str) -> None:
        require(self.features > 0, f"{key}.features", "must be > 0")
        require(self.samples >= self.clusters, f"{key}.samples", "must be >= clusters")
        require(self.clusters > 0, f"{key}.clusters", "must be > 0")


def fedc_nmf(opts: FedcNmfOptions, rng: np.random.Generator) -> Dataset:
    """FedC (Sec. V): X = W H + E, M x N, K clusters, SNR = 10 log10(||WH||^2 / ||E||^2) dB.

    Readings (the paper gives no generator): W ~ Uniform(0, 1)^{M x K} (nonnegative
    centroids); each sample j belongs to a uniform random cluster c_j and h_j = e_{c_j}, the
    orthogonal-NMF cluster indicator; E is Gaussian rescaled so that the SNR is exactly
    `snr_db`. Samples are rows: `x` = X^T (N, M), `y` = c_j, `extras["W"]` = W.
    """
    w = rng.uniform(0.0, 1.0, (opts.features, opts.clusters))
    labels = rng.integers(0, opts.clusters, opts.samples)
    signal = w[:, labels]
    noise = rng.standard_normal(signal.shape)
    noise *= np.sqrt(np.sum(signal**2) / (np.sum(noise**2) * 10 ** (opts.snr_db / 10)))
    return Dataset(
        name="fedc_nmf",
        x=(signal + noise).T.astype(np.float32),
        y=labels.astype(np.int64),
        num_classes=opts.clusters,
        extras={"W": w},
        info={"source": "FedC X = W H + E", "snr_db": str(opts.snr_db)},
    )
