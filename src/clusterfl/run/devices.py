"""The torch device a run trains on: `cpu`, `cuda` or `auto` (cuda where one is available).

Numbers are reproducible per device: the same seed gives the same history on CPU every time,
but a CUDA run differs from a CPU run in the last bits (other kernels, other summation order).
"""

from clusterfl.core.errors import UserError, unknown_name

DEVICES = ("cpu", "cuda", "auto")


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def resolve_device(name: str, has_cuda: bool | None = None, where: str = "this machine") -> str:
    """`cpu` or `cuda` for the option value `name`; `has_cuda` defaults to this process's
    torch. A one-line UserError for an unknown name or `cuda` without a CUDA device."""
    if name not in DEVICES:
        raise unknown_name("--device", name, DEVICES)
    available = cuda_available() if has_cuda is None else has_cuda
    if name == "auto":
        return "cuda" if available else "cpu"
    if name == "cuda" and not available:
        raise UserError(f"--device cuda: no CUDA device on {where}; use --device cpu or auto")
    return name
