"""Compiled loops (numba) for the build: dedup's signature kernel (``dedup/kernel.py``) and redaction's scans
(``redact/kernels.py``). Each sits under a plain definition and is pinned to it by a test.

``warm()`` compiles them (or loads them from numba's disk cache beside their source) with the argument types the
build uses; ``make setup`` runs it once per install so no build pays the compilation.
"""

from __future__ import annotations

__all__ = ["warm"]


def warm() -> None:
    """Compile every kernel the build calls (or load it from the disk cache)."""
    # heavy: numba; the kernel modules compile (or load from the disk cache) on import, only when warm() runs
    from harnessfit.dataset.dedup import kernel as dedup_kernel
    from harnessfit.dataset.redact import kernels as redaction_kernels

    dedup_kernel.warm()
    redaction_kernels.warm()
