"""Op specs: the fixed format of config.yaml's `ops:` entries, checked with errors that name the op
and the field."""

from __future__ import annotations

import ast
import builtins
import hashlib
import importlib
import inspect
import json
import math
from dataclasses import dataclass
from typing import Any, Callable

from . import dtypes

KNOWN_OP_KEYS = {"fn", "inputs", "fast", "note"}
KNOWN_INPUT_KEYS = {"shape", "dtype", "range"}


class SpecError(ValueError):
    """A bad op spec. `op` and `field` say where; the message says what is wrong."""

    def __init__(self, op: str, field: str, message: str):
        super().__init__(f"op {op!r}, field {field!r}: {message}")
        self.op, self.field = op, field


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    range: tuple[float, float] | None = None


@dataclass(frozen=True)
class OpSpec:
    name: str
    fn: str  # Python source, or "package.module:function"
    inputs: tuple[InputSpec, ...]
    fast: str | None = None  # an expression over the inputs using mx.fast.*, the op's fused MLX twin

    @property
    def is_reference(self) -> bool:
        return "\n" not in self.fn.strip() and ":" in self.fn and "def " not in self.fn

    def function(self) -> Callable:
        """The user's function (with the real `mlx.core` in scope)."""
        from .trace import function_from_source

        if self.is_reference:
            module, _, attr = self.fn.strip().partition(":")
            try:
                found = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as e:
                raise SpecError(self.name, "fn", f"cannot import {self.fn.strip()!r}: {e}") from None
            if not inspect.isfunction(found):  # the tracer reads a def's globals and source lines
                raise SpecError(self.name, "fn", f"{self.fn.strip()!r} is a {type(found).__name__}, "
                                                 "not a Python function written with def")
            return found
        try:
            return function_from_source(self.fn, f"<op {self.name}>")
        except SyntaxError as e:
            raise SpecError(self.name, "fn", f"does not parse: {e.msg} (line {e.lineno})") from None
        except ValueError as e:
            raise SpecError(self.name, "fn", str(e)) from None
        except Exception as e:
            raise SpecError(self.name, "fn", f"failed when defined: {type(e).__name__}: {e}") from None

    def to_json(self) -> dict:
        return {"name": self.name, "fn": self.fn, "fast": self.fast,
                "inputs": [{"name": i.name, "shape": list(i.shape), "dtype": i.dtype,
                            "range": list(i.range) if i.range else None} for i in self.inputs]}

    @staticmethod
    def from_json(d: dict) -> "OpSpec":
        return OpSpec(d["name"], d["fn"], tuple(
            InputSpec(i["name"], tuple(i["shape"]), i["dtype"], tuple(i["range"]) if i["range"] else None)
            for i in d["inputs"]), d.get("fast"))

    def digest(self) -> str:
        """Names this exact spec; it changes when anything about the op changes."""
        text = json.dumps(self.to_json(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def with_shapes(self, shapes: dict[str, tuple[int, ...]]) -> "OpSpec":
        inputs = tuple(InputSpec(i.name, tuple(shapes[i.name]), i.dtype, i.range) for i in self.inputs)
        return OpSpec(self.name, self.fn, inputs, self.fast)


def parse_op(name: str, raw: Any) -> OpSpec:
    """Check one `ops:` entry and return it as an OpSpec."""
    if not isinstance(name, str) or not name.isidentifier():
        raise SpecError(str(name), "name", "op names must be identifiers (letters, digits, _)")
    if not isinstance(raw, dict):
        raise SpecError(name, "(spec)", f"expected a mapping with 'fn' and 'inputs', got {type(raw).__name__}")
    unknown = set(raw) - KNOWN_OP_KEYS
    if unknown:
        raise SpecError(name, sorted(unknown)[0], f"unknown key (known: {', '.join(sorted(KNOWN_OP_KEYS))})")
    fn = raw.get("fn")
    if not isinstance(fn, str) or not fn.strip():
        raise SpecError(name, "fn", "missing: Python source defining one function, or 'module:function'")
    raw_inputs = raw.get("inputs")
    if not isinstance(raw_inputs, dict) or not raw_inputs:
        raise SpecError(name, "inputs", "missing: a mapping from parameter name to {shape, dtype}")
    inputs = tuple(_parse_input(name, arg, spec) for arg, spec in raw_inputs.items())
    fast = raw.get("fast")
    if fast is not None and not isinstance(fast, str):
        raise SpecError(name, "fast", "must be an expression string, e.g. mx.fast.rms_norm(x, w, 1e-6)")
    op = OpSpec(name, fn, inputs, fast)
    if not op.is_reference:
        _check_source(op)
    if fast is not None:
        _check_fast(name, fast, inputs)
    return op


def _check_fast(op: str, fast: str, inputs: tuple[InputSpec, ...]) -> None:
    """A `fast:` expression parses, names only the inputs, `mx` and Python's builtins, and every
    `mx.` path it calls exists in this MLX: a typo fails here, before any job, not at the bench."""
    try:
        tree = ast.parse(fast, mode="eval")
    except SyntaxError as e:
        raise SpecError(op, "fast", f"does not parse: {e.msg}") from None
    import mlx.core as mx

    known = {i.name for i in inputs} | {"mx"} | set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in known:
            raise SpecError(op, "fast", f"names {node.id!r}, which is neither an input "
                                        f"({', '.join(i.name for i in inputs)}) nor mx")
        path, root = [], node
        while isinstance(root, ast.Attribute):
            path.insert(0, root.attr)
            root = root.value
        if isinstance(node, ast.Attribute) and isinstance(root, ast.Name) and root.id == "mx":
            found = mx
            for n, attr in enumerate(path):
                found = getattr(found, attr, None)
                if found is None:
                    raise SpecError(op, "fast", f"mx.{'.'.join(path[:n + 1])} does not exist in MLX {mx.__version__}")


def _parse_input(op: str, arg: Any, raw: Any) -> InputSpec:
    field = f"inputs.{arg}"
    if not isinstance(arg, str) or not arg.isidentifier():
        raise SpecError(op, field, "input names must be identifiers")
    if not isinstance(raw, dict):
        raise SpecError(op, field, "expected {shape: [...], dtype: ...}")
    unknown = set(raw) - KNOWN_INPUT_KEYS
    if unknown:
        raise SpecError(op, f"{field}.{sorted(unknown)[0]}", "unknown key (known: shape, dtype, range)")
    shape = raw.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0
                                              for d in shape):
        raise SpecError(op, f"{field}.shape", f"must be a list of positive integers, got {shape!r}")
    if math.prod(shape) > 2**31 - 1:
        raise SpecError(op, f"{field}.shape", f"{shape} has more than 2^31-1 elements")
    dtype = raw.get("dtype", "float32")
    if dtype not in dtypes.DTYPES:
        raise SpecError(op, f"{field}.dtype", f"unknown dtype {dtype!r} (known: {', '.join(dtypes.DTYPES)})")
    rng = raw.get("range")
    if rng is not None:
        if (not isinstance(rng, list) or len(rng) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                           for v in rng) or not rng[0] < rng[1]):
            raise SpecError(op, f"{field}.range", f"must be [lo, hi] with finite lo < hi, got {rng!r}")
        rng = (float(rng[0]), float(rng[1]))
    return InputSpec(arg, tuple(shape), dtype, rng)


def _check_source(op: OpSpec) -> None:
    try:
        tree = ast.parse(op.fn)
    except SyntaxError as e:
        raise SpecError(op.name, "fn", f"does not parse: {e.msg} (line {e.lineno})") from None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(defs) != 1:
        raise SpecError(op.name, "fn", f"defines {len(defs)} functions; exactly one is expected")
    params = [a.arg for a in defs[0].args.posonlyargs + defs[0].args.args]
    names = [i.name for i in op.inputs]
    if params != names:
        raise SpecError(op.name, "inputs", f"the function's parameters {params} differ from the "
                                           f"inputs {names} (same names, same order)")


def parse_ops(raw_ops: Any) -> dict[str, OpSpec]:
    if not isinstance(raw_ops, dict) or not raw_ops:
        raise SpecError("(config)", "ops", "config.yaml needs an 'ops:' mapping with at least one op")
    return {name: parse_op(name, raw) for name, raw in raw_ops.items()}


def seed_for(*parts: str) -> int:
    """A deterministic 64-bit seed from names (sha256, never Python's salted hash())."""
    return int.from_bytes(hashlib.sha256("/".join(parts).encode()).digest()[:8], "little")
