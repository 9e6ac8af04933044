"""The torch baselines: a traced GraphIR run by PyTorch, eagerly and through `torch.compile`.

On the CPU the honest bars are torch.compile and the memory roofline (shared/notes/mlx.md), so the
benchmark runs the op's *traced* graph (composites such as softmax and var kept whole, as a torch
user would write them) with one torch call per node. Like interp.py, one table maps each Op to its
torch function. Importing this module imports torch: callers check that torch is installed first.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Callable, Sequence

import numpy as np
import torch

from .graph import Graph, Node
from .interp import const_value
from .ops import COMPOSITE, Op

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "int32": torch.int32, "bool": torch.bool}

UNARY: dict[Op, Callable] = {
    Op.NEG: torch.neg, Op.ABS: torch.abs, Op.SQUARE: torch.square, Op.SQRT: torch.sqrt,
    Op.RSQRT: torch.rsqrt, Op.RECIPROCAL: torch.reciprocal, Op.EXP: torch.exp, Op.EXPM1: torch.expm1,
    Op.LOG: torch.log, Op.LOG1P: torch.log1p, Op.TANH: torch.tanh, Op.SIGMOID: torch.sigmoid,
    Op.ERF: torch.erf, Op.SIN: torch.sin, Op.COS: torch.cos, Op.FLOOR: torch.floor, Op.CEIL: torch.ceil,
    Op.SIGN: torch.sign, Op.NOT: torch.logical_not, Op.ISNAN: torch.isnan, Op.ISINF: torch.isinf,
}
BINARY: dict[Op, Callable] = {
    Op.ADD: torch.add, Op.SUB: torch.sub, Op.MUL: torch.mul, Op.DIV: torch.div, Op.POW: torch.pow,
    Op.MAX: torch.maximum, Op.MIN: torch.minimum, Op.EQ: torch.eq, Op.NE: torch.ne, Op.LT: torch.lt,
    Op.LE: torch.le, Op.GT: torch.gt, Op.GE: torch.ge, Op.AND: torch.logical_and, Op.OR: torch.logical_or,
}


def _prod(x, dim: tuple[int, ...], keepdim: bool):
    """torch.prod reduces one axis at a time."""
    for d in sorted(dim, reverse=True):
        x = torch.prod(x, dim=d, keepdim=keepdim)
    return x


def _softmax(x, dim: tuple[int, ...]):
    if len(dim) == 1:
        return torch.softmax(x, dim=dim[0])
    return torch.exp(x - torch.logsumexp(x, dim=dim, keepdim=True))


def _log_softmax(x, dim: tuple[int, ...]):
    if len(dim) == 1:
        return torch.log_softmax(x, dim=dim[0])
    return x - torch.logsumexp(x, dim=dim, keepdim=True)


REDUCE: dict[Op, Callable] = {
    Op.SUM: torch.sum, Op.PROD: _prod, Op.RMAX: torch.amax, Op.RMIN: torch.amin, Op.MEAN: torch.mean,
    Op.LOGSUMEXP: torch.logsumexp,
}


def _rule(node: Node) -> Callable:
    """The torch call computing `node` from its sources' values."""
    rule = _torch_call(node)
    if node.op in COMPOSITE:  # MLX computes these in the result's type (a mean of ints is a float)
        return partial(_in_dtype, rule, DTYPES[node.dtype])
    return rule


def _in_dtype(rule: Callable, dtype, x):
    return rule(x.to(dtype))


def _torch_call(node: Node) -> Callable:
    op, axes, keep = node.op, node.attr("axes"), node.attr("keepdims")
    if op is Op.CONST:
        value = torch.tensor(const_value(node), dtype=DTYPES[node.dtype])
        return lambda: value
    if op is Op.CAST:
        return partial(torch.Tensor.to, dtype=DTYPES[node.dtype])
    if op in UNARY:
        return UNARY[op]
    if op in BINARY:
        return BINARY[op]
    if op is Op.WHERE:
        return torch.where
    if op in REDUCE:
        return partial(REDUCE[op], dim=tuple(axes), keepdim=keep)
    if op in (Op.VAR, Op.STD):
        fn = torch.var if op is Op.VAR else torch.std
        return partial(fn, dim=tuple(axes), keepdim=keep, correction=node.attr("ddof"))
    if op is Op.SOFTMAX:
        return partial(_softmax, dim=tuple(axes))
    if op is Op.LOG_SOFTMAX:
        return partial(_log_softmax, dim=tuple(axes))
    if op is Op.RESHAPE:
        return partial(torch.reshape, shape=node.shape)
    if op is Op.TRANSPOSE:
        return partial(torch.permute, dims=tuple(node.attr("perm")))
    if op is Op.BROADCAST:
        return partial(torch.broadcast_to, size=node.shape)
    if op is Op.MATMUL:
        return torch.matmul
    if op is Op.CUMSUM and not node.attr("reverse") and node.attr("inclusive"):
        return partial(torch.cumsum, dim=node.attr("axis"))
    if op is Op.CONCATENATE:
        return lambda *xs: torch.cat(xs, dim=node.attr("axis"))
    if op is Op.SLICE:
        index = tuple(slice(a, b if b >= 0 else None, c) for a, b, c in
                      zip(node.attr("starts"), node.attr("stops"), node.attr("steps")))
        if all(c > 0 for c in node.attr("steps")):  # torch has no negative steps
            return lambda x: x[index]
    if op is Op.TAKE_ALONG_AXIS:
        return lambda x, i: torch.take_along_dim(x, i.long(), dim=node.attr("axis"))
    raise NotImplementedError(f"no torch rule for {op.value}")


def translate(graph: Graph) -> Callable:
    """The graph as a function of torch tensors (in input order), returning one tensor or a tuple.

    Every result is cast to its node's dtype where torch's promotion differs from MLX's (a mean of
    integers, say), so the function computes what the graph computes."""
    slots = tuple((n.id, n.attr("index")) for n in graph.inputs)
    steps = tuple((n.id, _rule(n), n.srcs, DTYPES[n.dtype]) for n in graph.nodes if n.op is not Op.INPUT)
    outputs = graph.outputs

    def run(*inputs):
        env = {nid: inputs[index] for nid, index in slots}
        for nid, rule, srcs, dtype in steps:
            value = rule(*[env[s] for s in srcs])
            env[nid] = value if value.dtype == dtype else value.to(dtype)
        outs = tuple(env[o] for o in outputs)
        return outs[0] if len(outs) == 1 else outs

    return run


def tensors(arrays: Sequence[np.ndarray], graph: Graph) -> list:
    """The benchmark's inputs as torch tensors in the graph's input dtypes (the interpreter holds
    bfloat16 values in float32, already rounded), each copied into torch's own memory, as MLX's
    contenders hold theirs in MLX's: numpy puts arrays of 4 MB and more on transparent huge pages
    (it madvises them), which neither framework's allocator does by default, and a tensor sharing
    the numpy array's pages read its inputs faster than any MLX contender could (on an AMD EPYC
    here, a streaming copy of 16 MB ran 1.5x faster on numpy's pages than on plain ones)."""
    return [torch.from_numpy(np.ascontiguousarray(x)).to(DTYPES[n.dtype], copy=True)
            for x, n in zip(arrays, graph.inputs)]


def to_numpy(out) -> list[np.ndarray]:
    """Outputs as float64 numpy arrays, for the check against the float64 reference (from any
    device: a GPU's outputs are copied back)."""
    outs = out if isinstance(out, tuple) else (out,)
    return [o.to("cpu", torch.float64).numpy() if o.dtype.is_floating_point
            else o.cpu().numpy().astype(np.float64) for o in outs]


def compiled(graph: Graph, inputs: Sequence) -> tuple[Callable, float]:
    """`torch.compile` of the graph's function and the seconds its first call took (the compile,
    which the benchmark reports apart from the timings)."""
    fn = torch.compile(translate(graph), dynamic=False)
    start = time.perf_counter()
    fn(*inputs)
    return fn, time.perf_counter() - start
