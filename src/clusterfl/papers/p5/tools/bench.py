"""P5 benchmarks (for `clusterfl bench`): one FedCGds round batched over all clients against
the same round as a per-client Python loop, and centralized SNCP against scikit-learn's
KMeans (k-means++) on the same data. Defaults: the paper's synthetic size (Sec. V: P = 100,
M = 2000, N = 10000, K = 20, -3 dB; FedCGds Q1 = Q2 = 100, full participation)."""

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from clusterfl.data.synthetic import FedcNmfOptions, fedc_nmf
from clusterfl.papers.p5.training.clients import (
    Federation,
    reference_fedcgds_uploads,
    reference_h_steps,
)
from clusterfl.papers.p5.training.context import central_x
from clusterfl.papers.p5.training.fedcgds import FedCGdsState, fedcgds_init, fedcgds_round
from clusterfl.papers.p5.training.kmeans import kmeans_pp
from clusterfl.papers.p5.training.onmf import (
    NU,
    SncpSchedule,
    WBounds,
    clustering_accuracy,
    labels_from_h,
    lipschitz_h,
    lipschitz_w,
    w_step,
)
from clusterfl.papers.p5.training.sncp import (
    CentralState,
    central_parts,
    continuation,
    initial_point,
    sncp_iteration,
)


def loop_fedcgds_round(fed: Federation, state: FedCGdsState, bounds: WBounds,
                       h_steps: int, w_steps: int) -> FedCGdsState:
    """One full-participation FedCGds round with the clients' work as a Python loop (the
    reference the batched `fedcgds_round` replaces)."""
    xs = [fed.client_x(p) for p in range(fed.num_clients)]
    before = [fed.client_h(state.h, p) for p in range(fed.num_clients)]
    c = 0.5 * lipschitz_h(state.w, state.rho, NU)
    after = reference_h_steps(xs, state.w, before, c, h_steps, state.rho, NU)
    uploads = reference_fedcgds_uploads(xs, before, after)
    g1 = state.g1 + sum(u for u, _ in uploads)
    g2 = state.g2 + sum(v for _, v in uploads)
    d = 0.5 * lipschitz_w(g1)
    w = state.w
    for _ in range(w_steps):
        w = w_step(w, g1, g2, d, bounds)
    return dataclasses.replace(state, w=w, h=fed.stack_h(after), g1=g1, g2=g2,
                               round=state.round + 1)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def bench_fedcgds_round(clients: int = 100, features: int = 2000, samples: int = 10000,
                        clusters: int = 20, h_steps: int = 100, w_steps: int = 100,
                        sncp_iterations: int = 100, seed: int = 0,
                        device: str = "cpu") -> dict[str, float]:
    """Print and return: seconds of one batched FedCGds round and of the per-client loop,
    their ratio and largest difference; then centralized SNCP (at most `sncp_iterations`
    iterations of eq. (3), each Q1 = Q2 = 100 block steps, under the rho schedule) against
    scikit-learn KMeans (k-means++, one seeding) on the same X: seconds and clustering
    accuracy."""
    rng = np.random.default_rng(seed)
    data = fedc_nmf(FedcNmfOptions(features, samples, clusters, -3.0, seed), rng)
    rows = data.x.astype(np.float64)
    fed = Federation.from_parts(rows, np.array_split(rng.permutation(samples), clients), device)
    truth = data.y[fed.index[fed.mask].cpu().numpy()]  # federation order
    x = central_x(fed)
    bounds = WBounds.of(x)
    w, h = initial_point(features, clusters, samples, bounds, rng)
    state = fedcgds_init(fed, w.to(device), fed.padded_h(h.to(device)), 1e-8)
    everyone = torch.arange(clients)
    batched, t_batched = _timed(lambda: fedcgds_round(fed, state, everyone, bounds,
                                                      NU, h_steps, w_steps))
    looped, t_loop = _timed(lambda: loop_fedcgds_round(fed, state, bounds, h_steps, w_steps))
    diff = float((batched.w - looped.w).abs().max())

    central = CentralState(w.to(device), h.to(device), 1e-8)
    norm = float((x**2).sum())
    (final, trace), t_sncp = _timed(lambda: continuation(
        lambda s: sncp_iteration(x, s, bounds), lambda s: central_parts(x, norm, s),
        central, SncpSchedule(), sncp_iterations))
    acc_sncp = clustering_accuracy(truth, labels_from_h(final.h))
    labels, t_kmeans = kmeans_pp(x.T.cpu().numpy(), clusters, rng)
    acc_kmeans = clustering_accuracy(truth, labels)
    result = {"batched_s": t_batched, "loop_s": t_loop, "ratio": t_loop / t_batched,
              "max_abs_diff_w": diff, "sncp_s": t_sncp, "sncp_iterations": len(trace.rho) - 1,
              "sncp_accuracy": acc_sncp, "kmeans_s": t_kmeans, "kmeans_accuracy": acc_kmeans}
    print(f"FedCGds round, P={clients} M={features} N={samples} K={clusters} "
          f"Q1={h_steps} Q2={w_steps} on {device}: batched {t_batched:.3f} s, per-client loop "
          f"{t_loop:.3f} s, loop/batched {t_loop / t_batched:.1f}x (max |dW| {diff:.1e})")
    print(f"centralized SNCP: {result['sncp_iterations']} iterations in {t_sncp:.2f} s, "
          f"accuracy {acc_sncp:.4f}{'' if trace.converged else ' (iteration cap reached)'}; "
          f"scikit-learn KMeans (k-means++): {t_kmeans:.2f} s, accuracy {acc_kmeans:.4f}")
    return result
