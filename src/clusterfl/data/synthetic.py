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
- "we set mu_k = alpha / beta" (`model_mean`, P1 never defines mu_k; three readings):
  "constant" (default): u_k = alpha / beta for every client; "input_scaled": u_k =
  (alpha / beta) B_k, the model mean a scaled copy of the input mean (its middle cluster then
  has FedProx's u_k ~ N(0, alpha)); "fedprox": u_k ~ N(0, alpha), FedProx unchanged. None of
  them can put the clusters into the labels or a trained model: u_k shifts every entry of
  W_k and b_k, so it adds u_k (sum_j x_j + 1) to every class's logit and the argmax is the
  same; and a softmax model's gradient has zero sum over classes, so training from a common
  start never moves that direction either (measured: docs/diagnostics.md).
- 60 clients (20 per cluster) as the text says; the Table 2 caption's N=40 is one key away
  (`clients_per_cluster`).
- `labeling`: "client" (default, the text) draws W_k, b_k per client as FedProx does. Then
  the label function is client-specific noise around a common mean, and k-means on trained
  models finds no cluster structure (measured ARI ~0 with pFedKM/IFCA, see
  docs/algorithms.md). "cluster" draws one (W, b) noise per cluster (plus each client's
  u_k), so that "a well-trained model reflects the distribution of input data" holds; the
  recovery tests use it. The text does not say this; it is the premise made true.
- `input_spread`: the std of v_k around B_k (FedProx: 1). With "cluster" labeling and a
  small spread the clients of a cluster share one distribution.
- `generator` (sizes and draw order): "capped" (default): sizes lognormal(4, 2) + 50 as in
  FedProx's script, capped at `max_size` (the cap is ours, so that one client cannot hold
  most of the data; neither official script caps), drawn client by client. "pfedme": the
  official pFedMe script (github.com/CharlieDinh/pFedMe, data/Synthetic/
  generate_synthetic_05_05.py, commit caf24b1), which P1 cites as [45]: sizes
  (floor(lognormal(4, 2)) + 50) * 5, no cap unless `max_size` is set, and its draw order
  (all sizes, all u_k, all B_k, all v_k, then each client's W_k, b_k, x); the same feature
  model x ~ N(v_k, Sigma). Its 90/10 train/test split is the partition `p1_synthetic_pfedme`.
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np

from clusterfl.core.options import FLOAT64, require, require_fits
from clusterfl.data.dataset import Dataset

MIN_SIZE = 50  # samples of the smallest client: lognormal(4, 2) + 50


@dataclass(frozen=True)
class ClusteredSyntheticOptions:
    alpha: float = 0.5
    beta: float = 0.5
    cluster_offsets: tuple[float, ...] = (-3.0, 0.0, 3.0)
    clients_per_cluster: int = 20
    dimension: int = 60
    num_classes: int = 10
    max_size: int | None = 3000  # None: no cap (the official scripts)
    labeling: Literal["client", "cluster"] = "client"
    input_spread: float = 1.0
    generator: Literal["capped", "pfedme"] = "capped"
    model_mean: Literal["constant", "input_scaled", "fedprox"] = "constant"
    seed: int = 0

    def validate(self, key: str) -> None:
        require(self.clients_per_cluster > 0, f"{key}.clients_per_cluster", "must be > 0")
        require(self.dimension > 0, f"{key}.dimension", "must be > 0")
        require(self.num_classes > 1, f"{key}.num_classes", "must be > 1")
        require(self.max_size is None or self.max_size >= 50, f"{key}.max_size",
                "must be >= 50 or null (no cap)")
        require(len(self.cluster_offsets) > 0, f"{key}.cluster_offsets", "must not be empty")
        require(self.beta > 0, f"{key}.beta", "must be > 0 (P1 divides by it)")
        clients = len(self.cluster_offsets) * self.clients_per_cluster
        require_fits(f"{key}.clients_per_cluster", clients * MIN_SIZE * self.dimension * FLOAT64,
                     f"{clients} clients of >= {MIN_SIZE} samples x {self.dimension} features")


PFEDME_SIZE_FACTOR = 5  # the official pFedMe script: (lognormal(4, 2) + 50) * 5


def client_sizes(opts: ClusteredSyntheticOptions, rng: np.random.Generator, n: int) -> np.ndarray:
    """Samples per client: floor(lognormal(4, 2)) + 50, times 5 for "pfedme", capped at
    `max_size` when it is set."""
    sizes = rng.lognormal(4, 2, n).astype(np.int64) + MIN_SIZE
    if opts.generator == "pfedme":
        sizes *= PFEDME_SIZE_FACTOR
    return sizes if opts.max_size is None else np.minimum(sizes, opts.max_size)


def model_means(opts: ClusteredSyntheticOptions, prior: np.ndarray, b: np.ndarray) -> np.ndarray:
    """u_k under the `model_mean` reading of P1's "mu_k = alpha / beta"; `prior` is FedProx's
    u_k ~ N(0, alpha) draw, `b` the clients' B_k."""
    if opts.model_mean == "fedprox":
        return prior
    if opts.model_mean == "input_scaled":
        return opts.alpha / opts.beta * b
    return np.full(len(b), opts.alpha / opts.beta)


def clustered_synthetic(opts: ClusteredSyntheticOptions, rng: np.random.Generator) -> Dataset:
    """Generate P1's clustered synthetic data; `groups` = client, `group_cluster` = cluster.

    `extras`: `input_mean` (v_k, [N, d]), `B` (B_k) and `model_mean` (u_k), for diagnostics.
    """
    clusters = np.repeat(np.arange(len(opts.cluster_offsets)), opts.clients_per_cluster)
    draw = _draw_pfedme if opts.generator == "pfedme" else _draw_capped
    sizes, u, b, v, xs, ys = draw(opts, clusters, rng)
    return Dataset(
        name="clustered_synthetic",
        x=np.concatenate(xs).astype(np.float32),
        y=np.concatenate(ys).astype(np.int64),
        num_classes=opts.num_classes,
        groups=np.repeat(np.arange(len(clusters)), sizes),
        group_cluster=clusters,
        extras={"input_mean": v, "B": b, "model_mean": u},
        info={"source": "P1 clustered synthetic(alpha, beta)", "generator": opts.generator,
              "model_mean": opts.model_mean},
    )


def _noise(opts: ClusteredSyntheticOptions, rng: np.random.Generator
           ) -> tuple[np.ndarray, np.ndarray]:
    """N(0, 1) parts of (W, b); W_k = noise + u_k (rng.normal(u, 1) draws the same numbers)."""
    return (rng.normal(0.0, 1.0, (opts.dimension, opts.num_classes)),
            rng.normal(0.0, 1.0, opts.num_classes))


def _features(opts: ClusteredSyntheticOptions, v: np.ndarray, size: int,
              rng: np.random.Generator) -> np.ndarray:
    """x ~ N(v_k, Sigma), Sigma = diag(j^-1.2), j = 1..d."""
    cov_diag = np.arange(1, opts.dimension + 1, dtype=np.float64) ** -1.2
    return v + rng.standard_normal((size, opts.dimension)) * np.sqrt(cov_diag)


def _labels(x: np.ndarray, noise: tuple[np.ndarray, np.ndarray], u: float) -> np.ndarray:
    labels: np.ndarray = np.argmax(x @ (noise[0] + u) + (noise[1] + u), axis=1)
    return labels  # argmax softmax = of logits


def _draw_capped(opts: ClusteredSyntheticOptions, clusters: np.ndarray,
                 rng: np.random.Generator) -> tuple:
    """Client by client: (u_k if "fedprox"), W_k, b_k noise, B_k, v_k, x."""
    n = len(clusters)
    sizes = client_sizes(opts, rng, n)
    offsets = np.asarray(opts.cluster_offsets)[clusters]
    per_cluster = ([_noise(opts, rng) for _ in opts.cluster_offsets]
                   if opts.labeling == "cluster" else [])
    us, bs, vs, xs, ys = [], [], [], [], []
    for k in range(n):
        prior = rng.normal(0.0, opts.alpha) if opts.model_mean == "fedprox" else 0.0
        noise = per_cluster[clusters[k]] if per_cluster else _noise(opts, rng)
        b_k = rng.normal(offsets[k] * opts.beta, opts.beta)
        u_k = float(model_means(opts, np.array([prior]), np.array([b_k]))[0])
        v = rng.normal(b_k, opts.input_spread, opts.dimension)
        x = _features(opts, v, sizes[k], rng)
        ys.append(_labels(x, noise, u_k))
        us.append(u_k)
        bs.append(b_k)
        vs.append(v)
        xs.append(x)
    return sizes, np.array(us), np.array(bs), np.stack(vs), xs, ys


def _draw_pfedme(opts: ClusteredSyntheticOptions, clusters: np.ndarray,
                 rng: np.random.Generator) -> tuple:
    """The official pFedMe order: sizes, all u_k priors, all B_k, all v_k, then per client
    W_k, b_k noise and x (one noise per cluster first, with "cluster" labeling)."""
    n = len(clusters)
    sizes = client_sizes(opts, rng, n)
    prior = rng.normal(0.0, opts.alpha, n)
    b = rng.normal(np.asarray(opts.cluster_offsets)[clusters] * opts.beta, opts.beta)
    u = model_means(opts, prior, b)
    v = rng.normal(b[:, None], opts.input_spread, (n, opts.dimension))
    per_cluster = ([_noise(opts, rng) for _ in opts.cluster_offsets]
                   if opts.labeling == "cluster" else [])
    xs, ys = [], []
    for k in range(n):
        noise = per_cluster[clusters[k]] if per_cluster else _noise(opts, rng)
        x = _features(opts, v[k], sizes[k], rng)
        ys.append(_labels(x, noise, u[k]))
        xs.append(x)
    return sizes, u, b, v, xs, ys


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
        require_fits(f"{key}.num_clients",
                     self.num_clients * MIN_SIZE * self.dimension * FLOAT64,
                     f"{self.num_clients} clients of >= {MIN_SIZE} samples x "
                     f"{self.dimension} features")


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
        samples = self.num_distributions * self.samples_per_distribution
        require_fits(f"{key}.samples_per_distribution", samples * self.dimension * FLOAT64,
                     f"{samples} samples x {self.dimension} features")


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
        samples = self.num_clusters * self.clients_per_cluster * self.samples_per_client
        require_fits(f"{key}.clients_per_cluster", samples * self.dimension * FLOAT64,
                     f"{samples} samples x {self.dimension} features")


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
        extras={"optima": optima, "optimum_values": np.asarray(opts.optimum_values, float)},
        info={"source": "PFL-TC synthetic linear regression"},
    )


@dataclass(frozen=True)
class FedcNmfOptions:
    features: int = 2000
    samples: int = 10000
    clusters: int = 20
    snr_db: float = -3.0
    spread: float = 1.0  # how far apart the centroids are: W = (1 - spread)/2 + spread U
    seed: int = 0

    def validate(self, key: str) -> None:
        require(self.features > 0, f"{key}.features", "must be > 0")
        require(0 < self.spread <= 1, f"{key}.spread", "must be in (0, 1]")
        require(self.samples >= self.clusters, f"{key}.samples", "must be >= clusters")
        require(self.clusters > 0, f"{key}.clusters", "must be > 0")
        # X = W H + E: the signal and the noise, float64, M x N each
        require_fits(f"{key}.samples", 2 * self.features * self.samples * FLOAT64,
                     f"{self.samples} samples x {self.features} features")


def fedc_nmf(opts: FedcNmfOptions, rng: np.random.Generator) -> Dataset:
    """FedC (Sec. V): X = W H + E, M x N, K clusters, SNR = 10 log10(||WH||^2 / ||E||^2) dB.

    Readings (the paper gives no generator): W ~ Uniform(0, 1)^{M x K} (nonnegative
    centroids) at `spread` 1; a smaller spread s draws W = (1 - s)/2 + s Uniform(0, 1), the
    centroids closer to their common mean at the same SNR, a harder problem (P5's
    `p5_fedc_hard`, calibrated to [16]'s reported -3 dB accuracies). Each sample j belongs
    to a uniform random cluster c_j and h_j = e_{c_j}, the orthogonal-NMF cluster indicator;
    E is Gaussian rescaled so that the SNR is exactly `snr_db`. Samples are rows: `x` = X^T
    (N, M), `y` = c_j, `extras["W"]` = W.
    """
    w = rng.uniform(0.0, 1.0, (opts.features, opts.clusters))
    if opts.spread != 1.0:  # spread 1 keeps the earlier draw bit for bit
        w = (1.0 - opts.spread) / 2 + opts.spread * w
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
