"""Prompts: a KernelIR, the backend's rules and the loop's state, rendered through the jinja2
templates in prompts/ (one per backend and turn: `cpu.j2`, `cpu_repair.j2`, `cpu_improve.j2`).

Everything a template sees is built here as plain, prompt-safe values: the kernel's signature and
instructions in words (no graph ids, no file paths), public judge findings only (a hidden draw's
failure is one generic sentence, its data never leaves the judge), and numbers already formatted,
so the same inputs render the same bytes.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import jinja2

from .. import backends
from ..backends.cfamily import STORAGE, CRenderer
from ..kernel_ir import Instr, KernelIR
from ..ops import EXACT, REDUCE, ULP_BOUND, Op

TEMPLATES = Path(__file__).resolve().parents[2] / "prompts"  # the repository's own (editable install)
TURNS = ("draft", "repair", "improve")
LOG_LINES, LOG_CHARS = 30, 3000
HIDDEN = ("the kernel passed every public check but failed a hidden one (its inputs are withheld on "
          "purpose); look for a case the public checks may not reach")

INFIX = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/", Op.EQ: "==", Op.NE: "!=", Op.LT: "<",
         Op.LE: "<=", Op.GT: ">", Op.GE: ">=", Op.AND: "and", Op.OR: "or"}
REDUCTION = {Op.SUM: "the sum", Op.PROD: "the product", Op.RMAX: "the maximum", Op.RMIN: "the minimum"}
ACCESS = {
    ("in", "elem", "contiguous"): "bufs[{a}][base(r, {a}) + j]: contiguous along the last axis",
    ("in", "elem", "strided"): "bufs[{a}][base(r, {a}) + j * strides[{last}]]: strided along the last axis",
    ("in", "elem", "broadcast"): "bufs[{a}][base(r, {a})]: one value per row (stride 0 along the last axis)",
    ("in", "row", "row"): "bufs[{a}][base(r, {a})]: one value per row",
    ("out", "elem", "contiguous"): "bufs[{a}][r * N + j]: a contiguous output, every element written once",
    ("out", "row", "row"): "bufs[{a}][r]: one value per row, written once",
}


def template_name(backend: str, turn: str) -> str:
    if turn not in TURNS:
        raise ValueError(f"unknown prompt turn {turn!r} (known: {', '.join(TURNS)})")
    return f"{backend}.j2" if turn == "draft" else f"{backend}_{turn}.j2"


def render(templates: str | Path, backend: str, turn: str, context: dict) -> str:
    return _environment(str(templates)).get_template(template_name(backend, turn)).render(**context)


@lru_cache(maxsize=None)
def _environment(templates: str) -> jinja2.Environment:
    """StrictUndefined: a template naming something the context lacks fails, never renders blank."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(templates), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                              autoescape=False)


# -- the kernel --------------------------------------------------------------------------------------


def kernel_facts(k: KernelIR) -> dict:
    """The kernel as a template sees it: ABI, arguments with their access class, instructions with
    the math in words, and which exactness rule each op is held to."""
    last = k.rank - 1
    args = []
    for a, arg in enumerate(k.args):
        access = ACCESS[(arg.role, arg.space, arg.inner)].format(a=a, last=f"{a * k.rank + last}")
        if k.loop and arg.role == "out" and arg.space == "elem":
            access = (f"bufs[{a}][sum over d of c_d * os_d + j * os_{last}]: the array's own row-major order, "
                      f"every element written once; the loop's axis d is the array's axis {list(k.loop)}[d], "
                      "os_d that axis's row-major stride in the array's shape")
        args.append({"index": a, "name": arg.name, "role": "input" if arg.role == "in" else "output",
                     "dtype": arg.dtype, "c_type": STORAGE[arg.dtype], "access": access})
    approx = sorted({(i.op.value, ULP_BOUND[i.op]) for i in k.body if i.op in ULP_BOUND})
    if k.rank == 1:
        base = "base(r, a) = 0: rank 1 has one row"
    else:
        coords = ", ".join(f"c_{d}" for d in range(last))
        base = (f"base(r, a) = sum over d < {last} of c_d * strides[a * {k.rank} + d], where "
                f"({coords}) is row r's coordinate in dims[0..{last - 1}], row-major")
    return {
        "name": k.name, "kind": k.kind, "rank": k.rank,
        "signature": f"void {k.name}(void **bufs, const int64_t *dims, const int64_t *strides)",
        "dims": list(k.launch.dims), "args": args, "base": base,
        "instructions": [f"%{i.id} ({i.space}, {i.dtype}) = {words(k, i)}" for i in k.body],
        "listing": k.pretty(),
        "lines": list(k.lines),
        "exact": all(i.op in EXACT or i.op in (Op.LOAD, Op.STORE) for i in k.body),
        "approximations": [f"{name}: within {ulps} ulp" for name, ulps in approx],
        "half": sorted({a.dtype for a in k.args if a.dtype in ("float16", "bfloat16")}),
        "reduces": any(i.op in REDUCE for i in k.body),
    }


def words(k: KernelIR, ins: Instr) -> str:
    """One instruction's math, in words a person (or a model) reads without the op table."""
    src = [f"%{s}" for s in ins.srcs]
    op = ins.op
    if op is Op.LOAD:
        arg = k.args[ins.attr("arg")]
        where = "[r, j]" if ins.space == "elem" and arg.inner != "broadcast" else "[r] (one value per row)"
        return f"read {arg.name}{where}"
    if op is Op.STORE:
        return f"write {src[0]} to {k.args[ins.attr('arg')].name}"
    if op is Op.CONST:
        if ins.attr("size") == "last":
            minus = ins.attr("minus")
            return "N, the length of the last axis, as a number" + (f", minus {minus}" if minus else "")
        return f"the constant {ins.attr('value')!r}"
    if op in REDUCE:
        nan = " (NaN if any term is NaN)" if op in (Op.RMAX, Op.RMIN) else ""
        return f"{REDUCTION[op]} over j of {src[0]}{nan}"
    if op in INFIX:
        text = f"{src[0]} {INFIX[op]} {src[1]}"
    elif op in (Op.MAX, Op.MIN):
        text = f"{op.value}({src[0]}, {src[1]}) (NaN if either is NaN)"
    elif op is Op.WHERE:
        text = f"{src[1]} if {src[0]} else {src[2]}"
    elif op is Op.CAST:
        text = f"{src[0]} converted to {ins.dtype}"
    else:
        text = f"{op.value}({', '.join(src)})"
    if op in ULP_BOUND:
        return f"{text}; an approximation, within {ULP_BOUND[op]} ulp"
    return f"{text}; exact (correctly rounded, bit for bit)" if op in EXACT else text


def backend_facts(backend: str) -> dict:
    """What the harness provides and how it builds: the same for every kernel on this machine."""
    be = backends.get(backend)
    return {"name": backend, "includes": list(CRenderer.includes), "flags": " ".join(be.FLAGS),
            "compiler": be.compiler()}


# -- what the judge and the compiler said ---------------------------------------------------------


def build_feedback(log: str) -> str:
    """A compiler log made prompt-safe: file paths become `kernel.c`, long logs are cut."""
    text = re.sub(r"(?:[^\s:]*/)?[0-9a-f]{24}\.(c|so)", r"kernel.\1", log)
    lines = text.strip().splitlines()[:LOG_LINES]
    return "\n".join(lines)[:LOG_CHARS]


def verdict_feedback(verdict: dict) -> str:
    """The judge's located error from public checks; a hidden failure says only that it happened."""
    if "hidden" in verdict and verdict["hidden"].get("failed"):
        return HIDDEN
    return verdict["reason"]


def profile_words(profile: dict | None, ratio: bool = True) -> str:
    """A timing profile in one line: median, interval, achieved bandwidth and (with `ratio`) the
    speedup over the champion it was timed against."""
    if not profile:
        return "not timed"
    lo, hi = profile["ci95_s"]
    text = (f"median {profile['median_s'] * 1e6:.1f} us (95% interval {lo * 1e6:.1f}-{hi * 1e6:.1f} us), "
            f"{profile['gbps']:.2f} GB/s of ideal traffic")
    if ratio and "speedup" in profile:
        s = profile["speedup"]
        text += f", {s['median']:.3f}x the champion (95% interval {s['ci95'][0]:.3f}-{s['ci95'][1]:.3f})"
    return text
