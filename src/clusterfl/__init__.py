"""clusterfl: a reproducibility pipeline for clustered and personalized federated learning.

The core library: data sources, partition schemes, models, the local-training engine,
algorithms on a shared round loop, run histories and reports. Nothing here imports DVC or
Typer; MLflow is imported only by `clusterfl.run.tracking`.
"""

import os
import re
from pathlib import Path

__version__ = "0.1.0"


def _pin_cpu_kernels() -> None:
    """The same numbers on every x86-64 machine: PyTorch picks its vectorized CPU kernels by
    the processor (AVX2 or AVX-512), and the two add in different orders. Measured: the
    default suite's torch-trained cells (P1, P3) gave other last bits, so another dvc.lock,
    on an AVX-512 machine than on the AVX2 one that wrote the lock; with AVX2 kernels pinned
    the AVX-512 machine wrote the same bytes. Pinned only where the CPU has AVX2 (ATen trusts
    the variable and would run AVX2 code on any CPU), before the first torch operation (ATen
    reads it then, not at import); a value the user set wins."""
    if "ATEN_CPU_CAPABILITY" in os.environ:
        return
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux: PyTorch's own choice
        return
    if re.search(r"^flags\s*:.*\bavx2\b", cpuinfo, flags=re.M):
        os.environ["ATEN_CPU_CAPABILITY"] = "avx2"


_pin_cpu_kernels()
