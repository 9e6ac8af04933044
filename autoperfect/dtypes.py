"""Element types: the names used in specs and IRs, and their numpy / MLX / C counterparts."""

from __future__ import annotations

import numpy as np

FLOATS = ("float32", "float16", "bfloat16")
DTYPES = FLOATS + ("int32", "uint32", "bool")

# numpy has no bfloat16: the interpreter holds it in float32 and rounds after every step.
_NUMPY = {"float32": np.float32, "float16": np.float16, "bfloat16": np.float32,
          "int32": np.int32, "uint32": np.uint32, "bool": np.bool_}
EPS = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}  # unit roundoff
TINY = {"float32": 2.0 ** -126, "float16": 2.0 ** -14, "bfloat16": 2.0 ** -126}  # smallest normal
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "int32": 4, "uint32": 4, "bool": 1}


def check(name: str) -> str:
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r} (known: {', '.join(DTYPES)})")
    return name


def to_numpy(name: str):
    return _NUMPY[check(name)]


def to_mlx(name: str):
    import mlx.core as mx
    return mx.bool_ if check(name) == "bool" else getattr(mx, name)


def from_mlx(dtype) -> str:
    name = str(dtype).rsplit(".", 1)[-1]
    return check(name)


def round_to(x: np.ndarray, name: str) -> np.ndarray:
    """Round float64 (or float32) values to `name`, held in its numpy container type."""
    if name == "bfloat16":
        bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
        nan = np.isnan(np.asarray(x, dtype=np.float32))
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        out = rounded.astype(np.uint32).view(np.float32)
        return np.where(nan, np.float32(np.nan), out)
    return np.asarray(x).astype(to_numpy(name))


def promote(a: str, b: str) -> str:
    """MLX's promotion of two array dtypes (bool < int32 < floats; float16 with bfloat16 -> float32)."""
    if a == b:
        return a
    order = {"bool": 0, "uint32": 1, "int32": 2}
    if a in order and b in order:
        return a if order[a] > order[b] else b
    if a in order:
        return b
    if b in order:
        return a
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    return "float32" if "float32" in (a, b) else a
