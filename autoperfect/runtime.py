"""The runtime: `autoperfect.jit` gives user code verified fused kernels, and falls back safely.

On the first call for an input signature (shapes and dtypes) the function is traced and fused; each
fused region is looked up in the kernel cache (cache.py). A verified entry is dispatched. A missing
one is compiled by the compiler provider, when allowed, and must pass the quick gate first: the
judge's checks at the call's shapes and at one small alternate shape, in a child process (a crash
or a hang is a verdict), each kernel judged with every other region left to MLX, so a verdict
belongs to one region, on the outputs its values reach. Whatever can't be traced, rendered, built
or verified runs as eager MLX, and a kernel that fails when called turns its signature back to eager
MLX: nothing that did not pass the judge is ever dispatched. The plan's kernels are then timed
against the function's own MLX ops on the call's arrays, and where MLX is clearly faster the
signature runs as MLX. Every call leaves a
`CallTrace` (`f.last_trace`) saying which region ran which kernel, where it came from, how long it
took, the user's source lines it computes, and why anything ran in MLX; `f.stats()` sums them up.

A Python argument (a number, string, None or tuple of them) is a constant of the traced function, as
under mx.compile: each value gets its plan (`Binding`, at most SPECIALIZATIONS sets of values). Under
MLX's transformations the kernels keep computing the forward values; mx.grad and mx.vjp take the
derivative's own verified kernels (`Backward`: the reverse mode of the traced graph, autodiff.py)
where it has them and the function's own MLX derivative elsewhere, mx.jvp MLX's (`transformable`);
mx.vmap runs the kernels once per example.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import os
import resource
import secrets
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from . import backends, bench, contenders, dtypes, judge, native, schedule_model, static
from .backends.cfamily import Unsupported
from .autodiff import vjp
from .cache import Cache, chip, key_for
from .canon import canonicalize
from .dtypes import from_mlx
from .fuse import fuse
from .generate import provider
from .graph import Graph
from .ops import EXACT
from .pipeline import Front, lower_all, program
from .spec import InputSpec, OpSpec, seed_for
from .trace import trace, with_constants

GATE_TIMEOUT_S = 300.0
ALT_ELEMENTS = 1 << 16  # the quick gate's alternate shape stays this small


# -- the front end for a function object --------------------------------------------------------------


def front_of(traced: Graph) -> Front:
    """pipeline.front after its trace step: the runtime traces function objects, not spec sources."""
    canonical = canonicalize(traced)
    partition = fuse(canonical)
    return Front(traced, canonical, partition, lower_all(partition))


def spec_of(traced: Graph) -> OpSpec:
    """The op spec the judge draws inputs from: the traced inputs, with no range (the whole float line)."""
    inputs = tuple(InputSpec(n.attr("name"), n.shape, n.dtype) for n in traced.inputs)
    return OpSpec(traced.name, f"<traced {traced.name}>", inputs)


def only(f: Front, names: set[str]) -> Front | None:
    """`f` with every kernel outside `names` left to MLX; None when none of `names` is in it."""
    kernels = tuple(k if k is not None and k.name in names else None for k in f.kernels)
    return replace(f, kernels=kernels) if any(kernels) else None


# -- the quick gate -----------------------------------------------------------------------------------


def gate(request: dict) -> dict:
    """The gate's verdicts on the libraries of the variants of one or more kernels of a traced
    function (request["libraries"]: {kernel: {variant: library}}; the reply's "verdicts" has the same
    keys), computed in the child (`main`). Each variant gets the judge's checks at the call's shapes
    (graphs[0]: judge.call_classes) and at the alternate shape (every input class), with every
    other region computed by MLX, on the outputs the kernel's values reach (`reached`); the judge's
    ULP probes of the approximated functions it calls; and one hidden draw. Every variant of every
    kernel is judged on the same draws: an answer key is the traced function's (its float64 outputs
    and their error bounds), whichever region a kernel computes, so each (references and bounds,
    most of a gate's time) is computed once, several at a time (`answer_keys`), for all of them."""
    fronts = [front_of(Graph.from_json(g)) for g in request["graphs"]]
    draws = {name: [_draws(name, f, n) for n, f in enumerate(fronts)] for name in request["libraries"]}
    keys = answer_keys(request, draws)
    verdicts = {name: gate_kernel(request, name, libraries, draws[name], keys)
                for name, libraries in request["libraries"].items()}
    for key in keys.values():  # keys no verdict needed (every variant failed first) are not computed
        key.cancel()
    return {"verdicts": verdicts}


@dataclass(frozen=True)
class Draws:
    """One graph of a gate's request as one kernel's checks see it: the front with only that kernel
    (None where the kernel is not among the graph's), the spec inputs are drawn from, the input
    classes drawn and their seeds (the graph's: every kernel of it is judged on the same draws),
    and whether the op is exact."""
    n: int
    label: dict
    f: Front | None
    spec: OpSpec
    classes: tuple[str, ...]
    exact: bool
    outputs: tuple[int, ...]  # the positions of the graph's outputs the kernel's values reach

    def seed(self, cls: str) -> int:
        return seed_for(self.spec.name, "gate", str(self.n), cls)


def _draws(kernel: str, front: Front, n: int) -> Draws:
    f, spec = only(front, {kernel}), spec_of(front.traced)
    classes = judge.call_classes(spec) if n == 0 else judge.classes_for(spec)
    exact = f is not None and all(node.op in EXACT for node in f.canonical.nodes)
    outputs = reached(f.canonical, next(k for k in f.kernels if k is not None)) if f is not None else ()
    return Draws(n, {i.name: list(i.shape) for i in spec.inputs}, f, spec, classes, exact, outputs)


def reached(graph: Graph, k) -> tuple[int, ...]:
    """The positions of `graph`'s outputs that kernel `k`'s values reach. Only those say anything of
    the kernel: the others are MLX's alone, and a gate that asks for none of them leaves MLX's
    regions that compute only them unevaluated (Program.run_guarded)."""
    seen = graph.downstream(k.binds[len(k.inputs):])
    return tuple(j for j, o in enumerate(graph.outputs) if o in seen)


def answer_keys(request: dict, draws: dict[str, list[Draws]]) -> dict[tuple, Future]:
    """Every draw's answer key, by (graph, class), for each graph that has one of the kernels, and
    ("hidden", graph) for the hidden draw on each kernel's last graph that has it; computed in threads
    (numpy's loops over large arrays release the GIL: three keys at 4096x4096 took 8.0 s one after
    another and 6.0 s on two threads here). A key is the graph's, not a kernel's (`gate`): each is
    computed once for every kernel. A key that fails to compute raises where a check asks for it, as
    it would have computed there. Keys run at once only as far as their float64 values fit in half
    the memory the child may use (`_key_workers`)."""
    jobs = {}
    for kernel in draws.values():
        have = [d for d in kernel if d.f is not None]
        jobs.update({(d.n, cls): (d, cls, d.seed(cls)) for d in have for cls in d.classes})
        jobs.update({("hidden", d.n): (d, _withheld(d, request["hidden_seed"]), request["hidden_seed"])
                     for d in have[-1:]})
    pool = ThreadPoolExecutor(max_workers=_key_workers([d for d, _, _ in jobs.values()]))
    # every region but the gated kernel's is MLX's: its bounds allow for MLX's functions (bounds.MLX_ULPS_PER_X)
    keys = {name: pool.submit(judge.answer_key, d.f, d.spec, cls, np.random.default_rng(seed), d.exact, mlx=True)
            for name, (d, cls, seed) in jobs.items()}
    pool.shutdown(wait=False)
    return keys


def _withheld(d: Draws, seed: int) -> str:
    """The hidden draw's class, drawn from its seed among the graph's: withheld like its values."""
    return d.classes[int(np.random.default_rng([seed, 1]).integers(len(d.classes)))]


KEY_BYTES_PER_ELEMENT = 48  # a key's float64 values, bounds and flags per element live at once, and temporaries


def _key_workers(draws: list[Draws]) -> int:
    if not draws:
        return 1
    need = max(KEY_BYTES_PER_ELEMENT * max(d.f.traced.peak_elements(), d.f.canonical.peak_elements()) for d in draws)
    room = [b for b in (bench.available_bytes(), resource.getrlimit(resource.RLIMIT_AS)[0]) if b and b > 0]
    fit = int(min(room) // 2 // max(need, 1)) if room else 1
    return max(1, min(len(draws), os.cpu_count() or 1, fit))


def gate_kernel(request: dict, name: str, libraries: dict[str, str], draws: list[Draws],
                keys: dict[tuple, Future]) -> dict[str, dict]:
    """The verdicts (see `gate`) of kernel `name`'s variants ({variant: library}), on the draws'
    answer keys, draw by draw: every variant still passing is checked on a draw before the next
    draw, so what MLX computes of a draw (the inputs and the regions no kernel's output reaches,
    `Program.run_guarded`'s memo) is computed once for all of them and dropped after it. Variants
    built to the same library (schedules that render the same source) are judged once."""
    be = backends.get(request["backend"])
    live = list(dict.fromkeys(libraries.values()))
    verdicts: dict[str, dict] = {}
    reports: dict[str, list] = {lib: [] for lib in live}
    useful = dict.fromkeys(live, 0)
    last, first = None, None
    for d in draws:
        if d.f is None:
            for lib in live:
                reports[lib].append({"shapes": d.label, "status": f"skipped: {name} is not among its kernels"})
            continue
        kernel = next(k for k in d.f.kernels if k is not None)
        progs = {lib: program(d.f, {name: be.Kernel(kernel, lib)}) for lib in live}
        checks: dict[str, list] = {lib: [] for lib in live}
        for cls in d.classes:
            memo: dict = {}
            for lib in list(progs):
                result = judge.check_shape(d.f, progs[lib], d.spec, cls, None, d.exact, key=keys[(d.n, cls)].result(),
                                           outputs=d.outputs, memo=memo)
                if not result["passed"]:
                    verdicts[lib] = {"passed": False, "reason": f"shapes {d.label}, inputs '{cls}': {result['reason']}"}
                    del progs[lib]
                    continue
                checks[lib].append(result)
                useful[lib] += not result["degenerate"]
        live = list(progs)
        for lib in live:
            reports[lib].append({"shapes": d.label, "status": "checked", "exact": d.exact, "checks": checks[lib]})
        last, first = (d, progs), first or kernel
    memo: dict = {}  # the hidden draw's, on the last graph that has the kernel
    for lib in live:
        if useful[lib] == 0:
            verdicts[lib] = {"passed": False, "reason": "no useful test: every reference was degenerate",
                             "shapes": reports[lib]}
            continue
        # the kernel at the call's shapes, whose schedules the variants were rendered from (a GPU's
        # schedules follow the row length, so the alternate shape's may not include a variant's own)
        ulp, problem = judge.function_accuracy(be, [first], {name: lib})
        if problem:
            verdicts[lib] = {"passed": False, "reason": problem, "shapes": reports[lib], "ulp": ulp}
            continue
        d, progs = last  # set: a variant with a useful check was checked on some draw
        hidden = judge.check_shape(d.f, progs[lib], d.spec, _withheld(d, request["hidden_seed"]), None, d.exact,
                                   key=keys[("hidden", d.n)].result(),
                                   outputs=d.outputs, memo=memo)
        verdicts[lib] = ({"passed": True, "shapes": reports[lib], "ulp": ulp, "hidden": {"draws": 1, "failed": 0}}
                         if hidden["passed"] else
                         {"passed": False, "reason": "failed on a hidden draw (inputs withheld; public checks passed)"})
    return {variant: dict(verdicts[lib]) for variant, lib in libraries.items()}


def quick_gate(graphs: list[Graph], backend: str, libraries: dict[str, dict[str, str]],
               timeout_s: float) -> dict[str, dict[str, dict]]:
    """Each variant's verdict ({kernel: {variant: library}} -> {kernel: {variant: verdict}}) from the
    gate's children, under the judge's limits (judge.run_child): a crash or a hang is a verdict.
    The variants of every kernel share one child, which computes each draw's answer key once for
    all of them; where that child gives no verdicts (a crash, a hang), each kernel is gated again
    in a child of its own, then each of its variants, so the crash or the hang is the verdict of
    the variant that caused it. A verdict that ran out of time, or whose child could not start MLX
    on the device, is marked `retry`: that says more about the machine than about the kernel, so it
    is not remembered as a failure."""
    request = {"graphs": [g.to_json() for g in graphs], "backend": backend, "libraries": libraries,
               "hidden_seed": secrets.randbits(63)}
    # the shared child has one variant's time limit a kernel: a gate's time is mostly its answer
    # keys, and a hang then costs a few limits (the shared children's, the hanging variant's own)
    # instead of one a variant
    reply = judge.run_child("autoperfect.runtime", request, judge.Settings(timeout_s=timeout_s * len(libraries)),
                            backend)
    if "verdicts" in reply:
        return reply["verdicts"]
    if not reply.get("retry"):
        if len(libraries) > 1:
            return {name: quick_gate(graphs, backend, {name: libs}, timeout_s)[name]
                    for name, libs in libraries.items()}
        ((name, libs),) = libraries.items()
        if len(libs) > 1:
            return {name: {v: quick_gate(graphs, backend, {name: {v: lib}}, timeout_s)[name][v]
                           for v, lib in libs.items()}}
    if reply["reason"].startswith("timed out"):
        reply["retry"] = True
    return {name: {v: reply for v in libs} for name, libs in libraries.items()}


def main() -> None:
    judge.serve(gate)


# -- what a call did ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegionTrace:
    region: int
    runs: str                    # the kernel's name, or "mlx"
    cache: str = ""              # where the kernel came from: "compiled", "disk" or "memory"
    variant: str = ""
    dispatch: str = ""           # "native" or mx.fast's kernel factory: the call queues an MLX op;
    #                              "ctypes": it runs the kernel
    seconds: float | None = None  # under ctypes dispatch the kernel's run (it runs at once); None where
    #                               the call queues an MLX op (its host time says nothing of the kernel)
    lines: tuple[str, ...] = ()  # the user's source lines the region computes
    why: str = ""                # why the region ran in MLX

    def describe(self) -> str:
        if self.runs == "mlx":
            head = f"region {self.region}: MLX ({self.why})"
        else:
            took = f", {self.seconds * 1e3:.3f} ms" if self.seconds is not None else ""
            head = f"region {self.region}: {self.runs} [{self.variant}] from {self.cache}, {self.dispatch}"
            head += took
        return "\n".join([head] + [f"    {line}" for line in self.lines])


@dataclass(frozen=True)
class CallTrace:
    function: str
    signature: tuple[tuple[tuple[int, ...] | None, str], ...]  # (shape, dtype), or (None, a Python argument)
    regions: tuple[RegionTrace, ...]
    seconds: float               # the whole call, as the user waited for it
    setup: dict = field(default_factory=dict)  # first call only: trace, lookup, compile, gate seconds
    eager: str = ""              # why the whole call ran as eager MLX ("" when kernels ran)
    race: dict = field(default_factory=dict)  # first call only: the kernels timed against MLX (Jit._race)

    @property
    def kernels(self) -> tuple[RegionTrace, ...]:
        return tuple(r for r in self.regions if r.runs != "mlx")

    @property
    def misses(self) -> tuple[str, ...]:
        return tuple(f"region {r.region}: {r.why}" for r in self.regions if r.runs == "mlx")

    def describe(self) -> str:
        args = _described(self.signature)
        head = f"{self.function}({args}): {self.seconds * 1e3:.3f} ms"
        if self.setup:
            head += " (first call: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in self.setup.items()) + ")"
        lines = [head] + ([f"  eager MLX: {self.eager}"] if self.eager else [])
        if self.race:
            r = self.race
            interval = f" [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]" if r["ci95"] else ", one call each"
            lines.append(f"  raced against MLX's own ops: kernels {r['kernels_s'] * 1e6:.1f} us, MLX "
                         f"{r['mlx_s'] * 1e6:.1f} us a call ({r['median']:.2f}x{interval})"
                         + (", as recorded in the cache" if r.get("recorded") else "")
                         + (", raced again (the cache's record had MLX faster)" if r.get("again") else ""))
        return "\n".join(lines + ["  " + r.describe() for r in self.regions])


# -- a plan per signature -----------------------------------------------------------------------------


@dataclass
class Plan:
    regions: tuple[RegionTrace, ...]
    run: Callable | None         # the Program, or None: call the function itself
    structure: str               # "array", "tuple" or "list": what the function returns
    eager: str = ""
    times: list = field(default_factory=list)  # (kernel name, seconds) of the call in progress
    race: dict = field(default_factory=dict)   # the kernels against MLX's own ops (Jit._race), if raced
    kernels: int = 0                           # regions that run kernels
    transformed: Callable | None = None        # `run` under MLX's transformations (transformable)
    backward: Jit | None = None                # its derivative under mx.grad and mx.vjp (Backward)
    arrays: tuple[int, ...] | None = None      # the array arguments' positions; None: every argument
    checked: bool = False                      # its outputs compared with the function's own (disagreement)
    race_digest: str = ""                      # where its race is kept (Cache.race), which keeps that check too

    def to_mlx(self, why: str) -> None:
        """Run the signature as eager MLX from now on, every kernel region saying `why`."""
        self.run, self.eager, self.kernels = None, why, 0
        self.regions = tuple(r if r.runs == "mlx" else replace(r, runs="mlx", why=why) for r in self.regions)


class _Timed:
    """A kernel that runs at once (ctypes dispatch), each call's time recorded into its plan."""

    def __init__(self, kernel, name: str, plan: Plan):
        self.kernel, self.name, self.plan = kernel, name, plan

    def bind(self, launch):
        call, times, name, clock = self.kernel.bind(launch), self.plan.times, self.name, time.perf_counter

        def timed(inputs):
            start = clock()
            out = call(inputs)
            times.append((name, clock() - start))
            return out
        return timed


def transformable(run: Callable, fn: Callable, backward: Callable | None = None) -> Callable:
    """`run` (the plan's kernels) under MLX's transformations. The kernels' primitives know no
    derivative, so mx.grad and mx.vjp of a function calling them take `backward` (the plan's
    derivative: `Backward`, fused kernels of the vjp's graph, where given) or else `fn`'s own (its MLX
    ops, from the same inputs), and mx.jvp takes `fn`'s, while the forward value stays the kernels'
    (mx.custom_function, which passes the kernels' outputs through as they are); the kernels read
    their inputs through mx.stop_gradient, so forward mode never asks them for a derivative either.
    mx.vmap runs the kernels once per example (native/common.h: FixedLaunch::vmap), as a function
    transformable in turn, whose derivative is the vmapped `fn`'s. The wrapping
    costs a call about 3 us of host time, so a call runs it only where a transformation traces its
    arguments (`Jit._tracing`; docs/experiments/2026-12-06l-cpu/overhead.py)."""
    import mlx.core as mx

    stop = mx.stop_gradient

    def listed(x) -> list:
        return list(x) if isinstance(x, (list, tuple)) else [x]

    @mx.custom_function
    def kernels(*args):
        return run(*[stop(a) for a in args])

    @kernels.vjp
    def vjp(primals, cotangents, outputs):
        if backward is not None:
            return tuple(backward(*listed(primals), *listed(cotangents)))
        return tuple(mx.vjp(fn, listed(primals), listed(cotangents))[1])

    @kernels.jvp
    def jvp(primals, tangents):
        out = mx.jvp(fn, listed(primals), listed(tangents))[1]
        return out[0] if len(out) == 1 else tuple(out)

    @kernels.vmap
    def vmap(inputs, axes):
        # the batched call made transformable in turn: without this rule mx.vmap traced `kernels`'
        # body, whose stop_gradient gave mx.grad of a vmapped call zeros for its derivative
        axes = tuple(listed(axes))
        batched = transformable(mx.vmap(run, in_axes=axes), mx.vmap(fn, in_axes=axes))
        out = batched(*listed(inputs))
        return out, type(out)([0] * len(out)) if isinstance(out, (list, tuple)) else 0

    return kernels


def _placeholders(e: Exception) -> bool:
    """Whether `e` is MLX refusing to evaluate arrays inside mx.compile or mx.vmap (a ctypes kernel
    evaluates its inputs at once): the call is not the kernel's fault."""
    return isinstance(e, ValueError) and "during function transformations" in str(e)


def _described(signature: tuple) -> str:
    """A signature as a call's arguments read: float32[4096, 1024], 1e-05, eps=1e-05."""
    return ", ".join(f"{d}{list(s)}" if s is not None else d for s, d in signature)


def _structure(result: Any) -> str:
    if isinstance(result, tuple):
        return "tuple"
    return "list" if isinstance(result, list) else "array"


def disagreement(ours: Any, theirs: Any) -> str | None:
    """Where the kernels' outputs (`ours`) and the function's own (`theirs`, MLX's ops on the same
    arrays) differ, or None where they agree (the same dtypes, and contenders.mismatch of their
    values: NaN and infinities in the same places, every finite value within 1e-3 of the largest
    finite magnitude of MLX's output, or 8 ulps of a 16-bit type). The judge holds each kernel to
    the traced graph's float64 answer key; this holds the traced graph to the function itself, on
    the first call's arrays, so a function the tracer took for another (a bound method traced
    without its object, a reduction split where MLX accumulates at once) runs as MLX instead of
    giving other numbers. Loose by design: two right ways of computing an output differ by their
    roundings, far below it."""
    import mlx.core as mx

    ours = ours if isinstance(ours, (tuple, list)) else (ours,)
    theirs = theirs if isinstance(theirs, (tuple, list)) else (theirs,)
    if len(ours) != len(theirs):
        return f"{len(ours)} outputs against {len(theirs)}"
    mx.eval(list(ours), list(theirs))
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a.dtype != b.dtype:
            return f"output {i} is {a.dtype} against MLX's {b.dtype}"
        kind = from_mlx(a.dtype)
        x, y = (np.asarray(v.astype(mx.float32) if kind in dtypes.EPS else v) for v in (a, b))
        problem = contenders.mismatch(x, y, kind)
        if problem is not None:
            return f"output {i} against MLX's: {problem}"
    return None


def _shaped(out: Any, structure: str) -> Any:
    """Program returns one array or a tuple; give the caller what the function itself returns."""
    outs = out if isinstance(out, tuple) else (out,)
    return outs[0] if structure == "array" else (list(outs) if structure == "list" else tuple(outs))


# MLX dtype -> the compiler's name for it: str(dtype) and the check cost more than the rest of a signature
_DTYPE_NAMES: dict = {}


CONSTANT_TYPES = (type(None), bool, int, float, str)
SPECIALIZATIONS = 8  # sets of Python arguments a function is compiled for; a call with another runs as MLX


def _constant(value: Any) -> bool:
    """A Python argument a plan is specialized on (the function sees it as it is, as under
    mx.compile): None, a bool, int, float or string, or a tuple of them."""
    return type(value) in CONSTANT_TYPES or (type(value) is tuple and all(_constant(v) for v in value))


def _key(value: Any):
    """A Python argument's part of a warm call's key: its type and value, a float by its bits (0.0
    and -0.0 compute differently, as do 1, 1.0 and True)."""
    if type(value) is float:
        return float, value.hex()
    if type(value) is tuple:
        return tuple, tuple([_key(v) for v in value])
    return type(value), value


def _signature(args: tuple, kwargs: dict) -> tuple | str:
    """(shape, dtype) of each array argument and (None, its repr) of each Python one (keywords last,
    as `name=repr`); or, as a string, why the call is passed to the function as it is."""
    import mlx.core as mx

    sig = []
    for i, a in enumerate(args):
        if not isinstance(a, mx.array):
            if not _constant(a):
                return (f"argument {i} is a {type(a).__name__}, not an MLX array or a Python number, "
                        "string, None or tuple of them")
            sig.append((None, repr(a)))
            continue
        name = _DTYPE_NAMES.get(a.dtype)
        if name is None:
            try:
                name = _DTYPE_NAMES[a.dtype] = from_mlx(a.dtype)
            except ValueError:
                return f"argument {i} has dtype {a.dtype}, which the compiler does not handle"
        sig.append((tuple(a.shape), name))
    for k, v in kwargs.items():
        if not _constant(v):
            return (f"keyword argument {k} is a {type(v).__name__}: arrays are taken by position, "
                    "keywords only as Python numbers, strings, None or tuples of them")
        sig.append((None, f"{k}={v!r}"))
    return tuple(sig)


@dataclass(frozen=True)
class Binding:
    """Where a call's arrays sit among its arguments, and the Python arguments its plan is
    specialized on (by position, or by keyword)."""
    arrays: tuple[int, ...]
    constants: dict

    @staticmethod
    def of(args: tuple, kwargs: dict, array_type) -> Binding:
        arrays = tuple(i for i, a in enumerate(args) if type(a) is array_type)
        constants = {i: a for i, a in enumerate(args) if type(a) is not array_type}
        return Binding(arrays, {**constants, **kwargs})

    @property
    def positional(self) -> int:
        """How many arguments the call passed by position."""
        return len(self.arrays) + sum(isinstance(k, int) for k in self.constants)

    def function(self, fn: Callable) -> Callable:
        """`fn` of the arrays alone, the Python arguments put back (MLX's side of a race, the
        derivatives): it keeps none of the caller's arrays."""
        if not self.constants:
            return fn
        constants = self.constants

        @functools.wraps(fn)
        def bound(*arrays):
            args, keywords = with_constants(constants, arrays)
            return fn(*args, **keywords)
        return bound


def _names(fn: Callable, count: int) -> list[str]:
    """The function's parameter names (kernels and traces read better with them), else x0, x1, ..."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params[:count] if len(params) >= count else [f"x{i}" for i in range(count)]


def _timing_arrays(args: tuple) -> list:
    """Arrays to time variants on: the caller's, or, where they are placeholders that can't be
    evaluated (inside mx.compile or vmap: MLX refuses, and a compiled step would keep the eager
    fallback for good), arrays of the same shapes and dtypes drawn on the device."""
    import mlx.core as mx

    try:
        mx.eval(*args)
        return list(args)
    except ValueError:
        pass
    keys = mx.random.split(mx.random.key(seed_for("runtime", "timing arrays")), max(2, len(args)))
    out = []
    for a, key in zip(args, keys):
        if mx.issubdtype(a.dtype, mx.floating):
            x = mx.random.normal(a.shape, key=key).astype(a.dtype)
        else:
            x = mx.random.randint(0, 2 if a.dtype == mx.bool_ else 8, a.shape, key=key).astype(a.dtype)
        out.append(x)
    mx.eval(*out)
    return out


CLEAR_LEAD = 2.0  # a first call of MLX's ops this many times the kernels' settles the race (Jit._race)


def race_digest(traced: Graph, plan: Plan, backend: str) -> str:
    """What a race's outcome belongs to: the traced function at its signature (its MLX side), the
    kernels and variants its plan runs (their side), the backend and the chip."""
    ran = [[r.runs, r.variant] for r in plan.regions if r.runs != "mlx"]
    body = json.dumps([traced.digest(), ran, backend, chip()])
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def timing(be) -> tuple[int, int]:
    """Rounds, and calls queued per sample, that the runtime times with on backend `be`: its
    TIMING where it has one (a GPU's: the device's time per queued call), else one call per sample
    in contenders.VARIANT_ROUNDS rounds (a CPU call runs while the caller waits)."""
    t = getattr(be, "TIMING", {})
    return t.get("rounds", contenders.VARIANT_ROUNDS), t.get("pipeline", 1)


RANKED = 2  # variants gated first where the kernel was timed at another launch (`rank`)
NEAR = math.log(8)  # ... a launch within 8x of this one's elements and row length, together
SCREEN = 2.0  # a first call times no further a variant that took this many times the fastest's (choose_variants)


@dataclass(frozen=True)
class Ranking:
    """A kernel's variants in the order they are gated: the `first` of them, and the rest only
    where none of those passes; `by` says what ranked them (an entry's "not gated" reasons) and
    `record` is the entry's `ranked_by`."""
    order: list[str]
    first: int
    by: str
    record: dict


def rank(variants: list[str], timings: list[dict], dims: tuple[int, ...]) -> tuple[list[str], dict] | None:
    """`variants` fastest first by the medians recorded for this kernel at the launch nearest `dims`
    (the log distance of the element counts plus that of the row lengths), with the variants not
    timed there last, in their order; and that launch's record. None where no launch within NEAR
    timed two of them: every variant is then gated and timed (a size unlike any timed before is
    explored anew). A ranking is the machine's own measurements of the
    same kernel at other sizes, so a new size (a decode step's longer attention row) gates and times
    RANKED variants instead of all of them."""
    def size(d) -> tuple[float, float]:
        return math.log(max(1, math.prod(d))), math.log(max(1, d[-1] if d else 1))

    here = size(dims)

    def distance(t: dict) -> float:
        return sum(abs(a - b) for a, b in zip(size(t["dims"]), here))

    usable = [t for t in timings if sum(v in t["median_s"] for v in variants) >= 2 and distance(t) <= NEAR]
    if not usable:
        return None
    near = min(usable, key=distance)
    timed = sorted((v for v in variants if v in near["median_s"]), key=lambda v: near["median_s"][v])
    return timed + [v for v in variants if v not in near["median_s"]], near


@dataclass
class _Gating:
    """One kernel on its way through `Jit._compile`: its candidates, the libraries built from them
    by variant, the verdicts so far (a build's failure is one), and the order its variants are
    gated in."""
    k: Any
    candidates: list
    built: dict = field(default_factory=dict)
    verdicts: dict = field(default_factory=dict)
    ranking: Ranking | None = None

    @property
    def variants(self) -> list[str]:
        return [c.variant for c in self.candidates]

    def group(self, round_: int) -> list[str]:
        """The variants built and gated in round 0 (the ranked first few, or all) and round 1 (the
        rest)."""
        order = self.ranking.order if self.ranking else self.variants
        cut = self.ranking.first if self.ranking else len(order)
        return order[:cut] if round_ == 0 else order[cut:]

    def passing(self) -> dict[str, str]:
        """{variant: library} of the variants that passed, in the order they were gated."""
        return {v: self.built[v] for v, d in self.verdicts.items() if d["passed"]}


class Jit:
    """`fn` with fused, verified kernels; see the module docstring. Not thread-safe."""

    @property
    def traced_as(self) -> Callable:
        """What a jitted function calling this one traces in its place (trace.bind_mx): `fn`, whose
        ops then fuse with the caller's."""
        return self.fn

    def __init__(self, fn: Callable, allow_compile: bool = True, backend: str = "auto",
                 cache_dir: str | None = None, timeout_s: float = GATE_TIMEOUT_S, race: bool = True,
                 fused_vjp: bool = True):
        functools.update_wrapper(self, fn)
        self.fn, self.allow_compile, self.timeout_s, self.race = fn, allow_compile, timeout_s, race
        self.fused_vjp = fused_vjp
        self.backend = backends.for_default_device() if backend == "auto" else backends.resolve([backend])[0]
        if self.backend == "mlx":  # KernelIR as MLX ops: the benchmarks' kernelir_mlx baseline, no kernels
            raise backends.BackendError("backend 'mlx' renders kernels as MLX ops for the benchmarks' kernelir_mlx "
                                        f"baseline; autoperfect.jit dispatches kernels of 'auto', 'cpu' or "
                                        f"{', '.join(repr(g) for g in backends.GPU)}")
        missing = backends.missing_device(self.backend) if self.backend in backends.GPU else ""
        if missing:  # its kernels could be built and judged nowhere here: every signature would run as MLX
            raise backends.BackendError(f"backend {self.backend!r} can't run kernels on this machine: {missing}")
        self.cache = Cache(cache_dir)
        self._plans: dict[tuple, Plan] = {}
        self._warm: dict[tuple, tuple[tuple, Plan]] = {}  # the arguments' key (__call__) -> (signature, plan)
        self._specialized: set[tuple] = set()  # the sets of Python arguments planned for (SPECIALIZATIONS)
        import mlx.core as mx

        self._array = mx.array
        ext = native.load()  # whether a transformation traces the call: where none does, `run` as it is
        self._tracing = ext.any_tracer if ext is not None else (lambda args: True)
        self._knows_tracing = ext is not None  # else every call counts as a transformation's
        self._last: tuple | None = None  # what the last call's trace is built from, when asked for
        self._counts: dict[str, float] = {"calls": 0, "eager_calls": 0, "kernel_calls": 0, "setup_s": 0.0}
        self._sources: dict[str, int] = {}

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        # a signature seen before, found by its arrays' own shape and dtype objects and its Python
        # arguments' values (what _signature makes of them costs more than the rest of a warm call)
        array = self._array
        key = tuple([(a.shape, a.dtype) if type(a) is array else _key(a) for a in args])
        if kwargs:
            key += tuple([(k, _key(v)) for k, v in kwargs.items()])
        try:
            warm = self._warm.get(key)
        except TypeError:  # an unhashable argument (a list, say): _signature says why it runs as MLX
            warm = key = None
        if warm is not None:
            (sig, plan), setup, first = warm, {}, None
        else:
            sig = _signature(args, kwargs)
            if isinstance(sig, str):
                return self._eager(start, (), sig, args, kwargs)
            plan, setup, first = self._plans.get(sig), {}, None
            constants = tuple(e for e in sig if e[0] is None)
            if plan is None and constants and constants not in self._specialized:
                if len(self._specialized) >= SPECIALIZATIONS:
                    return self._eager(start, sig, f"compiled for {SPECIALIZATIONS} sets of its Python arguments "
                                       "already: others run as MLX (pass a value that changes as an mx.array)",
                                       args, kwargs)
                self._specialized.add(constants)
        if plan is None:
            first = self.fn(*args, **kwargs)  # lazy in MLX: costs graph building only, unless it is returned
            binding = Binding.of(args, kwargs, array)
            try:
                plan, setup = self._prepare(binding, [args[i] for i in binding.arrays], _structure(first))
            except Exception as e:  # a bug of ours must not cost the user the call: eager, and say so
                name = getattr(self.fn, "__name__", "fn")
                warnings.warn(f"autoperfect.jit: compiling {name} failed ({type(e).__name__}: {e}); "
                              "it runs as eager MLX", RuntimeWarning, stacklevel=2)
                plan = Plan((), None, _structure(first), f"the compiler failed: {type(e).__name__}: {e}")
            plan.arrays = binding.arrays if binding.constants else None
            self._plans[sig] = plan
            if key is not None:
                self._warm[key] = (sig, plan)
            self._counts["setup_s"] += sum(setup.values())
        if plan.run is None:
            out = first if first is not None else self.fn(*args, **kwargs)
        else:
            plan.times.clear()
            arrays = args if plan.arrays is None else [args[i] for i in plan.arrays]
            try:
                tracing = self._tracing(arrays)
                out = _shaped((plan.transformed if tracing else plan.run)(*arrays), plan.structure)
                if not plan.checked and not (tracing and self._knows_tracing):
                    out = self._checked(plan, out, first, args, kwargs)
            except Exception as e:  # a kernel that fails now fails for good: this signature goes eager
                out = self.fn(*args, **kwargs)
                if _placeholders(e):  # but a kernel run at once can't take a transformation's arrays
                    why = f"a kernel run at once (ctypes) can't take the arrays of a transformation ({e})"
                    self._note(start, sig, Plan((), None, plan.structure, why), setup, memory=False)
                    return out
                plan.to_mlx(f"a kernel failed at run time ({type(e).__name__}: {e})")
        self._note(start, sig, plan, setup, memory=first is None)
        return out

    def _checked(self, plan: Plan, out: Any, first: Any, args: tuple, kwargs: dict) -> Any:
        """The call's outputs once the plan's first outputs it can evaluate are compared with the
        function's own on the same arrays (`disagreement`; `first`, the function's lazy result on a
        first call, else one call of it): where they differ the signature runs as MLX from now on
        and this call returns MLX's. Under a transformation that forbids evaluating (mx.compile,
        mx.vmap) it waits for a call outside one. An agreement is kept with the plan's race
        (`checked`), so a later process meeting the same plan of the same trace skips the check: it
        costs one call of the function's MLX ops and a comparison (a softmax over 16 MB: 60 ms and
        more, where the call from disk takes 5 ms), and what it is for, a trace of another function,
        shows on almost any arrays (one that shows only on rare values is the judge's and the
        tracer's tests' to find)."""
        theirs = first if first is not None else self.fn(*args, **kwargs)
        try:
            problem = disagreement(out, theirs)
        except Exception:  # an array of a transformation that can't be evaluated here
            return out
        plan.checked = True
        if problem is None:
            if plan.race_digest and not plan.race["mlx_runs"]:  # a later process's first call from disk skips it
                kept = {k: v for k, v in plan.race.items() if k not in ("recorded", "again")}
                self.cache.store_race(self.backend, plan.race_digest, {**kept, "checked": True})
            return out
        plan.to_mlx(f"the kernels disagree with the function itself on this call's arrays ({problem}): "
                    "the traced graph is not the function; it runs as MLX")
        return theirs

    def _eager(self, start: float, sig: tuple, why: str, args: tuple, kwargs: dict):
        """The call as eager MLX, its trace saying why; nothing planned."""
        out = self.fn(*args, **kwargs)
        self._note(start, sig, Plan((), None, "array", why), {}, memory=False)
        return out

    # -- planning ----------------------------------------------------------------------------------

    def _prepare(self, binding: Binding, args: list, structure: str) -> tuple[Plan, dict]:
        """The plan for a call's arrays `args`, its Python arguments as `binding` places them."""
        setup: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(name: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            setup[name] = setup.get(name, 0.0) + now - clock
            clock = now

        if any(a.size == 0 for a in args):
            return Plan((), None, structure, "an input has no elements: nothing for a kernel to compute"), setup
        names = _names(self.fn, binding.positional)
        inputs = [(names[i], tuple(a.shape), from_mlx(a.dtype)) for i, a in zip(binding.arrays, args)]
        try:
            f = front_of(self._trace(inputs, None, binding.constants))
        except Exception as e:  # anything the compiler can't take runs as MLX; the trace says why
            lap("trace")
            return Plan((), None, structure, f"not compiled: {type(e).__name__}: {e}"), setup
        lap("trace")
        kernels = {k.name: k for k in f.kernels if k is not None}
        found, why = {}, {}
        for name, k in kernels.items():
            entry = self.cache.lookup(key_for(k, self.backend))
            if entry is not None:
                found[name] = (entry, "disk")
                why[name] = "" if entry.passed else f"cached verdict: failed ({entry.verdict.get('reason')})"
        lap("lookup")
        todo = [k for name, k in kernels.items() if name not in found]
        if todo and self.allow_compile:
            graphs = [f.traced] + self._alternate(f.traced, binding)
            lap("trace")
            for name, (entry, why[name]) in self._compile(todo, f, graphs, args, lap).items():
                if entry is not None:
                    found[name] = (entry, "compiled")
        for k in todo:
            why.setdefault(k.name, "not in the cache, and compiling is off (allow_compile=False)")
        fn = binding.function(self.fn)  # MLX's side: the function of the arrays alone
        plan = self._plan(f, found, why, structure, fn, binding.constants)
        if self.race and plan.run is not None:
            self._race(plan, f.traced, args, fn)
            lap("race")
        return plan, setup

    def _race(self, plan: Plan, traced: Graph, args: list, fn: Callable) -> None:
        """The plan's kernels against the function itself (MLX's own ops) on the call's arrays, timed
        as the backend times variants (`timing`). Where MLX is faster, its interval clear of 1, the
        signature runs as MLX and its trace says by how much: a kernel that is verified but slower
        at these shapes (a call too short for its dispatch to pay off) is not what the user wants.
        The runtime's own cost per call (a few microseconds) is left out of the kernels' side. The
        outcome is kept in the cache (`Cache.store_race`), by the traced function, the plan's
        kernels and variants and the chip, and a later first call of the same plan reuses it where
        the kernels won. One MLX won is raced again in each process that meets the plan: it may be
        a loaded moment's (OpenMP threads wait for one another process keeps off its core: a
        LayerNorm's kernels lost 0.03x on a machine shared with a test run, where alone they win
        by 6x), and kept, it would keep the kernels from ever running again."""
        digest = plan.race_digest = race_digest(traced, plan, self.backend)
        recorded = self.cache.race(self.backend, digest)
        if recorded is not None and not recorded["mlx_runs"]:
            plan.race = {**recorded, "recorded": True}
            plan.checked = bool(recorded.get("checked"))  # the same plan of the same trace agreed before
        else:
            plan.race = {**self._timed_race(plan, args, fn), **({"again": True} if recorded is not None else {})}
            self.cache.store_race(self.backend, digest, plan.race)
        if plan.race["mlx_runs"]:
            r = plan.race
            lo, hi = r["ci95"]
            plan.to_mlx(f"MLX's own ops were faster at these shapes: {r['mlx_s'] * 1e6:.1f} us a call against "
                        f"the kernels' {r['kernels_s'] * 1e6:.1f} us ({r['median']:.2f}x [{lo:.2f}, {hi:.2f}])")

    def _timed_race(self, plan: Plan, args: list, fn: Callable) -> dict:
        rounds, queued = timing(backends.get(self.backend))
        arrays = _timing_arrays(args)
        seed = seed_for(getattr(self.fn, "__name__", "fn"), "race")
        calls = {"kernels": contenders.pipelined(plan.run, arrays, queued),
                 "mlx": contenders.pipelined(fn, arrays, queued)}
        first = {n: bench.time_burst(c, 1) for n, c in calls.items()}
        if first["mlx"] > CLEAR_LEAD * first["kernels"]:
            # decided by a first call each: a race MLX loses by that much it can't win (its first call
            # pays more than its later ones, which only keeps the kernels), and MLX's slow ops at a
            # large shape (60 ms a softmax of 16 MB on a CPU) would cost a call from disk a second
            return {"kernels_s": first["kernels"] / queued, "mlx_s": first["mlx"] / queued, "rounds": 1,
                    "queued": queued, "median": first["mlx"] / first["kernels"], "ci95": None, "mlx_runs": False}
        samples = bench.time_interleaved(calls, 1, rounds, seed)
        ratio = bench.speedup(samples["kernels"], samples["mlx"], seed)
        kern, mlx = (float(np.median(samples[n])) / queued for n in ("kernels", "mlx"))
        return {"kernels_s": kern, "mlx_s": mlx, "rounds": rounds, "queued": queued, **ratio,
                "mlx_runs": ratio["ci95"][1] < 1}

    def _trace(self, inputs: list, name: str | None, constants: dict) -> Graph:
        """The function's graph at `inputs` (name, shape, dtype), its Python arguments `constants`."""
        return trace(self.fn, inputs, name, constants)

    def _alternate(self, traced: Graph, binding: Binding) -> list[Graph]:
        """The traced graph at a small shape with the same structure: the first of judge.alt_shapes
        that stays small (a quick gate), if the function traces there."""
        spec = spec_of(traced)
        small = [s for s in judge.alt_shapes(spec, 6)
                 if max(math.prod(v) for v in s.values()) <= ALT_ELEMENTS]
        if not small:
            return []
        try:
            return [self._trace([(i.name, small[0][i.name], i.dtype) for i in spec.inputs], traced.name,
                                binding.constants)]
        except Exception:  # the function may trace at some shapes only; the call's shapes still count
            return []

    def _compile(self, todo: list, f: Front, graphs: list[Graph], args: tuple, lap) -> dict[str, tuple[Any, str]]:
        """Render the schedule variants of each kernel in `todo`, build and gate them; store each
        verdict; keep each kernel's fastest variant that passed ({kernel: (entry or None, why
        not)}). The kernels are gated together (`quick_gate`: one child computes each draw's answer
        key once for all of them), in at most two rounds: where a kernel's variants are ranked, its
        first few are built and gated (and timed) first, the others only in the second round and
        only if none of those passes. The variants that passed are then timed on the caller's
        arrays, every kernel's in the plan it will run in (the other kernels' regions running their
        verified variants, not MLX's ops)."""
        be = backends.get(self.backend)
        jobs, done = [], {}
        for k in todo:
            try:
                jobs.append(_Gating(k, provider("compiler").generate(k, self.backend)))
            except Unsupported as e:
                done[k.name] = None, f"the {self.backend} backend can't render it: {e}"

        def check_and_build(c):
            checked = static.check(c.source, self.backend, c.kernel)
            return checked, be.build(c.source, self.cache.build_dir(self.backend)) if checked.passed else None

        def build(group: list[_Gating], round_: int) -> None:
            """Build the variants each kernel of `group` gates in `round_`: a variant ranked below
            the first few is built only where none of those passes."""
            todo = []
            for job in group:
                wanted = set(job.group(round_))
                todo += [(job, c) for c in job.candidates if c.variant in wanted]
            # the compilers run side by side (nvcc took 1.8 s a variant on the H200's host, one after another)
            with ThreadPoolExecutor(max_workers=max(1, min(len(todo), os.cpu_count() or 1))) as pool:
                results = list(pool.map(check_and_build, [c for _, c in todo]))
            for (job, c), (checked, made) in zip(todo, results):
                if made is not None and made.ok:
                    job.built[c.variant] = made.library
                else:
                    why = made.log.strip()[-300:] if made is not None else checked.reason
                    job.verdicts[c.variant] = {"passed": False, "reason": f"not built: {why}"}

        for job in jobs:
            job.ranking = self._ranking(job.k, job.variants)
        prepare = getattr(be, "prepare", None)  # a GPU's instances, built ahead of each gate's children
        launches: dict[str, list] = {}  # each kernel's launches at the gate's shapes, for `prepare`
        if prepare:
            for front in [f] + [front_of(g) for g in graphs[1:]]:  # graphs[0] is f's
                for kern in front.kernels:
                    if kern is not None:
                        launches.setdefault(kern.name, []).append(kern.launch)
        for round_ in (0, 1):
            group = {job.k.name: job for job in jobs if job.group(round_) and not job.passing()}
            if not group:
                continue
            build(list(group.values()), round_)
            libraries = {name: libs for name, job in group.items()
                         if (libs := {v: job.built[v] for v in job.group(round_) if v in job.built})}
            if prepare:
                for name, libs in libraries.items():
                    prepare(group[name].k, list(libs.values()), launches.get(name, []))
            lap("compile")
            if not libraries:
                continue
            gated = quick_gate(graphs, self.backend, libraries, self.timeout_s)
            for name, verdicts in gated.items():
                group[name].verdicts.update(verdicts)
            lap("gate")
        passed = {job.k.name: job.passing() for job in jobs if job.passing()}
        chosen = {}
        if any(len(libs) > 1 for libs in passed.values()):
            # the variants are verified now: time them here, on the caller's arrays, each kernel's
            # with the others' verified variants in their regions (the plan they will run in)
            rounds, queued = timing(be)
            chosen = contenders.choose_variants(only(f, set(passed)), passed, _timing_arrays(args), be,
                                                seed_for(*sorted(passed), "variants"), rounds=rounds,
                                                pipeline=queued, screen=SCREEN)
        for job in jobs:
            done[job.k.name] = self._keep(job, chosen.get(job.k.name))
        lap("choose")
        return done

    def _keep(self, job: _Gating, timed: dict | None) -> tuple[Any, str]:
        """Store a gated kernel's verdict and, where variants passed, the choice among them (`timed`:
        contenders.choose_variants' where several did)."""
        k, verdicts, ranking = job.k, job.verdicts, job.ranking
        passed = job.passing()
        source = {c.variant: c.source for c in job.candidates}
        summary = {v: {"passed": d["passed"], **({"reason": d["reason"]} if "reason" in d else {})}
                   for v, d in verdicts.items()}
        if ranking:
            summary.update({v: {"gated": False, "reason": f"not gated: ranked below "
                                f"{', '.join(ranking.order[:ranking.first])} {ranking.by}"}
                            for v in ranking.order if v not in verdicts})
        if not passed:
            variant = job.candidates[0].variant
            verdict = verdicts[variant]
            if not any(d.get("retry") or d.get("harness") for d in verdicts.values()):
                self.cache.store(k, self.backend, variant, source[variant], None,
                                 {**verdict, "gate": "quick", "variants": summary}, {}, "runtime")
            return None, f"no variant passed the gate: {verdict['reason']}"
        choice = {"chosen": next(iter(passed)), "median_s": {},
                  **({"ranked_by": {**ranking.record, "order": ranking.order}} if ranking else {}),
                  **(timed or {})}
        variant = choice["chosen"]
        entry = self.cache.store(k, self.backend, variant, source[variant], passed[variant],
                                 {**verdicts[variant], "gate": "quick", "variants": summary}, choice,
                                 "runtime")
        return entry, ""

    def _ranking(self, k, variants: list[str]) -> Ranking | None:
        """The order to build and gate `k`'s variants in: by this kernel's medians at the nearest launch
        timed before (`rank`), else, for a kernel never timed nearby, by the schedule model fitted on
        the other kernels' timings in this cache (schedule_model); None where neither ranks them
        (every variant is gated)."""
        near = rank(variants, self.cache.timings(k.name, self.backend), k.launch.dims)
        if near:
            order, record = near
            return Ranking(order, RANKED, f"by the medians timed at {'x'.join(map(str, record['dims']))}",
                           {"dims": record["dims"]})
        if len(variants) <= schedule_model.TOP:
            return None
        model = schedule_model.fit(self.backend, self.cache.timed(self.backend))
        order = model.rank(k, variants) if model is not None else None
        if order is None:
            return None
        # knobs it never saw varied, set as none of its timings had them: gated beside its first TOP
        unseen = [v for v in model.unseen(k, variants) if v not in order[:schedule_model.TOP]]
        order = order[:schedule_model.TOP] + unseen + [v for v in order[schedule_model.TOP:] if v not in unseen]
        return Ranking(order, schedule_model.TOP + len(unseen), f"by the schedule model fitted on {len(model.kernels)} "
                       f"kernels' timings", {"model": {f: getattr(model, f) for f in ("kernels", "launches", "timings")},
                                             **({"unseen": unseen} if unseen else {})})

    def _plan(self, f: Front, found: dict, why: dict, structure: str, fn: Callable, constants: dict) -> Plan:
        be = backends.get(self.backend)
        usable = {name for name, (entry, _) in found.items() if entry.passed}
        plan = Plan((), None, structure)
        kernels = {k.name: k for k in f.kernels if k is not None and k.name in usable}
        loaded = {name: be.Kernel(k, str(found[name][0].library)) for name, k in kernels.items()}
        regions = []
        for region, k in zip(f.partition.regions, f.kernels):
            if k is None:
                regions.append(RegionTrace(region.index, "mlx", why=f"not fused: {region.reason}"))
            elif k.name in usable:
                entry, source = found[k.name]
                regions.append(RegionTrace(region.index, k.name, source, entry.variant,
                                           loaded[k.name].dispatch, lines=k.lines))
            else:
                regions.append(RegionTrace(region.index, "mlx", lines=k.lines,
                                           why=f"{k.name}: {why[k.name]}"))
        plan.regions = tuple(regions)
        plan.kernels = sum(r.runs != "mlx" for r in regions)
        if usable:
            # a kernel that runs at once (ctypes) is timed; a call that queues an MLX op is not: its
            # host time says nothing of the kernel, and timing it costs a warm call a layer of Python
            plan.run = program(only(f, usable), {name: _Timed(kern, name, plan) if kern.dispatch == "ctypes"
                                                 else kern for name, kern in loaded.items()})
            plan.backward = Backward(self, fn, constants, len(f.traced.inputs)) if self.fused_vjp else None
            plan.transformed = transformable(plan.run, fn, plan.backward)
        else:
            plan.eager = "no region has a verified kernel"
        return plan

    # -- records -----------------------------------------------------------------------------------

    def _note(self, start: float, sig: tuple, plan: Plan, setup: dict, memory: bool) -> None:
        """Count the call and keep the parts of its trace; the trace itself is built only when asked
        for, so a warm call pays for a tuple."""
        times = tuple(plan.times) if plan.run is not None else ()
        self._last = (time.perf_counter() - start, sig, plan.regions, plan.eager if plan.run is None else "",
                      times, setup, memory, plan.race if setup else {})
        self._counts["calls"] += 1
        if plan.run is None:
            self._counts["eager_calls"] += 1
            return
        self._counts["kernel_calls"] += plan.kernels
        if memory:  # a warm call
            self._sources["memory"] = self._sources.get("memory", 0) + plan.kernels
            return
        for r in plan.regions:
            if r.runs != "mlx":
                self._sources[r.cache] = self._sources.get(r.cache, 0) + 1

    @property
    def last_trace(self) -> CallTrace | None:
        """What the last call did: which region ran which kernel, from where, how long, and why not."""
        if self._last is None:
            return None
        seconds, sig, regions, eager, times, setup, memory, race = self._last
        took = dict(times)
        regions = tuple(r if r.runs == "mlx" else replace(r, cache="memory" if memory else r.cache,
                                                         seconds=took.get(r.runs)) for r in regions)
        return CallTrace(getattr(self.fn, "__name__", "fn"), sig, regions, seconds, setup, eager, race)

    def stats(self) -> dict:
        """Totals over every call so far, and per signature the regions' plan (which kernel, or why
        not); `backward`: the same of each signature's derivative that mx.grad or mx.vjp has called."""
        plans = {_described(sig): [r.describe().splitlines()[0] for r in p.regions] or [f"eager MLX: {p.eager}"]
                 for sig, p in self._plans.items()}
        backward = {_described(sig): p.backward.stats() for sig, p in self._plans.items()
                    if p.backward is not None and p.backward._plans}
        return {**self._counts, "kernel_sources": dict(self._sources), "signatures": len(self._plans),
                "plans": plans, "races": {_described(sig): p.race for sig, p in self._plans.items() if p.race},
                **({"backward": backward} if backward else {})}


class Backward(Jit):
    """The derivative of a plan (transformable's vjp under mx.grad and mx.vjp): a Jit of the
    function (x..., cotangents...) -> the cotangents of x, whose graph is the reverse mode of the
    forward's (autodiff.vjp of its canonical graph, traced with the plan's Python arguments), so the
    backward pass runs fused kernels that passed the gate, and MLX's own derivative (mx.vjp of
    `forward`, the function of the arrays alone) wherever they would not: a graph autodiff has no
    rule for, a region not verified, a race MLX wins. One per forward plan."""

    def __init__(self, parent: Jit, forward: Callable, constants: dict, inputs: int):
        import mlx.core as mx

        def derivative(*arrays):
            return tuple(mx.vjp(forward, list(arrays[:inputs]), list(arrays[inputs:]))[1])

        derivative.__name__ = f"{getattr(parent.fn, '__name__', 'fn')}_vjp"
        super().__init__(derivative, parent.allow_compile, parent.backend, str(parent.cache.root),
                         parent.timeout_s, parent.race, fused_vjp=False)
        self.parent_fn, self.constants, self.inputs = parent.fn, constants, inputs

    def _trace(self, inputs: list, name: str | None, constants: dict) -> Graph:
        """The reverse mode of the forward's graph at the primals' shapes (the first `inputs`; the
        cotangents' follow from the forward's outputs), traced with the plan's Python arguments
        (the derivative itself takes none)."""
        forward = trace(self.parent_fn, inputs[:self.inputs], getattr(self.parent_fn, "__name__", "fn"),
                        self.constants)
        return vjp(canonicalize(forward))


def jit(fn: Callable | None = None, *, allow_compile: bool = True, backend: str = "auto",
        cache_dir: str | None = None, timeout_s: float = GATE_TIMEOUT_S, race: bool = True,
        fused_vjp: bool = True):
    """Wrap `fn` (MLX arrays in, one array or a tuple out) so its fused regions run verified kernels.

    Usable as `autoperfect.jit(fn)`, `@autoperfect.jit` or `@autoperfect.jit(allow_compile=False)`.
    `backend="auto"` compiles for MLX's default device (a GPU's backend when that is a GPU this
    machine runs kernels on, else the CPU's); `allow_compile=False` dispatches only what the cache
    already holds; `cache_dir` defaults to $AUTOPERFECT_CACHE/kernels (~/.cache/autoperfect/kernels);
    `timeout_s` bounds each gate's child; `race=False` keeps a signature's verified kernels without
    timing them against the function's own MLX ops on its first call (by default a signature whose
    kernels MLX beats there runs as MLX, and its trace says so; the race calls the function a few
    dozen times more on that first call, so it should be free of side effects, as for mx.compile).
    Under mx.grad, mx.vjp and mx.value_and_grad the derivative of a signature's kernels is itself
    compiled into verified kernels (`Backward`: the reverse-mode graph of autodiff.vjp, gated and
    raced like the forward); `fused_vjp=False` keeps MLX's own derivative of the function instead.
    """
    def wrap(f: Callable) -> Jit:
        return Jit(f, allow_compile, backend, cache_dir, timeout_s, race, fused_vjp)
    return wrap(fn) if fn is not None else wrap


if __name__ == "__main__":
    main()
