"""Sizes read from params checked against this machine's memory before anything is
allocated: a generator asked for 10^11 clients is one line naming the key, not numpy's
`_ArrayMemoryError` (or the kernel's OOM killer) after minutes of work."""

import os

from clusterfl.errors import UserError

FLOAT64 = 8  # bytes: generators draw float64 before storing float32


def available_bytes() -> int:
    """Memory a new allocation can have now: MemAvailable of /proc/meminfo (Linux), else
    the machine's physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # not reached


def require_fits(key: str, needed: int, what: str, available: int | None = None) -> None:
    """A one-line `UserError` for `key` if `needed` bytes (`what` says for what) exceed the
    memory available now."""
    free = available_bytes() if available is None else available
    if needed > free:
        raise UserError(f"{key}: {what} needs at least {human(needed)} of memory, more than "
                        f"the {human(free)} available here; lower it")
