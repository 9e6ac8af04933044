"""The `cpu` backend: C source built by the system C compiler, run on the memory of MLX arrays.

Builds are cached by a hash of (source, compiler, flags). A kernel runs on evaluated MLX inputs
(numpy views of their buffers, no copy) and writes into outputs allocated by MLX.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from itertools import takewhile
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .. import dtypes, native, run
from . import elf
from ..kernel_ir import KernelIR, Launch, sigmoid_form
from ..ops import ULP_BOUND, Op
from .cfamily import (OWN_MATH, OWN_VECTOR16_SOURCE, PREFETCH_AHEAD, PREFETCH_NEAR, SHIFT_BLOCK, TAG, VECTOR_MATH,
                      CRenderer, Schedule, called, exact, row_args, shifted_columns_from)
from .schedule import plan, shifted, stash

NAME = "cpu"
# -ffp-contract=off: no FMA behind the reference's back (exact ops must match bit for bit).
# -fno-math-errno / -fno-trapping-math change no result; they let sqrtf and selects vectorize.
FLAGS = ("-O3", "-march=native", "-fopenmp", "-ffp-contract=off", "-fno-math-errno",
         "-fno-trapping-math", "-fPIC", "-shared")
# Row sums of this many terms or more are compensated (CRenderer.reduce_loop); below it the plain SIMD
# sum's error is a few u and blocking buys nothing. results/summation.json measures both sides.
COMPENSATE_FROM = 4096
# Non-temporal stores once a call writes half the last-level cache: an output that size is evicted
# before its reader comes anyway, and skipping the read of each destination line saves bandwidth.
STREAM_FROM = 16 << 20

# Partial results per reduction in split loops: 32 floats, two AVX-512 or four AVX2 registers, enough
# independent adds to cover the add's latency (one accumulator waits 4 cycles per vector).
SPLIT = 32

SCHEDULES = (Schedule("block16k", block=16384, compensate=COMPENSATE_FROM),
             Schedule("block64k", block=65536, compensate=COMPENSATE_FROM))
MATH_SCHEDULES = (Schedule("libm", compensate=COMPENSATE_FROM),
                  Schedule("libmvec", vector_math=True, compensate=COMPENSATE_FROM))
# Our own functions where they are all the kernel calls (vmath.c), in vector form
OWN_MATH_SCHEDULE = Schedule("apmath", own_math=True, compensate=COMPENSATE_FROM)
VMATH = Path(__file__).with_name("vmath.c")
ROWS = Schedule("rows", compensate=COMPENSATE_FROM)  # a row kernel's plain variant
COLUMN_LANES = (16, 64)


class CpuRenderer(CRenderer):
    pass


def render(kernel: KernelIR, schedule: Schedule = SCHEDULES[0]) -> str:
    return CpuRenderer(kernel, schedule).render()


def schedule_of(kernel: KernelIR, source: str) -> Schedule:
    """The variant among `schedules_for(kernel)` that renders `source`, so that its statements can
    be spelled again as it spells them (mutants.Site); the default one for a source none renders
    (written by hand or by a model)."""
    return next((s for s in schedules_for(kernel) if render(kernel, s) == source), Schedule())


def schedules_for(kernel: KernelIR) -> tuple[Schedule, ...]:
    """Variants worth trying: vector math where the kernel calls libm, else the block size of
    elementwise kernels and non-temporal stores for large outputs; a row kernel whose final pass
    would recompute a libm call also tries keeping it from the last reducing pass (a stash).
    The fastest plain variant of each kind also has a `_v16` twin (`wide`): AVX-512's 16 lanes,
    reductions in partial results, reciprocals of row divisors, the next row prefetched,
    streaming stores; plain row kernels also try the split and the reciprocals at the compiler's
    width (`rows_split`), both in AVX-512 vectors where their rows are 16-bit (`in_registers`),
    and where a pass only sums the squares about the previous pass's mean (a variance, LayerNorm)
    both in one pass (`rows_shifted_v16`: cfamily.shifted_from). Where the kernel is not exact
    (its tolerance is the error analysis's, not the reference's bits), the last wide variant
    also has an `_fma` twin: a*b+c contracted (`fma_twin`). The plain row kernels' wide variants
    also have `_near` twins (`near`), prefetching one 4 KB row ahead instead of two.
    Where every function the kernel calls is one of our own (vmath.c, on a machine that builds
    it), the scratch stash (or where
    there is no stash, the wide variant) also comes with ours (`apmath_scratch_v16`, `apmath_v16`).
    Their scalar and vector forms give the same bits, so the scratch stash streams its stores;
    softmax 4096x1024 read from memory took 1.41 ms against libmvec's scratch stash's 1.64-1.73, and
    the wide variant, with two exps an element, 1.85. The wide variant stores plainly and has a
    `_stream` twin that streams (`streamed_twins`), as has its `_fma` twin: SiLU
    4096x1024 took 1.53-1.54 ms streamed through its 64-element chunks and 1.08-1.16 not, against
    libmvec's 1.28-1.29, on an AMD EPYC (docs/experiments/2026-12-04d-cpu), GELU read from memory
    on an Intel Xeon 0.86-0.88x of its plain stores' time (docs/experiments/2026-12-05i-cpu); GELU
    (our tanh) 4096x1024 0.97-1.00 ms against 1.14 with libmvec's tanhf (docs/experiments/2026-12-05-cpu). Where the compiler targets AVX-512
    (`avx512`), the scratch stash of ours also has a twin whose split loops' groups are AVX-512
    vectors with our exp inlined (`apmath_scratch_avx512`, CRenderer.vector_groups): the same bits,
    softmax 4096x1024 1.20x faster in cache and 1.19x read from memory
    (docs/experiments/2026-12-04g-cpu), and that twin a `_piped` one where it pipes (a pass before
    the stash's). A 16-bit elementwise kernel's wide variant (`apmath_v16`, `block16k_v16`) is
    written in AVX-512 vectors where the compiler targets them (`in_registers`), the sigmoid inlined
    too. The prefetching streaming row variants have `_piped` twins (`piped`): each row's
    final pass in the next row's first pass. Where the kernel computes 0.5 * x * (1 + tanh(y))
    (GELU's tanh form) the `_stream` twins of ours have `_sigmoid` twins (`sigmoid_twins`)."""
    functions = CpuRenderer(kernel, Schedule()).calls(VECTOR_MATH, common=True)
    own_math = bool(functions) and functions <= OWN_MATH.keys() and vmath_object() is not None
    # what a column variant computes with: our functions in vector form, else libmvec's, else plain rows
    columns = OWN_MATH_SCHEDULE if own_math else MATH_SCHEDULES[1] if functions else ROWS
    if kernel.loop:  # per-element outputs across a permuted loop: plain rows or columns (render_columns)
        return (columns,) + column_twins(kernel, columns)
    if functions:
        found = MATH_SCHEDULES + (wide(MATH_SCHEDULES[1]),)
        kept = stash(kernel, plan(kernel)) if kernel.kind == "row" else None
        if kept:
            stashed = replace(MATH_SCHEDULES[1], name="libmvec_stash", stash=True)
            # no float32 output to keep it in: the stack's buffer alone (a scratch stash)
            found += (stashed, wide(stashed)) if kept.arg is not None else ()
            if not any(kernel.body[i].op in ULP_BOUND for i in kept.final_elem if i != kept.value):
                found += (scratch(stashed),)
        if own_math:
            if kept:
                ours = scratch(replace(OWN_MATH_SCHEDULE, name="apmath_stash", stash=True))
                inlined = (replace(ours, name="apmath_scratch_avx512", vectors=True),) if avx512() else ()
                found += (ours, *inlined, *piped_twins(kernel, inlined))
            else:
                found += (replace(wide(OWN_MATH_SCHEDULE), stream=0, vectors=in_registers(kernel)),)
    elif kernel.kind == "elementwise":
        streamed = replace(SCHEDULES[0], name="block16k_stream", stream=STREAM_FROM)
        found = SCHEDULES + ((streamed,) if CpuRenderer(kernel, streamed).streams() else ())
        found += (replace(wide(SCHEDULES[0]), vectors=in_registers(kernel)),)
    else:
        rows = ROWS
        vec = in_registers(kernel)
        widened = replace(wide(rows), vectors=vec)
        found = (rows, replace(rows, name="rows_split", split=SPLIT, reciprocal=True, vectors=vec), widened)
        if shifted(kernel, plan(kernel)):
            found += (replace(widened, name="rows_shifted_v16", onepass=True),)
    if contractible(kernel) and not exact(kernel):
        found += (fma_twin(found[-1]),)
    found += streamed_twins(kernel, [s for s in found if s.own_math and not s.stash and not s.stream])
    found += sigmoid_twins(kernel, [s for s in found if s.own_math and s.stream])
    if not functions and kernel.kind != "elementwise":
        found += tuple(near(s) for s in found if s.prefetch and not s.contract)
        found += piped_twins(kernel, [s for s in found if s.prefetch])
    return found + column_twins(kernel, columns)


def column_twins(kernel: KernelIR, base: Schedule) -> tuple[Schedule, ...]:
    """`base` taking COLUMN_LANES rows at a time, one a SIMD lane (CRenderer.render_columns), where a
    row kernel reduces a strided axis (a reduction over a leading axis: the kernel's rows are the
    array's columns) and stores no per-element output but in the array's order (KernelIR.loop).
    Where a pass only sums the squares about the previous pass's mean (a variance over axis 0, a
    batch norm) each also has a `_shifted` twin, both sums in one pass where the lane's shifted sums
    vouch for it (CRenderer.column_block), where the kernel's columns are at least shifted_columns_from
    long."""
    strided = any(a.space == "elem" and a.inner == "strided" for a in kernel.inputs)
    stores = any(i.op is Op.STORE and i.space == "elem" for i in kernel.body) and not kernel.loop
    if kernel.kind != "row" or kernel.rank < 2 or not strided or stores:
        return ()
    twins = tuple(replace(base, name=f"{base.name}_cols{w}", columns=w) for w in COLUMN_LANES)
    # a variance's two passes in one (CRenderer.column_block), where its columns are long enough for
    # the shifted sums to vouch for them (shorter ones would take both passes anyway)
    if shifted(kernel, plan(kernel)) and kernel.launch.dims[-1] >= shifted_columns_from(SHIFT_BLOCK):
        twins += tuple(replace(t, name=f"{t.name}_shifted", onepass=True) for t in twins)
    return twins


def in_registers(kernel: KernelIR) -> bool:
    """Whether a row kernel's split variants, or an elementwise kernel's wide one, should convert
    its 16-bit rows in AVX-512 registers (Schedule.vectors: float16 by F16C, bfloat16 by a shift and
    the prelude's rounding, in vector_groups and vector_final) rather than in `omp simd` loops
    (float16 staged on the stack first, as `rows` does): where the compiler targets AVX-512 and,
    in a row kernel, the kernel keeps float32 between its 16-bit ops (an exact elementwise kernel
    rounds each op in registers; elementwise kernels: docs/experiments/2026-12-06i-cpu). 4096x2048 float16
    RMSNorm took 0.44-0.46 ms so against 1.40-1.52 staged (docs/experiments/2026-12-06g-cpu/registers.py),
    bfloat16 Llama RMSNorm 0.68-0.74 against 0.83 (`rows_split`) and 1.27 (`rows_v16`, whose 16-lane
    `omp simd` rounding GCC spells badly; docs/experiments/2026-12-06h-cpu/registers.py)."""
    return avx512() and (kernel.kind == "elementwise" or not exact(kernel)) and bool(row_args(kernel, tuple(TAG)))


def streamed_twins(kernel: KernelIR, schedules: Sequence[Schedule]) -> tuple[Schedule, ...]:
    """`_stream` twins of our own functions' wide variants, which store plainly: non-temporal
    stores of whole lines once a call writes STREAM_FROM bytes, where every output is float32 (our
    functions' scalar and vector forms give the same bits, so the head a streamed row's address
    leaves plain rounds as its body; libmvec's would not, see `wide`). Which wins follows the
    machine: SiLU 4096x1024 on an AMD EPYC took 1.53 ms streamed against 1.08-1.16 not
    (docs/experiments/2026-12-04d-cpu), GELU on an Intel Xeon 0.86-0.88x of the plain stores
    (docs/experiments/2026-12-05i-cpu), and 0.60-0.67x once the streamed chunks asked for the
    inputs ahead (CRenderer.reach_ahead, docs/experiments/2026-12-05j-cpu); the choice rounds decide.
    Where the compiler targets AVX-512 their streamed chunks are vectors with our functions inlined
    (Schedule.vectors, CRenderer.vector_chunk: 0.84-0.88x the time of calling them, the same bits)."""
    twins = (replace(s, name=f"{s.name}_stream", stream=STREAM_FROM, vectors=s.vectors or avx512()) for s in schedules)
    return tuple(t for t in twins if CpuRenderer(kernel, t).streams())


def sigmoid_twins(kernel: KernelIR, schedules: Sequence[Schedule]) -> tuple[Schedule, ...]:
    """`_sigmoid` twins of `schedules` where `kernel` computes 0.5 * x * (1 + tanh(y)) (GELU's tanh
    form): x / (1 + exp(-2 * y)) instead (kernel_ir.sigmoid_form), one exp and a division in place
    of the tanh. GELU 4096x1024's arithmetic took 0.73-0.76 ms in L2 so against 0.93-0.96
    (docs/experiments/2026-12-05j-cpu/first.c); the judge holds it to the user's formula's bound
    like every variant, and in float32 it kept within 0.79 of it with numpy's exp and 0.755 with
    ours as rendered, 0.656 as written (docs/experiments/2026-12-06-cpu). Only the `_stream` twins of our own functions have one (they
    store plainly under STREAM_FROM bytes): the choice rounds decide between the forms."""
    if sigmoid_form(kernel) is kernel:
        return ()
    return tuple(replace(s, name=f"{s.name}_sigmoid", sigmoid=True) for s in schedules)


def piped_twins(kernel: KernelIR, schedules: Sequence[Schedule]) -> tuple[Schedule, ...]:
    """The `piped` twins of `schedules` that pipe on `kernel` (CRenderer.pipes)."""
    return tuple(t for t in map(piped, schedules) if CpuRenderer(kernel, t).pipes())


def piped(s: Schedule) -> Schedule:
    """`s` with each row's final pass run in the next row's first pass (CRenderer.pipes), its split
    loops' groups as AVX-512 vectors where the compiler targets AVX-512 (the same bits): with the
    final pass's streaming stores in its groups, GCC kept the partial sums of the `omp simd` form on
    the stack, and RMSNorm 4096x1024 ran 0.759 against 0.783 ms, LayerNorm 0.853 against 0.873
    (cold 1.001 against 1.104), the unpiped kernels 0.837 and 0.925 (1.097 cold); the `_fma` twins'
    piped twins: RMSNorm 0.687 against 0.752 (cold 1.000 against 1.112), add+RMSNorm 0.983 against
    1.009 (cold 1.483 against 1.551) (docs/experiments/2026-12-05g-cpu/knobs.py)."""
    return replace(s, name=f"{s.name}_piped", piped=True, vectors=s.vectors or avx512())


def fma_twin(s: Schedule) -> Schedule:
    """`s` with a*b+c contracted, its split loops' groups written as AVX-512 vectors where the
    compiler targets AVX-512 (CRenderer.vector_groups). In the `omp simd` form GCC kept one of
    LayerNorm's six contracted partial sums on the stack, so every group waited on a store and a
    reload: LayerNorm 4096x1024's rows took 248-256 ns in cache against 184-195 uncontracted; as
    vectors 163, and read from memory 0.720-0.834 ms against 0.751-0.865 for the fastest
    uncontracted variant (1.02-1.04x). The vector form's contracted twins of mean/var, RMSNorm and
    add+RMSNorm were faster than the `omp simd` ones too (in cache 81-82 against 82, 114-120
    against 126-128, 143 against 154 ns a row; docs/experiments/2026-12-05c-cpu)."""
    return replace(s, name=f"{s.name}_fma", contract=True, vectors=s.vectors or (bool(s.split) and avx512()))


def near(s: Schedule) -> Schedule:
    """`s` asking for the rows ahead PREFETCH_NEAR bytes on instead of PREFETCH_AHEAD (one 4 KB row
    instead of two). Which distance is faster moves with the VM's memory: on 2026-12-04 two rows
    ahead won by 0-12% in both of the morning's states (CRenderer.ahead_rows), and in the evening
    one row won by 8-18% for RMSNorm and 4-14% for LayerNorm read from memory
    (docs/experiments/2026-12-04e-cpu), so the choice rounds time both."""
    return replace(s, name=f"{s.name}_near", prefetch=PREFETCH_NEAR)


def probe_schedule(schedule: Schedule) -> Schedule:
    """What the judge's function probes render with: the candidate's own schedule. Its vector
    math, lanes and blocking decide which elements reach libmvec's vector entry points and which
    libm's scalar tail (judge.probe measures each rendering once)."""
    return schedule


def contractible(kernel: KernelIR) -> bool:
    """Whether a product feeds a sum, a difference or a row sum (whose loop adds it to a partial):
    what FMA contraction would fuse."""
    body = kernel.body
    products = (Op.MUL, Op.SQUARE)
    return any(i.op in (Op.ADD, Op.SUB, Op.SUM) and any(body[s].op in products for s in i.srcs) for i in body)


def wide(s: Schedule) -> Schedule:
    """`s` with 16-lane SIMD loops (one AVX-512 register of floats; two AVX2 registers elsewhere),
    reductions in SPLIT partial results, per-row divisors inverted once (Schedule.reciprocal), in
    row kernels the next row prefetched (CRenderer.render_row: by the streaming store loop or the
    last reducing pass), and non-temporal stores of
    whole cache lines once a call writes STREAM_FROM bytes (where every output is float32), except
    with a stash, whose final pass reads back the very lines it would stream past the cache
    (softmax took 2.8 ms so against 1.1 ms without), and with libmvec: the plain head of a streamed
    row, whose length follows the output's address, would call libm's scalar function where the
    body calls the vector one, so an element's bits would depend on where the buffer lies (the
    judge's repeated runs caught it: `nondeterminism`)."""
    streams = not (s.stash or s.vector_math)
    return replace(s, name=f"{s.name}_v16", lanes=16, split=SPLIT, reciprocal=True, prefetch=PREFETCH_AHEAD,
                   stream=STREAM_FROM if streams else 0)


def scratch(s: Schedule) -> Schedule:
    """A stash's wide variant with the stashed value in a row buffer on the thread's stack instead
    of the output row, and streaming stores: the final pass then reads L1, not the lines it
    streams (what withholds streaming from a plain stash). Offered only where the final pass calls
    no approximated function beside the one stashed: its row is split at the output's first cache
    line, and a libmvec call there would give bits that depend on the buffer's address. Softmax
    4096x1024 on an AMD EPYC here: 1.7-1.9 ms against 2.1-2.3 ms stashed in the output
    (docs/experiments/2026-12-02-cpu/sm.c, back to back)."""
    return replace(wide(s), name=f"{s.name.replace('stash', 'scratch')}_v16", scratch=True, stream=STREAM_FROM)


def avx512() -> bool:
    """Whether the C compiler, with the build's flags (-march=native), targets AVX-512: where it
    doesn't, Schedule.vectors renders what its twin does (the `#if` takes the `omp simd` form)."""
    return _avx512(os.environ.get("CC", "gcc"))


@lru_cache(maxsize=None)
def _avx512(cc: str) -> bool:
    done = subprocess.run([cc, *[f for f in FLAGS if f.startswith("-march")], "-dM", "-E", "-x", "c", os.devnull],
                          capture_output=True, text=True)
    return done.returncode == 0 and "#define __AVX512F__ 1" in done.stdout


@lru_cache(maxsize=1)
def compiler() -> str:
    cc = os.environ.get("CC", "gcc")
    out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=True).stdout
    return f"{cc}: {out.splitlines()[0]}"


def default_cache_dir() -> Path:
    return Path(os.environ.get("AUTOPERFECT_CACHE", Path.home() / ".cache" / "autoperfect")) / "build"


@dataclass(frozen=True)
class Build:
    ok: bool
    library: str | None
    command: list[str]
    log: str
    seconds: float
    cached: bool
    key: str = field(default="")

    def to_json(self) -> dict:
        return {"ok": self.ok, "library": self.library, "command": self.command, "log": self.log,
                "seconds": round(self.seconds, 3), "cached": self.cached, "key": self.key}


def source_of(library: str) -> Path:
    """The rendered source a built library came from (kept beside it)."""
    return Path(library).with_suffix(".c")


def vmath_object(cache_dir: Path | None = None) -> str | None:
    """Our vector math (vmath.c) compiled once per source, compiler and flags into an object that
    build() links into the kernels calling it (its symbols hidden: each library keeps its own
    copy), or None where it doesn't build (a machine without AVX2 and FMA: no schedule asks then).
    The object's name holds the hash of what made it."""
    return _vmath_object(str(Path(cache_dir or default_cache_dir())), VMATH)


@lru_cache(maxsize=None)
def _vmath_object(cache_dir: str, source: Path) -> str | None:
    text = source.read_text() + source.with_name(OWN_VECTOR16_SOURCE.name).read_text()  # and the header it includes
    flags = [f for f in FLAGS if f != "-shared"] + ["-fvisibility=hidden", "-c"]
    key = hashlib.sha256("\0".join([text, compiler(), *flags]).encode()).hexdigest()[:24]
    obj = Path(cache_dir) / f"vmath-{key}.o"
    if obj.exists():
        return str(obj)
    obj.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        out = Path(tmp) / obj.name
        done = run([os.environ.get("CC", "gcc"), *flags, "-o", str(out), str(source)], capture_output=True, text=True)
        if done.returncode != 0:
            return None
        os.replace(out, obj)
    return str(obj)


def build(source: str, cache_dir: Path | None = None, timeout_s: float = 120) -> Build:
    """Compile `source` into a shared library, reusing an earlier build of the same source. A source
    that calls our own math (cfamily.OWN_MATH) is linked with vmath_object()."""
    cache_dir = Path(cache_dir or default_cache_dir())
    cc = os.environ.get("CC", "gcc")
    own = bool(called(OWN_MATH.values(), source))
    vmath = vmath_object(cache_dir) if own else None
    if own and vmath is None:
        return Build(False, None, [cc, *FLAGS], f"calls our vector math ({', '.join(OWN_MATH.values())}), "
                     f"which this machine's compiler does not build ({VMATH.name} needs AVX2 and FMA)",
                     0.0, False)
    key = hashlib.sha256("\0".join([source, compiler(), *FLAGS, *([Path(vmath).name] if vmath else [])])
                         .encode()).hexdigest()[:24]
    lib = cache_dir / f"{key}.so"
    libs = ([vmath] if vmath else []) + (["-lmvec", "-lm"] if "omp declare simd" in source else ["-lm"])

    def line(out: Path, src: Path, prelude: Sequence[str] = ()) -> list[str]:
        return [cc, *prelude, *FLAGS, "-o", str(out), str(src), *libs]

    if lib.exists() and _intact(lib):
        return Build(True, str(lib), line(lib, cache_dir / f"{key}.c"), "", 0.0, True, key)
    cache_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    prelude = precompiled_prelude(source, cache_dir, make=_BUILT[str(cache_dir)] >= PRELUDE_AFTER)
    command = line(lib, cache_dir / f"{key}.c", prelude)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        src, out = Path(tmp) / f"{key}.c", Path(tmp) / f"{key}.so"
        src.write_text(source)
        cmd = line(out, src, prelude)
        try:
            proc = run(cmd, capture_output=True, text=True, timeout=timeout_s)
            log, ok = (proc.stdout + proc.stderr).replace(tmp, str(cache_dir)), proc.returncode == 0
        except subprocess.TimeoutExpired:
            log, ok = f"compiler timed out after {timeout_s} s", False
        refused = elf.refusal(str(out), _empty_library(cc, compiler(), tuple(libs))) if ok else ""
        if refused:
            log, ok = log + refused, False
        seconds = time.perf_counter() - start
        if ok:
            shutil.copyfile(src, cache_dir / f"{key}.c")
            _digest(lib).write_text(hashlib.sha256(out.read_bytes()).hexdigest())
            os.replace(out, lib)  # atomic: a reader never sees a half-written library
            _BUILT[str(cache_dir)] += 1
    return Build(ok, str(lib) if ok else None, command, log, seconds, False, key)


@lru_cache(maxsize=None)
def _empty_library(cc: str, version: str, libs: tuple[str, ...]) -> elf.Contents | None:
    """What an empty library built as a kernel is holds: the C runtime's own objects, imports and
    load-time code, which every kernel's library has too."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "empty.c", Path(tmp) / "empty.so"
        src.write_text("void ap_empty(void) {}\n")
        done = run([cc, *FLAGS, "-o", str(out), str(src), *libs], capture_output=True)
        return elf.read(str(out)) if done.returncode == 0 else None


def _digest(lib: Path) -> Path:
    return lib.with_suffix(".sha256")


def _intact(lib: Path) -> bool:
    """Whether a built library is the one its build wrote (its sha256, kept beside it): one damaged
    since, or from a build that kept no digest, is built again rather than failing every load."""
    digest = _digest(lib)
    return digest.is_file() and hashlib.sha256(lib.read_bytes()).hexdigest() == digest.read_text().strip()


INCLUDE = re.compile(r"#include <[A-Za-z0-9_./]+>")
# Kernels this process builds in a directory before it precompiles their includes there: a header
# costs about one build (0.8 s) and saves 0.35 s of each build after it, so a directory that gets
# one or two kernels (most of the tests' own) is better off without.
PRELUDE_AFTER = 2
_BUILT: Counter = Counter()  # kernels this process built, by cache directory


def precompiled_prelude(source: str, cache_dir: Path, make: bool = True) -> list[str]:
    """Compiler arguments that give `source` its leading `#include` lines as a precompiled header
    (`-include` it), or [] where it has none, the header does not build, or it is not there yet and
    `make` is off. Parsing <immintrin.h> was 0.35 s of a kernel's 0.85 s build here; with the header
    precompiled, 30 kernels of a LayerNorm's derivative built in 9.9 s against 15.2 s one after
    another, to the same machine code (docs/experiments/2026-12-07b-cpu/prelude.py). The header
    holds exactly those lines, which the source then includes again to no effect, so it compiles as
    it would alone: the library's key stays the source's. One header a cache directory, compiler,
    flags and list of includes."""
    lines = list(takewhile(INCLUDE.fullmatch, (line.strip() for line in source.splitlines())))
    header = _prelude(str(cache_dir), "".join(f"{line}\n" for line in lines), make) if lines else None
    return ["-include", header] if header else []


def _prelude(cache_dir: str, text: str, make: bool) -> str | None:
    cc, flags = os.environ.get("CC", "gcc"), [f for f in FLAGS if f != "-shared"]
    key = hashlib.sha256("\0".join([text, compiler(), *flags]).encode()).hexdigest()[:24]
    header = Path(cache_dir) / f"prelude-{key}.h"
    if Path(f"{header}.gch").exists():
        return str(header)
    if not make:
        return None
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        h = Path(tmp) / header.name
        h.write_text(text)
        done = run([cc, *flags, "-x", "c-header", "-o", f"{h}.gch", str(h)], capture_output=True)
        if done.returncode != 0:
            return None
        os.replace(h, header)  # the header first: its precompiled form existing says both are there
        os.replace(f"{h}.gch", f"{header}.gch")
    return str(header)


# -- running on MLX arrays --------------------------------------------------------------------------


def as_numpy(a) -> np.ndarray:
    """A numpy view of an evaluated MLX array's buffer (bfloat16 viewed as uint16); no copy."""
    import mlx.core as mx

    if a.dtype == mx.bfloat16:
        a = a.view(mx.uint16)
    view = np.asarray(a)
    return view if view.flags.c_contiguous else np.ascontiguousarray(view)


class Kernel:
    """A loaded kernel: call it with MLX arrays and a launch; get new MLX arrays back.

    With the native extension (autoperfect.native) a call is an MLX op: lazy, composable, usable
    inside mx.compile, outputs from MLX's allocator. Without it, the inputs are evaluated and the
    kernel runs at once through ctypes on numpy views of the buffers (no copies either way).
    `dispatch="ctypes"` forces the fallback, e.g. to compare the two."""

    def __init__(self, kernel: KernelIR, library: str, dispatch: str = "auto"):
        if dispatch not in ("auto", "native", "ctypes"):
            raise ValueError(f"dispatch must be auto, native or ctypes, not {dispatch!r}")
        self.k = kernel
        self.lib = ctypes.CDLL(library)
        self.fn = getattr(self.lib, kernel.name)
        self.fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64),
                            ctypes.POINTER(ctypes.c_int64)]
        self.fn.restype = None
        self.address = ctypes.cast(self.fn, ctypes.c_void_p).value
        self.ext = None if dispatch == "ctypes" else native.load()
        if dispatch == "native" and self.ext is None:
            raise native.NativeBuildError(f"native dispatch is not available: {native.describe()['why']}")
        self.in_dtypes = [dtypes.to_mlx(a.dtype) for a in kernel.inputs]
        self.out_dtypes = [dtypes.to_mlx(a.dtype) for a in kernel.outputs]
        self._launchers: dict[Launch, object] = {}

    @property
    def dispatch(self) -> str:
        return "ctypes" if self.ext is None else "native"

    def __call__(self, inputs: Sequence, launch: Launch | None = None) -> list:
        launch = launch or self.k.launch
        if self.ext is not None:
            return self.bind(launch)(list(inputs))
        import mlx.core as mx

        native.check_inputs(self.k.name, inputs, launch.in_shapes, self.in_dtypes)
        mx.eval(*inputs)
        outs = [mx.zeros(shape, dtype=dtype) for dtype, shape in zip(self.out_dtypes, launch.out_shapes)]
        mx.eval(*outs)
        views = [as_numpy(x) for x in inputs] + [as_numpy(o) for o in outs]
        self.run_numpy(views, launch)
        return outs

    def bind(self, launch: Launch):
        """The call at one launch, made once: a callable of the input list. Natively the extension's
        Launcher (its arguments converted once, so a call passes only the inputs), else this
        kernel's ctypes call at that launch."""
        bound = self._launchers.get(launch)
        if bound is None:
            if self.ext is None:
                bound = partial(self.__call__, launch=launch)
            else:
                bound = self.ext.launcher(self.address, launch.in_shapes, self.in_dtypes, launch.dims,
                                          self.flat_strides(launch), launch.out_shapes,
                                          self.out_dtypes, self.k.name)
            self._launchers[launch] = bound
        return bound

    def run_numpy(self, buffers: Sequence[np.ndarray], launch: Launch) -> None:
        """Run on numpy buffers (inputs then outputs), e.g. poisoned outputs in the judge."""
        self.numpy_call(buffers, launch)()

    def numpy_call(self, buffers: Sequence[np.ndarray], launch: Launch) -> Callable[[], None]:
        """The call on numpy buffers (inputs then outputs) with its arguments converted once: a call
        then costs the C function and ctypes' own step, as in a loop timing the kernel alone. The
        buffers must outlive it."""
        ptrs = (ctypes.c_void_p * len(buffers))(*[b.ctypes.data for b in buffers])
        dims = (ctypes.c_int64 * len(launch.dims))(*launch.dims)
        flat = self.flat_strides(launch)
        strides = (ctypes.c_int64 * len(flat))(*flat)
        return partial(self.fn, ptrs, dims, strides)

    @staticmethod
    def flat_strides(launch: Launch) -> list[int]:
        """Every input's launch strides, one after the other, as the ABI's `strides` argument wants."""
        return [s for st in launch.strides for s in st] or [0]
