"""P4 report helpers: each seed's final numbers, and the sweeps read off experiment names."""

import re
from pathlib import Path

from clusterfl.papers.p4.training.evaluator import GRADIENT_NORM, OPTIMUM_ERROR
from clusterfl.reports.runs import read_cell

# experiment name -> (sweep, value); the s = 1 points are the Fig. 1 experiments
PATTERNS = (
    (re.compile(r"p4_fig2_m(\d+)$"), "fig2", 1.0),
    (re.compile(r"p4_fig2sgd_m(\d+)$"), "fig2_sgd", 1.0),
    (re.compile(r"p4_fig2b1_m(\d+)$"), "fig2_b1", 1.0),
    (re.compile(r"p4_fig2b5_m(\d+)$"), "fig2_b5", 1.0),
    (re.compile(r"p4_tune_tau_(\d+)$"), "tune_tau", 0.01),
    (re.compile(r"p4_init_s(\d+)$"), "init_n9", 1.0),
    (re.compile(r"p4_n100_init_s(\d+)$"), "init_n100", 1.0),
    (re.compile(r"p4_tau_(\d+)$"), "tau", 0.01),
)
BASE = {"p4_fig1": (("init_n9", 1.0),),
        "p4_fig1_n100": (("init_n100", 1.0),)}
# final error against N/K, kept with any number of points
RATE_SWEEPS = ("fig2", "fig2_b1", "fig2_sgd", "fig2_b5")


def finals(results: Path, experiment: str, algorithm: str) -> dict[str, list[float]]:
    """Every seed's last-round optimum error and ARI, its ARI and its squared gradient norm
    averaged over the rounds (the latter Eq. (4)'s bounded quantity), each where recorded."""
    seeds = [s for s in read_cell(results, experiment, algorithm) if s.records]
    last = [s.records[-1] for s in seeds]

    def over_rounds(key: str) -> list[float]:
        runs = [[r[key] for r in s.records if key in r] for s in seeds]
        return [float(sum(n) / len(n)) for n in runs if n]

    return {"error": [r[OPTIMUM_ERROR.name] for r in last if OPTIMUM_ERROR.name in r],
            "ari": [r["ari"] for r in last if "ari" in r],
            "ari_rounds": over_rounds("ari"),
            "gradient_norm": over_rounds(GRADIENT_NORM.name)}


def sweep_values(grouped: dict[str, list[str]]
                 ) -> dict[str, dict[float, list[tuple[str, str]]]]:
    """sweep -> value -> [(experiment, algorithm)] of the cells present."""
    sweeps: dict[str, dict[float, list[tuple[str, str]]]] = {}
    for exp, algs in grouped.items():
        hits = list(BASE.get(exp, ()))
        for pattern, name, unit in PATTERNS:
            match = pattern.match(exp)
            if match:
                hits.append((name, float(match.group(1)) * unit))
        for name, value in hits:
            sweeps.setdefault(name, {}).setdefault(value, []).extend((exp, a) for a in algs)
    return {k: v for k, v in sweeps.items() if len(v) > 1 or k in RATE_SWEEPS}
