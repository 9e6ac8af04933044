"""Mutation testing of the judge: plant known bugs into a verified kernel and check each is rejected.

Every class below is a bug a generator really writes. Each is planted into the verified candidate's
rendered source as a text rewrite keyed on the renderer's own spellings: the KernelIR chooses the site
(which input varies along rows, which constant is an epsilon, which instruction feeds the store)
and the renderer spells the statement before and after (`CRenderer.assign` for the CPU's C,
`SimtRenderer.declare` and its load and store spellings for CUDA), so a mutant differs from the
verified source in the statements of one bug. On the GPU the loop-shaped classes are planted in the
SIMT structure: the bounds test of the grid-stride loop or of a row's last pass, the `live` test of a
row's threads, and the race is a barrier of the block-wide reduction taken out. Rendering a mutated KernelIR could not plant most classes (a
skipped tail, a race or an uninitialized accumulator live below KernelIR), and a renderer hook would
put bug-planting code into the renderer. A class that does not apply to a kernel says why; a
rewrite whose spelling is missing says so too (the renderer changed, and the tests notice).

Beside the judge, each mutant meets a KernelBench-style check: the spec's shapes, one normal draw,
`np.allclose(rtol=1e-2, atol=1e-2)` against the float64 answer key, through the user's call path.
Both run in child processes, so a mutant that crashes or hangs is a verdict too.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import backends, dtypes, interp, static
from .backends import cpu
from .backends.cfamily import (CENTRED_TEST, TRUSTED_SPREAD, VECTOR_LOADS, CRenderer, GpuSchedule, Schedule,
                               SimtRenderer, computes)
from .graph import make_attrs
from .judge import Settings, draw, run_child, run_isolated, serve
from .kernel_ir import Instr, KernelIR
from .ops import EXACT, REDUCE, Op
from .pipeline import front, program
from .spec import OpSpec, seed_for

BACKENDS = ("cpu", "cuda")  # whose renderers' spellings the rewrites know (CRenderer, CudaRenderer)
ARITH = (Op.ADD, Op.SUB, Op.MUL, Op.DIV)
LOOP = re.compile(r"for \(int64_t j = \w+; j < (\w+); j\+\+\)")
PARALLEL = "#pragma omp parallel"  # `parallel for`, or `parallel` then `for` (a team fencing its streaming stores)
RTOL = ATOL = 1e-2  # KernelBench's tolerances
DIFF_LINES = 12


@dataclass(frozen=True)
class Mutant:
    bug: str
    kernel: str
    source: str
    diff: str


@dataclass(frozen=True)
class NotApplicable:
    bug: str
    kernel: str
    reason: str


class Skip(Exception):
    """The bug class does not apply to this kernel; the message says why."""


class Site:
    """A kernel, its verified source, and the renderer's spelling of each of its statements under
    the source's schedule (which decides some: a float16 row staged or read in registers, a division
    by a row value inverted)."""

    simt = False

    def __init__(self, k: KernelIR, source: str, schedule: Schedule = Schedule()):
        self.k, self.source, self.schedule = k, source, schedule
        self.r = self.renderer(k)

    def renderer(self, k: KernelIR):
        return CRenderer(k, self.schedule)

    def line(self, i: int) -> str:
        return self.r.assign(i)

    def with_instr(self, ins: Instr) -> "Site":
        """This site with instruction `ins.id` replaced by `ins`."""
        body = tuple(ins if b.id == ins.id else b for b in self.k.body)
        return type(self)(dataclasses.replace(self.k, body=body), self.source, self.schedule)

    def line_as(self, ins: Instr) -> str:
        """The statement instruction `ins.id` would render to if it were `ins`."""
        return self.with_instr(ins).line(ins.id)

    def rewrite(self, i: int, ins: Instr) -> str:
        """The source with instruction `i` rendered as `ins` wherever the source spells it: its
        statement, and in a split loop's vector groups (CRenderer.vector_groups) its vector
        statement too, so the bug is in the groups the machine runs and not only in the `omp simd`
        ones an `#if` leaves out."""
        out = self.swap(self.line(i), self.line_as(ins))
        if self.simt:
            return out
        old, new = self.r.vector_assign(i), self.with_instr(ins).r.vector_assign(i)
        return out.replace(old, new) if old and new else out

    def swap(self, old: str, new: str, source: str | None = None) -> str:
        """Every occurrence of `old` (a row kernel recomputes a statement in each pass) becomes `new`
        (in `source`, if given: a rewrite made of several swaps)."""
        source = self.source if source is None else source
        if old not in source:
            raise Skip(f"the renderer's spelling {old.strip()!r} is not in the source")
        return source.replace(old, new)

    def last_loop(self, condition: Callable[[str, str], str]) -> str:
        """The source with the last element loop's condition `j < bound` made `condition(j, bound)`."""
        loops = list(LOOP.finditer(self.source))
        if not loops:
            raise Skip("the renderer's element loop is not in the source")
        m = loops[-1]
        loop = m.group().replace(f"j < {m.group(1)}", condition("j", m.group(1)))
        return self.source[:m.start()] + loop + self.source[m.end():]

    def first(self, ops, distinct: bool = False) -> Instr:
        for ins in self.k.body:
            if ins.op in ops and (not distinct or len(set(ins.srcs)) > 1):
                return ins
        raise Skip(f"no {'/'.join(op.value for op in ops)} instruction")


class SimtSite(Site):
    """The same for a SIMT source (CUDA; the structure of `SimtRenderer`): statements are spelled by
    `declare`, loads and stores by the renderer's vector spellings. `last_loop` rewrites the bounds
    test of the last element loop: every step of the grid-stride loop (`t < VECTORS`) in an
    elementwise kernel, the final pass's `j < N` in a row kernel (every pass's, where the kernel has
    no final pass: it stores only row values)."""

    simt = True
    renderer_class: type[SimtRenderer] = SimtRenderer

    def renderer(self, k: KernelIR):
        return self.renderer_class(k, GpuSchedule())

    def line(self, i: int) -> str:
        ins = self.k.body[i]
        if ins.op is Op.STORE:
            return self.store_line(ins)
        return self.r.declare(i)

    def store_line(self, ins: Instr) -> str:
        if ins.space == "row":
            return self.r.row_store(ins.id)
        dtype = self.k.args[ins.attr("arg")].dtype
        return f"O{ins.id}.v[u] = {self.r.to_storage.get(dtype, '{}').format(self.r.name(ins.srcs[0]))};"

    def last_loop(self, condition: Callable[[str, str], str]) -> str:
        if self.k.kind == "elementwise":  # the loop over a thread's steps, and each step's test
            swapped = self.swap("t0 < VECTORS;", f"{condition('t0', 'VECTORS')};")
            return self.swap("if (t < VECTORS) {", f"if ({condition('t', 'VECTORS')}) {{", swapped)
        if self.r.plan.final_elem:
            return self.swap("if (live && j < N) {", f"if (live && {condition('j', 'N')}) {{")
        return self.swap("if (j < N) {", f"if ({condition('j', 'N')}) {{")  # a row kernel of sums only

    def fetch_lines(self, i: int, a: int) -> list[str]:
        """The renderer's vector-load statements of instruction `i` from input `a` (both alignment
        paths)."""
        slot = "[q]" if self.k.kind == "elementwise" else ""
        return [self.r.vector_load.format(name=f"L{i}{slot}", ptr=f"in{a} + b{a} + j", aligned=al)
                for al in ("true", "false")]


def site_for(backend: str, k: KernelIR, source: str) -> Site:
    if backend == "cpu":  # the sigmoid form's body is the site's kernel already (computes)
        return Site(computes(k, source), source, dataclasses.replace(cpu.schedule_of(k, source), sigmoid=False))
    if backend == "cuda":
        from .backends.cuda import CudaRenderer

        class CudaSite(SimtSite):
            renderer_class = CudaRenderer
        return CudaSite(k, source)
    raise ValueError(f"bugs are planted in the spellings of {', '.join(BACKENDS)} sources, not {backend}'s")


# -- the bug classes ---------------------------------------------------------------------------------


def off_by_one(s: Site) -> str:
    return s.last_loop(lambda i, bound: f"{i} <= {bound}")


def skipped_tail(s: Site) -> str:
    return s.last_loop(lambda i, bound: f"{i} < ({bound} & ~(int64_t)7)")


def _row_term(s: Site) -> tuple[str, int, int]:
    """(the offset term, input, axis) of the first input that varies along the innermost row axis."""
    k = s.k
    if k.rank < 2:
        raise Skip("a rank-1 kernel has no rows")
    d = k.rank - 2
    for a, strides in enumerate(k.launch.strides):
        if strides[d] != 0:
            return f"c{d} * {s.r.stride(a, d)}", a, d
    raise Skip("every input is broadcast along the rows")


def wrong_row(s: Site) -> str:
    term, a, d = _row_term(s)
    return s.swap(term, f"((c{d} + 1) % {s.r.dim(d)}) * {s.r.stride(a, d)}")


def wrong_stride(s: Site) -> str:
    term, a, d = _row_term(s)
    return s.swap(term, f"c{d} * {s.r.stride(a, d + 1)}")


def _const(ins: Instr) -> float | None:
    value = ins.attr("value")
    if ins.op is not Op.CONST or value is None or ins.dtype not in dtypes.FLOATS:
        return None
    return float(value)


def _stabilizers(k: KernelIR) -> list[int]:
    """Small positive constants added to something: the epsilon of a norm."""
    added = {s for ins in k.body if ins.op is Op.ADD for s in ins.srcs}
    return [ins.id for ins in k.body if ins.id in added and 0 < abs(_const(ins) or 0) <= 1e-3]


def missing_epsilon(s: Site) -> str:
    eps = _stabilizers(s.k)
    if not eps:
        raise Skip("no small constant is added to anything (no epsilon)")
    ins = s.k.body[eps[0]]
    return s.rewrite(ins.id, dataclasses.replace(ins, attrs=make_attrs({"value": 0.0})))


def wrong_constant(s: Site) -> str:
    eps = set(_stabilizers(s.k))
    for ins in s.k.body:
        value = _const(ins)
        if value and math.isfinite(value) and ins.id not in eps:
            changed = make_attrs({"value": value * 1.001})
            return s.rewrite(ins.id, dataclasses.replace(ins, attrs=changed))
    raise Skip("no coefficient (the constants are sizes or an epsilon)")


def sign_flip(s: Site) -> str:
    ins = s.first((Op.ADD, Op.SUB), distinct=True)
    flipped = Op.SUB if ins.op is Op.ADD else Op.ADD
    return s.rewrite(ins.id, dataclasses.replace(ins, op=flipped))


def swapped_operands(s: Site) -> str:
    ins = s.first((Op.SUB, Op.DIV), distinct=True)
    return s.rewrite(ins.id, dataclasses.replace(ins, srcs=ins.srcs[::-1]))


def dropped_term(s: Site) -> str:
    """The arithmetic nearest the first store keeps only its first operand."""
    ins = s.k.body[s.first((Op.STORE,)).srcs[0]]
    while ins.op not in ARITH:
        if not ins.srcs:
            raise Skip("the stored value is computed without +, -, * or /")
        ins = s.k.body[ins.srcs[0]]
    kept = Instr(ins.id, Op.CAST, ins.dtype, ins.space, ins.srcs[:1], make_attrs({"dtype": ins.dtype}))
    return s.rewrite(ins.id, kept)


def precision_downcast(s: Site) -> str:
    """A float32 output passes through float16 on its way out."""
    store = s.first((Op.STORE,))
    v, dtype = s.r.name(store.srcs[0]), s.k.args[store.attr("arg")].dtype
    if dtype != "float32":
        raise Skip(f"a {dtype} output: the next narrower type's rounding is within the op's own error bound")
    old = s.line(store.id)
    return s.swap(old, old.replace(f"= {v};", f"= ap_round_f16({v});"))


def uninitialized_accumulator(s: Site) -> str:
    ins = next((i for i in s.k.body if i.op in REDUCE), None)
    if ins is None:
        raise Skip("no reduction, so no accumulator")
    m = re.search(rf"float a{ins.id} = [^;]+;", s.source)
    if m is None:
        raise Skip(f"the renderer's accumulator a{ins.id} is not in the source")
    return s.swap(m.group(), f"float a{ins.id};")  # in every form of the row (CRenderer.render_row's branches)


def wrong_broadcast(s: Site) -> str:
    """An input broadcast along the rows is read as if broadcast along the last axis too (or the
    other way round: a per-row scalar read along the row)."""
    for ins in s.k.body:
        if ins.op is Op.LOAD and ins.space == "elem":
            a = ins.attr("arg")
            inner, strides = s.k.args[a].inner, s.k.launch.strides[a]
            old = s.r.load(ins)
            if s.simt:  # a vector's lane u is column j + u
                if inner == "contiguous" and 0 in strides[:-1]:
                    return s.swap(old, f"ap_from(in{a}[b{a}])")
                if inner == "broadcast":
                    return s.swap(old, old.replace(f"b{a}]", f"b{a} + j + u]"))
                continue
            if inner == "contiguous" and 0 in strides[:-1]:
                # the row's first element, read from the input as an unstaged load reads it (a
                # staged one reads its buffer), in the vector forms too (vector groups, final pass)
                misread = s.r.unstaged().load(ins).replace(f"b{a} + j]", f"b{a}]")
                vector = s.r.vector_expr(ins)
                out = s.swap(old, misread)
                return out.replace(vector, f"_mm512_set1_ps({misread})") if vector else out
            along, across = (VECTOR_LOADS[x].format(a=a) for x in ("contiguous", "broadcast"))  # vector groups
            if inner == "broadcast":
                return s.swap(old, old.replace(f"b{a}]", f"b{a} + j]")).replace(across, along)
    raise Skip("no input is broadcast")


def race(s: Site) -> str:
    """A loop variable declared outside the parallel loop, so all threads share it: the row index
    (rank >= 2) or, in a rank-1 kernel, the element index of every loop over a block (without
    their simd pragmas, which would privatize it). `volatile` keeps the compiler from caching it:
    a race is undefined behaviour that an optimizer may otherwise make harmless.

    On a GPU: the barrier between the warps' writes of their partial sums to shared memory and
    the reads of them is gone (a row reduced by a block of several warps)."""
    if s.simt:
        return _simt_race(s)
    at = s.source.find(PARALLEL)
    if at < 0:
        raise Skip("the kernel has no parallel loop")
    head, tail = s.source[:at], s.source[at:]
    if s.k.rank >= 2:
        shared = "r_shared"
        tail = re.sub(r"\br\b", shared, tail)
        tail = tail.replace(f"const int64_t {shared} = t / nb, ", f"{shared} = t / nb; const int64_t ")
        tail = tail.replace(f"for (int64_t {shared} = 0; {shared} < R; {shared}++) {{",
                            f"for (int64_t r_ = 0; r_ < R; r_++) {{ {shared} = r_;")
    elif s.k.kind == "elementwise":
        shared = "j_shared"
        tail = re.sub(r"[ \t]*#pragma omp simd\b.*\n", "", tail)
        tail = re.sub(rf"for \(int64_t {shared} = ", f"for ({shared} = ", re.sub(r"\bj\b", shared, tail))
    else:
        raise Skip("a rank-1 row kernel has one row: its parallel loop has nothing to race over")
    # a piped row kernel's blocks for the row it kept declare their own `r` (CRenderer.as_last_row):
    # renamed along, they still shadow the shared one
    if re.search(rf"int64_t {shared}\b(?! = ap_last;)", tail):
        raise Skip("the renderer's parallel loop is not spelled as expected")
    indent = head[head.rfind("\n") + 1:]
    return f"{head}volatile int64_t {shared};\n{indent}{tail}"


def _simt_race(s: SimtSite) -> str:
    if s.k.kind == "elementwise":
        raise Skip("the threads of an elementwise kernel share nothing")
    meta = s.r.parse(s.source)[0]
    if meta["rows_per_block"] != 1 or meta["block"] <= 32:
        raise Skip(f"schedule {meta['schedule']}: a row is reduced within one warp, by shuffles alone "
                   "(no shared memory, no barrier)")
    if not s.r.barrier or s.r.barrier not in s.source:
        raise Skip("the renderer's barrier is not in the source")
    return s.source.replace(s.r.barrier, "/* barrier removed */", 1)


def partial_write(s: Site) -> str:
    """The parallel loop stops one iteration early: the last row or block (the last thread's
    share) is never written. On a GPU: the grid-stride loop skips its last vector, or a row
    kernel's last row counts as a spare row."""
    if s.simt:
        if s.k.kind == "elementwise":
            return s.swap("t0 < VECTORS;", "t0 < VECTORS - 1;")
        return s.swap("const bool live = rr < R;", "const bool live = rr < R - 1;")
    m = re.search(r"for \(int64_t (t|r) = 0; \1 < (R \* nb|R); \1\+\+\)", s.source)
    if m is None:
        raise Skip("the renderer's parallel loop is not in the source")
    fixed = m.group().replace(f"< {m.group(2)};", f"< {m.group(2)} - 1;")
    return s.source[:m.start()] + fixed + s.source[m.end():]


def wrong_input(s: Site) -> str:
    """One load reads another input buffer of the same type."""
    k = s.k
    for ins in k.body:
        if ins.op is not Op.LOAD or ins.space != "elem":
            continue
        a = ins.attr("arg")
        for b, arg in enumerate(k.inputs):
            if b != a and arg.dtype == k.args[a].dtype and arg.space == "elem" and k.binds[b] != k.binds[a]:
                if s.simt and k.args[a].inner == "contiguous":  # the vector fetch reads buffer b
                    if arg.inner != "contiguous":
                        continue
                    out = s.source
                    for line in s.fetch_lines(ins.id, a):
                        if line not in out:
                            raise Skip(f"the renderer's spelling {line!r} is not in the source")
                        out = out.replace(line, line.replace(f"in{a} + b{a} + j", f"in{b} + b{b} + j"))
                    return out
                misread = dataclasses.replace(ins, attrs=make_attrs({"arg": b}))
                return s.rewrite(ins.id, misread)
    raise Skip("no other input of the same type to read by mistake")


def fma_contraction(s: Site) -> str:
    """a*b + c computed as one fused multiply-add: more accurate, but not what the op's exact
    operations round to, which is what an exact op is held to."""
    if any(i.op not in EXACT and i.op not in (Op.LOAD, Op.STORE) for i in s.k.body):
        raise Skip("approximated functions or sums: their bounds allow a fused multiply-add")
    for ins in s.k.body:
        if ins.op not in (Op.ADD, Op.SUB):
            continue
        for side, src in enumerate(ins.srcs):
            if s.k.body[src].op is Op.MUL:
                a, b = (s.r.name(x) for x in s.k.body[src].srcs)
                c = s.r.name(ins.srcs[1 - side])
                fma = s.r.fma
                expr = {(Op.ADD, 0): f"{fma}({a}, {b}, {c})", (Op.ADD, 1): f"{fma}({a}, {b}, {c})",
                        (Op.SUB, 0): f"{fma}({a}, {b}, -{c})", (Op.SUB, 1): f"{fma}(-{a}, {b}, {c})"}
                new = f"const float {s.r.name(ins.id)} = {s.r.round(expr[ins.op, side], ins.dtype)};"
                return s.swap(s.line(ins.id), new)
    raise Skip("no product feeds a sum")


def one_pass_variance(s: Site) -> str:
    """The textbook one-pass spread, E[x^2] - mean^2, on long rows: in a shifted spread
    (CRenderer.shifted_sums) every row is taken as centred (K = 0, so the sums are of x and x^2)
    and the shifted sums are trusted on every row of shifted_from's length, so none is summed again
    about its mean. Short rows keep the two-pass sum, so only rows of that length can show it, and
    only where they lie far from 0 (the judge's "offset" inputs): there the sums share leading digits
    that the subtraction loses."""
    if s.simt or f"if ({CENTRED_TEST})" not in s.source:
        raise Skip("no spread is taken in the mean's pass: the kernel sums the squares about the mean "
                   "in a pass of their own, or has no spread")
    centred = s.swap(f"if ({CENTRED_TEST})", "if (1)")
    return s.swap(f" && {TRUSTED_SPREAD})", ")", centred)


BUGS: dict[str, tuple[str, Callable[[Site], str]]] = {
    "off_by_one": ("the last loop runs one element past its end (<= for <)", off_by_one),
    "skipped_tail": ("the last loop stops at a multiple of 8: the tail is never done", skipped_tail),
    "wrong_row": ("an input is read from the next row", wrong_row),
    "wrong_stride": ("an input's row offset uses the next axis's stride", wrong_stride),
    "missing_epsilon": ("the epsilon added for stability is gone", missing_epsilon),
    "wrong_constant": ("a coefficient is off in its fourth digit", wrong_constant),
    "sign_flip": ("an addition and a subtraction trade places", sign_flip),
    "swapped_operands": ("the operands of a subtraction or division are swapped", swapped_operands),
    "dropped_term": ("the operation nearest the output drops its second operand", dropped_term),
    "precision_downcast": ("the output passes through a narrower float type", precision_downcast),
    "uninitialized_accumulator": ("a reduction's accumulator is never initialized",
                                  uninitialized_accumulator),
    "wrong_broadcast": ("an input is broadcast along the wrong axis", wrong_broadcast),
    "race": ("threads share a value without what orders their accesses (CPU: a per-iteration value "
             "of the parallel loop shared by all threads; GPU: the reduction's barrier removed)", race),
    "partial_write": ("the parallel loop skips its last row or block", partial_write),
    "wrong_input": ("a load reads another input's buffer", wrong_input),
    "fma_contraction": ("a*b+c contracted into one fused multiply-add", fma_contraction),
    "one_pass_variance": ("a long row's spread taken in one pass as E[x^2] - mean^2", one_pass_variance),
}


def plant(k: KernelIR, source: str, backend: str = "cpu") -> list[Mutant | NotApplicable]:
    """One mutant per bug class that applies to kernel `k` (whose verified source is `source`)."""
    out: list[Mutant | NotApplicable] = []
    seen = {source: "the verified source"}
    site = site_for(backend, k, source)
    for bug, (_, rewrite) in BUGS.items():
        try:
            mutated = rewrite(site)
        except Skip as e:
            out.append(NotApplicable(bug, k.name, str(e)))
            continue
        if mutated in seen:
            out.append(NotApplicable(bug, k.name, f"same source as {seen[mutated]}"))
            continue
        seen[mutated] = bug
        out.append(Mutant(bug, k.name, mutated, diff_summary(source, mutated)))
    return out


def diff_summary(before: str, after: str) -> str:
    lines = [line.strip() for line in difflib.unified_diff(before.splitlines(), after.splitlines(),
                                                            lineterm="", n=0)
             if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    more = len(lines) - DIFF_LINES
    return "\n".join(lines[:DIFF_LINES] + ([f"... {more} more changed lines"] if more > 0 else []))


# -- judging the mutants ---------------------------------------------------------------------------


def evaluate(spec: OpSpec, backend: str, kernels: list[KernelIR], sources: dict[str, str],
             libraries: dict[str, str], settings: Settings, cache_dir, jobs: int = 1) -> dict:
    """Plant every class in every kernel (the others keep their verified libraries); judge each
    mutant and run the allclose check on it, `jobs` mutants at a time (each in its own children).
    The counts are what mutants.json reports."""
    be = backends.get(backend)
    planted, skipped = [], []
    for k in kernels:
        for item in plant(k, sources[k.name], backend):
            if isinstance(item, NotApplicable):
                skipped.append({"class": item.bug, "kernel": item.kernel, "reason": item.reason})
            else:
                planted.append(item)
    # the control: the verified kernels through the same children, so that a mutant's rejection is
    # not a child that fails for every source (no device, a broken install)
    control = _caught(run_isolated(spec, backend, libraries, settings))
    head = {"control": {"passed": not control["caught"], "reason": control["reason"]},
            "not_applicable": skipped, "classes": {b: d for b, (d, _) in BUGS.items()}}
    if control["caught"]:
        return {**head, "planted": 0, "caught": 0, "baseline_caught": 0, "mutants": [],
                "skipped": f"the verified kernels fail the judge here: {control['reason']}"}
    judge_one = lambda m: _judge_mutant(spec, be, backend, m, libraries, settings, cache_dir)  # noqa: E731
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        records = list(pool.map(judge_one, planted))
    judged = [r for r in records if "judge" in r]
    return {**head, "planted": len(judged), "caught": sum(r["judge"]["caught"] for r in judged),
            "baseline_caught": sum(r["baseline"]["caught"] for r in judged), "mutants": records}


def _judge_mutant(spec, be, backend, m: Mutant, libraries, settings, cache_dir) -> dict:
    record = {"class": m.bug, "kernel": m.kernel, "description": BUGS[m.bug][0], "diff": m.diff}
    gate = static.check(m.source, backend, m.kernel)
    build = be.build(m.source, cache_dir)
    if not build.ok:  # a planting that does not build is no bug either check gets to see
        return {**record, "not_planted": f"did not compile: {build.log[-300:]}"}
    mutated = {**libraries, m.kernel: build.library}
    # the judge refuses what the static checks refuse; allclose has no such checks, so it runs the
    # mutant all the same (built here only to be run by the baseline)
    verdict = ({"passed": False, "reason": f"static check: {gate.reason}"} if not gate.passed
               else run_isolated(spec, backend, mutated, settings))
    baseline = run_child("autoperfect.mutants", {"spec": spec.to_json(), "backend": backend,
                                                 "libraries": mutated}, settings, backend)
    return {**record, "judge": _caught(verdict), "baseline": _caught(baseline)}


def _caught(verdict: dict) -> dict:
    return {"caught": not verdict["passed"], "reason": verdict.get("reason", "passed")}


def allclose_check(spec: OpSpec, backend: str, libraries: dict[str, str]) -> dict:
    """KernelBench's correctness check: the spec's shapes, one normal draw, the user's call path,
    np.allclose(rtol=1e-2, atol=1e-2) against the float64 answer key (NaN never equals NaN)."""
    import mlx.core as mx

    be = backends.get(backend)
    f = front(spec)
    prog = program(f, {k.name: be.Kernel(k, libraries[k.name]) for k in f.kernels if k is not None})
    xs = draw(spec, "normal", np.random.default_rng(seed_for(spec.name, "allclose")))
    outs = prog(*[mx.array(x).astype(dtypes.to_mlx(i.dtype)) for x, i in zip(xs, spec.inputs)])
    outs = outs if isinstance(outs, tuple) else (outs,)
    for j, (got, ref) in enumerate(zip(outs, interp.evaluate(f.traced, xs, "float64"))):
        got = np.array(got.astype(mx.float32) if got.dtype == mx.bfloat16 else got, dtype=np.float64)
        if not np.allclose(got, ref, rtol=RTOL, atol=ATOL):
            bad = int(np.sum(~np.isclose(got, ref, rtol=RTOL, atol=ATOL)))
            return {"passed": False, "reason": f"output {j}: {bad} element(s) not allclose"}
    return {"passed": True}


def main() -> None:
    serve(lambda req: allclose_check(OpSpec.from_json(req["spec"]), req["backend"], req["libraries"]))


if __name__ == "__main__":
    main()
