"""Every CPU family writes the same bytes: cells of every kind, shrunk, trained in a fresh
process per simulated family, must give byte-identical history.json and history.csv.

A family is simulated by the variables through which a library takes its code path on that
CPU: `ATEN_CPU_CAPABILITY=avx2`, `ONEDNN_MAX_CPU_ISA=AVX2`, `OPENBLAS_CORETYPE=Haswell`,
`NPY_DISABLE_CPU_FEATURES` (numpy's AVX-512 loops off) are what an Intel AVX2 CPU picks,
`OPENBLAS_CORETYPE=Zen` what an AMD Zen 1-3 picks; `host` sets none, so on an AVX-512
machine it is that family (each library would pick its AVX-512 path). `OMP_NUM_THREADS` 1
and 3 stand for machines with other numbers of cores. MKL's own families
(`MKL_ENABLE_INSTRUCTIONS=AVX2` / `AVX512` on an Intel CPU; AMD's path) are covered only with
`CLUSTERFL_CPU_PINS=exact` (the `exact_*` families). A variable that *chooses* a path the pins
exclude (`ATEN_CPU_CAPABILITY=avx512`, `OPENBLAS_CORETYPE=SkylakeX`) is a user's choice,
which `clusterfl` keeps, and a CPU without AVX2 (`ATEN_CPU_CAPABILITY=default`) cannot run
the pinned paths: neither is a family here (docs/reliability.md).

Cells: P1's torch engine (MLR: FedAvg; pFedKM's scikit-learn k-means), a CNN (oneDNN's
convolutions) on random Fashion-MNIST-shaped images, P4's float64 linear regression, P5's
matrix factorization (FedCGds) and its K-means++. With `CLUSTERFL_CPU_PINS=0` the test fails
on an AVX-512 machine (the P1 cells under `aten_avx2`). Run as a script
(`python tests/test_cpu_families.py OUT`) it trains the cells in that process, as each
family's subprocess does.
"""

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# what a family sets; removed from every family's environment first (this test's own process
# has pinned them already: a child would take them for the user's)
CHOSEN = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA",
          "DNNL_MAX_CPU_ISA", "OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES",
          "NPY_ENABLE_CPU_FEATURES", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
          "OPENBLAS_NUM_THREADS", "CLUSTERFL_THREADS")  # not CLUSTERFL_CPU_PINS=0: no pins
NUMPY_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"  # numpy 2.x's AVX-512 dispatch targets
EXACT = {"CLUSTERFL_CPU_PINS": "exact"}
FAMILIES = {  # name: the variables it sets; each is compared with `host`, exact_* with exact
    "host": {},
    "aten_avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "onednn_avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
    "openblas_zen": {"OPENBLAS_CORETYPE": "Zen"},
    "numpy_avx2": {"NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512},
    "intel_avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                   "OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512},
    "cores_1": {"OMP_NUM_THREADS": "1"},
    "cores_3": {"OMP_NUM_THREADS": "3"},
    "exact": EXACT,
    "exact_mkl_avx2": EXACT | {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "exact_mkl_avx512": EXACT | {"MKL_ENABLE_INSTRUCTIONS": "AVX512"},
}


def train_cells(out: Path) -> dict[str, str]:
    """Train every cell (seed 0) into `out/<cell>/` with the threads `clusterfl train` would
    use (CLUSTERFL_THREADS, else torch's default); sha256 of each cell's written bytes."""
    import clusterfl  # noqa: F401  (first: the pins, as every entry point does)

    # isort: split
    import numpy as np

    from clusterfl.core.types import Dataset
    from clusterfl.data import build_dataset
    from clusterfl.engine import configure_threads
    from clusterfl.partition import build_partition
    from clusterfl.run.config import load_params
    from clusterfl.run.runner import run_seed

    threads = os.environ.get("CLUSTERFL_THREADS")
    configure_threads(int(threads) if threads else None)
    params = load_params(ROOT / "params.yaml")
    bench = load_params(ROOT / "suites/benchmark/params.yaml")
    rng = np.random.default_rng(0)
    images = Dataset("fashion_mnist", rng.random((80, 1, 28, 28), dtype=np.float32),
                     np.tile(np.arange(10), 8), 10)
    cells = (  # (name, suite, experiment, algorithm, dataset (None: the suite's, shrunk),
        # dataset options, partition options, rounds, experiment changes)
        ("p1_fedavg", params, "p1_synthetic_mlr", "fedavg", None,
         {"clients_per_cluster": 2, "max_size": 80}, {}, 2, {}),
        ("p1_pfedkm", params, "p1_synthetic_mlr", "pfedkm_k2", None,
         {"clients_per_cluster": 2, "max_size": 80}, {}, 2, {}),
        ("cnn_fedavg", bench, "bm_rot4", "fedavg", images, {}, {"num_clients": 4}, 1,
         {"model": "cnn", "model_options": {"channels": [2, 4], "hidden": 8},
          "evaluators": ("clients",)}),
        ("p4_pfl_tc", params, "p4_fig1_n100", "pfl_tc", None, {"clients_per_cluster": 2}, {},
         5, {}),
        ("p5_fedcgds", params, "p5_small_noniid", "fedcgds", None,
         {"features": 60, "samples": 300}, {}, 2, {}),
        ("p5_kmeanspp", params, "p5_small_noniid", "kmeanspp", None,
         {"features": 60, "samples": 300}, {}, 1, {}),
    )
    digests = {}
    for name, suite, experiment, algorithm, dataset, shrink, part, rounds, change in cells:
        # the CNN on the per-client loop: vmap's first pass over a CNN costs seconds
        engine = "reference" if "model" in change else "vectorized"
        exp = suite.experiment(experiment)
        exp = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule, rounds=rounds),
                                  **change)
        entry = dict(suite.partition(exp.partition))
        source_name = entry.pop("dataset")
        if dataset is None:
            source, options = suite.dataset(source_name)
            dataset = build_dataset(source, {**options, **shrink}, f"datasets.{source_name}")
        scheme = entry.pop("scheme")
        entry.pop("validation_fraction", None)
        partition = build_partition(dataset, scheme, {**entry, **part}, 0,
                                    f"partitions.{exp.partition}")
        history = run_seed(exp, suite.algorithm(algorithm, experiment=experiment), dataset,
                           partition, 0, engine=engine)
        cell = out / name
        cell.mkdir(parents=True)
        history.write(cell)
        digests[name] = hashlib.sha256(b"".join(
            (cell / f).read_bytes() for f in ("history.json", "history.csv"))).hexdigest()
    return digests


def _family(name: str, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CHOSEN} | FAMILIES[name]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    proc = subprocess.run([sys.executable, __file__, str(tmp / name)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def families(tmp_path_factory) -> dict[str, dict[str, str]]:
    """Each family's digests: one subprocess per family, two at a time (2 cores)."""
    from concurrent.futures import ThreadPoolExecutor

    tmp = tmp_path_factory.mktemp("families")
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(FAMILIES, pool.map(lambda n: _family(n, tmp), FAMILIES), strict=True))


@pytest.mark.slow
def test_every_simulated_cpu_family_writes_the_same_bytes(families):
    differ = {}
    for name, digests in families.items():
        base = families["exact" if name.startswith("exact") else "host"]
        cells = sorted(c for c in base if digests[c] != base[c])
        if cells:
            differ[name] = cells
    assert not differ, "cells whose bytes differ from host's (exact_*: from exact's), by family"


AVX512_ZEN = frozenset({"avx2", "fma", "avx512f"})


def test_the_pins_apply_by_cpu_keep_the_users_values_and_can_be_switched():
    from clusterfl import pin_cpu_paths

    env = {"OPENBLAS_CORETYPE": "Zen", "DNNL_MAX_CPU_ISA": "AVX512_CORE"}  # the user's
    assert pin_cpu_paths(env, AVX512_ZEN) == {
        "ATEN_CPU_CAPABILITY": "avx2", "NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512}
    assert env["OPENBLAS_CORETYPE"] == "Zen" and "ONEDNN_MAX_CPU_ISA" not in env
    avx2_only = frozenset({"avx2", "fma"})  # nothing of numpy's to turn off
    assert set(pin_cpu_paths({}, avx2_only)) == {
        "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "OPENBLAS_CORETYPE"}
    assert pin_cpu_paths({}, frozenset({"sse4_2"})) == {}  # no AVX2: the libraries' choice
    exact = {"CLUSTERFL_CPU_PINS": "exact", "OMP_NUM_THREADS": "4"}
    assert pin_cpu_paths(exact, AVX512_ZEN).keys() >= {"MKL_CBWR", "CLUSTERFL_THREADS"}
    assert exact["MKL_CBWR"] == "COMPATIBLE" and exact["OMP_NUM_THREADS"] == "4"
    assert pin_cpu_paths({"CLUSTERFL_CPU_PINS": "0"}, AVX512_ZEN) == {}


def test_the_entry_points_pin_before_the_libraries_load():
    """`python -m pipeline.X` (pipeline.train imports numpy first) and the CLI's module: numpy,
    its OpenBLAS and torch load after the pins, so they take the pinned paths."""
    from clusterfl import cpu_flags

    flags = cpu_flags()
    if not flags or not {"avx2", "fma"} <= flags:
        pytest.skip("no x86-64 CPU with AVX2 and FMA here: nothing is pinned")
    code = ("import pipeline.train, pipeline.cli, numpy, torch, threadpoolctl\n"
            "torch.ones(2).sum()\n"
            "from numpy._core._multiarray_umath import __cpu_features__ as f\n"
            "blas = [i['architecture'] for i in threadpoolctl.threadpool_info()"
            " if i['internal_api'] == 'openblas']\n"
            "print(torch.backends.cpu.get_cpu_capability(), f['X86_V4'], *blas)")
    env = {k: v for k, v in os.environ.items() if k not in CHOSEN}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    capability, avx512_loops, *blas = proc.stdout.split()
    assert capability == "AVX2" and avx512_loops == "False"
    assert blas and set(blas) == {"Haswell"}


if __name__ == "__main__":
    print(json.dumps(train_cells(Path(sys.argv[1]))))
