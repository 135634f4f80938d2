"""clusterfl: a reproducibility pipeline for clustered and personalized federated learning.

The core library: data sources, partition schemes, models, the local-training engine,
algorithms on a shared round loop, run histories and reports. Nothing here imports DVC or
Typer; MLflow is imported only by `clusterfl.run.tracking`.
"""

import os
import platform
import re
from collections.abc import Callable, MutableMapping
from pathlib import Path

__version__ = "0.1.0"

# The same bytes on every x86-64 CPU with AVX2 (docs/reliability.md): each math library
# picks its code path by the processor, and paths add in different orders. One pin per
# library, each the path every such CPU can run: (variable, value, when it applies, other
# variables that mean the user chose already). Read when the library loads or first runs,
# so `import clusterfl` must come before torch, numpy, scipy or scikit-learn: the CLI and
# `python -m pipeline.X` import it first (`pipeline/__init__`), spawned workers inherit the
# variables. A value already set wins (e.g. a machine's OPENBLAS_CORETYPE).
Flags = frozenset[str]
Pin = tuple[str, str, Callable[[Flags], bool], tuple[str, ...]]
PINS: tuple[Pin, ...] = (
    # PyTorch's own kernels (ATen): AVX-512 ones reduce in another order than AVX2 ones.
    # ATen trusts the variable and would run AVX2 code on any CPU: only where there is AVX2.
    ("ATEN_CPU_CAPABILITY", "avx2", lambda f: "avx2" in f, ()),
    # oneDNN (torch's convolutions): AVX-512 kernels on AVX-512 CPUs.
    ("ONEDNN_MAX_CPU_ISA", "AVX2", lambda f: "avx2" in f, ("DNNL_MAX_CPU_ISA",)),
    # OpenBLAS (numpy, scipy, scikit-learn): SkylakeX kernels on AVX-512 CPUs; Haswell's are
    # what Intel AVX2 CPUs run, and AMD Zen's `Zen` core type gives the same bytes.
    ("OPENBLAS_CORETYPE", "Haswell", lambda f: {"avx2", "fma"} <= f, ()),
    # numpy's own SIMD loops (exp, log, power, ...): AVX-512 variants on AVX-512 CPUs. The
    # names are numpy 2.x's dispatch targets (requirements.lock pins numpy).
    ("NPY_DISABLE_CPU_FEATURES", "X86_V4 AVX512_ICL AVX512_SPR", lambda f: "avx512f" in f,
     ("NPY_ENABLE_CPU_FEATURES",)),
)
# `CLUSTERFL_CPU_PINS=exact` adds MKL (torch's BLAS and LAPACK), whose path also differs
# between Intel AVX2, Intel AVX-512 and AMD CPUs: COMPATIBLE is its one branch that all of
# them run (MKL_CBWR=AVX2 falls back to the AUTO branch on AMD), and it gives the same
# bytes at one fixed number of threads only. Not the default: a round takes twice as long
# (docs/reliability.md).
EXACT: tuple[Pin, ...] = (
    ("MKL_CBWR", "COMPATIBLE", lambda f: True, ()),
    ("OMP_NUM_THREADS", "1", lambda f: True, ()),
    ("CLUSTERFL_THREADS", "1", lambda f: True, ()),
)
MODE = "CLUSTERFL_CPU_PINS"  # unset: PINS; `exact`: PINS + EXACT; `0`: none


def cpu_flags() -> Flags | None:
    """The CPU's feature flags from /proc/cpuinfo; None where there is none (not Linux) or
    the machine is not x86-64 (other architectures: each library's own choice)."""
    if platform.machine().lower() not in {"x86_64", "amd64"}:
        return None
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    line = re.search(r"^flags\s*:(.*)$", cpuinfo, flags=re.M)
    return frozenset(line.group(1).split()) if line else None


def pin_cpu_paths(environ: MutableMapping[str, str] = os.environ,
                  flags: Flags | None = None) -> dict[str, str]:
    """Set each pin that applies to this CPU (`flags`, default /proc/cpuinfo's) and whose
    variables the user has not set; returns what it set."""
    mode = environ.get(MODE, "").strip().lower()
    if mode in {"0", "off", "false", "no"}:
        return {}
    flags = cpu_flags() if flags is None else flags
    if flags is None:
        return {}
    pinned = {}
    for name, value, applies, aliases in PINS + (EXACT if mode == "exact" else ()):
        if applies(flags) and not any(n in environ for n in (name, *aliases)):
            environ[name] = pinned[name] = value
    return pinned


PINNED = pin_cpu_paths()
