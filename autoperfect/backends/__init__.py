"""Backends: where a kernel runs. Each module renders KernelIR, builds it and loads it."""

from __future__ import annotations

from types import ModuleType

KNOWN = ("cpu", "cuda", "metal", "mlx")


class BackendError(ValueError):
    pass


def get(name: str) -> ModuleType:
    if name == "cpu":
        from . import cpu
        return cpu
    if name == "mlx":
        from . import mlx
        return mlx
    if name in KNOWN:
        raise BackendError(f"backend {name!r} is not available in this version (available: cpu)")
    raise BackendError(f"unknown backend {name!r} (known: {', '.join(KNOWN)})")


def available() -> list[str]:
    """Backends this machine can run: the CPU always; GPUs when MLX sees one (not yet rendered)."""
    return ["cpu"]


def resolve(requested: list[str]) -> list[str]:
    """`[auto]` -> what the machine has; explicit names are checked."""
    out: list[str] = []
    for name in requested:
        for b in (available() if name == "auto" else [name]):
            get(b)
            if b not in out:
                out.append(b)
    return out
