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
    """Round float64 (or float32) values to `name`, held in its numpy container type: once, to
    nearest even (numpy's float16 does so from float64; bfloat16 below)."""
    if name == "bfloat16":
        if np.asarray(x).dtype == np.float64:
            return _bfloat16_of_float64(np.asarray(x))
        bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
        nan = np.isnan(np.asarray(x, dtype=np.float32))
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        out = rounded.astype(np.uint32).view(np.float32)
        return np.where(nan, np.float32(np.nan), out)
    with np.errstate(over="ignore"):  # a value past float16's range rounds to inf, as it should
        return np.asarray(x).astype(to_numpy(name))


def _bfloat16_of_float64(x: np.ndarray) -> np.ndarray:
    """float64 values rounded once to bfloat16's 8 significant bits (to nearest even; below 2^-126
    to its subnormal step, 2^-133), as float32, which holds them exactly. Through float32 first, a
    value a hair above a bfloat16 tie would round to the tie and then to even: twice."""
    with np.errstate(over="ignore", invalid="ignore"):
        bits = x.astype(np.float64).view(np.uint64)  # a copy: the view needs no contiguous input
        drop = np.uint64(45)  # float64's 52 fraction bits less bfloat16's 7
        half = np.uint64((1 << 44) - 1)
        normal = ((bits + half + ((bits >> drop) & np.uint64(1))) & ~np.uint64((1 << 45) - 1)).view(np.float64)
        step = 2.0 ** -81  # adding it rounds |x| < 2^-126 to a multiple of 2^-133, to nearest even
        subnormal = np.copysign((np.abs(x) + step) - step, x)
        rounded = np.where(np.abs(x) < 2.0 ** -126, subnormal, normal).astype(np.float32)
        return np.where(np.isnan(x), np.float32(np.nan), rounded)


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
