"""Backends: where a kernel runs. Each module renders KernelIR, builds it and loads it."""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType

KNOWN = ("cpu", "cuda", "metal", "mlx")
GPU = ("cuda", "metal")


class BackendError(ValueError):
    pass


def get(name: str) -> ModuleType:
    if name == "cpu":
        from . import cpu
        return cpu
    if name == "mlx":
        from . import mlx
        return mlx
    if name == "cuda":
        from . import cuda
        return cuda
    if name == "metal":
        from . import metal
        return metal
    raise BackendError(f"unknown backend {name!r} (known: {', '.join(KNOWN)})")


def available() -> list[str]:
    """Backends this machine can run: the CPU always; a GPU backend when MLX sees its GPU."""
    return ["cpu"] + [name for name in GPU if not missing_device(name)]


@lru_cache(maxsize=1)
def drives_gpu() -> bool:
    """Whether MLX drives a GPU on this machine. Its CUDA build then starts the GPU when it is
    imported, for CPU work too, and the context reserves far more address space than it uses."""
    return len(available()) > 1


def for_default_device() -> str:
    """The backend that computes where MLX does by default: the GPU's when MLX's default device is
    a GPU this machine runs kernels on, else the CPU's (what `autoperfect.jit`'s "auto" means: a
    kernel on the other device would compute far from the user's arrays)."""
    import mlx.core as mx

    gpus = available()[1:] if mx.default_device().type == mx.DeviceType.gpu else []
    return gpus[0] if gpus else "cpu"


def missing_device(name: str) -> str:
    """Why this machine can't run backend `name` ("" when it can). A GPU backend still renders and
    compile-checks anywhere; its validation then says it was not run, and why."""
    return get(name).missing_device() if name in GPU else ""


def resolve(requested: list[str]) -> list[str]:
    """`[auto]` -> what the machine has; explicit names are checked."""
    out: list[str] = []
    for name in requested:
        for b in (available() if name == "auto" else [name]):
            get(b)
            if b not in out:
                out.append(b)
    return out
