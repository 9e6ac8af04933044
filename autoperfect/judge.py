"""The judge: decides whether a compiled op is correct. Nothing a generator writes is trusted.

For each shape (the spec's and others that keep its structure: one row, odd lengths, lengths that
are no multiple of any vector width) and each input class, the op runs with poisoned, fenced
outputs (see program.run_guarded) and every output element is compared with the float64 answer key
of the *traced* graph, within a bound derived from the problem (bounds.py). Ops made only of exact
operations must also match a step-by-step reference in the op's own dtype value for value. Every
kernel runs twice (nondeterminism), and hidden draws, fresh each run, are checked last and never
written down. Candidates run in a child process, so a crash or a hang is a verdict, not the end.
"""

from __future__ import annotations

import functools
import json
import math
import os
import resource
import secrets
import signal
import subprocess
import sys
import zlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import backends, bench, dtypes, interp, run
from .bounds import DENORM_MIN, FMAX, propagate
from .graph import Graph, Node, make_attrs
from .kernel_ir import Arg, Instr, KernelIR, Launch, validate as validate_kernel
from .ops import EXACT, ULP_BOUND, Op
from .pipeline import Front, front, program
from .program import IntegrityError, Placement, guarded_call, same_bits
from .spec import OpSpec, SpecError, seed_for

CLASSES = ("normal", "large", "tiny", "mixed", "special", "offset", "structured", "ramp")
# Scales per dtype: "large" leaves room to square a value, "tiny" makes products denormal, "mixed"
# spans that many decades either way; specials are the dtype's own extremes; "offset" moves each
# row up to that many times its spread away from 0 (row_offsets); "structured" rows are what real
# data holds and random draws never do (structured_rows); "ramp" walks each input evenly over
# [-RAMP, RAMP], so no band of a function's argument goes untested.
LARGE = {"float32": 1e4, "bfloat16": 1e4, "float16": 1e2}
TINY = {"float32": 1e-20, "bfloat16": 1e-20, "float16": 1e-3}
MIXED_DECADES = {"float32": 8, "bfloat16": 8, "float16": 3}
OFFSET = {"float32": 3e3, "bfloat16": 30.0, "float16": 30.0}
RAMP = {"float32": 64.0, "bfloat16": 64.0, "float16": 8.0}
# In one "offset" row in LYING_ROWS the first LYING_HEAD values stay about 0 (row_offsets).
LYING_ROWS = 8
LYING_HEAD = 16
MAX_ALT_ELEMENTS = 1 << 21


@dataclass(frozen=True)
class Settings:
    shapes: int = 4          # extra shapes besides the spec's
    hidden_draws: int = 1    # fresh draws per checked shape, never reported in detail
    timeout_s: float = 600.0
    memory_gb: float = 16.0
    runs: int = 8            # runs of the normal draw at the spec's shape (the largest, where threads
    #                          meet), compared bit for bit: a race shows in some runs only (others: 2)


# -- inputs -------------------------------------------------------------------------------------------


def alt_shapes(spec: OpSpec, count: int) -> list[dict[str, tuple[int, ...]]]:
    """Other shapes with the spec's structure: each size > 1 is a symbol replaced consistently.
    Sizes that are some input's last axis stay >= 2, so the kernel's access pattern is unchanged."""
    sizes = sorted({d for i in spec.inputs for d in i.shape if d > 1})
    inner = {i.shape[-1] for i in spec.inputs if i.shape}
    patterns = [(1, 1031), (3, 7), (5, 33), (2, 2), (17, 129), (7, 257)]
    out = []
    for outer_v, inner_v in patterns:
        subst = {}
        k = 0
        for s in sizes:
            if s in inner:
                subst[s] = inner_v + 2 * k
                k += 1
            else:
                subst[s] = outer_v
        shapes = {i.name: tuple(subst.get(d, d) for d in i.shape) for i in spec.inputs}
        if max(math.prod(s) for s in shapes.values()) <= MAX_ALT_ELEMENTS and shapes not in out:
            out.append(shapes)
    return out[:count]


# The spec's scale, grown (scale_shapes): the element count of its largest inputs left this
# residue modulo SCALE_LINE floats, odd and past a vector loop's aligning head of up to 15 floats.
SCALE_LINE = 64
SCALE_RESIDUE = 39


def scale_shapes(spec: OpSpec) -> dict[str, tuple[int, ...]] | None:
    """The spec's shapes grown a little, where the spec is too large for alt_shapes: paths a kernel
    takes only at scale (streaming stores from 16 MB, the threads, compensated blocks of long rows)
    then also meet ragged ends, whose heads and tails the small shapes alone exercise otherwise.

    Every axis size above 1 of the largest inputs becomes odd (one longer if even), and the last
    axis at least 7 longer, the least such that those inputs' element count is SCALE_RESIDUE modulo
    SCALE_LINE (the other inputs' axes of the same sizes alike). Odd rows start on every alignment,
    so a row kernel's head and tail loops both run; a flat loop's last block then ends 7 past a
    multiple of 8 and 39 past one of 64, so its tail survives any aligning head of up to 15 floats.
    Found by planting `skipped_tail` (the last loop stops at N & ~7): with the last axis only 7
    longer it passed in the chain's streaming variants (16M elements: the last block's 7 elements
    fell into the head that aligns the output), and in `rows_v16` of LayerNorm and RMSNorm
    4096x1024 before this shape existed."""
    sizes = [math.prod(i.shape) for i in spec.inputs]
    if max(sizes, default=0) <= MAX_ALT_ELEMENTS:
        return None
    largest = [i for i, n in zip(spec.inputs, sizes) if n == max(sizes)]
    last = {i.shape[-1] for i in largest if i.shape[-1] > 1}
    if not last:
        return None
    n = max(last)
    grown = {d: d + (d % 2 == 0) for i in largest for d in i.shape if d > 1}
    for extra in range(7, 7 + 2 * SCALE_LINE):
        if (n + extra) % 2 == 0:
            continue
        trial = {**grown, n: n + extra}
        if math.prod(trial.get(d, d) for d in largest[0].shape) % SCALE_LINE == SCALE_RESIDUE:
            grown = trial
            break
    else:  # no such count (an odd square is never 7 past a multiple of 8): the first odd size 7 on
        grown[n] = n + 7 + (n % 2)
    return {i.name: tuple(grown.get(d, d) for d in i.shape) for i in spec.inputs}


def index_limits(g: Graph) -> dict[str, int]:
    """Each input the graph gathers with (take's or take_along_axis' indices, read as they are): the
    length of the smallest axis it indexes, at these shapes."""
    names = {n.id: n.attr("name") for n in g.inputs}
    limits: dict[str, int] = {}
    for n in g.nodes:
        if n.op in (Op.TAKE, Op.TAKE_ALONG_AXIS) and n.srcs[1] in names:
            x, axis = g.nodes[n.srcs[0]], n.attr("axis")
            length = math.prod(x.shape) if axis is None else x.shape[axis]
            name = names[n.srcs[1]]
            limits[name] = min(limits.get(name, length), length)
    return limits


def draw(spec: OpSpec, cls: str, rng: np.random.Generator, graph: Graph | None = None) -> list[np.ndarray]:
    """Inputs of one class, rounded to each input's dtype (held as the interpreter holds them); an
    index input within the axis it indexes (index_limits of `graph`, the spec's traced graph at its
    shapes: traced here where an integer input needs it and none is given), whatever its range says."""
    indices = any(i.dtype in ("int32", "uint32") for i in spec.inputs)
    limits = index_limits(graph if graph is not None else front(spec).traced) if indices else {}
    base, turn = class_turn(cls)
    turns = structured_turns(spec) if base == "structured" else 1
    out = []
    for inp in spec.inputs:
        shape = inp.shape
        if inp.dtype == "bool":
            out.append(np.asarray(rng.random(shape) < 0.5))
            continue
        if inp.dtype in ("int32", "uint32"):
            lo, hi = inp.range or ((-100, 100) if inp.dtype == "int32" else (0, 100))
            if inp.name in limits:
                lo, hi = max(lo, 0), min(hi, limits[inp.name] - 1)
            out.append(np.asarray(rng.integers(int(lo), int(hi) + 1, size=shape)).astype(dtypes.to_numpy(inp.dtype)))
            continue
        if inp.range is not None:
            lo, hi = inp.range
            x = np.asarray(rng.uniform(lo, hi, size=shape))
            if cls == "special":  # the domain's edges
                edge = rng.random(shape) < 0.05
                x = np.where(edge, rng.choice([lo, hi], size=shape), x)
        else:
            x = np.asarray(rng.standard_normal(shape))
            if cls == "large":
                x = x * LARGE[inp.dtype]
            elif cls == "tiny":
                x = x * TINY[inp.dtype]
            elif cls == "mixed":
                span = MIXED_DECADES[inp.dtype]
                x = x * 10.0 ** rng.uniform(-span, span, size=shape)
            elif cls == "special":
                mask = _special_positions(shape, rng)
                x[mask] = rng.choice(specials(inp.dtype), size=int(mask.sum()))
            elif cls == "offset":
                x = x + row_offsets(shape, OFFSET[inp.dtype], rng)
            elif base == "structured":
                x = structured_rows(x, rng, turn, turns)
            elif cls == "ramp":
                x = np.linspace(-RAMP[inp.dtype], RAMP[inp.dtype], x.size)  # moved by part of a step:
                x = (x + rng.uniform(0.0, 2 * RAMP[inp.dtype] / max(x.size - 1, 1))).reshape(shape)  # no sum of 0
                x = x if not out else rng.permutation(x.reshape(-1)).reshape(shape)  # inputs unlike each other
        out.append(dtypes.round_to(x, inp.dtype))
    return out


STRUCTURED_KINDS = 6  # structured_rows' kinds of row


def structured_turns(spec: OpSpec) -> int:
    """How many structured draws it takes for every kind of row to be drawn in each input of rows
    (one, where its fewest rows are STRUCTURED_KINDS or more): a red team's kernel leaving all-zero
    rows unwritten passed a spec of 3x7, whose three rows held three kinds."""
    rows = [math.prod(i.shape[:-1]) for i in spec.inputs
            if len(i.shape) >= 2 and i.dtype in dtypes.FLOATS and i.range is None]
    return -(-STRUCTURED_KINDS // max(1, min(rows))) if rows else 1


def structured_rows(x: np.ndarray, rng: np.random.Generator, turn: int = 0, turns: int = 1) -> np.ndarray:
    """A normal draw whose rows (the last axis) are, in turn, all zero, one value repeated,
    float32 values carried from bfloat16 (their low 16 bits zero, as a bfloat16 model's
    activations are once cast up), whole numbers, values from a handful of levels, or normal. A
    red team's kernels wrong on rows whose low bits are all zero, or leaving all-zero rows
    unwritten (a user's padding came back holding a freed tensor's data), passed every random
    class; E[x^2] - mean^2 gives a row of one value a spread of -6e-7. An input of fewer than two
    axes (a weight) is carried from bfloat16 and has no zeros. Draw `turn` of `turns`
    (structured_turns) starts its rows' kinds where the one before left off; a lone draw, at a
    drawn kind (six rows or more hold them all)."""
    if x.ndim < 2:
        return dtypes.round_to(np.where(np.abs(x) < 0.1, 0.5, x), "bfloat16")
    rows = math.prod(x.shape[:-1])
    first = turn * rows if turns > 1 else rng.integers(0, STRUCTURED_KINDS)
    kind = ((first + np.arange(rows)) % STRUCTURED_KINDS).reshape(*x.shape[:-1], 1)
    levels = rng.standard_normal(4)
    return np.select([kind == 0, kind == 1, kind == 2, kind == 3, kind == 4],
                     [0.0 * x, np.broadcast_to(x[..., :1], x.shape), dtypes.round_to(x, "bfloat16"),
                      np.round(4.0 * x), levels[rng.integers(0, 4, size=x.shape)]], x)


def specials(dtype: str) -> np.ndarray:
    """NaN, infinities, signed zeros, the smallest denormals and values near the largest finite."""
    tiny, big = DENORM_MIN[dtype], 0.9 * FMAX[dtype]
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, big, -big, 1.0, -1.0])


def _special_positions(shape, rng: np.random.Generator) -> np.ndarray:
    """Where special values go: one in every tenth row (most rows stay judgeable, since one inf
    makes a whole row's statistics infinite), or one element in a hundred along a single axis."""
    mask = np.zeros(shape, bool)
    if len(shape) < 2:
        return rng.random(shape) < 0.01 if shape else mask
    rows = rng.random(shape[:-1]) < 0.1
    cols = rng.integers(0, shape[-1], size=shape[:-1])
    mask[(*np.nonzero(rows), cols[rows])] = True
    return mask


def row_offsets(shape, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Where each row (the last axis) of an "offset" draw sits: +-scale times its standard normal
    spread, by a factor in [0.5, 1] of its own. Its values agree in their leading digits, so a
    spread taken as E[x^2] - mean^2 loses them (at 3000 times the spread in float32, by more than
    the bound allows in most rows of 1024: docs/experiments/2026-12-05d-cpu), where the two-pass
    sum about the mean, or one about a shift near it, keeps them. In one row in LYING_ROWS the first
    LYING_HEAD values stay about 0 before the far tail: a kernel that takes its shift from a row's
    first values meets a row they misrepresent, which the shifted kernel's test sends to the
    two-pass sum at every length. (Such a row's spread is wide, so even E[x^2] - mean^2 keeps it
    within the bound: the shifted sums trusted on every row passed with and without these rows. They
    take the long rows through that branch; the cancellation is the far rows' to show.)"""
    if not shape:
        return scale * rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 1.0)
    rows = (*shape[:-1], 1)
    # half the rows at half the scale or more, half down to a hundredth of it (a kernel taking the
    # two-pass sum only in the far band passed with every row there, and failed rows 300 to 900
    # times their spread from 0, as uncentred features such as 500 +- 1 are)
    far = rng.uniform(0.5, 1.0, size=rows)
    near = 10.0 ** rng.uniform(-2.0, math.log10(0.5), size=rows)
    factor = np.where(rng.random(rows) < 0.5, far, near)
    off = np.broadcast_to(scale * rng.choice([-1.0, 1.0], size=rows) * factor, shape).copy()
    if len(shape) > 1:
        lying = rng.random(rows) < 1 / LYING_ROWS
        off[..., :LYING_HEAD] = np.where(lying, 0.0, off[..., :LYING_HEAD])
    return off


def classes_for(spec: OpSpec) -> tuple[str, ...]:
    """The classes drawn at `spec`'s shapes: with a `range` on every float input, the scale classes
    would leave the op's domain; "structured" is drawn as many times as its rows need
    (structured_turns), the later draws named "structured 2" and on."""
    floats = [i for i in spec.inputs if i.dtype in dtypes.FLOATS]
    if floats and all(i.range is not None for i in floats):
        return ("normal", "special")
    turns = structured_turns(spec)
    return tuple(c for cls in CLASSES
                 for c in ([cls, *(f"{cls} {t}" for t in range(2, turns + 1))] if cls == "structured" else [cls]))


def class_turn(cls: str) -> tuple[str, int]:
    """A class's name ("structured 2") as its kind of draw and the draw's turn from 0 ("structured", 1)."""
    base, _, turn = cls.partition(" ")
    return base, int(turn or 1) - 1


# The classes drawn at the spec's own shapes and at its grown scale (where threads, streaming stores
# and a one-pass spread's long rows live), each where the op's domain allows it (classes_for); the
# structured rows there too, where the spec's many rows hold every kind of them (the small shapes'
# few rows hold one or two).
CALL_CLASSES = ("normal", "special", "offset", "structured")
SCALE_CLASSES = ("normal", "offset")


def call_classes(spec: OpSpec, wanted: tuple[str, ...] = CALL_CLASSES) -> tuple[str, ...]:
    """Those of `wanted` (by default the spec's own shapes' classes) the op's domain allows, each as
    often as classes_for draws it."""
    return tuple(c for c in classes_for(spec) if class_turn(c)[0] in wanted)


# -- comparison ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    output: int
    index: tuple[int, ...]
    expected: float
    got: float
    bound: float
    count: int

    def describe(self, shape) -> str:
        row = f" (row {list(self.index[:-1])})" if len(self.index) > 1 else ""
        return (f"output {self.output} element {list(self.index)}{row} of shape {list(shape)}: "
                f"expected {self.expected:.9g}, got {self.got:.9g}, allowed error {self.bound:.3g}; "
                f"{self.count} element(s) wrong")


@dataclass(frozen=True)
class Expected:
    """One output of an answer key as every check reads it, worked out once per draw: the float64
    reference, its error bound at the reference's shape, where the bound decides (a NaN bound marks
    an element whose dtype overflowed where float64 did not; an infinite bound, one whose error can't
    be bounded, e.g. a comparison within error of its threshold: neither is judgeable, unless the
    reference is NaN or infinite, which a kernel must reproduce) and whether any reference is."""
    ref: np.ndarray
    bound: np.ndarray
    judgeable: np.ndarray
    special: bool
    judged: int

    @property
    def unjudged(self) -> int:
        return self.ref.size - self.judged


def expected(ref, bound) -> Expected:
    ref = np.asarray(ref, np.float64)
    bound = np.broadcast_to(bound, ref.shape)
    finite = np.isfinite(ref)
    with np.errstate(invalid="ignore"):
        judgeable = ~np.isnan(bound) & (np.isfinite(bound) | ~finite)
    return Expected(ref, bound, judgeable, not bool(finite.all()), int(judgeable.sum()))


def compare(got: np.ndarray, e: Expected, output: int) -> tuple[Mismatch | None, np.ndarray]:
    """(first mismatch, |got - reference|) for one output: a judgeable element is wrong when it is
    further from the reference than its bound, or, where the reference is NaN or infinite, when it
    is not the same."""
    got = np.asarray(got, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(got - e.ref)
        ok = diff <= e.bound
        if e.special:
            ok = np.where(np.isnan(e.ref), np.isnan(got), np.where(np.isinf(e.ref), got == e.ref, ok))
    bad = ~ok & e.judgeable
    if not bad.any():
        return None, diff
    flat = int(np.argmax(bad.reshape(-1)))
    idx = tuple(int(i) for i in np.unravel_index(flat, e.ref.shape)) if e.ref.shape else ()
    return Mismatch(output, idx, float(e.ref.reshape(-1)[flat]), float(got.reshape(-1)[flat]),
                    float(e.bound.reshape(-1)[flat]), int(bad.sum())), diff


def exact_mismatch(got: np.ndarray, want: np.ndarray, output: int) -> Mismatch | None:
    """Value-for-value equality (NaN matches NaN; +0 and -0 are equal values)."""
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    bad = ~((g == w) | (np.isnan(g) & np.isnan(w)))
    if not bad.any():
        return None
    flat = int(np.argmax(bad.reshape(-1)))
    idx = tuple(int(i) for i in np.unravel_index(flat, w.shape)) if w.shape else ()
    return Mismatch(output, idx, float(w.reshape(-1)[flat]), float(g.reshape(-1)[flat]), 0.0, int(bad.sum()))


def is_degenerate(refs: list[np.ndarray], bounds: list[np.ndarray]) -> bool:
    """A reference that can't tell a right kernel from a wrong one: nothing judgeable, all zero, or
    (with more than one element) the same value everywhere."""
    for r, b in zip(refs, bounds):
        r = np.asarray(r, np.float64)
        values = r[np.isfinite(r) & np.isfinite(b)]
        if values.size and np.any(values != 0) and (r.size == 1 or np.ptp(values) > 0):
            return False
    return True


# -- one candidate set, in this process ----------------------------------------------------------------


@dataclass(frozen=True)
class AnswerKey:
    """One draw and what a kernel's outputs are judged against: each output's float64 reference and
    error bound (`Expected`), whether the references can tell a right kernel from a wrong one, and,
    for exact ops, the step-by-step values. It does not depend on the kernel, so variants judged on
    the same draw share it (most of a check's time is here)."""
    inputs: list
    outputs: list[Expected]
    degenerate: bool
    native: list | None

    @property
    def refs(self) -> list[np.ndarray]:
        return [e.ref for e in self.outputs]


def answer_key(f: Front, spec: OpSpec, cls: str, rng, exact: bool, mlx: bool = False) -> AnswerKey:
    """A draw of class `cls` and its answer key; with `mlx`, the bounds allow for MLX's functions
    in the regions MLX computes (bounds.propagate's `mlx`: the jit's gate)."""
    xs = draw(spec, cls, rng, f.traced)
    # the answer key first: where it can't be computed (an index input out of range at these shapes)
    # the program can't be judged either, and MLX's gathers would read out of bounds
    refs = interp.evaluate(f.traced, xs, "float64")
    _, errs = propagate(f.canonical, xs, mlx=mlx)
    outputs = [expected(r, errs[o]) for r, o in zip(refs, f.canonical.outputs)]
    native = interp.evaluate(f.canonical, xs, "native") if exact else None
    return AnswerKey(xs, outputs, is_degenerate([e.ref for e in outputs], [e.bound for e in outputs]), native)


def run_placement(inputs: Sequence[np.ndarray], n: int) -> Placement:
    """Where run n of a check (n >= 1; the first run's buffers all start on a 64-byte boundary)
    places each buffer, and on how many threads: every buffer at its own multiple of 4 bytes past a
    64-byte boundary, drawn from the draw itself (a hidden draw's placements are hidden too), the
    second run on one thread and later ones on 1 to twice the cores. A kernel whose bits follow a
    buffer's address (a row's head split off at the first cache line and computed otherwise than
    its body), or the team's size, disagrees with itself: the red team's kernels wrong only 16 bytes
    or more past a cache line, or only on one thread (OMP_NUM_THREADS=1, as containers and worker
    processes run), had passed runs placed 0 and 8 bytes off on every core; one that took its
    inputs' alignment for its outputs' crashed a user's first call (program.Placement)."""
    digest = zlib.crc32(b"".join(np.ascontiguousarray(x).reshape(-1)[:64].tobytes() for x in inputs))
    rng = np.random.default_rng([digest, n])
    cores = os.cpu_count() or 1
    threads = 1 if n == 1 else int(rng.integers(1, 2 * cores + 1))
    return Placement(tuple(int(o) for o in rng.integers(0, 16, size=16) * 4), threads)


# A check's last run: every buffer ends where address space without access begins (Placement.flush),
# so a read past an input's end faults; the other runs' ends lie up to 63 bytes before it.
FLUSH = Placement(flush=True)


def check_shape(f: Front, prog, spec: OpSpec, cls: str, rng, exact: bool, runs: int = 2,
                key: AnswerKey | None = None, outputs: Sequence[int] | None = None,
                memo: dict | None = None) -> dict:
    """One draw of class `cls` (or the draw `key` holds): `runs` guarded runs and one with every
    buffer flush with its guard (FLUSH), which must agree bit for bit, then the first run's outputs
    (those at the positions `outputs`, or all) against the float64 answer key (and, for exact ops, the step-by-step one). `memo` is `Program.run_guarded`'s for
    this draw, where the caller checks other programs over the same graph on it too."""
    key = key or answer_key(f, spec, cls, rng, exact)
    xs = key.inputs
    outputs = range(len(f.canonical.outputs)) if outputs is None else outputs
    memo = {} if memo is None else memo
    kinds = [f.canonical.nodes[f.canonical.outputs[j]].dtype for j in outputs]
    places = [run_placement(xs, n) for n in range(1, max(runs, 2))] + [FLUSH]
    try:
        got = prog.run_guarded(xs, outputs, memo)
        for n, where in enumerate(places, 2):
            problem = _differs(got, prog.run_guarded(xs, outputs, memo, where), kinds)
            if problem:
                return {"class": cls, "passed": False,
                        "reason": f"run {n} of {len(places) + 1} ({where.describe()}): {problem}"}
    except IntegrityError as e:
        return {"class": cls, "passed": False, "reason": str(e)}
    got_values = [as_float(g, f.canonical.nodes[f.canonical.outputs[j]].dtype) for g, j in zip(got, outputs)]
    worst = 0.0
    for j, g in zip(outputs, got_values):
        e = key.outputs[j]
        mismatch, diff = compare(g, e, j)
        if mismatch:
            return {"class": cls, "passed": False, "reason": mismatch.describe(e.ref.shape)}
        worst = max(worst, float(np.max(diff, initial=0.0, where=np.isfinite(diff))))
    problem = unlicensed_nonfinite(f, key, outputs, got_values)
    if problem:
        return {"class": cls, "passed": False, "reason": problem}
    if exact:
        for j, g in zip(outputs, got_values):
            w = key.native[j]
            m = exact_mismatch(g, w, j)
            if m:
                return {"class": cls, "passed": False,
                        "reason": "exact ops must match the step-by-step reference: " + m.describe(np.shape(w))}
    return {"class": cls, "passed": True, "judged": sum(key.outputs[j].judged for j in outputs),
            "not_judgeable": sum(key.outputs[j].unjudged for j in outputs),
            "degenerate": key.degenerate, "max_abs_error": worst}


def unlicensed_nonfinite(f: Front, key: AnswerKey, outputs: Sequence[int], got: Sequence[np.ndarray]) -> str | None:
    """Where a kernel gave NaN or an infinity at an element the bounds can't judge (its error
    unbounded: the float64 reference finite, its bound infinite) and the graph evaluated in its own
    dtypes, step by step, gives a finite number too: an error no bound can size is no licence for
    what neither way of computing the graph reaches. A bfloat16 softmax whose row maximum was
    rounded below the float32 values it was taken of gave exp(x - max) = inf, then NaN (a logsumexp
    inf), on products whose exp argument the bounds can't size (tests/test_cpu_schedules.py,
    ..._rows_maximum_is_kept_...). The step-by-step values are computed only where such a value is
    seen."""
    native = key.native
    for j, g in zip(outputs, got):
        e = key.outputs[j]
        suspect = ~np.isfinite(g) & np.isfinite(e.ref) & np.isinf(e.bound)
        if not suspect.any():
            continue
        if native is None:
            native = interp.evaluate(f.canonical, key.inputs, "native")
        w = np.broadcast_to(np.asarray(native[j], np.float64), g.shape)  # 16-bit types held in float32
        bad = suspect & np.isfinite(w)
        if bad.any():
            flat = int(np.argmax(bad.reshape(-1)))
            idx = [int(i) for i in np.unravel_index(flat, g.shape)] if g.shape else []
            return (f"output {j} element {idx} of shape {list(g.shape)}: {g.reshape(-1)[flat]} where the float64 "
                    f"reference is {e.ref.reshape(-1)[flat]:.9g} and the graph in its own dtypes, step by step, "
                    f"{w.reshape(-1)[flat]:.9g} (an error the bounds can't size is no licence for a value neither "
                    f"reaches); {int(bad.sum())} element(s)")
    return None


def _differs(first: list[np.ndarray], again: list[np.ndarray], kinds: Sequence[str]) -> str | None:
    """Where a run's outputs (of dtypes `kinds`) differ from the first run's: bit for bit, but for
    NaN, which matches any NaN (IEEE 754 does not interpret a NaN's sign, nor say which input's
    payload an operation passes on: a compiler may order a commutative operation's operands
    differently in a row's head and body, whose split follows the buffer's address)."""
    for j, (a, b, kind) in enumerate(zip(first, again, kinds)):
        if same_bits(a, b):
            continue
        unsigned = f"u{a.dtype.itemsize}"
        bad = a.reshape(-1).view(unsigned) != b.reshape(-1).view(unsigned)
        bad &= ~(np.isnan(as_float(a, kind)) & np.isnan(as_float(b, kind))).reshape(-1)
        if bad.any():
            return (f"output {j} differs from the first run on the same inputs ({int(bad.sum())} elements): "
                    "nondeterminism, a race, or bits that depend on where a buffer lies or on the number "
                    "of threads")
    return None


def as_float(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


# -- approximated functions, one at a time ---------------------------------------------------------------

PROBE_POINTS = 1 << 20  # float32 sweeps; 16-bit types are swept exhaustively
# Where each function is probed: its results are finite there and not all saturated. pow's range is
# the base's; its exponents sweep [-8, 8].
PROBE_DOMAIN = {
    Op.RSQRT: (1e-37, 3e38), Op.EXP: (-103.0, 88.7), Op.EXPM1: (-20.0, 88.7), Op.LOG: (1e-37, 3e38),
    Op.LOG1P: (-0.999, 1e30), Op.TANH: (-10.0, 10.0), Op.SIGMOID: (-100.0, 88.0), Op.ERF: (-4.0, 4.0),
    Op.SIN: (-1e4, 1e4), Op.COS: (-1e4, 1e4), Op.POW: (1e-3, 1e3),
}
PRECISION = {"float32": 24, "float16": 11, "bfloat16": 8}  # significand bits


def sweep(lo: float, hi: float, dtype: str, n: int = PROBE_POINTS) -> np.ndarray:
    """Dense test points of [lo, hi] in `dtype`: every value of a 16-bit type; for float32, half the
    points evenly spaced in the bit patterns (every binade alike) and half evenly spaced in value."""
    if dtype != "float32":
        bits = np.arange(1 << 16, dtype=np.uint16)
        x = bits.view(np.float16) if dtype == "float16" else (bits.astype(np.uint32) << 16).view(np.float32)
        with np.errstate(invalid="ignore"):
            x = x.astype(np.float64)
        return np.unique(x[np.isfinite(x) & (x >= lo) & (x <= hi)])
    ends = _ordered(np.array([lo, hi], np.float32))
    pattern = _unordered(np.linspace(ends[0], ends[1], n // 2).astype(np.int64))
    value = np.linspace(lo, hi, n - n // 2).astype(np.float32)
    return np.unique(np.concatenate([pattern, value]).astype(np.float64))


def _ordered(x: np.ndarray) -> np.ndarray:
    """float32 bit patterns as integers in the order of the values they encode."""
    i = x.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def _unordered(o: np.ndarray) -> np.ndarray:
    return np.where(o < 0, (-o) | 0x80000000, o).astype(np.uint32).view(np.float32)


def ulp_error(got: np.ndarray, ref: np.ndarray, dtype: str) -> np.ndarray:
    """|got - ref| in units of the last place of `ref` in `dtype` (denormals: the smallest step)."""
    emin = np.log2(dtypes.TINY[dtype])
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.abs(ref)))
        e = np.maximum(np.where(np.isfinite(e), e, emin), emin)
        return np.where(got == ref, 0.0, np.abs(got - ref) / 2.0 ** (e - PRECISION[dtype] + 1))


def probe_kernel(op: Op, dtype: str, n: int) -> KernelIR:
    """A one-op kernel: load, `op`, store, over n contiguous elements."""
    arity = 2 if op is Op.POW else 1
    args = tuple(Arg(f"x{a}_{a}", dtype, "in", "elem", "contiguous") for a in range(arity))
    body = tuple(Instr(a, Op.LOAD, dtype, "elem", (), make_attrs({"arg": a})) for a in range(arity))
    body += (Instr(arity, op, dtype, "elem", tuple(range(arity))),
             Instr(arity + 1, Op.STORE, dtype, "elem", (arity,), make_attrs({"arg": arity})))
    args += (Arg("out0", dtype, "out", "elem", "contiguous"),)
    launch = Launch((n,), ((1,),) * arity, ((n,),) * arity, ((n,),))
    return validate_kernel(KernelIR("elementwise", 1, args, body, launch, tuple(range(arity + 1))))


_PROBED: dict[tuple, dict] = {}


def probe(be, op: Op, dtype: str, schedule) -> dict:
    """Worst error of `op` in ULPs, measured by a one-op kernel rendered and built like a candidate
    with `schedule` (or what the backend's `probe_schedule` makes of it), over a dense sweep of the
    function's domain, against float64. A process measures each rendered probe once: the sweep is
    fixed, so the same source on the same machine gives the same report (a gate's variants share
    their probes)."""
    schedule = be.probe_schedule(schedule)
    source = be.render(probe_kernel(op, dtype, 1), schedule)
    key = (be.NAME, op, dtype, source)
    if key not in _PROBED:
        _PROBED[key] = _probe(be, op, dtype, schedule, source)
    return dict(_PROBED[key])


def _probe(be, op: Op, dtype: str, schedule, source: str) -> dict:
    """`probe`'s measurement of `source` (the probe kernel rendered with `schedule`: kernels are
    size-generic, so the sweep's length is the launch's, not the source's)."""
    lo, hi = PROBE_DOMAIN[op]
    x = sweep(lo, hi, dtype)
    xs = [x]
    if op is Op.POW:
        exponents = sweep(-8.0, 8.0, dtype, len(x))
        xs.append(np.random.default_rng(seed_for("probe", op.value, dtype)).choice(exponents, len(x)))
    k = probe_kernel(op, dtype, len(x))
    build = be.build(source)
    if not build.ok:
        raise RuntimeError(f"the {op.value} probe did not build: {build.log[-500:]}")
    got = as_float(guarded_call(be.Kernel(k, build.library), k, [storage(v, dtype) for v in xs])[0], dtype)
    ref = interp.apply(Node(0, op, dtype, (len(x),)), xs, "float64")
    keep = np.isfinite(ref) & (np.abs(ref) <= FMAX[dtype])
    err = ulp_error(got[keep], ref[keep], dtype)
    err = np.where(np.isnan(err), np.inf, err)
    at = int(np.argmax(err))
    worst = float(err[at])
    return {"worst_ulp": round(worst, 3) if np.isfinite(worst) else "inf", "bound_ulp": ULP_BOUND[op],
            "at": [float(v[keep][at]) for v in xs], "dtype": dtype, "schedule": schedule.name,
            "points": int(keep.sum()), "domain": [lo, hi], "within_bound": bool(worst <= ULP_BOUND[op])}


def storage(x: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values (already representable) in the bits a kernel reads for `dtype`."""
    if dtype == "bfloat16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return x.astype(dtypes.to_numpy(dtype))


def function_accuracy(be, kernels, libraries: dict[str, str]) -> tuple[dict, str | None]:
    """Per approximated function the kernels call: the worst probe over the schedules its candidate
    was rendered with (a source that is no rendering of ours: every schedule the backend would use
    for that function, since a call to the library function gets one of those implementations).
    Returns (report keyed by function, reason when one exceeds its stated bound)."""
    report: dict[str, dict] = {}
    done: dict[tuple, dict] = {}
    for k in kernels:
        for ins in k.body:
            if ins.op not in ULP_BOUND:
                continue
            for schedule in _schedules_of(be, k, libraries[k.name], probe_kernel(ins.op, ins.dtype, 1)):
                key = (ins.op, ins.dtype, schedule)
                done[key] = done.get(key) or probe(be, ins.op, ins.dtype, schedule)
                old = report.get(ins.op.value)
                if old is None or _worse(done[key], old):
                    report[ins.op.value] = done[key]
    bad = [(name, r) for name, r in sorted(report.items()) if not r["within_bound"]]
    if not bad:
        return report, None
    name, r = bad[0]
    return report, (f"{name} ({r['schedule']}, {r['dtype']}) is {r['worst_ulp']} ulp off at {r['at']}; "
                    f"its stated bound is {r['bound_ulp']} ulp")


def _worse(a: dict, b: dict) -> bool:
    return float(a["worst_ulp"]) > float(b["worst_ulp"])


def _schedules_of(be, k: KernelIR, library: str, probe_k: KernelIR) -> tuple:
    source = be.source_of(library)
    text = source.read_text() if source.is_file() else None
    own = tuple(s for s, rendered in _renderings(be, k) if rendered == text)
    return own or be.schedules_for(probe_k)


@functools.lru_cache(maxsize=64)
def _renderings(be, k: KernelIR) -> tuple:
    """(schedule, source) for each of `k`'s schedules on backend `be`, rendered once a process: a
    gate asks for them once a variant, and rendering is the same every time."""
    return tuple((s, be.render(k, s)) for s in be.schedules_for(k))


def judge_candidates(spec: OpSpec, backend: str, libraries: dict[str, str], settings: Settings,
                     hidden_seed: int | None) -> dict:
    """Verdict for one choice of kernels (`libraries`: kernel name -> built library)."""
    be = backends.get(backend)
    loaded: dict[str, object] = {}
    kernels: dict[str, KernelIR] = {}
    shape_sets = [{i.name: i.shape for i in spec.inputs}] + alt_shapes(spec, settings.shapes)
    # the small shapes first: most wrong kernels fail there in milliseconds; the spec's scale last
    order = [(n, shape_sets[n], CLASSES) for n in range(1, len(shape_sets))]
    big = scale_shapes(spec)
    if big:
        order.append((len(shape_sets), big, SCALE_CLASSES))
    order.append((0, shape_sets[0], CALL_CLASSES))
    report, useful = [], 0
    for n, shapes, wanted in order:
        s = spec.with_shapes(shapes)
        classes = call_classes(s, wanted)
        label = {k: list(v) for k, v in shapes.items()}
        try:
            f = front(s)
        except SpecError as e:
            report.append({"shapes": label, "status": f"skipped: the op does not trace at these shapes ({e})"})
            continue
        missing = [k.name for k in f.kernels if k is not None and k.name not in libraries]
        if missing:
            if n == 0:
                return {"passed": False, "reason": f"no candidate for kernel(s) {missing} at the spec's shapes",
                        "shapes": report}
            report.append({"shapes": label, "status": "skipped: lowers to other kernels at these shapes "
                                                      f"({', '.join(missing)})"})
            continue
        for k in f.kernels:
            if k is not None and k.name not in loaded:
                loaded[k.name] = be.Kernel(k, libraries[k.name])
            if k is not None:
                # the probes read each kernel's schedules at the spec's shapes (judged last), as
                # the candidates were rendered there (a GPU's schedules follow the row length)
                kernels[k.name] = k
        prog = program(f, loaded)
        exact = all(nd.op in EXACT for nd in f.canonical.nodes)
        checks = []
        for cls in classes:
            rng = np.random.default_rng(seed_for(spec.name, "judge", str(n), cls))
            runs = settings.runs if (n, cls) == (0, "normal") else 2
            try:
                result = check_shape(f, prog, s, cls, rng, exact, runs)
            except (IndexError, ValueError) as e:
                if n == 0:
                    raise
                skipped = f"skipped: no reference at these shapes ({e}); e.g. an index input's range fits " \
                          "only the spec's sizes"
                break
            checks.append(result)
            if not result["passed"]:
                return {"passed": False, "reason": f"shapes {label}, inputs '{cls}': {result['reason']}",
                        "shapes": report + [{"shapes": label, "status": "failed", "checks": checks}]}
            useful += not result["degenerate"]
        else:
            skipped = ""
        entry = {"shapes": label, "status": skipped or "checked", "exact": exact, "checks": checks}
        report = [entry, *report] if n == 0 else [*report, entry]  # the spec's shape reads first
    if useful == 0:
        return {"passed": False, "reason": "no useful test: every reference was degenerate (all NaN, "
                                           "constant, or not judgeable)", "shapes": report}
    ulp, problem = function_accuracy(be, list(kernels.values()), libraries)
    if problem:
        return {"passed": False, "reason": problem, "shapes": report, "ulp": ulp}
    hidden = []
    if hidden_seed is not None:
        for n, shapes in enumerate(shape_sets[1:] or shape_sets):
            s = spec.with_shapes(shapes)
            try:
                f = front(s)
                prog = program(f, loaded)
            except (SpecError, KeyError):
                continue
            exact = all(nd.op in EXACT for nd in f.canonical.nodes)
            for d in range(settings.hidden_draws):
                rng = np.random.default_rng([hidden_seed, n, d])
                drawn = classes_for(s)
                cls = drawn[int(rng.integers(len(drawn)))]  # withheld too
                try:
                    result = check_shape(f, prog, s, cls, rng, exact)
                except (IndexError, ValueError):
                    break  # no reference at these shapes (see the public checks)
                hidden.append(result["passed"])
                if not result["passed"]:
                    return {"passed": False, "reason": "failed on a hidden draw (inputs withheld; the public "
                                                       "checks passed)", "shapes": report,
                            "hidden": {"draws": len(hidden), "failed": 1}}
    return {"passed": True, "shapes": report, "ulp": ulp, "hidden": {"draws": len(hidden), "failed": 0}}


# -- isolation ----------------------------------------------------------------------------------------


def run_isolated(spec: OpSpec, backend: str, libraries: dict[str, str], settings: Settings) -> dict:
    """Judge in a child process with time and memory limits; a crash or hang becomes the verdict."""
    request = {"spec": spec.to_json(), "backend": backend, "libraries": libraries,
               "settings": settings.__dict__, "hidden_seed": secrets.randbits(63)}
    return run_child("autoperfect.judge", request, settings, backend)


def run_child(module: str, request: dict, settings: Settings, backend: str) -> dict:
    """`python -m module` with `request` as JSON on stdin and its verdict as JSON on stdout, under the
    judge's time limit and on every core (threads expose races). Its address space is capped at the
    judge's memory limit where MLX drives no GPU: a GPU context reserves far more address space
    than it uses, and MLX's CUDA build, which starts the GPU when imported, for the CPU's kernels
    too, fails under a cap of 16 GB ("cudaDeviceGetDefaultMemPool failed: out of memory", on the
    H200), which once made every kernel the runtime gated there fail. The child keeps the memory it
    frees for reuse (the warm allocator: a large graph's answer key drops each value after its last
    reader, and glibc would otherwise unmap it and fault fresh pages in for the next), and imports
    this package wherever it is started from (bench.child_command)."""
    limit = int(settings.memory_gb * 2**30)
    capped = backend not in backends.GPU and not backends.drives_gpu()

    def limits():
        if capped:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    try:
        proc = run(bench.child_command(module), input=json.dumps(request), text=True, capture_output=True,
                   timeout=settings.timeout_s, preexec_fn=limits, env=bench.condition_environment("warm"))
    except subprocess.TimeoutExpired:
        return {"passed": False, "reason": f"timed out after {settings.timeout_s:.0f} s (a hang or an "
                                           "endless loop)"}
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        return {"passed": False, "reason": f"crashed with {name} (e.g. an out-of-bounds access)",
                "stderr": proc.stderr[-2000:]}
    if proc.returncode != 0:  # an exception in the judge's own Python (a kernel's fault is a signal or a verdict)
        tail = proc.stderr.strip().splitlines()[-1:] or ["no message"]
        return {"passed": False, "reason": f"the judge's child failed: {tail[0]}", "stderr": proc.stderr[-2000:],
                "harness": True}
    return json.loads(proc.stdout)


def serve(compute) -> None:
    """A child's side of run_child: the request from stdin, `compute(request)`'s verdict on stdout.
    MLX is started on its default device first: a device that does not start is no verdict on any
    kernel, so the reply says so (marked `retry`) instead of failing the way a kernel would."""
    request = json.loads(sys.stdin.read())
    problem = device_problem()
    verdict = ({"passed": False, "retry": True, "reason": f"the child could not start MLX: {problem}"}
               if problem else compute(request))
    sys.stdout.write(json.dumps(verdict, allow_nan=False))


def device_problem() -> str:
    """Why MLX can't run anything on its default device in this process ("" when it can)."""
    try:
        import mlx.core as mx

        mx.eval(mx.zeros(1))
    except Exception as e:  # noqa: BLE001 (whatever stops the device, it is not the kernel's doing)
        return f"{type(e).__name__}: {e}"
    return ""


def main() -> None:
    serve(lambda req: judge_candidates(OpSpec.from_json(req["spec"]), req["backend"], req["libraries"],
                                       Settings(**req["settings"]), req["hidden_seed"]))


if __name__ == "__main__":
    main()

