"""The `mlx` backend: KernelIR -> pure-MLX Python, portable to every device MLX runs on.

A kernel becomes one Python function over whole arrays: loads are `mx.as_strided` views of the
inputs' buffers (the launch's dims and strides, so one source serves every shape), elementwise
instructions are MLX ops, a row reduction is a reduction over the last axis with keepdims, and the
function is wrapped in `mx.compile` so MLX fuses its elementwise parts. The source is untrusted like
any other candidate: `build` parses it and allows nothing but `mx.*` calls and arithmetic.
"""

from __future__ import annotations

import ast
import hashlib
import os
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ..kernel_ir import Instr, KernelIR, Launch, constant
from ..ops import Op
from .cfamily import Schedule, Unsupported
from .cpu import Build, as_numpy, default_cache_dir

NAME = "mlx"

UNARY = {
    Op.NEG: "mx.negative({0})", Op.ABS: "mx.abs({0})", Op.SQUARE: "mx.square({0})", Op.SQRT: "mx.sqrt({0})",
    Op.RSQRT: "mx.rsqrt({0})", Op.RECIPROCAL: "mx.reciprocal({0})", Op.EXP: "mx.exp({0})",
    Op.EXPM1: "mx.expm1({0})", Op.LOG: "mx.log({0})", Op.LOG1P: "mx.log1p({0})", Op.TANH: "mx.tanh({0})",
    Op.SIGMOID: "mx.sigmoid({0})", Op.ERF: "mx.erf({0})", Op.SIN: "mx.sin({0})", Op.COS: "mx.cos({0})",
    Op.FLOOR: "mx.floor({0})", Op.CEIL: "mx.ceil({0})", Op.SIGN: "mx.sign({0})",
    Op.NOT: "mx.logical_not({0})", Op.ISNAN: "mx.isnan({0})", Op.ISINF: "mx.isinf({0})",
}
BINARY = {
    Op.ADD: "mx.add", Op.SUB: "mx.subtract", Op.MUL: "mx.multiply", Op.DIV: "mx.divide", Op.POW: "mx.power",
    Op.MAX: "mx.maximum", Op.MIN: "mx.minimum", Op.EQ: "mx.equal", Op.NE: "mx.not_equal", Op.LT: "mx.less",
    Op.LE: "mx.less_equal", Op.GT: "mx.greater", Op.GE: "mx.greater_equal", Op.AND: "mx.logical_and",
    Op.OR: "mx.logical_or",
}
REDUCTIONS = {Op.SUM: "mx.sum", Op.PROD: "mx.prod", Op.RMAX: "mx.max", Op.RMIN: "mx.min"}
# what the generated source may call: the renderer's own vocabulary, nothing else
ALLOWED_CALLS = ({t.split("(")[0] for t in UNARY.values()} | set(BINARY.values()) | set(REDUCTIONS.values())
                 | {"mx.as_strided", "mx.where", "mx.array", "mx.reshape", "mx.broadcast_to", "mx.contiguous",
                    "mx.transpose"})


def schedules_for(kernel: KernelIR) -> tuple[Schedule, ...]:
    return (Schedule("mlx"),)


def probe_schedule(schedule: Schedule) -> Schedule:
    """The candidate's own schedule (MLX's functions: one rendering per schedule)."""
    return schedule


def compiler() -> str:
    import mlx.core as mx
    return f"mlx {mx.__version__}"


class MlxRenderer:
    """KernelIR -> `def NAME(inputs, dims, strides, out_shapes): ... return [outputs]`."""

    def __init__(self, kernel: KernelIR):
        self.k = kernel
        for ins in kernel.body:
            if ins.op not in UNARY and ins.op not in BINARY and ins.op not in REDUCTIONS and ins.op not in (
                    Op.LOAD, Op.STORE, Op.CONST, Op.WHERE, Op.CAST):
                raise Unsupported(f"no MLX rendering for {ins.op.value}")

    def dtype(self, name: str) -> str:
        return "mx.bool_" if name == "bool" else f"mx.{name}"

    def expr(self, ins: Instr) -> str:
        v = [f"v{s}" for s in ins.srcs]
        if ins.op is Op.LOAD:
            a = ins.attr("arg")
            if ins.space == "elem":
                return f"mx.as_strided(inputs[{a}], dims, strides[{a}])"
            return f"mx.as_strided(inputs[{a}], row, strides[{a}][:-1] + (0,))"
        if ins.op is Op.CONST:
            if ins.attr("size") == "last":
                return f"mx.array(dims[-1] - {ins.attr('minus')}, {self.dtype(ins.dtype)})"
            return f"mx.array({constant(ins).item()!r}, {self.dtype(ins.dtype)})"
        if ins.op is Op.CAST:
            return f"{v[0]}.astype({self.dtype(ins.dtype)})"
        if ins.op is Op.WHERE:
            return f"mx.where({v[0]}, {v[1]}, {v[2]})"
        if ins.op in REDUCTIONS:
            return f"{REDUCTIONS[ins.op]}({v[0]}, axis=-1, keepdims=True)"
        if ins.op in UNARY:
            return UNARY[ins.op].format(*v)
        return f"{BINARY[ins.op]}({v[0]}, {v[1]})"

    def render(self) -> str:
        k = self.k
        lines = [f"def {k.name}(inputs, dims, strides, out_shapes):", "    row = dims[:-1] + (1,)"]
        outputs = []
        for ins in k.body:
            if ins.op is Op.STORE:
                j = ins.attr("arg") - len(k.inputs)
                shape = "dims" if ins.space == "elem" else "row"
                value = f"mx.broadcast_to(v{ins.srcs[0]}, {shape})"
                if k.loop and ins.space == "elem":  # a permuted loop's values, back in the array's order
                    value = f"mx.transpose({value}, {[k.loop.index(a) for a in range(k.rank)]})"
                outputs.append(f"mx.reshape({value}, out_shapes[{j}])")
                continue
            lines.append(f"    v{ins.id} = {self.expr(ins)}")
        lines.append(f"    return [{', '.join(outputs)}]")
        return "\n".join(lines) + "\n"


def render(kernel: KernelIR, schedule: Schedule = Schedule("mlx")) -> str:
    return MlxRenderer(kernel).render()


def check_source(source: str) -> str | None:
    """Why `source` may not run (None if it may): one function, `mx.*` calls from the renderer's
    vocabulary, arithmetic, subscripts and tuples; no imports, attributes outside `mx`, or names
    beyond its arguments and locals."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return f"does not parse: {e.msg} (line {e.lineno})"
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return "must be exactly one function definition"
    fn = tree.body[0]
    known = {a.arg for a in fn.args.args} | {"mx", "row"}
    known |= {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    for node in ast.walk(fn):
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Lambda, ast.With,
                             ast.While, ast.For, ast.Try, ast.ClassDef, ast.AsyncFunctionDef)):
            return f"{type(node).__name__} is not allowed (line {node.lineno})"
        if isinstance(node, ast.FunctionDef) and node is not fn:
            return f"nested function (line {node.lineno})"
        if isinstance(node, ast.Attribute):
            if not (isinstance(node.value, ast.Name) and node.value.id == "mx") and node.attr != "astype":
                return f"attribute .{node.attr} outside mx (line {node.lineno})"
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name not in ALLOWED_CALLS and not name.endswith(".astype"):
                return f"call to {name} is not in the kernel's vocabulary (line {node.lineno})"
        if isinstance(node, ast.Name) and node.id not in known and not node.id.startswith("v"):
            return f"unknown name {node.id} (line {node.lineno})"
    return None


def source_of(library: str) -> Path:
    """The rendered source a build kept: the "library" is that source itself (`.py`)."""
    return Path(library)


def build(source: str, cache_dir: Path | None = None, timeout_s: float = 0) -> Build:
    """Check the source statically and store it by hash; nothing outside `mx` can run."""
    cache_dir = Path(cache_dir or default_cache_dir())
    key = hashlib.sha256(source.encode()).hexdigest()[:24]
    path = cache_dir / f"{key}.py"
    start = time.perf_counter()
    problem = check_source(source)
    if problem:
        return Build(False, None, ["mlx-static-check"], problem, time.perf_counter() - start, False, key)
    cached = path.exists()
    if not cached:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)
    return Build(True, str(path), ["mlx-static-check"], "", time.perf_counter() - start, cached, key)


class Kernel:
    """A checked MLX kernel: call it with MLX arrays; MLX compiles and fuses it."""

    def __init__(self, kernel: KernelIR, library: str):
        import mlx.core as mx

        self.k = kernel
        source = Path(library).read_text()
        problem = check_source(source)
        if problem:
            raise ValueError(f"refusing to load {library}: {problem}")
        namespace: dict = {"mx": mx, "__builtins__": {}}
        exec(compile(source, library, "exec"), namespace)
        self.fn = mx.compile(namespace[kernel.name])

    dispatch = "mx.compile"  # how a call runs: MLX ops, compiled

    def __call__(self, inputs: Sequence, launch: Launch | None = None) -> list:
        import mlx.core as mx

        launch = launch or self.k.launch
        flat = [mx.contiguous(x).reshape(-1) for x in inputs]
        return self.fn(flat, tuple(launch.dims), tuple(tuple(s) for s in launch.strides),
                       tuple(tuple(s) for s in launch.out_shapes))

    def run_numpy(self, buffers: Sequence[np.ndarray], launch: Launch) -> None:
        """The judge's path: numpy in, results copied into the (poisoned, fenced) output buffers."""
        import mlx.core as mx

        n_in = len(self.k.inputs)
        ins = [mx.array(b).view(mx.bfloat16) if a.dtype == "bfloat16" else mx.array(b)
               for a, b in zip(self.k.inputs, buffers[:n_in])]
        outs = self(ins, launch)
        mx.eval(outs)
        for buf, out in zip(buffers[n_in:], outs):
            np.copyto(buf, as_numpy(out).reshape(buf.shape))

