"""The C-family renderer: KernelIR -> C source. One table maps ops to expressions; subclasses (CPU
now, CUDA and Metal later) change a few knobs: qualifiers, loop spellings, type names.

Per-element values are computed in float whatever their storage type; float16 and bfloat16 results
are rounded after every op, as the reference does, so exact ops stay bit-exact.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..interp import const_array
from ..graph import Node, make_attrs
from ..kernel_ir import Instr, KernelIR
from ..ops import REDUCE, Op
from .schedule import plan


class Unsupported(Exception):
    """The kernel uses something this backend does not render (yet); the message says what."""


UNARY = {
    Op.NEG: "(-{0})", Op.ABS: "fabsf({0})", Op.SQUARE: "({0} * {0})", Op.SQRT: "sqrtf({0})",
    Op.RSQRT: "(1.0f / sqrtf({0}))", Op.RECIPROCAL: "(1.0f / {0})", Op.EXP: "expf({0})",
    Op.EXPM1: "expm1f({0})", Op.LOG: "logf({0})", Op.LOG1P: "log1pf({0})", Op.TANH: "tanhf({0})",
    Op.SIGMOID: "(1.0f / (1.0f + expf(-{0})))", Op.ERF: "erff({0})", Op.SIN: "sinf({0})",
    Op.COS: "cosf({0})", Op.FLOOR: "floorf({0})", Op.CEIL: "ceilf({0})",
    Op.SIGN: "({0} > 0.0f ? 1.0f : ({0} < 0.0f ? -1.0f : 0.0f))", Op.NOT: "(!{0})",
    Op.ISNAN: "({0} != {0})", Op.ISINF: "(fabsf({0}) == INFINITY)",
}
BINARY = {
    Op.ADD: "({0} + {1})", Op.SUB: "({0} - {1})", Op.MUL: "({0} * {1})", Op.DIV: "({0} / {1})",
    Op.POW: "powf({0}, {1})",
    # NaN in either operand gives NaN, as numpy and the reference do (fmaxf would drop it)
    Op.MAX: "(({0} > {1} || {0} != {0}) ? {0} : {1})", Op.MIN: "(({0} < {1} || {0} != {0}) ? {0} : {1})",
    Op.EQ: "({0} == {1})", Op.NE: "({0} != {1})", Op.LT: "({0} < {1})", Op.LE: "({0} <= {1})",
    Op.GT: "({0} > {1})", Op.GE: "({0} >= {1})", Op.AND: "({0} && {1})", Op.OR: "({0} || {1})",
}
# functions glibc's libmvec has in vector form (declared `omp declare simd` when a variant asks)
VECTOR_MATH = {"expf", "expm1f", "logf", "log1pf", "tanhf", "erff", "sinf", "cosf", "powf"}

# reduction -> (identity, OpenMP reduction operator, accumulate statement)
REDUCTIONS = {
    Op.SUM: ("0.0f", "+", "{acc} += {v};"),
    Op.PROD: ("1.0f", "*", "{acc} *= {v};"),
    Op.RMAX: ("-INFINITY", "max", "{acc} = {acc} > {v} ? {acc} : {v}; {nan} |= ({v} != {v});"),
    Op.RMIN: ("INFINITY", "min", "{acc} = {acc} < {v} ? {acc} : {v}; {nan} |= ({v} != {v});"),
}
STORAGE = {"float32": "float", "float16": "_Float16", "bfloat16": "uint16_t", "bool": "uint8_t",
           "int32": "int32_t"}
VALUE = {"float32": "float", "float16": "float", "bfloat16": "float", "bool": "int", "int32": "int"}

PRELUDE = """\
static inline float ap_bf16_load(uint16_t b) { union { uint32_t u; float f; } x; x.u = (uint32_t)b << 16; return x.f; }
static inline uint16_t ap_bf16_store(float f) {
  union { uint32_t u; float f; } x; x.f = f;
  if (f != f) return (uint16_t)((x.u >> 16) | 0x40);
  return (uint16_t)((x.u + 0x7FFFu + ((x.u >> 16) & 1u)) >> 16);
}
static inline float ap_round_bf16(float f) { return ap_bf16_load(ap_bf16_store(f)); }
static inline float ap_round_f16(float f) { return (float)(_Float16)f; }
"""


def c_float(value: float) -> str:
    if value != value:
        return "NAN"
    if value in (float("inf"), float("-inf")):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    return f"{float(value).hex()}f"


@dataclass(frozen=True)
class Schedule:
    """Knobs a variant may turn; each variant is judged and timed, the fastest kept."""
    name: str = "default"
    block: int = 16384        # elements per parallel task in elementwise kernels
    threads: bool = True      # OpenMP across rows / blocks
    vector_math: bool = False  # vectorized libm (glibc's libmvec, <= 4 ulp) instead of scalar calls


class CRenderer:
    """KernelIR -> a C function `void NAME(void **bufs, const int64_t *dims, const int64_t *strides)`."""

    function_prefix = ""
    parallel_for = "#pragma omp parallel for schedule(static)"
    simd = "#pragma omp simd"
    includes = ("stdint.h", "math.h")

    def __init__(self, kernel: KernelIR, schedule: Schedule = Schedule()):
        self.k, self.s = kernel, schedule
        self.check()

    def check(self) -> None:
        for ins in self.k.body:
            if ins.dtype == "int32" or (ins.op in (Op.LOAD, Op.STORE) and ins.dtype == "int32"):
                raise Unsupported(f"integer arithmetic ({ins.op.value} on int32) is not rendered yet")
            if ins.op not in UNARY and ins.op not in BINARY and ins.op not in REDUCTIONS and ins.op not in (
                    Op.LOAD, Op.STORE, Op.CONST, Op.WHERE, Op.CAST):
                raise Unsupported(f"no C rendering for {ins.op.value}")

    # -- expressions ------------------------------------------------------------------------------
    def name(self, i: int) -> str:
        ins = self.k.body[i]
        return f"{'r' if ins.space == 'row' else 'v'}{i}"

    def round(self, expr: str, dtype: str) -> str:
        return {"float16": f"ap_round_f16({expr})", "bfloat16": f"ap_round_bf16({expr})"}.get(dtype, expr)

    def load(self, ins: Instr) -> str:
        a = ins.attr("arg")
        arg = self.k.args[a]
        index = {"contiguous": f"b{a} + j", "broadcast": f"b{a}", "strided": f"b{a} + j * s{a}",
                 "row": f"b{a}"}[arg.inner if ins.space == "elem" else "row"]
        raw = f"in{a}[{index}]"
        return {"bfloat16": f"ap_bf16_load({raw})", "float16": f"(float){raw}"}.get(arg.dtype, raw)

    def expr(self, ins: Instr) -> str:
        srcs = [self.name(s) for s in ins.srcs]
        if ins.op is Op.LOAD:
            return self.load(ins)
        if ins.op is Op.CONST:
            if ins.attr("size") == "last":
                return f"(float)(N - {ins.attr('minus')})"
            node = Node(0, Op.CONST, ins.dtype, (), (), make_attrs({"value": ins.attr("value")}))
            value = const_array(node, "native").item()
            return c_float(value) if ins.dtype in dtypes.FLOATS else str(int(value))
        if ins.op is Op.CAST:
            src = self.k.body[ins.srcs[0]]
            if ins.dtype == "bool":
                return f"({srcs[0]} != 0)"
            return self.round(f"(float){srcs[0]}" if src.dtype == "bool" else srcs[0], ins.dtype)
        if ins.op is Op.WHERE:
            return self.round(f"({srcs[0]} ? {srcs[1]} : {srcs[2]})", ins.dtype)
        table = UNARY if ins.op in UNARY else BINARY
        return self.round(table[ins.op].format(*srcs), ins.dtype)

    def assign(self, i: int) -> str:
        ins = self.k.body[i]
        if ins.op is Op.STORE:
            a = ins.attr("arg")
            v = self.name(ins.srcs[0])
            value = {"bfloat16": f"ap_bf16_store({v})", "float16": f"(_Float16){v}",
                     "bool": f"(uint8_t){v}"}.get(self.k.args[a].dtype, v)
            return f"out{a}[{'r * N + j' if ins.space == 'elem' else 'r'}] = {value};"
        return f"const {VALUE[ins.dtype]} {self.name(i)} = {self.expr(ins)};"

    # -- structure ----------------------------------------------------------------------------------
    def header(self) -> list[str]:
        k = self.k
        lines = [f"{self.function_prefix}void {k.name}(void **bufs, const int64_t *dims, const int64_t *strides) {{"]
        for a, arg in enumerate(k.args):
            const = "const " if arg.role == "in" else ""
            lines.append(f"  {const}{STORAGE[arg.dtype]} *restrict {'in' if arg.role == 'in' else 'out'}{a} = "
                         f"({const}{STORAGE[arg.dtype]} *)bufs[{a}];")
        lines.append(f"  const int64_t N = dims[{k.rank - 1}];")
        lines.append("  int64_t R = 1;")
        lines.append(f"  for (int d = 0; d < {k.rank - 1}; d++) R *= dims[d];")
        for a, arg in enumerate(k.inputs):
            if arg.inner == "strided":
                lines.append(f"  const int64_t s{a} = strides[{a * k.rank + k.rank - 1}];")
        return lines

    def offsets(self, indent: str) -> list[str]:
        """Per-row base offset of every input, from the row index and the launch strides."""
        k = self.k
        lines = [f"{indent}int64_t rem = r;"] if k.rank > 1 else []
        coords = []
        for d in range(k.rank - 2, -1, -1):
            if d == 0:
                lines.append(f"{indent}const int64_t c0 = rem;")
            else:
                lines.append(f"{indent}const int64_t c{d} = rem % dims[{d}]; rem /= dims[{d}];")
            coords.append(d)
        for a in range(len(k.inputs)):
            terms = [f"c{d} * strides[{a * k.rank + d}]" for d in sorted(coords)]
            lines.append(f"{indent}const int64_t b{a} = {' + '.join(terms) or '0'};")
        if k.rank > 1:
            lines.append(f"{indent}(void)rem;")
        return lines

    def loop(self, indent: str, body: list[int], lo: str = "0", hi: str = "N",
             reductions: list[int] = ()) -> list[str]:
        clauses = []
        for r in reductions:
            ident, omp, _ = REDUCTIONS[self.k.body[r].op]
            clauses.append(f"reduction({omp}:a{r})")
            if self.k.body[r].op in (Op.RMAX, Op.RMIN):
                clauses.append(f"reduction(|:n{r})")
        lines = [f"{indent}{self.simd}{' ' + ' '.join(clauses) if clauses else ''}",
                 f"{indent}for (int64_t j = {lo}; j < {hi}; j++) {{"]
        lines += [f"{indent}  {self.assign(i)}" for i in body]
        for r in reductions:
            _, _, stmt = REDUCTIONS[self.k.body[r].op]
            lines.append(f"{indent}  " + stmt.format(acc=f"a{r}", v=self.name(self.k.body[r].srcs[0]), nan=f"n{r}"))
        lines.append(f"{indent}}}")
        return lines

    def vector_math_declarations(self) -> list[str]:
        if not self.s.vector_math:
            return []
        templates = [UNARY.get(i.op) or BINARY.get(i.op) or "" for i in self.k.body]
        used = sorted(f for f in VECTOR_MATH if any(f + "(" in t for t in templates))
        return [line for f in used for line in ("#pragma omp declare simd notinbranch",
                                                 f"float {f}(float{', float' if f == 'powf' else ''});")]

    def render(self) -> str:
        out = [f"#include <{h}>" for h in self.includes] + self.vector_math_declarations() + ["", PRELUDE]
        out += self.header()
        out += self.render_elementwise() if self.k.kind == "elementwise" else self.render_row()
        out.append("}")
        return "\n".join(out) + "\n"

    def render_elementwise(self) -> list[str]:
        p = plan(self.k)
        block = self.s.block
        lines = [f"  const int64_t nb = (N + {block} - 1) / {block};"]
        if self.s.threads:
            lines.append(f"  {self.parallel_for}")
        lines += ["  for (int64_t t = 0; t < R * nb; t++) {",
                  "    const int64_t r = t / nb, j0 = (t % nb) * " + str(block) + ";",
                  f"    const int64_t j1 = j0 + {block} < N ? j0 + {block} : N;"]
        lines += self.offsets("    ")
        lines += [f"    {self.assign(i)}" for i in p.row_before]
        lines += self.loop("    ", list(p.final_elem), "j0", "j1")
        lines.append("  }")
        return lines

    def render_row(self) -> list[str]:
        p = plan(self.k)
        lines = [f"  {self.parallel_for}"] if self.s.threads else []
        lines.append("  for (int64_t r = 0; r < R; r++) {")
        lines += self.offsets("    ")
        lines += [f"    {self.assign(i)}" for i in p.row_before]
        for rp in p.passes:
            for r in rp.reduces:
                ident, _, _ = REDUCTIONS[self.k.body[r].op]
                lines.append(f"    float a{r} = {ident};")
                if self.k.body[r].op in (Op.RMAX, Op.RMIN):
                    lines.append(f"    int n{r} = 0;")
            lines += self.loop("    ", list(rp.elem), reductions=list(rp.reduces))
            for r in rp.reduces:
                op = self.k.body[r].op
                value = f"(n{r} ? NAN : a{r})" if op in (Op.RMAX, Op.RMIN) else f"a{r}"
                lines.append(f"    const float r{r} = {self.round(value, self.k.body[r].dtype)};")
            lines += [f"    {self.assign(i)}" for i in rp.row_after]
        if p.final_elem:
            lines += self.loop("    ", list(p.final_elem))
        lines += [f"    {self.assign(i)}" for i in p.row_stores]
        lines.append("  }")
        return lines


def render(kernel: KernelIR, schedule: Schedule = Schedule()) -> str:
    return CRenderer(kernel, schedule).render()
