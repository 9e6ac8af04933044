"""The C-family renderers: KernelIR -> C, CUDA or Metal source. One table maps ops to expressions;
each target changes a few knobs: function spellings, qualifiers, thread indices, barriers, types.

`CFamily` renders values (the op table, constants, casts, row offsets) the same way for every
target. `CRenderer` is the CPU's loop nest (OpenMP threads, SIMD loops). `SimtRenderer` is the
structure CUDA and Metal share: a grid-stride elementwise loop, and row kernels with a group of
threads per row; backends/cuda.py and backends/metal.py spell it out.

Per-element values are computed in float whatever their storage type; float16 and bfloat16 results
are rounded after every op where the kernel's arithmetic is exact, as the reference does, so exact
ops stay bit-exact (CRenderer keeps float32 between the ops of an inexact kernel).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from .. import dtypes
from ..kernel_ir import Instr, KernelIR, constant, sigmoid_form
from ..ops import EXACT, Op
from .schedule import Shifted, cone, levels, nan_carried, plan, shifted, stash


class Unsupported(Exception):
    """The kernel uses something this backend does not render (yet); the message says what."""


UNARY = {
    Op.NEG: "(-{0})", Op.ABS: "fabsf({0})", Op.SQUARE: "({0} * {0})", Op.SQRT: "sqrtf({0})",
    Op.RSQRT: "(1.0f / sqrtf({0}))", Op.RECIPROCAL: "(1.0f / {0})", Op.EXP: "expf({0})",
    Op.EXPM1: "expm1f({0})", Op.LOG: "logf({0})", Op.LOG1P: "log1pf({0})", Op.TANH: "tanhf({0})",
    # 1 / (1 + e) at or above zero, e / (1 + e) below, e = exp(-|x|): below zero 1 / (1 + exp(-x))
    # would overflow to 0 before the denormals. One exp and one division serve both sides, so a
    # vectorized loop, which computes both, does not pay two of each: the same bits as two
    # expressions, every float32, at 1.9x the rate (docs/experiments/2026-12-04c-cpu/sigmoid.c)
    Op.SIGMOID: "(({0} >= 0.0f ? 1.0f : expf(-fabsf({0}))) / (1.0f + expf(-fabsf({0}))))",
    Op.ERF: "erff({0})", Op.SIN: "sinf({0})",
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
# libm's functions of which we have our own (backends/vmath.c, linked by cpu.build; Schedule.own_math):
# the same bits from their scalar and vector forms (libmvec's differ from libm's), within the judge's
# bounds (our exp is more accurate than libmvec's, our tanh less: 2.57 ulp at worst against 1.37)
OWN_MATH = {"expf": "ap_expf", "tanhf": "ap_tanhf"}

# Schedule.sigmoid's sources say so: their statements are kernel_ir.sigmoid_form's (`computes`)
SIGMOID_NOTE = "// 0.5 * x * (1 + tanh(y)) computed as x / (1 + exp(-2 * y)) (kernel_ir.sigmoid_form)"


def computes(kernel: KernelIR, source: str) -> KernelIR:
    """The KernelIR a source of `kernel` computes and spells: kernel_ir.sigmoid_form's body where it
    is a rendering of Schedule.sigmoid (SIGMOID_NOTE), else the kernel's. Bugs are planted in its
    statements (mutants.site_for) and the roofline's work is counted from it (stages._computed)."""
    return sigmoid_form(kernel) if SIGMOID_NOTE in source else kernel

# Schedule.vectors: a split loop's whole groups written as AVX-512 vectors of 16 floats
# (CRenderer.vector_groups). These ops' C templates hold for GCC's vector types as they are (its
# operators work lane by lane and broadcast a float operand); these are spelled for a vector.
VECTOR_OPERATORS = frozenset({Op.NEG, Op.SQUARE, Op.RECIPROCAL, Op.ADD, Op.SUB, Op.MUL, Op.DIV})
# a float32 input's load in a vector group, by how it steps along the row (KernelIR arg `inner`)
VECTOR_LOADS = {"contiguous": "_mm512_loadu_ps(in{a} + b{a} + j)", "broadcast": "_mm512_set1_ps(in{a}[b{a}])"}
# float16 in a vector: F16C's conversions, to nearest even (the prelude's bits: round_f16.c)
F16_VECTOR_LOAD = "_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)({0})))"
F16_VECTOR_ROUND = "_mm512_cvtps_ph({0}, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)"
# bfloat16 in a vector: widened by a shift, rounded as the prelude's ap_bf16_bits (the same bits,
# NaN quieted) by BF16_VECTOR's functions, which a source includes where it calls them
# (CRenderer.render): by AVX512_BF16's conversion where the compiler targets it and no lane is
# subnormal (the instruction flushes those to zero; elsewhere it rounds as the prelude does, NaN
# quieted alike), else in integer lanes (ap_bf16_bits16)
BF16_VECTOR_LOAD = "_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)({0}))), 16))"
BF16_VECTOR = """\
static inline __m512i ap_bf16_bits16(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), odd));
  const __m512i q = _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q), u, _mm512_set1_epi32(0x00400000));
  return _mm512_and_si512(q, _mm512_set1_epi32((int)0xFFFF0000u));
}
static inline __m256i ap_bf16_narrow16(__m512 f) {
#if defined(__AVX512BF16__)
  if (!_mm512_fpclass_ps_mask(f, 0x20)) return (__m256i)_mm512_cvtneps_pbh(f);
#endif
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(ap_bf16_bits16(f), 16));
}
static inline __m512 ap_bf16_round16(__m512 f) {
#if defined(__AVX512BF16__)
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(ap_bf16_narrow16(f)), 16));
#else
  return _mm512_castsi512_ps(ap_bf16_bits16(f));
#endif
}"""
BF16_VECTOR_NAMES = ("ap_bf16_bits16", "ap_bf16_narrow16", "ap_bf16_round16")
# by 16-bit type: a vector's load, its narrowing to 16 values' bits, and its rounding to the type
# (there and back in its float lanes)
VECTOR_LOADS16 = {"float16": F16_VECTOR_LOAD, "bfloat16": BF16_VECTOR_LOAD}
VECTOR_NARROWS = {"float16": F16_VECTOR_ROUND, "bfloat16": "ap_bf16_narrow16({0})"}
VECTOR_ROUNDS = {"float16": f"_mm512_cvtph_ps({F16_VECTOR_ROUND.format('{0}')})", "bfloat16": "ap_bf16_round16({0})"}
# the types a vector form holds in float32 lanes: float32, and the 16-bit ones it rounds to
VECTOR_HELD = ("float32", *VECTOR_ROUNDS)
# an output's store of vector v at column j in a row's final pass (CRenderer.vector_final), by its type
VECTOR_STORES = {"float32": "_mm512_storeu_ps(out{a} + r * N + j, {v});",
                 **{t: f"_mm256_storeu_si256((__m256i *)(out{{a}} + r * N + j), {n.format('{v}')});"
                    for t, n in VECTOR_NARROWS.items()}}
VECTOR16 = {Op.ABS: "_mm512_abs_ps({0})", Op.SQRT: "_mm512_sqrt_ps({0})",
            Op.RSQRT: "(1.0f / _mm512_sqrt_ps({0}))"}
# our functions' inline vector forms (with Schedule.own_math), from the header vmath.c includes:
# its text is pasted into the kernel, so the function is inlined into the loop instead of called;
# the sigmoid's is UNARY's template over our exp, lane by lane (tests/test_vmath.py: the same bits)
VECTOR16_OWN = {Op.EXP: "ap_expf_v16({0})", Op.TANH: "ap_tanhf_v16({0})", Op.SIGMOID: "ap_sigmoidf_v16({0})"}
VECTOR16_OWN_NAMES = frozenset(t.split("(")[0] for t in VECTOR16_OWN.values())
OWN_VECTOR16_SOURCE = Path(__file__).with_name("vmath_avx512.h")
# reduction -> its accumulate step on vectors: the scalar statement's bits lane by lane (max_ps(a, b)
# is a > b ? a : b, as REDUCTIONS' compare, which is how GCC vectorizes that)
VECTOR16_REDUCTIONS = {Op.SUM: "{acc} + {v}", Op.PROD: "{acc} * {v}", Op.RMAX: "_mm512_max_ps({acc}, {v})",
                       Op.RMIN: "_mm512_min_ps({acc}, {v})"}
VECTOR_LANES = 16
# A max's or a min's partial results in vector groups, in multiples of the split (CRenderer.width)
MAX_GROUPS = 4

# reduction -> (identity, OpenMP reduction operator, accumulate statement)
REDUCTIONS = {
    Op.SUM: ("0.0f", "+", "{acc} += {v};"),
    Op.PROD: ("1.0f", "*", "{acc} *= {v};"),
    Op.RMAX: ("-INFINITY", "max", "{acc} = {acc} > {v} ? {acc} : {v};"),
    Op.RMIN: ("INFINITY", "min", "{acc} = {acc} < {v} ? {acc} : {v};"),
}
# A max's or min's compare lets the next element replace a NaN it took; its flag makes the result
# NaN, unless a NaN reaches every output of the row without it (schedule.nan_carried).
NAN_FLAG = " {nan} |= ({v} != {v});"
STORAGE = {"float32": "float", "float16": "uint16_t", "bfloat16": "uint16_t", "bool": "uint8_t",
           "int32": "int32_t"}
VALUE = {"float32": "float", "float16": "float", "bfloat16": "float", "bool": "int", "int32": "int"}

PRELUDE = """\
// 16-bit floats are held as their bits and computed in float. Rounding to one keeps the result in a
// float's 32-bit lanes (ap_*_bits): a rounding written as a store then a load narrowed and widened
// each vector again, which cost a bfloat16 RMSNorm half its time.
static inline float ap_bf16_load(uint16_t b) { union { uint32_t u; float f; } x; x.u = (uint32_t)b << 16; return x.f; }
static inline uint32_t ap_bf16_bits(float f) {
  union { uint32_t u; float f; } x; x.f = f;
  if (f != f) return (x.u | 0x00400000u) & 0xFFFF0000u;
  return (x.u + 0x7FFFu + ((x.u >> 16) & 1u)) & 0xFFFF0000u;
}
static inline uint16_t ap_bf16_store(float f) { return (uint16_t)(ap_bf16_bits(f) >> 16); }
static inline float ap_round_bf16(float f) { union { uint32_t u; float f; } x; x.u = ap_bf16_bits(f); return x.f; }
// float16: GCC 12 leaves a loop over _Float16 scalar (one conversion instruction an element), while
// these integer forms vectorize. Rounding to nearest even, subnormals, infinities and NaN as IEEE and
// as x86's F16C conversions (vcvtph2ps, vcvtps2ph) do: a signaling NaN becomes one that does not
// signal, its payload's top bits kept, so a staged kernel's vector body and its scalar tail agree
// (tests/test_cpu_schedules.py checks every float16 value, docs/experiments/2026-12-06f-cpu/round_f16.c
// every float32).
static inline float ap_f16_value(uint32_t h) {
  union { uint32_t u; float f; } o, m;
  m.u = 113u << 23;
  o.u = (h & 0x7FFFu) << 13;
  const uint32_t e = o.u & 0x0F800000u;
  o.u += (127u - 15u) << 23;
  if (e == 0x0F800000u) o.u = (o.u + ((128u - 16u) << 23)) | ((h & 0x03FFu) ? 0x00400000u : 0u);
  else if (e == 0) { o.u += 1u << 23; o.f -= m.f; }
  o.u |= (h & 0x8000u) << 16;
  return o.f;
}
static inline uint32_t ap_f16_bits(float f) {
  union { uint32_t u; float f; } x, d;
  x.f = f;
  d.u = 126u << 23;
  const uint32_t sign = x.u & 0x80000000u;
  x.u ^= sign;
  uint32_t o;
  if (x.u >= 143u << 23) o = x.u > 255u << 23 ? 0x7E00u | ((x.u >> 13) & 0x03FFu) : 0x7C00u;
  else if (x.u < 113u << 23) { x.f += d.f; o = x.u - d.u; }
  else { const uint32_t odd = (x.u >> 13) & 1u; o = (x.u + 0xC8000FFFu + odd) >> 13; }
  return o | (sign >> 16);
}
static inline float ap_f16_load(uint16_t h) { return ap_f16_value(h); }
static inline uint16_t ap_f16_store(float f) { return (uint16_t)ap_f16_bits(f); }
// float16 precision kept in a float without the float16 bits between: a float16 normal rounded in the
// float's own bits (the 13 bits below a float16's last cleared, to nearest even), past 65504 to
// infinity, below 2^-14 to a multiple of 2^-24 by adding and taking away 0.5 (whose ulp that is),
// NaN as ap_f16_bits has it: ap_f16_value(ap_f16_bits(f)) bit for bit in fewer operations.
static inline float ap_round_f16(float f) {
  union { uint32_t u; float f; } x, s;
  x.f = f;
  const uint32_t sign = x.u & 0x80000000u;
  x.u ^= sign;
  s.f = (x.f + 0.5f) - 0.5f;
  uint32_t o = (x.u + 0x0FFFu + ((x.u >> 13) & 1u)) & 0xFFFFE000u;
  o = o >= 0x47800000u ? 0x7F800000u : o;
  o = x.u < 0x38800000u ? s.u : o;
  o = x.u > 0x7F800000u ? (x.u & 0xFFFFE000u) | 0x00400000u : o;
  x.u = o | sign;
  return x.f;
}
"""


# Terms per block of a compensated row sum (CRenderer.reduce_loop).
COMPENSATED_BLOCK = 512

# Below this many elements a kernel runs on the calling thread: waking a team costs more than it saves.
PARALLEL_MIN = 1 << 15
# A scratch stash's row buffer on each thread's stack (floats): rows up to this long keep the stashed
# value there; longer rows keep it in their output row and store plainly (CRenderer.render_row).
SCRATCH_ROW = 8192
SCRATCH_BUFFER = f"float ap_buf[{SCRATCH_ROW}] __attribute__((aligned(64)));"
# Floats in a 64-byte cache line: a streaming store loop streams the whole lines left after its
# chunks one line at a time (CRenderer.store_loop), so of a row only the head up to its first line
# and what follows its last whole line are stored plainly.
LINE = 16

# float16 elements an elementwise kernel stages at a time (CRenderer.staged_loop): its contiguous
# float16 inputs widened into float buffers on the stack and its float16 outputs narrowed from them
# by the hardware's conversions (STAGING), 16 at a time, around the `omp simd` loop over floats.
STAGE = 256
STAGING = """\
// float16 staged through float buffers: F16C's conversions, 16 (AVX-512) or 8 to an instruction, where
// the compiler targets them; the prelude's bit forms for the rest (the same bits: round_f16.c).
static inline void ap_f16_widen(const uint16_t *src, float *dst, int64_t n) {
  int64_t q = 0;
#if defined(__AVX512F__)
  for (; q + 16 <= n; q += 16) _mm512_store_ps(dst + q, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + q))));
#elif defined(__F16C__)
  for (; q + 8 <= n; q += 8) _mm256_store_ps(dst + q, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + q))));
#endif
  for (; q < n; q++) dst[q] = ap_f16_value(src[q]);
}
// the whole groups of n narrowed; the caller stores the rest (a loop a planted bug can reach)
static inline int64_t ap_f16_narrow(const float *src, uint16_t *dst, int64_t n) {
  int64_t q = 0;
#if defined(__AVX512F__)
  for (; q + 16 <= n; q += 16)
    _mm256_storeu_si256((__m256i *)(dst + q), _mm512_cvtps_ph(_mm512_load_ps(src + q), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__)
  for (; q + 8 <= n; q += 8)
    _mm_storeu_si128((__m128i *)(dst + q), _mm256_cvtps_ph(_mm256_load_ps(src + q), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  return q;
}
"""
# bfloat16 rows staged alike (CRenderer.staging): its widening a shift, its narrowing the prelude's
# rounding, both loops the compiler vectorizes; the narrowing's whole groups of 16, as float16's.
STAGING_BF16 = """\
static inline void ap_bf16_widen(const uint16_t *src, float *dst, int64_t n) {
#pragma omp simd
  for (int64_t q = 0; q < n; q++) dst[q] = ap_bf16_load(src[q]);
}
static inline int64_t ap_bf16_narrow(const float *src, uint16_t *dst, int64_t n) {
  const int64_t m = n - n % 16;
#pragma omp simd
  for (int64_t q = 0; q < m; q++) dst[q] = ap_bf16_store(src[q]);
  return m;
}
"""
# the spelling of each 16-bit type's helpers: ap_f16_load, ap_bf16_widen, ...
TAG = {"float16": "f16", "bfloat16": "bf16"}


def shifted_from(split: int) -> int:
    """The shortest row whose spread (a sum of squared deviations from the row mean) may be taken in
    the mean's pass, from the shifted sums S1 = sum(d), S2 = sum(d^2) of d = x - K (K any float; the
    kernel's is the mean of a few values: CRenderer.shifted_sums), as D = S2 - S1 * (S1 / n), and still be within the error the bound allows the two-pass sum
    (bounds.py: n*u times the sum of the squares, V, besides the errors carried in).

    To first order in u = 2^-24, with T1, T2 the exact sums of x - K and g = (n/split + 2*split)*u
    the error bound of a split sum (n/split terms per partial, then the partials and the rest of the
    row one after another; the partials fold pairwise, log2(split) deep, which this bounds too):
    |S1 - T1| <= (g + u) * sum|x - K| <= (g + u) * sqrt(n*T2) (Cauchy-Schwarz),
    |S2 - T2| <= (g + 3u) * T2 (x - K and its square rounded), so |S1^2 - T1^2| / n <= 2(g + u) * T2;
    n as a float, the quotient and the product round 3u of S1^2/n <= T2; the difference u of D. So
    |D - V| <= (3g + 8u) * T2 + u * V. The kernel takes D only where S2 <= 2D (which makes T2 <= 2V
    to first order; it fails on NaN and infinity) and S2 is finite: then |D - V| <= (6g + 17u) * V,
    within n*u*V once n >= (12*split + 17) / (1 - 6/split): 494 rows of 32 partial results. Every
    other row (shorter, a first value far from the mean, NaN, inf, overflow) is summed again about
    its mean, bit for bit the two-pass kernel. The mean itself is the two-pass kernel's."""
    if split <= 6:
        raise ValueError(f"a shifted spread needs more than 6 partial results, not {split}")
    return _trusted_from(split, 2 * split)


def shifted_columns_from(block: int) -> int:
    """shifted_from for a column variant's lane (CRenderer.column_block), which sums d and d^2 in
    order over blocks of `block` rows and adds the blocks' totals in order: g = (block + n/block)*u,
    so the shifted sums are trusted from n >= (6*block + 17) / (1 - 6/block) (443 rows of blocks of
    SHIFT_BLOCK)."""
    if block <= 6:
        raise ValueError(f"a shifted spread needs blocks of more than 6 rows, not {block}")
    return _trusted_from(block, block)


def _trusted_from(per: int, fixed: int) -> int:
    """The least n with 6*g + 17 <= n for a sum whose error bound is g = (n/per + fixed)*u."""
    return math.ceil((6 * fixed + 17) / (1 - 6 / per))


# Rows (elements) up to which row kernels prefetch the rows ahead (CRenderer.next_row).
PREFETCH_ROW = 8192
# How far ahead those requests run (Schedule.prefetch): this many bytes of the inputs the row's
# passes read, in whole rows, at least one (CRenderer.ahead_rows). The wide variants ask for
# PREFETCH_AHEAD, their `_near` twins (cpu.near) for PREFETCH_NEAR: which is faster moves with the
# machine's memory (docs/experiments/2026-12-04e-cpu), so the choice rounds decide.
PREFETCH_AHEAD = 8192
PREFETCH_NEAR = 4096

# Values whose mean is a shifted spread's shift K (CRenderer.shifted_sums).
SHIFT_SAMPLE = 16
# Rows a column variant's lane sums d and d^2 over before adding the block's totals (shifted_columns_from).
SHIFT_BLOCK = 64
# A shifted spread's tests (CRenderer.shifted_sums, shifted_spread): the sample's rows taken as
# centred (K = 0), and the shifted sums trusted beside the row length's (shifted_from).
CENTRED_TEST = "5.0f * (float)ap_jk * ap_k * ap_k <= ap_e"
TRUSTED_SPREAD = "ap_s2 <= 2.0f * ap_v && ap_s2 < INFINITY"
# The spread ap_v from the shifted sums ap_s1, ap_s2 of N values (shifted_from's D).
SHIFTED_SPREAD = ("const float ap_q = ap_s1 / (float)N;", "const float ap_v = ap_s2 - ap_s1 * ap_q;")

# Lanes of one AVX-512 register of floats: a split of twice this many partial sums is folded in
# registers by FOLD (CRenderer.combine_lanes).
FOLD_LANES = 16
FOLD = "_mm512_reduce_add_ps"


# Schedule.contract: FMA contraction for the kernel after it (static.py allows this line verbatim)
FP_CONTRACT = '#pragma GCC optimize ("fp-contract=fast")'


def called(names, text: str) -> set[str]:
    """Which of the functions `names` the C `text` calls."""
    return {f for f in names if re.search(rf"\b{f}\(", text)}


@lru_cache(maxsize=None)
def own_vector16(*names: str) -> str:
    """The inline vector forms of our functions (VECTOR16_OWN) as a kernel pastes them: the
    header's code without its comment, only the functions `names`, those they call (the sigmoid
    its exp) and the helpers they share, where any are named."""
    text = OWN_VECTOR16_SOURCE.read_text()
    forms = [f for f in re.split(r"(?m)^(?=static inline )", text) if f.startswith("static inline ")]
    named = {re.match(r"static inline __m512 (\w+)\(", f)[1]: f.rstrip() for f in forms}
    wanted = set(names or VECTOR16_OWN_NAMES)
    while more := set().union(*(called(VECTOR16_OWN_NAMES, named[n]) for n in wanted)) - wanted:
        wanted |= more
    return "\n".join(f for name, f in named.items() if name in wanted or name not in VECTOR16_OWN_NAMES)


def own_math(template: str) -> str:
    """`template` calling our functions (OWN_MATH) where it calls libm's."""
    return re.sub(rf"\b({'|'.join(OWN_MATH)})\(", lambda m: f"{OWN_MATH[m.group(1)]}(", template)


def row_args(kernel: KernelIR, types: Sequence[str]) -> frozenset[int]:
    """The per-element arguments of `types` that a kernel reads along its rows (contiguous inputs)
    or writes: what it stages (CRenderer.staging) or converts in registers (cpu.in_registers)."""
    return frozenset(a for a, arg in enumerate(kernel.args) if arg.dtype in types and arg.space == "elem"
                     and (arg.role == "out" or arg.inner == "contiguous"))


def exact(kernel: KernelIR) -> bool:
    """Made only of exact operations: the judge then wants the step-by-step reference's bits, so no
    rewrite may round differently."""
    return all(i.op in EXACT or i.op in (Op.LOAD, Op.STORE) for i in kernel.body)


def neumaier_add(total: str, comp: str, part: str, new: str) -> list[str]:
    """`total` += `part`, the rounding error it drops added to `comp` (Neumaier's step)."""
    return [f"const float {new} = {total} + {part};",
            f"{comp} += fabsf({total}) >= fabsf({part}) ? ({total} - {new}) + {part} : ({part} - {new}) + {total};",
            f"{total} = {new};"]


def neumaier_total(total: str, comp: str) -> str:
    """A compensated sum's result; an overflowed or infinite total leaves a non-finite
    compensation, and then the total stands alone."""
    return f"fabsf({comp}) < INFINITY ? {total} + {comp} : {total}"


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
    stash: bool = False       # row kernels: keep the last pass's costly per-element value (schedule.stash)
    scratch: bool = False     # with stash: keep it in a row buffer on the stack, not the output (CRenderer.render_row)
    stream: int = 0           # non-temporal stores once a call writes at least this many bytes (0: never)
    compensate: int = 0       # row sums of at least this many terms: blocks, totals added compensated
    lanes: int = 0            # SIMD loops ask for this many lanes (`simdlen`; 16: AVX-512's width); 0: the compiler's
    split: int = 0            # reductions keep this many partial results (independent add chains) before combining
    reciprocal: bool = False  # x / r with r a per-row value as x * (1 / r): one more rounding, never in exact kernels
    prefetch: int = 0         # row kernels prefetch this many bytes of rows ahead (CRenderer.render_row says where, ahead_rows how far); 0: none
    contract: bool = False    # a*b+c as one FMA (one rounding instead of two): never in exact kernels
    onepass: bool = False     # with split or columns: a mean and the squares about it summed in one pass (shifted_from, shifted_columns_from)
    own_math: bool = False    # our functions (OWN_MATH, backends/vmath.c) for libm's, in vector form
    vectors: bool = False     # AVX-512 vectors, our functions inlined: a split loop's whole groups (CRenderer.vector_groups), an elementwise kernel's streamed chunks (vector_chunk)
    piped: bool = False       # streaming row kernels: a row's final pass run in the next row's first pass (CRenderer.pipes)
    sigmoid: bool = False     # 0.5 * x * (1 + tanh(y)) as x / (1 + exp(-2 * y)) (kernel_ir.sigmoid_form); never in exact kernels
    columns: int = 0          # row kernels reducing a strided axis: this many rows at once, one a lane (CRenderer.render_columns)


class CFamily:
    """What every C-family target renders alike: values, constants, casts, the op table and the
    per-row base offsets. A target supplies `load` (how a value is read) and a few spellings."""

    unary = UNARY
    binary = BINARY
    fma = "fmaf"  # the fused multiply-add's spelling (autoperfect.mutants plants one)

    def __init__(self, kernel: KernelIR, schedule):
        self.k, self.s = kernel, schedule
        self.check()

    def check(self) -> None:
        for ins in self.k.body:
            if ins.dtype in ("int32", "uint32"):
                raise Unsupported(f"integer arithmetic ({ins.op.value} on {ins.dtype}) is not rendered yet")
            if ins.op not in UNARY and ins.op not in BINARY and ins.op not in REDUCTIONS and ins.op not in (
                    Op.LOAD, Op.STORE, Op.CONST, Op.WHERE, Op.CAST):
                raise Unsupported(f"no C rendering for {ins.op.value}")

    # -- expressions ------------------------------------------------------------------------------
    def name(self, i: int) -> str:
        ins = self.k.body[i]
        return f"{'r' if ins.space == 'row' else 'v'}{i}"

    def round(self, expr: str, dtype: str) -> str:
        return {"float16": f"ap_round_f16({expr})", "bfloat16": f"ap_round_bf16({expr})"}.get(dtype, expr)

    def rounded(self, ins: Instr, expr: str) -> str:
        """Instruction `ins`'s value `expr` as it is kept: rounded to its type where it is a 16-bit
        float, as the step-by-step reference rounds every op (CRenderer keeps float32 between the
        ops of an inexact kernel instead)."""
        return self.round(expr, ins.dtype)

    def literal(self, value: float) -> str:
        return c_float(value)

    def load(self, ins: Instr) -> str:
        raise NotImplementedError

    def expr(self, ins: Instr) -> str:
        srcs = [self.name(s) for s in ins.srcs]
        if ins.op is Op.LOAD:
            return self.load(ins)
        if ins.op is Op.CONST:
            if ins.attr("size") == "last":
                return f"(float)(N - {ins.attr('minus')})"
            value = constant(ins).item()
            return self.literal(value) if ins.dtype in dtypes.FLOATS else str(int(value))
        if ins.op is Op.CAST:
            src = self.k.body[ins.srcs[0]]
            if ins.dtype == "bool":
                return f"({srcs[0]} != 0)"
            return self.round(f"(float){srcs[0]}" if src.dtype == "bool" else srcs[0], ins.dtype)
        if ins.op is Op.WHERE:
            return self.rounded(ins, f"({srcs[0]} ? {srcs[1]} : {srcs[2]})")
        table = self.unary if ins.op in UNARY else self.binary
        return self.rounded(ins, table[ins.op].format(*srcs))

    def declare(self, i: int) -> str:
        return f"const {VALUE[self.k.body[i].dtype]} {self.name(i)} = {self.expr(self.k.body[i])};"

    # -- row offsets ------------------------------------------------------------------------------
    def dim(self, d: int) -> str:
        return f"dims[{d}]"

    def stride(self, a: int, d: int) -> str:
        return f"strides[{a * self.k.rank + d}]"

    def offsets(self, indent: str, row: str = "r", base: str = "b", out: str = "ob") -> list[str]:
        """Per-row base offset of every input (`b0`...), from the row index and the launch strides,
        and a permuted loop's output base (`ob`); render_columns asks them of a block's first row
        under other names."""
        k = self.k
        lines = [f"{indent}int64_t rem = {row};"] if k.rank > 1 else []
        coords = []
        for d in range(k.rank - 2, -1, -1):
            if d == 0:
                lines.append(f"{indent}const int64_t c0 = rem;")
            else:
                lines.append(f"{indent}const int64_t c{d} = rem % {self.dim(d)}; rem /= {self.dim(d)};")
            coords.append(d)
        for a in range(len(k.inputs)):
            terms = [f"c{d} * {self.stride(a, d)}" for d in sorted(coords)]
            lines.append(f"{indent}const int64_t {base}{a} = {' + '.join(terms) or '0'};")
        if k.loop:  # per-element outputs in the array's order (elem_index)
            lines.append(f"{indent}const int64_t {out} = {' + '.join(f'c{d} * os{d}' for d in sorted(coords))};")
        if k.rank > 1:
            lines.append(f"{indent}(void)rem;")
        return lines

    def output_strides(self) -> list[str]:
        """A permuted loop's per-element output strides, one a loop axis (`os0`...): the array's own
        row-major strides in the loop's order (a literal 1 for the array's last axis)."""
        k, lines = self.k, []
        for i, axis in enumerate(k.loop):
            after = [self.dim(k.loop.index(b)) for b in range(axis + 1, k.rank)]
            lines.append(f"  const int64_t os{i} = {' * '.join(after) or '1'};")
        return lines

    def elem_index(self) -> str:
        """Where a row's per-element output value j goes: in the loop's order, or, for a permuted
        loop, from the row's output base along the array's stride of the reduced axis."""
        return f"ob + j * os{self.k.rank - 1}" if self.k.loop else "r * N + j"


class CRenderer(CFamily):
    """KernelIR -> a C function `void NAME(void **bufs, const int64_t *dims, const int64_t *strides)`."""

    function_prefix = ""
    parallel_for = "#pragma omp parallel for schedule(static)"
    simd = "#pragma omp simd"
    includes = ("stdint.h", "math.h", "immintrin.h")  # immintrin.h: streaming stores, AVX-512 folds
    chunk = 64  # elements a streaming loop computes into a buffer before storing them past the cache

    def __init__(self, kernel: KernelIR, schedule: Schedule = Schedule()):
        # the rewritten body keeps the kernel's name, which its library is called by
        self.symbol = kernel.name
        super().__init__(sigmoid_form(kernel) if schedule.sigmoid else kernel, schedule)
        self.exact = exact(kernel)
        if schedule.lanes:
            self.simd = f"{self.simd} simdlen({schedule.lanes})"
        if schedule.own_math:
            self.unary = {op: own_math(t) for op, t in self.unary.items()}
            self.binary = {op: own_math(t) for op, t in self.binary.items()}
        # per-row divisors of per-element divisions, each inverted once per row (Schedule.reciprocal)
        invert = schedule.reciprocal and not self.exact
        self.inverted = frozenset(i.srcs[1] for i in kernel.body if invert and i.op is Op.DIV
                                  and i.space == "elem" and kernel.body[i.srcs[1]].space == "row")
        # max and min reductions that keep a NaN flag (those whose NaN every output carries anyway don't)
        self.flagged = frozenset(i.id for i in kernel.body if i.op in (Op.RMAX, Op.RMIN)
                                 and not nan_carried(kernel, i.id))
        # a staged value's place in its buffer: an elementwise chunk's from jc, a row's from 0
        self.stage_index = "j - jc" if kernel.kind == "elementwise" else "j"
        self.staged = frozenset()  # what `staging` asks vector_final of: the loop read from the arguments
        self.staged = self.staging()
        outs = [a for a in self.k.args if a.role == "out" and a.space == "elem"]
        # streaming stores (`streams`): decided once, so the unstaged copy's long rows don't stream either
        self.streamed = bool(schedule.stream) and bool(outs) and all(a.dtype == "float32" for a in outs) and not self.staged

    def rounded(self, ins: Instr, expr: str) -> str:
        """An inexact kernel keeps its 16-bit ops' values in float32 up to the store (or an explicit
        cast), as torch.compile's CPU kernels do: each value is then nearer the exact one than the
        reference's, which rounds after every op, so within the judge's bound (bounds.py counts a
        rounding of each op's type); an exact kernel rounds every op, for the reference's bits.
        float16 SiLU 4096x2048 took 1.2 ms against 3.8 rounding its sigmoid
        (docs/experiments/2026-12-06f-cpu/half_stage.py)."""
        return super().rounded(ins, expr) if self.exact else expr

    def staging(self) -> frozenset[int]:
        """The arguments a kernel stages through float buffers: its float16 per-element outputs and
        contiguous inputs, an elementwise kernel's a chunk at a time (`staged_loop`), a row kernel's
        a row at a time (`staged_row`); a scratch stash's bfloat16 ones too. GCC vectorizes the
        prelude's float16 bit forms at some 20 integer operations a vector; F16C converts a vector
        in one instruction. A bfloat16 value widens by a shift, which costs a memory-bound loop
        nothing: staged, bfloat16 RMSNorm and LayerNorm 4096x2048 ran 0.57-0.65x as fast, softmax
        with its exps on the stack 1.23-1.37x faster (float16 staged: RMSNorm 2.2-2.6x, LayerNorm
        2.4x, softmax 3.0-3.6x; docs/experiments/2026-12-06g-cpu/row_stage.py)."""
        if self.s.columns or self.k.loop:  # read lane by lane (render_columns), written across the loop
            return frozenset()
        p = plan(self.k)
        if self.k.kind == "elementwise":  # in registers where its loop has a vector form
            vectors = self.s.vectors and self.vector_final("", list(p.final_elem), "j0", "j1", None)
            return frozenset() if vectors else row_args(self.k, ("float16",))
        if self.s.vectors and not self.s.stash:
            return frozenset()  # 16-bit rows converted in registers instead (vector_groups, vector_final)
        args = row_args(self.k, tuple(TAG) if self.s.scratch else ("float16",))
        st = stash(self.k, p) if self.s.vectors and self.s.scratch else None
        if st:  # a scratch stash's rows: its outputs narrowed in registers where the final pass has a vector form
            self.staged = frozenset(a for a in args if self.k.args[a].role != "out")
            if self.vector_final("", list(st.final_elem), "0", "N", *self.read_back(st)):
                return self.staged
        return args

    def accumulate(self, r: int, acc: str, v: str, nan: str) -> str:
        """Reduction r's accumulate statement, with its NaN flag where it keeps one."""
        return REDUCTIONS[self.k.body[r].op][2].format(acc=acc, v=v) + (
            NAN_FLAG.format(nan=nan, v=v) if r in self.flagged else "")

    def expr(self, ins: Instr) -> str:
        if ins.op is Op.DIV and ins.srcs[1] in self.inverted:
            return self.rounded(ins, f"({self.name(ins.srcs[0])} * q{ins.srcs[1]})")
        half = self.k.body[ins.srcs[1]] if ins.op is Op.POW else None
        if half is not None and half.op is Op.CONST and half.attr("size") is None and constant(half).item() == 0.5:
            # GCC's vectorizer takes powf(x, 0.5f) for sqrtf(x) under -fno-math-errno (its pow
            # pattern, vect_recog_pow_pattern): NaN at -inf and -0 at -0, where pow gives +inf and +0
            # (C99 F.9.4.4), in every variant (docs/experiments/2026-12-07m-cpu/pow_half.out). So
            # sqrtf, exact, with pow's edges
            x = self.name(ins.srcs[0])
            return self.rounded(ins, f"({x} == -INFINITY ? INFINITY : sqrtf({x}) + 0.0f)")
        return super().expr(ins)

    def row_value(self, i: int, value: str, ctype: str | None = None) -> str:
        """The declaration of per-row value `i`, and of its reciprocal where divisions use it."""
        line = f"const {ctype or VALUE[self.k.body[i].dtype]} {self.name(i)} = {value};"
        return line + (f" const float q{i} = 1.0f / {self.name(i)};" if i in self.inverted else "")

    def load(self, ins: Instr) -> str:
        a = ins.attr("arg")
        arg = self.k.args[a]
        if a in self.staged and ins.space == "elem":
            return f"ap_h{a}[{self.stage_index}]"
        index = {"contiguous": f"b{a} + j", "broadcast": f"b{a}", "strided": f"b{a} + j * s{a}",
                 "row": f"b{a}"}[arg.inner if ins.space == "elem" else "row"]
        raw = f"in{a}[{index}]"
        return {"bfloat16": f"ap_bf16_load({raw})", "float16": f"ap_f16_load({raw})"}.get(arg.dtype, raw)

    def assign(self, i: int) -> str:
        ins = self.k.body[i]
        if ins.op is Op.STORE:
            a = ins.attr("arg")
            v = self.name(ins.srcs[0])
            if a in self.staged:
                return f"ap_h{a}[{self.stage_index}] = {v};"
            value = {"bfloat16": f"ap_bf16_store({v})", "float16": f"ap_f16_store({v})",
                     "bool": f"(uint8_t){v}"}.get(self.k.args[a].dtype, v)
            return f"out{a}[{self.elem_index() if ins.space == 'elem' else 'r'}] = {value};"
        if ins.space == "row":
            return self.row_value(i, self.expr(ins))
        return self.declare(i)

    # -- structure ----------------------------------------------------------------------------------
    def header(self) -> list[str]:
        k = self.k
        lines = [f"{self.function_prefix}void {self.symbol}(void **bufs, const int64_t *dims, const int64_t *strides) {{"]
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
        return lines + self.output_strides()

    def loop(self, indent: str, body: list[int], lo: str = "0", hi: str = "N",
             reductions: list[int] = (), lines_for: dict[int, list[str]] | None = None,
             prefetch: bool = False, extra: Sequence[tuple[str, str]] = (),
             vector_for: dict[int, list[str]] | None = None, head: Sequence[str] = ()) -> list[str]:
        """A SIMD loop over j; `lines_for` replaces an instruction's rendering (a stash), and
        `vector_for` the same in a split loop's vector groups (`vector_groups`: none where one is
        missing); `prefetch` asks a split loop to fetch the next row's inputs while it computes on
        this one's; `extra` are further float sums (accumulator, value) beside the reductions (a
        shifted spread); `head`, statements a split loop runs at each group's start (`piped`)."""
        if reductions and self.s.split:
            return self.split_loop(indent, body, lo, hi, reductions, lines_for, prefetch, extra, vector_for, head)
        return self.simd_loop(indent, body, lo, hi, reductions, lines_for, extra)

    def simd_loop(self, indent: str, body: list[int], lo: str, hi: str, reductions: list[int] = (),
                  lines_for: dict[int, list[str]] | None = None,
                  extra: Sequence[tuple[str, str]] = ()) -> list[str]:
        """One `omp simd` loop over j, reductions in its clauses."""
        clauses = [f"reduction(+:{acc})" for acc, _ in extra]
        for r in reductions:
            ident, omp, _ = REDUCTIONS[self.k.body[r].op]
            clauses.append(f"reduction({omp}:a{r})")
            if r in self.flagged:
                clauses.append(f"reduction(|:n{r})")
        lines = [f"{indent}{self.simd}{' ' + ' '.join(clauses) if clauses else ''}",
                 f"{indent}for (int64_t j = {lo}; j < {hi}; j++) {{"]
        for i in body:
            lines += [f"{indent}  {line}" for line in (lines_for or {}).get(i, [self.assign(i)])]
        for r in reductions:
            lines.append(f"{indent}  " + self.accumulate(r, f"a{r}", self.name(self.k.body[r].srcs[0]), f"n{r}"))
        lines += [f"{indent}  {acc} += {v};" for acc, v in extra]
        lines.append(f"{indent}}}")
        return lines

    def width(self, reductions: Sequence[int], extra: Sequence[tuple[str, str]] = ()) -> int:
        """How many partial results a split loop over `reductions` keeps: `split`, or MAX_GROUPS
        times as many where its groups are vectors and every reduction is a max or a min without a
        NaN flag (exact in any order: the same value, a zero's sign aside). Softmax's max pass with
        two partials is a chain of 32 dependent maxes a 1024-float row that its exps wait for;
        with eight, softmax 4096x1024 read from memory ran 0.79-0.95x the time and its rows in
        cache 0.91-0.93x (docs/experiments/2026-12-05h-cpu, `max8v`). Sums keep `split`: more
        partials made LayerNorm's and RMSNorm's passes slower (docs/experiments/2026-12-05g-cpu)."""
        exact = all(self.k.body[r].op in (Op.RMAX, Op.RMIN) and r not in self.flagged for r in reductions)
        wider = self.s.vectors and bool(reductions) and exact and not extra and self.s.split % VECTOR_LANES == 0
        return self.s.split * MAX_GROUPS if wider else self.s.split

    def split_loop(self, indent: str, body: list[int], lo: str, hi: str, reductions: list[int],
                   lines_for: dict[int, list[str]] | None, prefetch: bool = False,
                   extra: Sequence[tuple[str, str]] = (),
                   vector_for: dict[int, list[str]] | None = None, head: Sequence[str] = ()) -> list[str]:
        """A reducing loop with `split` partial results per reduction: whole groups of `split`
        elements go lane by lane into arrays the SIMD loop keeps in several vector registers, so the
        adds (or maxes) of one group wait on none of the others'; the partial results are folded
        pairwise (`combine_lanes`), then the loop over the rest of the row goes on from them. With
        `prefetch`, each
        group first asks for the same elements of the next row of every contiguous input (one
        row stride on, one request per 64-byte line, rows up to PREFETCH_ROW: `next_row`; a
        prefetch never faults, past the last row included), so the memory streams while the pass
        computes."""
        w, inner = self.width(reductions, extra), indent + "  "
        ops = {r: REDUCTIONS[self.k.body[r].op] for r in reductions}
        lines = [f"{indent}{{", f"{inner}int64_t jm = {lo};"]
        for r, (ident, _, _) in ops.items():
            flag = (f" int m{r}[{w}];", f" m{r}[l] = 0;") if r in self.flagged else ("", "")
            lines.append(f"{inner}float p{r}[{w}];{flag[0]}")
            lines.append(f"{inner}for (int l = 0; l < {w}; l++) {{ p{r}[l] = {ident};{flag[1]} }}")
        for acc, _ in extra:
            lines.append(f"{inner}float {acc}p[{w}]; for (int l = 0; l < {w}; l++) {acc}p[l] = 0.0f;")
        fetch = self.next_row(inner + "  ", self.contiguous_inputs(body), "jm", w) if prefetch and self.k.rank > 1 else []
        fetch += [f"{inner}  {line}" for line in head]
        groups = [f"{inner}for (; jm + {w} <= {hi}; jm += {w}) {{", *fetch,
                  f"{inner}  {self.simd}",
                  f"{inner}  for (int64_t l = 0; l < {w}; l++) {{",
                  f"{inner}    const int64_t j = jm + l;"]
        for i in body:
            groups += [f"{inner}    {line}" for line in (lines_for or {}).get(i, [self.assign(i)])]
        for r in ops:
            groups.append(f"{inner}    " + self.accumulate(r, f"p{r}[l]", self.name(self.k.body[r].srcs[0]), f"m{r}[l]"))
        groups += [f"{inner}    {acc}p[l] += {v};" for acc, v in extra]
        groups += [f"{inner}  }}", f"{inner}}}"]
        vector = self.vector_groups(inner, body, list(ops), hi, lines_for, vector_for, fetch, extra)
        lines += ["#if defined(__AVX512F__)", *vector, "#else", *groups, "#endif"] if vector else groups
        lines += self.combine_lanes(inner, ops, extra)
        # the rest of the row, if any: an empty loop would still combine its reductions' lanes
        lines.append(f"{inner}if (jm < {hi}) {{")
        lines += self.simd_loop(inner + "  ", body, "jm", hi, reductions, lines_for, extra)
        lines += [f"{inner}}}", f"{indent}}}"]
        return lines

    def vector_expr(self, ins: Instr) -> str | None:
        """Elem instruction `ins` as an expression of `__m512` values (16 float lanes; row values
        stay floats, which GCC's vector operators broadcast), or None where it has none here. A
        16-bit value is held in float32 lanes: an exact kernel's rounded to its type after each op,
        as `rounded` does in the `omp simd` loop, an inexact kernel's kept in float32."""
        srcs = [self.name(s) for s in ins.srcs]
        if ins.dtype not in VECTOR_HELD:
            return None
        if ins.op is Op.LOAD:
            a = ins.attr("arg")
            arg = self.k.args[a]
            if a in self.staged:
                return f"_mm512_loadu_ps(ap_h{a} + {self.stage_index})"
            if arg.dtype in VECTOR_LOADS16 and arg.inner in VECTOR_LOADS:
                return (VECTOR_LOADS16[arg.dtype].format(f"in{a} + b{a} + j") if arg.inner == "contiguous"
                        else f"_mm512_set1_ps({self.load(ins)})")
            form = VECTOR_LOADS.get(arg.inner) if arg.dtype == "float32" else None
            return form.format(a=a) if form else None
        if ins.op is Op.CONST:
            return f"_mm512_set1_ps({self.expr(ins)})"
        if ins.op is Op.CAST and self.k.body[ins.srcs[0]].dtype in VECTOR_HELD:
            src = srcs[0] if self.k.body[ins.srcs[0]].space == "elem" else f"_mm512_set1_ps({srcs[0]})"
            # to a 16-bit type (an explicit cast, which rounds in every kernel): there and back in
            # registers, unless only stores of its type read it, whose narrowing rounds it the same
            # (rounding to nearest even twice is rounding once; a NaN quieted twice, once)
            stored = all(u.op is Op.STORE and self.k.args[u.attr("arg")].dtype == ins.dtype
                         for u in self.k.body if ins.id in u.srcs)
            return VECTOR_ROUNDS[ins.dtype].format(src) if ins.dtype in VECTOR_ROUNDS and not stored else src
        rounds = VECTOR_ROUNDS[ins.dtype] if self.exact and ins.dtype in VECTOR_ROUNDS else "{0}"
        if ins.op in VECTOR_OPERATORS:
            table = self.unary if ins.op in UNARY else self.binary
            return rounds.format(table[ins.op].format(*srcs)) if self.exact else self.expr(ins)
        functions = VECTOR16 | (VECTOR16_OWN if self.s.own_math else {})
        if ins.op in functions and all(self.k.body[s].space == "elem" for s in ins.srcs):
            return rounds.format(functions[ins.op].format(*srcs))
        return None

    def vector_assign(self, i: int) -> str | None:
        """Elem instruction `i`'s statement in a vector group (as `assign` is in an `omp simd`
        loop), or None where it has no vector form."""
        value = self.vector_expr(self.k.body[i])
        return f"const __m512 {self.name(i)} = {value};" if value else None

    def vector_statements(self, body: list[int], lines_for: dict[int, list[str]] | None,
                          vector_for: dict[int, list[str]] | None) -> list[str] | None:
        """`body`'s statements on `__m512` values (`vector_assign`), `vector_for` standing in for
        the instructions `lines_for` replaces in the `omp simd` form; None where one has no vector
        form here or a replaced one none given."""
        lines_for, vector_for, lines = lines_for or {}, vector_for or {}, []
        for i in body:
            if i in lines_for:
                if i not in vector_for:
                    return None
                lines += vector_for[i]
                continue
            line = self.vector_assign(i)
            if line is None:
                return None
            lines.append(line)
        return lines

    def vector_groups(self, indent: str, body: list[int], reductions: list[int], hi: str,
                      lines_for: dict[int, list[str]] | None, vector_for: dict[int, list[str]] | None,
                      fetch: list[str], extra: Sequence[tuple[str, str]]) -> list[str] | None:
        """With Schedule.vectors, a split loop's whole groups written in AVX-512 vectors, for the
        compiler to take where it targets AVX-512 (`#if`; the `omp simd` groups elsewhere): the
        partial results in `__m512` variables, loaded from their arrays before the groups and
        stored back after them, so combine_lanes and the rest of the row go on as before; each
        group is SPLIT / 16 blocks of 16 lanes, lane l of block h being the scalar loop's lane
        16 h + l, so every partial adds the same terms in the same order: the same bits. What it
        buys is our functions inlined (VECTOR16_OWN): GCC calls an `omp declare simd` function's
        vector entry point from the loop and keeps no vector register across the call, so the
        partials went to the stack and back around every exp. None where an instruction has no
        vector form here (VECTOR_OPERATORS, VECTOR16, a 16-bit or integer value, a strided load),
        a replaced one has no `vector_for`, a reduction keeps a NaN flag, or the split is no
        multiple of 16."""
        w, k = self.width(reductions, extra), self.k
        if not self.s.vectors or w % VECTOR_LANES or any(r in self.flagged for r in reductions):
            return None
        decls = self.vector_statements(body, lines_for, vector_for)
        if decls is None:
            return None
        blocks = range(w // VECTOR_LANES)
        accs = [(f"p{r}", VECTOR16_REDUCTIONS[k.body[r].op], self.name(k.body[r].srcs[0])) for r in reductions]
        accs += [(f"{acc}p", VECTOR16_REDUCTIONS[Op.SUM], v) for acc, v in extra]
        lines = [f"{indent}{{"]
        lines += [f"{indent}  __m512 {a}v{h} = _mm512_loadu_ps({a} + {h * VECTOR_LANES});" for a, _, _ in accs for h in blocks]
        lines += [f"{indent}  for (; jm + {w} <= {hi}; jm += {w}) {{", *[f"  {line}" for line in fetch]]
        for h in blocks:
            lines += [f"{indent}    {{", f"{indent}      const int64_t j = jm + {h * VECTOR_LANES};"]
            lines += [f"{indent}      {line}" for line in decls]
            lines += [f"{indent}      {a}v{h} = {step.format(acc=f'{a}v{h}', v=v)};" for a, step, v in accs]
            lines.append(f"{indent}    }}")
        lines.append(f"{indent}  }}")
        lines += [f"{indent}  _mm512_storeu_ps({a} + {h * VECTOR_LANES}, {a}v{h});" for a, _, _ in accs for h in blocks]
        return lines + [f"{indent}}}"]

    def combine_lanes(self, indent: str, ops: dict, extra: Sequence[tuple[str, str]]) -> list[str]:
        """A split loop's partial results folded pairwise, halving the lanes (p[l] with p[l + h]),
        then into the accumulator: log2(split) dependent steps instead of split, each a vector
        operation. Softmax's max over 32 lanes one after another was a chain of compares that cost
        about 60 ns of a 1024-float row (softmax 411-423 against 350-370 ns a row in cache, one
        thread; mean/var's two sums 80 against 76: docs/experiments/2026-12-04-cpu). A sum's error
        bound only shrinks (shifted_from's analysis counts the partials one after another). Max and
        min are exact whatever the order, their NaN flags or-ed along. Where every reduction is a
        sum of 32 partials and the target has AVX-512, the halves are added and folded by
        `_mm512_reduce_add_ps`, which halves the same way (8, 4, 2, 1 lanes on) and so gives the
        same bits, in registers: GCC wrote the tree's arrays to the stack and read them back lane
        by lane (LayerNorm's three sums read from memory 1.04-1.05x faster,
        docs/experiments/2026-12-04e-cpu)."""
        def merge(lane: str, lanes: bool) -> str:
            """Each partial array's `lane` into lane l of its own (`lanes`) or into the accumulator."""
            out = []
            for r in ops:
                flag = f"m{r}[l]" if lanes else f"n{r}"
                out.append(self.accumulate(r, f"p{r}[l]" if lanes else f"a{r}", f"p{r}[{lane}]", flag))
                if r in self.flagged:
                    out.append(f"{flag} |= m{r}[{lane}];")
            out += [f"{f'{acc}p[l]' if lanes else acc} += {acc}p[{lane}];" for acc, _ in extra]
            return " ".join(out)

        lines, w = [], self.width(list(ops), extra)
        while w > 1:  # the upper half (the larger one of an odd count) onto the lower
            lines.append(f"{indent}for (int l = 0; l < {w // 2}; l++) {{ {merge(f'l + {w - w // 2}', True)} }}")
            w -= w // 2
        sums = [f"p{r}" for r in ops if self.k.body[r].op is Op.SUM] + [f"{acc}p" for acc, _ in extra]
        if self.s.split == 2 * FOLD_LANES and len(sums) == len(ops) + len(extra):
            folds = [f"{indent}{a}[0] = {FOLD}(_mm512_add_ps(_mm512_loadu_ps({a}), "
                     f"_mm512_loadu_ps({a} + {FOLD_LANES})));" for a in sums]
            lines = ["#if defined(__AVX512F__)", *folds, "#else", *lines, "#endif"]
        return lines + [f"{indent}{merge('0', False)}"]

    def next_row(self, indent: str, inputs: Sequence[int], j: str, count: int, when: str = "",
                 longer: Sequence[str] = ()) -> list[str]:
        """Requests for columns j..j+count of the row `ap_ahead` rows on (`ahead_rows`) of each of
        `inputs`, one per 64-byte line, where a row is at most PREFETCH_ROW long: a longer one would
        be evicted before its turn, and fetching it twice halved a long-row reduction's speed (4 rows
        of 2^24: 16 against 32 GB/s for the read kernel, docs/experiments/2026-12-03c-cpu/long.py).
        `longer`: statements for longer rows instead."""
        rows = [f"{indent}  __builtin_prefetch(in{a} + b{a} + ap_ahead * {self.stride(a, self.k.rank - 2)} + {j} + {q});"
                for a in inputs for q in self.lines_of(a, count)]
        otherwise = [f"{indent}}} else {{", *(f"{indent}  {line}" for line in longer)] if longer else []
        return [f"{indent}if ({when}N <= {PREFETCH_ROW}) {{", *rows, *otherwise, f"{indent}}}"]

    def lines_of(self, a: int, count: int) -> range:
        """The first element of each 64-byte line that `count` elements of input `a` span from a line's start."""
        return range(0, count, 64 // dtypes.ITEMSIZE[self.k.args[a].dtype])

    def reach_ahead(self, indent: str, inputs: Sequence[int], j: str, count: int) -> list[str]:
        """An elementwise kernel's requests ahead of columns j..j+count of `inputs`, one per 64-byte
        line: in rows up to PREFETCH_ROW the same columns `ap_ahead` rows on (`next_row`, which
        follows each input's row stride, a broadcast row's included), in a longer row (and a rank-1
        kernel's one) the columns Schedule.prefetch bytes of the inputs further on. A kernel whose
        arithmetic is heavy waits on memory without them: GELU 4096x1024 read from memory with
        streaming stores took 1.41-1.45 ms without and 0.86-0.97 with requests 4-8 KB ahead, a
        cheap chain 0.82 and 0.78-0.79 ms (docs/experiments/2026-12-05j-cpu)."""
        sizes = sum(dtypes.ITEMSIZE[self.k.args[a].dtype] for a in inputs)
        reach = max(count, self.s.prefetch // sizes // LINE * LINE)  # whole lines of floats
        along = [f"__builtin_prefetch(in{a} + b{a} + {j} + {reach + q});" for a in inputs for q in self.lines_of(a, count)]
        if self.k.rank == 1:
            return [f"{indent}{line}" for line in along]
        return self.next_row(indent, inputs, j, count, longer=along)

    def ahead_rows(self, inputs: Sequence[int]) -> list[str]:
        """`ap_ahead`, how many rows on `next_row` asks for: Schedule.prefetch bytes of `inputs` (those
        that step along the rows in this launch) in whole rows, at least one. One row ahead, a 4 KB
        row arrived after its pass had begun. 4096x1024 read from memory (ab_two.py and ahead.py in
        docs/experiments/2026-12-04-cpu), the VM's copy of mean/var's bytes at 0.29 ms: mean/var
        0.37-0.38 ms one row ahead, 0.34-0.36 two rows, 0.37 four; RMSNorm 0.65-0.67 and 0.61-0.64
        with two, 0.74 with four; LayerNorm 0.75-0.79 and 0.69-0.72 with two, 0.76 with four. With
        the copy at 0.17 ms (twice the bandwidth: twice the bytes in flight needed) four rows were
        best for mean/var (0.19-0.20 against 0.22-0.24 with two) and no better for LayerNorm (0.43
        with two or four); add+RMSNorm (two inputs: 8 KB a row) within the noise (about 8% between
        runs of one source) from one row to four in both states."""
        d = self.k.rank - 2
        size = " + ".join(f"({self.stride(a, d)} != 0) * {dtypes.ITEMSIZE[self.k.args[a].dtype]}" for a in inputs)
        return [f"  const int64_t ap_row_bytes = N * ({size or '0'});",
                f"  const int64_t ap_ahead = ap_row_bytes >= {self.s.prefetch} ? 1 : "
                f"{self.s.prefetch} / (ap_row_bytes + (ap_row_bytes == 0));"]

    def vector_math_declarations(self) -> list[str]:
        """`omp declare simd` for the functions the kernel calls in vector form: libmvec's
        (Schedule.vector_math) and our own (Schedule.own_math), whose vector entry points GCC then
        calls from SIMD loops. Ours are also `const` (a value of the argument alone, as GCC already
        knows libm's to be): else a call under a select (sigmoid's) is neither shared nor
        if-converted, and the loop stays scalar."""
        names = (VECTOR_MATH if self.s.vector_math else set()) | (set(OWN_MATH.values()) if self.s.own_math else set())
        lines = []
        for f in sorted(self.calls(names)):
            pure = " __attribute__((const))" if f in OWN_MATH.values() else ""
            lines += ["#pragma omp declare simd notinbranch", f"float {f}(float{', float' if f == 'powf' else ''}){pure};"]
        return lines

    def calls(self, names, common: bool = False) -> set[str]:
        """Which of the functions `names` the kernel's op templates call: as this renderer spells
        them, or (`common`) as the common table does, whatever this renderer calls instead."""
        unary, binary = (UNARY, BINARY) if common else (self.unary, self.binary)
        return called(names, " ".join(unary.get(i.op) or binary.get(i.op) or "" for i in self.k.body))

    def render(self) -> str:
        body = (self.render_elementwise() if self.k.kind == "elementwise"
                else self.render_columns() if self.s.columns else self.render_row())
        headers = self.includes if self.streams() else self.includes[:2]
        out = [f"#include <{h}>" for h in headers]
        staged = {self.k.args[a].dtype for a in self.staged}
        if "float16" in staged:  # F16C's conversions
            out += ["#if defined(__AVX512F__) || defined(__F16C__)", f"#include <{self.includes[2]}>", "#endif"]
        elif not self.streams() and any("_mm512_" in line for line in body):  # AVX-512 folds, vector groups
            out += ["#if defined(__AVX512F__)", f"#include <{self.includes[2]}>", "#endif"]
        out += self.vector_math_declarations() + ["", PRELUDE]
        out += [text for dtype, text in (("float16", STAGING), ("bfloat16", STAGING_BF16)) if dtype in staged]
        text = "\n".join(body)
        inlined = called(VECTOR16_OWN_NAMES, text)
        if inlined:  # vector groups inline them
            out += ["#if defined(__AVX512F__)", own_vector16(*sorted(inlined)), "#endif"]
        if called(BF16_VECTOR_NAMES, text):  # bfloat16 rounded in vectors
            out += ["#if defined(__AVX512F__)", BF16_VECTOR, "#endif"]
        out += self.streaming_prelude() if self.streams() else []
        if self.s.contract and not self.exact:  # the build's -ffp-contract=off, lifted for this kernel
            out.append(FP_CONTRACT)
        if self.s.sigmoid:
            out.append(SIGMOID_NOTE)
        return "\n".join(out + self.header() + body + ["}"]) + "\n"

    def contiguous_inputs(self, body: list[int]) -> list[int]:
        """The contiguous per-element inputs `body` loads, in argument order."""
        args = {self.k.body[i].attr("arg") for i in body if self.k.body[i].op is Op.LOAD}
        return [a for a in sorted(args) if self.k.args[a].inner == "contiguous"]

    def reduce_loop(self, indent: str, rp, lines_for: dict[int, list[str]] | None,
                    prefetch: bool = False, extra: Sequence[tuple[str, str]] = (),
                    vector_for: dict[int, list[str]] | None = None, head: Sequence[str] = ()) -> list[str]:
        """One reducing pass over a row. With `compensate`, a row of at least that many terms is
        summed in blocks of `COMPENSATED_BLOCK` (each a plain SIMD sum) whose totals are added with
        Neumaier's compensation: the error stays that of one block's sum however long the row, for
        one extra add per block. Shorter rows are one block, bit for bit the plain sum. The `extra`
        sums (`loop`) are blocked and compensated alike."""
        sums = [r for r in rp.reduces if self.k.body[r].op is Op.SUM]
        if not (self.s.compensate and sums):
            return self.loop(indent, list(rp.elem), reductions=list(rp.reduces), lines_for=lines_for,
                             prefetch=prefetch, extra=extra, vector_for=vector_for, head=head)
        # accumulator -> (compensation, running total, new total)
        names = {f"a{r}": (f"k{r}", f"t{r}", f"s{r}") for r in sums}
        names |= {acc: (f"{acc}k", f"{acc}t", f"{acc}s") for acc, _ in extra}
        inner = indent + "  "
        lines = [f"{indent}{{", f"{inner}const int64_t B = {self.compensated_block()};"]
        lines += [f"{inner}float {k} = 0.0f, {t} = {a};" for a, (k, t, _) in names.items()]
        lines.append(f"{inner}for (int64_t jb = 0; jb < N; jb += B) {{")
        lines.append(f"{inner}  const int64_t je = jb + B < N ? jb + B : N;")
        lines += [f"{inner}  {a} = 0.0f;" for a in names]
        lines += self.loop(inner + "  ", list(rp.elem), "jb", "je", reductions=list(rp.reduces),
                           lines_for=lines_for, prefetch=prefetch, extra=extra, vector_for=vector_for, head=head)
        for a, (k, t, s) in names.items():
            lines += [f"{inner}  {line}" for line in neumaier_add(t, k, a, s)]
        lines.append(f"{inner}}}")
        lines += [f"{inner}{a} = {neumaier_total(t, k)};" for a, (k, t, _) in names.items()]
        lines.append(f"{indent}}}")
        return lines

    def compensated_block(self) -> str:
        """Terms a compensated sum adds plainly before adding their total compensated: a row of
        `compensate` terms or more in blocks of COMPENSATED_BLOCK, a shorter one in one block."""
        return f"N >= {self.s.compensate} ? {COMPENSATED_BLOCK} : N + (N == 0)"

    # -- streaming stores -------------------------------------------------------------------------------
    def streams(self) -> bool:
        """Non-temporal stores: asked for, and every per-element output is float32 (one vector
        store per AVX register; a narrower type would need packing first), and nothing staged."""
        return self.streamed

    def streaming_prelude(self) -> list[str]:
        return ["#if defined(__AVX512F__)",
                "#define AP_NT_WIDTH 16",
                "#define AP_NT_STORE(p, v) _mm512_stream_ps((p), _mm512_load_ps(v))",
                "#elif defined(__AVX__)",
                "#define AP_NT_WIDTH 8",
                "#define AP_NT_STORE(p, v) _mm256_stream_ps((p), _mm256_load_ps(v))",
                "#else",
                "#define AP_NT_WIDTH 4",
                "#define AP_NT_STORE(p, v) _mm_stream_ps((p), _mm_load_ps(v))",
                "#endif", ""]

    def store_loop(self, indent: str, body: list[int], lo: str = "0", hi: str = "N",
                   lines_for: dict[int, list[str]] | None = None, ahead: Sequence[int] = (),
                   vector_for: dict[int, list[str]] | None = None) -> list[str]:
        """The loop that stores per-element outputs. Streaming: chunks that start on a 64-byte
        cache line are computed into buffers and written with non-temporal stores (no read of the
        destination line, no eviction of what the next rows need), then the whole lines left one
        at a time (LINE); the head up to the first line and the tail after the last whole line are
        plain stores, and so is everything when the call writes less than `stream` bytes (it stays
        cached for its reader). Without the lines, a row of 1024 floats starting 8 bytes into a line
        (MLX's buffers start 8 bytes past a 16-byte boundary) stored its last 50 elements plainly:
        RMSNorm 4096x1024 on buffers 8 or 40 bytes past a 2 MB boundary took 0.967-0.986 ms
        without the lines and 0.905-0.949 with them, LayerNorm 1.110-1.184 and 1.097-1.147, the
        same bits (`TWINS=lines docs/experiments/2026-12-05e-cpu/twins.py`, two runs). Whole lines
        only: a line written partly by plain and partly by streaming stores costs a
        read-modify-write (rows streamed from 32-byte boundaries ran at half the plain speed). Each
        streamed chunk first asks for the same columns of the next row of the inputs in `ahead`
        (one request per 64-byte line), so memory reads go on while the stores drain. The first
        output's chunks start on a line by construction and are streamed without a test; another
        output's, whose address may sit elsewhere in its line, are tested and copied plainly where
        they do not. Without the test GCC keeps the buffer in registers instead of also writing it
        to the stack for the copy it might need: LayerNorm 4096x1024 read from memory 1.01-1.08x
        faster, RMSNorm 1.01x (docs/experiments/2026-12-04e-cpu)."""
        if not self.streams():
            return (self.vector_final(indent, body, lo, hi, lines_for, vector_for)
                    or self.loop(indent, body, lo, hi, lines_for=lines_for))
        c = self.chunk
        outs = self.elem_outputs(body)
        first = f"out{outs[0]} + r * N"
        lines = [f"{indent}int64_t jc = {hi};",
                 f"{indent}if (ap_stream) {{",
                 f"{indent}  jc = {lo} + (((64 - ((uintptr_t)({first} + {lo}) & 63)) & 63) >> 2);",
                 f"{indent}  if (jc > {hi}) jc = {hi};",
                 f"{indent}}}"]
        lines += self.loop(indent, body, lo, "jc", lines_for=lines_for)
        lines += self.streamed_chunks(indent, body, outs, c, hi, lines_for, ahead)
        lines += self.streamed_chunks(indent, body, outs, LINE, hi, lines_for)
        lines += self.loop(indent, body, "jc", hi, lines_for=lines_for)
        return lines

    def vector_final(self, indent: str, body: list[int], lo: str, hi: str,
                     lines_for: dict[int, list[str]] | None,
                     vector_for: dict[int, list[str]] | None = None) -> list[str] | None:
        """With Schedule.vectors, a row kernel's final pass or an elementwise kernel's loop that
        stores plainly, in AVX-512 vectors of 16 columns where the compiler targets them (`#if`),
        then the `omp simd` loop over the rest (all of the row elsewhere; the kernel's last loop,
        where a planted loop bug lands): the same statements lane by lane, so the same bits. What it
        buys is 16-bit rows read and written in registers (`vector_expr`: float16 by F16C, bfloat16
        by a shift and BF16_VECTOR), where the `omp simd` loop calls the prelude's bit forms or
        stages them, and our functions inlined (the sigmoid too). 4096x2048 elementwise kernels read
        from memory: float16 `x + 0.5 * y` 1.00 ms against 1.72 staged, float16 SiLU 0.87 against
        0.96, bfloat16 SiLU 1.25 against 2.22 (docs/experiments/2026-12-06i-cpu/elementwise_vectors.py).
        A statement `lines_for` replaces (a stash read back) takes `vector_for`'s instead. None where
        a statement has no vector form here, a replaced one none given, or an output is staged
        (`staging` stages one only where this pass has no vector form)."""
        if not self.s.vectors:
            return None
        stores = {}
        for b in body:
            ins = self.k.body[b]
            if ins.op is Op.STORE:
                a = ins.attr("arg")
                if ins.space != "elem" or a in self.staged or self.k.args[a].dtype not in VECTOR_STORES:
                    return None
                stores[b] = [VECTOR_STORES[self.k.args[a].dtype].format(a=a, v=self.name(ins.srcs[0]))]
        decls = self.vector_statements(body, {**(lines_for or {}), **dict.fromkeys(stores, [])},
                                       {**(vector_for or {}), **stores})
        if decls is None:
            return None
        inner = indent + "  "
        return [f"{indent}{{", f"{inner}int64_t jv = {lo};", "#if defined(__AVX512F__)",
                f"{inner}for (; jv + {VECTOR_LANES} <= {hi}; jv += {VECTOR_LANES}) {{",
                f"{inner}  const int64_t j = jv;", *(f"{inner}  {line}" for line in decls), f"{inner}}}", "#endif",
                *self.loop(inner, body, "jv", hi, lines_for=lines_for), f"{indent}}}"]

    def next_head(self, body: list[int]) -> list[str]:
        """At a row's start, where its final pass (`body`) streams: a write prefetch of the next row's
        first line of each output it stores, where the next row starts inside that line. That line
        holds this row's tail and the next row's head, both stored plainly, and a plain store that
        misses holds up the streaming stores queued behind it; asked for a row ahead, the line is
        there when they come. A small gain: on buffers 8, 24 or 40 bytes past a line, RMSNorm
        4096x1024 was 1.2-4.0% faster in 7 placements of 7 over three processes, LayerNorm 2.6-4.6%
        in 5 of 7 (0.6% and 7.9% slower in the others); asked for the row's own line at its start,
        no change; asked for a line the next row streams whole (rows on lines), RMSNorm 6-10%
        slower, the line then evicted again by the streaming stores
        (`TWINS=next_head docs/experiments/2026-12-05e-cpu/twins.py`)."""
        if not self.streams():
            return []
        return [f"    if (ap_stream && ((uintptr_t)(out{a} + (r + 1) * N) & 63)) "
                f"__builtin_prefetch(out{a} + (r + 1) * N, 1, 3);" for a in self.elem_outputs(body)]

    def elem_outputs(self, body: list[int]) -> list[int]:
        """The output arguments that `body` stores element by element, in its order."""
        return [i.attr("arg") for i in (self.k.body[b] for b in body) if i.op is Op.STORE and i.space == "elem"]

    def streamed_chunks(self, indent: str, body: list[int], outs: list[int], width: int, hi: str,
                        lines_for: dict[int, list[str]] | None, ahead: Sequence[int] = ()) -> list[str]:
        """store_loop's loop over chunks of `width` elements from jc (on a line) while they fit before
        `hi`: each computed into a buffer per output and streamed, the next row's lines asked for
        first where `ahead` names inputs."""
        k = self.k
        lines = [f"{indent}for (; jc + {width} <= {hi}; jc += {width}) {{"]
        fetch = self.reach_ahead if k.kind == "elementwise" else self.next_row
        lines += fetch(indent + "  ", ahead, "jc", width) if ahead else []
        lines += [f"{indent}  float t{a}[{width}] __attribute__((aligned(64)));" for a in outs]
        buffered = dict(lines_for or {})
        for b in body:
            if k.body[b].op is Op.STORE and k.body[b].space == "elem":
                buffered[b] = [f"t{k.body[b].attr('arg')}[j - jc] = {self.name(k.body[b].srcs[0])};"]
        scalar = self.loop(indent + "  ", body, "jc", f"jc + {width}", lines_for=buffered)
        vector = self.vector_chunk(indent + "  ", body, width, buffered, outs)
        lines += ["#if defined(__AVX512F__)", *vector, "#else", *scalar, "#endif"] if vector else scalar
        for a in outs:
            dest = f"out{a} + r * N + jc"
            stream = f"for (int q = 0; q < {width}; q += AP_NT_WIDTH) AP_NT_STORE({dest} + q, t{a} + q);"
            if a == outs[0]:  # jc starts its chunks on a line: no test, so the buffer stays in registers
                lines.append(f"{indent}  {stream}")
                continue
            lines += [f"{indent}  if (((uintptr_t)({dest}) & 63) == 0) {{",
                      f"{indent}    {stream}",
                      f"{indent}  }} else {{",
                      f"{indent}    __builtin_memcpy({dest}, t{a}, sizeof t{a});",
                      f"{indent}  }}"]
        lines.append(f"{indent}}}")
        return lines

    def vector_chunk(self, indent: str, body: list[int], width: int, buffered: dict[int, list[str]],
                     outs: list[int]) -> list[str] | None:
        """With Schedule.vectors, an elementwise kernel's streamed chunk of `width` elements written
        in AVX-512 vectors into its buffers (`buffered`: the `omp simd` form's statements, the
        stores into the buffers among them), for the compiler to take where it targets AVX-512
        (`#if`): the same statements lane by lane, so the same bits, with our functions inlined
        (VECTOR16_OWN) where the `omp simd` loop calls their vector entry points. GELU 4096x1024
        read from memory took 0.84-0.88x the time of the same streamed twin calling ap_tanhf
        (docs/experiments/2026-12-05j-cpu). None for a row kernel, a width that is no multiple of
        16, or where an instruction has no vector form here (vector_statements)."""
        if not self.s.vectors or self.k.kind != "elementwise" or width % VECTOR_LANES:
            return None
        stores = {b: [f"_mm512_storeu_ps(t{self.k.body[b].attr('arg')} + jv, {self.name(self.k.body[b].srcs[0])});"]
                  for b in body if self.k.body[b].op is Op.STORE and self.k.body[b].attr("arg") in outs}
        decls = self.vector_statements(body, buffered, stores)
        if decls is None:
            return None
        return [f"{indent}for (int64_t jv = 0; jv < {width}; jv += {VECTOR_LANES}) {{",
                f"{indent}  const int64_t j = jc + jv;", *(f"{indent}  {line}" for line in decls), f"{indent}}}"]

    def parallel(self, loop: list[str], before: Sequence[str] = (), after: Sequence[str] = ()) -> list[str]:
        """`loop` (a for statement) over the threads. Streaming stores are weakly ordered, so each
        thread fences once after its share, before the team's barrier publishes the outputs.
        `before` and `after` run in each thread around its share of a streaming loop (`piped`)."""
        guard = f" if(R * N >= {PARALLEL_MIN})"
        if not self.streams():
            return ([f"  {self.parallel_for}{guard}"] if self.s.threads else []) + loop
        if not self.s.threads:
            return [*before, *loop, *after, "  if (ap_stream) _mm_sfence();"]
        return [f"  #pragma omp parallel{guard}", "  {", *before, "  #pragma omp for schedule(static)", *loop,
                *after, "  if (ap_stream) _mm_sfence();", "  }"]

    def stream_flag(self) -> list[str]:
        if not self.streams():
            return []
        outs = sum(1 for a in self.k.args if a.role == "out" and a.space == "elem")
        # a scratch stash's long rows stash into the output row, which streaming would read back from memory
        short = f" && N <= {SCRATCH_ROW}" if self.s.stash and self.s.scratch else ""
        return [f"  const int ap_stream = R * N * {4 * outs} >= {self.s.stream}{short};"]

    def staged_loop(self, indent: str, body: list[int], lo: str, hi: str) -> list[str]:
        """An elementwise loop over chunks of STAGE elements: each staged input's chunk widened into a
        float buffer, the `omp simd` loop reading and writing those buffers (`load`, `assign`), each
        staged output narrowed from its buffer (whole vectors by ap_f16_narrow, the rest by a loop
        of the prelude's bit form). Same bits as the bit forms throughout (round_f16.c). float16
        SiLU 4096x2048 (libmvec) took 1.2 ms staged against 4.3 with the bit forms, both keeping
        float32 between the ops (docs/experiments/2026-12-06f-cpu/half_stage.py)."""
        inner = indent + "  "
        lines = [f"{indent}for (int64_t jc = {lo}; jc < {hi}; jc += {STAGE}) {{",
                 f"{inner}const int64_t je = jc + {STAGE} < {hi} ? jc + {STAGE} : {hi};"]
        lines += [f"{inner}float ap_h{a}[{STAGE}] __attribute__((aligned(64)));" for a in sorted(self.staged)]
        lines += self.widen(inner, body, "jc", "je - jc")
        lines += self.loop(inner, body, "jc", "je")
        return lines + self.narrow(inner, body, "jc", "je") + [f"{indent}}}"]

    def widen(self, indent: str, body: list[int], lo: str, count: str) -> list[str]:
        """Each staged input `body` reads, `count` elements from column `lo` widened into its buffer."""
        return [f"{indent}ap_{TAG[self.k.args[a].dtype]}_widen(in{a} + b{a} + {lo}, ap_h{a}, {count});"
                for a in self.contiguous_inputs(body) if a in self.staged]

    def narrow(self, indent: str, body: list[int], lo: str, hi: str) -> list[str]:
        """Each staged output `body` stores, columns lo..hi narrowed from its buffer: whole vectors by
        ap_f16_narrow (ap_bf16_narrow), the rest by a loop of the prelude's bit form."""
        lines = []
        for a in self.elem_outputs(body):
            if a in self.staged:
                tag = TAG[self.k.args[a].dtype]
                lines += [f"{indent}const int64_t jn{a} = {lo} + ap_{tag}_narrow(ap_h{a}, out{a} + r * N + {lo}, {hi} - {lo});",
                          f"{indent}for (int64_t j = jn{a}; j < {hi}; j++) out{a}[r * N + j] = ap_{tag}_store(ap_h{a}[{self.stage_index}]);"]
        return lines

    def staged_row(self, p, st, ahead: list[int]) -> list[str]:
        """A row kernel's row of at most SCRATCH_ROW elements, its staged 16-bit inputs widened into
        float buffers on the thread's stack before the passes (every pass then reads floats:
        softmax's three) and its staged outputs narrowed from theirs after the final pass; the same
        passes as the plain row's over the same values, as the conversions give the bit forms' bits
        both ways (docs/experiments/2026-12-06f-cpu/round_f16.c)."""
        every = [i for rp in p.passes for i in rp.elem] + list(st.final_elem if st else p.final_elem)
        lines = [f"    float ap_h{a}[{SCRATCH_ROW}] __attribute__((aligned(64)));" for a in sorted(self.staged)]
        lines += self.widen("    ", every, "0", "N")
        lines += self.row_passes(p, st, ahead, False)
        return lines + self.narrow("    ", every, "0", "N")

    def unstaged(self) -> "CRenderer":
        """This renderer with nothing staged: a row kernel's rows longer than the stack's buffers."""
        plain = copy.copy(self)
        plain.staged = frozenset()
        return plain

    def render_elementwise(self) -> list[str]:
        p = plan(self.k)
        block = self.s.block
        lines = ["  for (int64_t t = 0; t < R * nb; t++) {",
                  "    const int64_t r = t / nb, j0 = (t % nb) * " + str(block) + ";",
                  f"    const int64_t j1 = j0 + {block} < N ? j0 + {block} : N;"]
        lines += self.offsets("    ")
        lines += [f"    {self.assign(i)}" for i in p.row_before]
        ahead = self.contiguous_inputs(list(p.final_elem)) if self.s.prefetch > 0 else []
        if self.staged:
            lines += self.staged_loop("    ", list(p.final_elem), "j0", "j1")
        else:
            lines += self.store_loop("    ", list(p.final_elem), "j0", "j1", ahead=ahead)
        lines.append("  }")
        prelude = self.ahead_rows(ahead) if any("ap_ahead" in line for line in lines) else []
        return (self.stream_flag() + [f"  const int64_t nb = (N + {block} - 1) / {block};"] + prelude
                + self.parallel(lines))

    def shifted_sums(self, indent: str, sh: Shifted, rp, prefetch: bool, head: Sequence[str] = ()) -> list[str]:
        """The mean's pass of a shifted spread (shifted_from): beside the row's reductions, the sums
        of d = value - K and of d^2, K the mean of the row's first SHIFT_SAMPLE values. Any K keeps
        the identity exact; one near the mean keeps the cancellation small (with the first value
        alone a third of normally distributed rows failed the kernel's test and were summed again;
        with the mean of 16, none in 4096). The 16 are summed in order by a plain loop: as an
        `omp simd` reduction GCC finished the sum lane by lane through the stack, and LayerNorm
        4096x1024 read from memory ran 1.04x slower (docs/experiments/2026-12-04e-cpu).
        Where the sample sits within half its own spread of 0 (5 K^2 <= q, q the 16's mean square:
        K^2 <= (q - K^2) / 4, summed beside K, not after it), the row is taken as centred and K is
        0: d is the value itself, sum(d) is the row's own total (`sh.total`), and the pass sums two
        things instead of three and subtracts nothing (LayerNorm's rows 1.2x faster in cache,
        docs/experiments/2026-12-05c-cpu). The kernel's test still vouches for every row
        (shifted_from holds for any K): a row whose sample lied (a centred head, a far tail) is
        summed again about its mean."""
        v = self.name(sh.value)
        cone_lines = [f"{indent}  {self.assign(i)}" for i in cone(self.k, [sh.value])]
        lines = [f"{indent}float ap_k = 0.0f, ap_e = 0.0f, ap_s1 = 0.0f, ap_s2 = 0.0f;",
                 f"{indent}const int64_t ap_jk = N < {SHIFT_SAMPLE} ? N : {SHIFT_SAMPLE};",
                 f"{indent}for (int64_t j = 0; j < ap_jk; j++) {{", *cone_lines,
                 f"{indent}  ap_k += {v};", f"{indent}  ap_e += {v} * {v};", f"{indent}}}",
                 f"{indent}if (ap_jk > 0) ap_k = ap_k / (float)ap_jk;"]
        value = self.vector_assign(sh.value) if self.s.vectors else None  # the same in a vector group

        def given(*decls: str) -> tuple[dict, dict]:
            """The value's statement followed by `decls` in the loop, and the same in a vector group."""
            return ({sh.value: [self.assign(sh.value), *(f"const float {d};" for d in decls)]},
                    {sh.value: [value, *(f"const __m512 {d};" for d in decls)]} if value else {})

        centred, centred_vector = given(f"ap_dd = {v} * {v}")
        shift, vector = given(f"ap_d = {v} - ap_k", "ap_dd = ap_d * ap_d")
        lines.append(f"{indent}if ({CENTRED_TEST}) {{")
        lines += self.reduce_loop(indent + "  ", rp, centred, prefetch, (("ap_s2", "ap_dd"),), centred_vector, head)
        lines += [f"{indent}  ap_s1 = a{sh.total};", f"{indent}}} else {{"]
        lines += self.reduce_loop(indent + "  ", rp, shift, prefetch, (("ap_s1", "ap_d"), ("ap_s2", "ap_dd")), vector, head)
        return lines + [f"{indent}}}"]

    def shifted_spread(self, indent: str, sh: Shifted, again: list[str]) -> list[str]:
        """The spread from the shifted sums where shifted_from trusts it, else `again`: the pass
        that sums the squares about the mean."""
        return [f"{indent}{{",
                *(f"{indent}  {line}" for line in SHIFTED_SPREAD),
                f"{indent}  if (N >= {shifted_from(self.s.split)} && {TRUSTED_SPREAD}) {{",
                f"{indent}    a{sh.spread} = ap_v;",
                f"{indent}  }} else {{",
                *again,
                f"{indent}  }}",
                f"{indent}}}"]

    def render_row(self) -> list[str]:
        """One row per iteration: the reducing passes, then the final pass's stores. A stash keeps
        its value in the output row until the final pass overwrites it; a scratch stash keeps it in
        a buffer on the thread's stack instead (rows up to SCRATCH_ROW), so the final pass reads it
        from L1 and may stream its stores past the cache without reading back the lines it streams.
        With `prefetch`, the next row's inputs (those the reducing passes read) are asked for by the
        final pass where it streams its stores and nothing is stashed, else by the last reducing
        pass: a row of RMSNorm 4096x1024 read from memory (inputs in turn past the caches) went
        8-27% faster so than with the requests in its sum of squares, which is itself reading from
        memory then (docs/experiments/2026-12-03b-cpu/ph.c); a stash's last reducing pass computes
        the costly value (softmax's exps) and hides the requests better than its short final pass
        (softmax's scratch stash 0.84x and 0.90x with them moved to its stores: ab_src.py). With
        `onepass`, a pass that only sums the squares about the previous pass's mean is folded into
        that pass where the shifted sums can vouch for the row (shifted_sums, shifted_from)."""
        p = plan(self.k)
        st = stash(self.k, p) if self.s.stash else None
        if st and st.arg is None and not self.s.scratch:  # nowhere to keep it but the stack's buffer
            st = None
        stores = st is None and bool(p.final_elem) and self.streams() and self.k.rank > 1
        prefetched = self.contiguous_inputs([i for rp in p.passes for i in rp.elem])
        ahead = prefetched if self.s.prefetch > 0 and stores else []
        piped = self.pipes()
        final = list(st.final_elem) if st else list(p.final_elem)
        lines = ["  for (int64_t r = 0; r < R; r++) {"]
        lines += self.offsets("    ")
        lines += self.next_head(final)
        lines += ["    int64_t ap_done = 0;"] if piped else []
        if st and self.s.scratch:  # piped, the buffer is the thread's (piped_frame)
            lines += [] if piped else [f"    {SCRATCH_BUFFER}"]
            lines += [f"    float *ap_row = N <= {SCRATCH_ROW} ? ap_buf : out{st.arg} + r * N;" if st.arg is not None
                      else "    float *ap_row = ap_buf;"]  # no float32 output: longer rows recompute
        lines += [f"    {self.assign(i)}" for i in p.row_before]
        row_stores = [f"    {self.assign(i)}" for i in p.row_stores]
        if self.staged or (st and st.arg is None):  # rows the stack holds (last: a planted loop bug lands there)
            # each branch stores its own row values: they are declared in its scope
            longer = self.unstaged().row_passes(p, st if st and st.arg is not None else None, ahead, False)
            held = self.staged_row(p, st, ahead) if self.staged else self.row_passes(p, st, ahead, False)
            lines += [f"    if (N > {SCRATCH_ROW}) {{", *(f"  {line}" for line in longer + row_stores),
                      "    } else {", *(f"  {line}" for line in held + row_stores), "    }"]
        else:
            lines += self.row_passes(p, st, ahead, piped) + row_stores
        lines.append("  }")
        prelude = self.ahead_rows(prefetched) if any("ap_ahead" in line for line in lines) else []
        # a piped row is one of N <= SCRATCH_ROW (ap_stream), whose kept stash is in the thread's buffer
        flag, before, after = self.piped_frame(final, self.reading(st, "ap_buf[j]")) if piped else ([], [], [])
        return self.stream_flag() + flag + prelude + self.parallel(lines, before, after)

    def render_columns(self) -> list[str]:
        """A reduction over a strided axis (a max over axis 0: the kernel's rows are the array's
        columns) with `columns` rows at once, one a SIMD lane: each step of a pass reads the same
        element of every row of the block, which lie side by side in memory, as one vector, and each
        row's accumulator stays in its lane, so the rows path's walk down a column (a new cache line
        every element, a gather in a SIMD loop) becomes one contiguous load a step. Row values are
        kept in lane arrays between the passes; every statement is the rows path's, lane by lane,
        and each lane sums its row in order (blocks of COMPENSATED_BLOCK added with Neumaier's
        compensation where the row is long: reduce_loop's scheme); per-element outputs, which only a
        permuted loop's kernel has here (cpu.column_twins), are written by a last pass in the
        array's order, the block's columns side by side again (elem_index). It runs where every
        per-element input's rows lie side by side (stride 1 along the kernel's last row axis); other
        launches take the rows path (render_row)."""
        k, w, c = self.k, self.s.columns, self.k.rank - 2
        p, lvl = plan(k), levels(k)
        elem = sorted({i.attr("arg") for i in k.body if i.op is Op.LOAD and i.space == "elem"})
        side = " && ".join(f"{self.stride(a, c)} == 1" for a in elem) or "1"
        # row values a later lane loop reads (those of one level are computed in one loop)
        kept = sorted({s for i in k.body for s in i.srcs if k.body[s].space == "row" and k.body[s].op is not Op.CONST
                       and i.op is not Op.STORE and (i.space == "elem" or lvl[i.id] > lvl[s])})
        stored = {}  # a row store goes with its value's lane loop (a constant's: the last)
        for i in p.row_stores:
            src = k.body[k.body[i].srcs[0]]
            stored.setdefault(len(p.passes) if src.op is Op.CONST else lvl[src.id], []).append(i)
        lines = ["  for (int64_t t = 0; t < (C ? R / C : 0) * nc; t++) {",
                 f"    const int64_t o = t / nc, cb = (t % nc) * {w}, rb = o * C + cb;",
                 *self.offsets("    ", "rb", "o", "oo")]  # the block's first row's bases
        lines += [f"    float ap_r{i}[{w}];" for i in kept]
        lines += [f"    {self.assign(i.id)}" for i in k.body if i.space == "row" and i.op is Op.CONST]
        for n, count in ((f"cb + {w} <= C", str(w)), ("", "C - cb")):
            lines += [f"    if ({n}) {{" if n else "    } else {",
                      *self.column_block("      ", p, count, elem, kept, stored)]
        lines += ["    }", "  }"]
        rows = copy.copy(self)
        rows.s = dataclasses.replace(self.s, columns=0)
        return [f"  const int64_t C = {self.dim(c)}, nc = (C + {w - 1}) / {w};", f"  if (C > 1 && {side}) {{",
                *self.parallel(lines), "  } else {", *rows.render_row(), "  }"]

    def column_block(self, indent: str, p, count: str, elem: list[int], kept: list[int],
                     stored: dict[int, list[int]]) -> list[str]:
        """One block's passes (render_columns), `count` of its lanes in use; `stored`: the row
        stores by the level of their value. With `onepass`, a pass that only sums the squares about
        the previous pass's mean runs only where some lane's shifted sums cannot vouch for its
        spread (column_shift, column_trust); the other lanes take the spread from them."""
        k, w, lines = self.k, self.s.columns, []
        sh = shifted(k, p) if self.s.onepass else None
        before = [i for i in p.row_before if k.body[i].op is not Op.CONST] + stored.get(0, [])  # constants: render_columns
        if before:
            lines += self.lanes(indent, count, elem, kept, before)
        for n, rp in enumerate(p.passes, 1):
            sums = [r for r in rp.reduces if k.body[r].op is Op.SUM] if self.s.compensate else []
            flags = [r for r in rp.reduces if r in self.flagged]
            lines += [f"{indent}float ap_a{r}[{w}];" for r in rp.reduces]
            lines += [f"{indent}int ap_n{r}[{w}];" for r in flags]
            lines += [f"{indent}float ap_k{r}[{w}], ap_t{r}[{w}];" for r in sums]
            reset = [f"ap_a{r}[l] = {REDUCTIONS[k.body[r].op][0]};" for r in rp.reduces]
            reset += [f"ap_n{r}[l] = 0;" for r in flags] + [f"ap_k{r}[l] = 0.0f; ap_t{r}[l] = 0.0f;" for r in sums]
            lines += self.lanes(indent, count, elem, kept, first=reset)
            step = [self.accumulate(r, f"ap_a{r}[l]", self.name(k.body[r].srcs[0]), f"ap_n{r}[l]")
                    for r in rp.reduces]
            mean_pass, spread_pass = sh is not None and n == sh.first + 1, sh is not None and n == sh.first + 2
            if mean_pass:
                lines += self.column_shift(indent, sh, count, elem, kept)

            def rows(ind: str, lo: str, hi: str) -> list[str]:
                if mean_pass:
                    return self.shifted_rows(ind, sh, list(rp.elem), step, lo, hi, count, elem, kept)
                return [f"{ind}for (int64_t j = {lo}; j < {hi}; j++) {{",
                        *self.lanes(ind + "  ", count, elem, kept, list(rp.elem), then=step), f"{ind}}}"]

            at = indent + "  " if spread_pass else indent
            if sums:  # blocks of the row, their totals added compensated lane by lane (reduce_loop's)
                inner = at + "  "
                add = [line for r in sums for line in neumaier_add(f"ap_t{r}[l]", f"ap_k{r}[l]", f"ap_a{r}[l]", f"s{r}")]
                loop = [f"{at}for (int64_t jb = 0, B = {self.compensated_block()}; jb < N; jb += B) {{",
                        f"{inner}const int64_t je = jb + B < N ? jb + B : N;",
                        *self.lanes(inner, count, elem, kept, first=[f"ap_a{r}[l] = 0.0f;" for r in sums]),
                        *rows(inner, "jb", "je"), *self.lanes(inner, count, elem, kept, first=add), f"{at}}}"]
            else:
                loop = rows(at, "0", "N")
            lines += [f"{indent}if (ap_redo) {{", *loop, f"{indent}}}"] if spread_pass else loop
            if mean_pass:
                lines += self.column_trust(indent, count, elem, kept)
            results = []
            for r in rp.reduces:
                value = f"(ap_n{r}[l] ? NAN : ap_a{r}[l])" if r in flags else f"ap_a{r}[l]"
                if r in sums:
                    value = f"({neumaier_total(f'ap_t{r}[l]', f'ap_k{r}[l]')})"
                if spread_pass and r == sh.spread:
                    value = f"(ap_ok[l] ? ap_cv[l] : {value})"
                results.append(self.row_value(r, self.rounded(k.body[r], value), "float"))
            lines += self.lanes(indent, count, elem, kept, list(rp.row_after) + stored.get(n, []),
                                first=results, defined=rp.reduces)
        if p.final_elem:  # per-element outputs (a permuted loop's: elem_index)
            lines += [f"{indent}for (int64_t j = 0; j < N; j++) {{",
                      *self.lanes(indent + "  ", count, elem, kept, list(p.final_elem)), f"{indent}}}"]
        return lines

    def column_shift(self, indent: str, sh: Shifted, count: str, elem: list[int], kept: list[int]) -> list[str]:
        """The lanes' shifts K before a shifted spread's mean pass (column_block): each lane's the mean
        of its first SHIFT_SAMPLE values, as the rows path's (shifted_sums), summed in order; and the
        lane arrays of its shifted sums."""
        w, v = self.s.columns, self.name(sh.value)
        return [f"{indent}float ap_ck[{w}], ap_c1[{w}], ap_c2[{w}], ap_b1[{w}], ap_b2[{w}], ap_cv[{w}];",
                f"{indent}int ap_ok[{w}], ap_redo = 0;",
                f"{indent}const int64_t ap_jk = N < {SHIFT_SAMPLE} ? N : {SHIFT_SAMPLE};",
                *self.lanes(indent, count, elem, kept, first=["ap_ck[l] = 0.0f; ap_c1[l] = 0.0f; ap_c2[l] = 0.0f;"]),
                f"{indent}for (int64_t j = 0; j < ap_jk; j++) {{",
                *self.lanes(indent + "  ", count, elem, kept, list(cone(self.k, [sh.value])), then=[f"ap_ck[l] += {v};"]),
                f"{indent}}}",
                *self.lanes(indent, count, elem, kept, first=["if (ap_jk > 0) ap_ck[l] = ap_ck[l] / (float)ap_jk;"])]

    def shifted_rows(self, indent: str, sh: Shifted, body: list[int], step: list[str], lo: str, hi: str,
                     count: str, elem: list[int], kept: list[int]) -> list[str]:
        """Rows lo..hi of a shifted spread's mean pass (column_block): beside `step`, each lane sums
        d = value - K and d^2 in order over SHIFT_BLOCK rows and adds the block's totals to its
        shifted sums (the error shifted_columns_from counts)."""
        d = [f"const float ap_d = {self.name(sh.value)} - ap_ck[l];", "ap_b1[l] += ap_d;", "ap_b2[l] += ap_d * ap_d;"]
        inner = indent + "  "
        return [f"{indent}for (int64_t jc = {lo}; jc < {hi}; jc += {SHIFT_BLOCK}) {{",
                f"{inner}const int64_t jd = jc + {SHIFT_BLOCK} < {hi} ? jc + {SHIFT_BLOCK} : {hi};",
                *self.lanes(inner, count, elem, kept, first=["ap_b1[l] = 0.0f; ap_b2[l] = 0.0f;"]),
                f"{inner}for (int64_t j = jc; j < jd; j++) {{",
                *self.lanes(inner + "  ", count, elem, kept, body, then=[*step, *d]),
                f"{inner}}}",
                *self.lanes(inner, count, elem, kept, first=["ap_c1[l] += ap_b1[l]; ap_c2[l] += ap_b2[l];"]),
                f"{indent}}}"]

    def column_trust(self, indent: str, count: str, elem: list[int], kept: list[int]) -> list[str]:
        """Each lane's spread from its shifted sums, and whether they vouch for it (shifted_spread's
        test, at shifted_columns_from's length); `ap_redo` where some lane's do not."""
        return [*self.lanes(indent, count, elem, kept, first=[
                    "const float ap_s1 = ap_c1[l], ap_s2 = ap_c2[l];", *SHIFTED_SPREAD, "ap_cv[l] = ap_v;",
                    f"ap_ok[l] = N >= {shifted_columns_from(SHIFT_BLOCK)} && {TRUSTED_SPREAD};"]),
                f"{indent}for (int64_t l = 0; l < {count}; l++) ap_redo |= !ap_ok[l];"]

    def lanes(self, indent: str, count: str, elem: list[int], kept: list[int], body: Sequence[int] = (),
              first: Sequence[str] = (), then: Sequence[str] = (), defined: Sequence[int] = ()) -> list[str]:
        """A SIMD loop over a block's lanes (render_columns): statements `first` (which declare the
        row values `defined`), then `body`'s instructions, then `then`. The row values they read are
        taken from their lane arrays, and those they compute that a later loop reads (`kept`) are
        kept there. Lane l is row rb + l, whose per-element inputs (`elem`) start at o + l."""
        k = self.k
        read = sorted({s for i in body for s in k.body[i].srcs if s in kept and s not in set(body) | set(defined)})
        loads = sorted({k.body[i].attr("arg") for i in body if k.body[i].op is Op.LOAD})
        lines = [f"{indent}{self.simd}", f"{indent}for (int64_t l = 0; l < {count}; l++) {{"]
        if any(k.body[i].op is Op.STORE and k.body[i].space == "row" for i in body):
            lines.append(f"{indent}  const int64_t r = rb + l;")
        if any(k.body[i].op is Op.STORE and k.body[i].space == "elem" for i in body):
            lines.append(f"{indent}  const int64_t ob = oo + l * os{k.rank - 2};")
        lines += [f"{indent}  const int64_t b{a} = o{a} + l{'' if a in elem else f' * {self.stride(a, k.rank - 2)}'};"
                  for a in loads]
        lines += [f"{indent}  const float r{s} = ap_r{s}[l];" for s in read]
        lines += [f"{indent}  {line}" for line in first]
        lines += [f"{indent}  ap_r{i}[l] = r{i};" for i in defined if i in kept]
        for i in body:
            lines.append(f"{indent}  {self.assign(i)}")
            if i in kept:
                lines.append(f"{indent}  ap_r{i}[l] = r{i};")
        lines += [f"{indent}  {line}" for line in then]
        return lines + [f"{indent}}}"]

    def reading(self, st, stashed: str) -> dict[int, list[str]] | None:
        """A final pass's lines_for: stash `st`'s value read back from `stashed` instead of recomputed."""
        return {st.value: [f"const float {self.name(st.value)} = {stashed};"]} if st else None

    def kept_at(self, st) -> tuple[str, str]:
        """Where stash `st` keeps a row's values, and a column's index there: the scratch buffer on
        the thread's stack, or its float32 output's row."""
        return ("ap_row", "j") if self.s.scratch else (f"out{st.arg}", "r * N + j")

    def read_back(self, st) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
        """The final pass's stash read, as lines_for and as vector_for (store_loop's)."""
        row, index = self.kept_at(st)
        return (self.reading(st, f"{row}[{index}]"),
                {st.value: [f"const __m512 {self.name(st.value)} = _mm512_loadu_ps({row} + {index});"]})

    def row_passes(self, p, st, ahead: list[int], piped: bool) -> list[str]:
        """A row's reducing passes and its final pass (render_row), stash `st` kept by the last
        reducing pass and read back by the final one."""
        final = list(st.final_elem) if st else list(p.final_elem)
        held = self.reading(st, "ap_buf[j]")  # a piped row's kept stash, in the thread's buffer
        row, index = self.kept_at(st) if st else ("", "")
        keep = {st.value: [self.assign(st.value), f"{row}[{index}] = {self.name(st.value)};"]} if st else {}
        value = self.vector_assign(st.value) if st and self.s.vectors else None  # the same in a vector group
        keep_vector = {st.value: [value, f"_mm512_storeu_ps({row} + {index}, {self.name(st.value)});"]} if value else {}
        read, read_vector = self.read_back(st) if st else (None, None)
        lines = []
        sh = shifted(self.k, p) if self.s.onepass and self.s.split > 6 and not st else None
        for n, rp in enumerate(p.passes):
            for r in rp.reduces:
                ident, _, _ = REDUCTIONS[self.k.body[r].op]
                lines.append(f"    float a{r} = {ident};")
                if r in self.flagged:
                    lines.append(f"    int n{r} = 0;")
            last = rp is p.passes[-1]
            prefetch = self.s.prefetch > 0 and last and not ahead
            head = self.piped_head(rp, final, held) if piped and n == 0 else ()
            if sh and n == sh.first:  # the pass folded into this one may be the last
                lines += self.shifted_sums("    ", sh, rp, self.s.prefetch > 0 and n + 2 == len(p.passes) and not ahead,
                                           head)
            elif sh and n == sh.first + 1:
                lines += self.shifted_spread("    ", sh, self.reduce_loop("      ", rp, None, prefetch))
            else:
                lines += self.reduce_loop("    ", rp, keep if last else None, prefetch,
                                          vector_for=keep_vector if last else None, head=head)
            for r in rp.reduces:
                value = f"(n{r} ? NAN : a{r})" if r in self.flagged else f"a{r}"
                lines.append(f"    {self.row_value(r, self.rounded(self.k.body[r], value), 'float')}")
            lines += [f"    {self.assign(i)}" for i in rp.row_after]
            if piped and st and n == 0:  # a stash's: before the last pass writes this row's over the kept row's
                lines += ["    if (ap_piped && ap_last >= 0) {", *self.kept_rest("      ", final, held), "    }"]
        if piped:  # others': after the passes
            lines += self.piped_rest(final, ahead, read, held, rest=not st)
        elif final:
            lines += self.store_loop("    ", final, lines_for=read, ahead=ahead, vector_for=read_vector)
        return lines

    def piped_frame(self, body: list[int], lines_for: dict[int, list[str]] | None = None
                    ) -> tuple[list[str], list[str], list[str]]:
        """A piped kernel's run-time test (`ap_piped`), and what each thread declares before its rows
        (the kept row, its inputs' bases and per-row values) and runs after them (the last kept
        row's final pass, `lines_for` replacing instructions as in the row's: a stash's read)."""
        aligned = " && ".join(f"((uintptr_t)out{a} & 63) == 0" for a in self.elem_outputs(body))
        flag = [f"  const int ap_piped = ap_stream && N % {LINE} == 0 && {aligned};"]
        before = [*([f"  {SCRATCH_BUFFER}"] if self.s.stash else []),  # the kept row's stash waits there
                  "  int64_t ap_last = -1;  /* the row whose final pass waits for the next row's first pass */",
                  *(f"  int64_t ap_pb{a} = 0;" for a in range(len(self.k.inputs))),
                  *(f"  {ctype} ap_c{name} = 0;" for name, ctype in self.carried(body))]
        after = ["  if (ap_last >= 0) {",
                 *self.as_last_row("    ", body, self.piped_chunks("      ", body, "0", lines_for=lines_for)), "  }"]
        return flag, before, after

    def pipes(self) -> bool:
        """Whether this row kernel is `piped`: a row's final pass waits for the next row, and runs
        inside that row's first reducing pass, one split loop group of columns at a time (computed
        and streamed out at the group's start), so the reads of one row and the stores of the one
        before reach memory together, as in a streaming copy, instead of a read phase and a store
        phase a row. At run time only where every row of every output starts on a line (`ap_piped`:
        streaming, rows of a multiple of LINE elements, outputs on a line, as the native op places
        them); elsewhere the row loop is the unpiped one. The same values are stored, from the same
        expressions: the same bits. Hand-made prototypes ran RMSNorm and LayerNorm 4096x1024 16-23%
        faster back to back and 3-16% read from memory, RMSNorm as fast as a streaming copy
        (docs/experiments/2026-12-05g-cpu). A scratch stash pipes where a pass comes before its
        last (softmax's max before its exps): the kept row's stash waits in the thread's buffer
        (`ap_buf`, then one per thread) until the next row's first pass is done with it; softmax
        4096x1024 read from memory ran 1.09-1.20x faster so (docs/experiments/2026-12-05h-cpu)."""
        p = plan(self.k)
        keeps_stash = not self.s.stash or (self.s.scratch and len(p.passes) > 1)
        return (self.s.piped and keeps_stash and bool(p.passes) and bool(p.final_elem) and self.streams()
                and self.k.rank > 1 and self.s.split > 0 and self.s.split % LINE == 0)

    def carried(self, body: list[int]) -> list[tuple[str, str]]:
        """The per-row values (and reciprocals) a final pass `body` reads: (name, C type) each, what a
        piped kernel keeps of a row for its final pass in the next row."""
        used = sorted({s for i in body for s in self.k.body[i].srcs if self.k.body[s].space == "row"})
        out = []
        for i in used:
            out.append((self.name(i), VALUE[self.k.body[i].dtype]))
            if i in self.inverted:
                out.append((f"q{i}", "float"))
        return out

    def as_last_row(self, indent: str, body: list[int], lines: list[str]) -> list[str]:
        """`lines` (a final pass over `body`) in a block where the row, its inputs' bases and its
        per-row values are those of the row kept (`ap_last`), shadowing the current row's."""
        carried = self.carried(body)
        return [f"{indent}{{",
                f"{indent}  const int64_t r = ap_last;",
                *(f"{indent}  const int64_t b{a} = ap_pb{a};" for a in range(len(self.k.inputs))),
                *(f"{indent}  const {ctype} {name} = ap_c{name};" for name, ctype in carried),
                *lines, f"{indent}}}"]

    def piped_head(self, rp, body: list[int], lines_for: dict[int, list[str]] | None = None) -> list[str]:
        """What a piped kernel's first reducing pass does at each group's start: ask for the rows
        ahead (the final pass no longer streams in its own loop, so its requests moved here; a
        stash's last reducing pass asks already), and run the kept row's final pass over the
        group's columns, streamed out (`lines_for` as in piped_frame)."""
        w = self.width(rp.reduces)
        fetch = [] if self.s.stash else self.next_row("", self.contiguous_inputs(list(rp.elem)), "jm", w, "ap_piped && ")
        group = self.piped_chunks("    ", body, "jm", f"jm + {w}", (w,), lines_for)
        return [*fetch, "if (ap_last >= 0) {", *self.as_last_row("  ", body, group), f"  ap_done = jm + {w};", "}"]

    def piped_chunks(self, indent: str, body: list[int], lo: str, hi: str = "N",
                     widths: Sequence[int] = (), lines_for: dict[int, list[str]] | None = None) -> list[str]:
        """The kept row's final pass over columns lo..hi (both on a line), streamed in chunks of each
        of `widths` in turn (the store loop's chunks, then lines). A piped row has no head before its
        first line and no tail after its last (`ap_piped`), so none is rendered: the kernel's last
        element loop stays the unpiped final pass's tail, where the judge's misplaced outputs
        exercise it (a tail loop here would never run, and a bug planted in it could not be seen:
        `mutants.skipped_tail`)."""
        outs = self.elem_outputs(body)
        return [f"{indent}int64_t jc = {lo};",
                *(line for w in (widths or (self.chunk, LINE))
                  for line in self.streamed_chunks(indent, body, outs, w, hi, lines_for))]

    def piped_rest(self, body: list[int], ahead: Sequence[int], lines_for: dict[int, list[str]] | None = None,
                   held: dict[int, list[str]] | None = None, rest: bool = True) -> list[str]:
        """After a piped kernel's reducing passes: with `rest`, the kept row's final pass over the
        columns its groups left (`kept_rest`, `held` replacing instructions in it; a stash's ran
        before its last pass instead), then this row kept in its place; where the row is not piped,
        its final pass (`lines_for` as in store_loop)."""
        keep = [f"      ap_pb{a} = b{a};" for a in range(len(self.k.inputs))]
        keep += [f"      ap_c{name} = {name};" for name, _ in self.carried(body)]
        rest = ["      if (ap_last >= 0) {", *self.kept_rest("        ", body, held), "      }"] if rest else []
        return ["    if (ap_piped) {", *rest,
                "      ap_last = r;", *keep,
                "    } else {",
                *self.store_loop("      ", body, lines_for=lines_for, ahead=ahead),
                "    }"]

    def kept_rest(self, indent: str, body: list[int], held: dict[int, list[str]] | None) -> list[str]:
        """The kept row's final pass over the columns the first pass's groups left (from `ap_done`)."""
        return self.as_last_row(indent, body, self.piped_chunks(indent + "  ", body, "ap_done", lines_for=held))

@dataclass(frozen=True)
class GpuSchedule:
    """Knobs of a GPU variant: threads per block; threads per row in row kernels (0: the whole
    block; 32 or fewer: rows share a warp and reduce with shuffles alone); elements per thread step
    (vector loads where the access class allows); and up to how many vectors per thread a row
    kernel keeps in registers between its passes over a row (more than that: it reads them again)."""
    name: str = "default"
    block: int = 256
    group: int = 0
    vector: int = 4
    cache: int = 8
    unroll: int = 1  # elementwise: vectors per thread per step, all loaded before any is stored
    stream: bool = False  # streaming (evict-first) loads of data read once, streaming stores

    @property
    def row_threads(self) -> int:
        return self.group or self.block


# reduction -> (identity, combining functor the SIMT preludes define; max/min propagate NaN)
SIMT_REDUCTIONS = {Op.SUM: ("0.0f", "ApSum"), Op.PROD: ("1.0f", "ApProd"), Op.RMAX: ("-INFINITY", "ApMax"),
                   Op.RMIN: ("INFINITY", "ApMin")}
SECTION = "//// {}"


class SimtRenderer(CFamily):
    """KernelIR -> the body of a GPU kernel whose signature the framework writes (MLX's cuda_kernel
    and metal_kernel): inputs `in{a}`, outputs `out{a}` (a = argument index), the domain sizes and
    input strides as template constants `D{d}` and `S{a}_{d}`, so one source serves every shape.

    Elementwise: a grid-stride loop, U vectors of W = V elements per thread step when rows start on
    vector boundaries and no input is strided along the row (else W = 1). Row kernels: G threads per
    row walk it in chunks of W, pass by pass (schedule.plan); each pass reduces within a warp by
    shuffles, then across warps through group-shared memory; loads used by several passes stay in
    registers when the row is short enough. Vector loads and stores need aligned pointers: a thread
    tests them once and takes one of two copies of the loop. A subclass spells threads, barriers,
    types and loads."""

    thread = block_index = ""         # thread in its block, block in the grid
    global_thread = grid_threads = ""  # thread in the grid, threads in the grid
    shared = ""                       # qualifier of group-shared arrays
    unroll = "#pragma unroll ({})"
    storage: dict[str, str] = {}
    to_storage: dict[str, str] = {}   # dtype -> format converting a float (or int) value for storage
    vector_load = ""                  # statement filling ApVec {name} from pointer {ptr}
    vector_store = ""                 # statement writing ApVec {name} to pointer {ptr}
    # the same with a streaming cache hint (a schedule's `stream`: data touched once); a load's
    # {stream} is a constant expression, true where this read of the data is its last
    vector_load_stream = ""
    vector_store_stream = ""
    aligned_check = ""                # format testing one pointer's alignment to W elements ("": none)
    barrier = ""                      # the block-wide barrier statement, where the prelude has one
    prelude = ""

    def __init__(self, kernel: KernelIR, schedule: GpuSchedule = GpuSchedule()):
        super().__init__(kernel, schedule)
        self.plan = plan(kernel)
        self.slot = "[q]" if kernel.kind == "elementwise" else ""  # elementwise: one vector per q < U
        passes = [rp.elem for rp in self.plan.passes] + [self.plan.final_elem]
        uses = [set(self._contiguous(elem)) for elem in passes]
        self.cached = {i for i in set().union(*uses) if sum(i in u for u in uses) > 1}
        self.first_use = {i: next(p for p, u in enumerate(uses) if i in u) for i in self.cached}
        self.last_use = {i: max(p for p, u in enumerate(uses) if i in u) for i in self.cached}

    # -- the ABI ------------------------------------------------------------------------------------
    def templates(self) -> list[str]:
        k = self.k
        return [f"D{d}" for d in range(k.rank)] + [self.stride(a, d) for a in range(len(k.inputs))
                                                    for d in range(k.rank)]

    def dim(self, d: int) -> str:
        return f"D{d}"

    def stride(self, a: int, d: int) -> str:
        return f"S{a}_{d}"

    def _contiguous(self, ids) -> list[int]:
        """Loads in `ids` read W consecutive elements per chunk (one vector)."""
        return [i for i in ids if self.k.body[i].op is Op.LOAD and self.k.body[i].space == "elem"
                and self.k.args[self.k.body[i].attr("arg")].inner == "contiguous"]

    def load(self, ins: Instr) -> str:
        a = ins.attr("arg")
        inner = self.k.args[a].inner if ins.space == "elem" else "row"
        if inner == "contiguous":
            return f"ap_from(L{ins.id}{self.slot}.v[u])"
        index = f"b{a} + (j + u) * {self.stride(a, self.k.rank - 1)}" if inner == "strided" else f"b{a}"
        return f"ap_from(in{a}[{index}])"

    # -- structure ----------------------------------------------------------------------------------
    def constants(self) -> list[str]:
        k, s = self.k, self.s
        outer = " * ".join(f"(int64_t)D{d}" for d in range(k.rank - 1)) or "1"
        elem_in = [(a, arg) for a, arg in enumerate(k.inputs) if arg.space == "elem"]
        if any(arg.inner == "strided" for _, arg in elem_in) or k.loop:  # a permuted loop stores across it
            vec = "false"
        else:
            starts = [f"{self.stride(a, d)} % V == 0" for a, arg in elem_in if arg.inner == "contiguous"
                      for d in range(k.rank - 1)]
            vec = " && ".join(["V > 1", "N % V == 0", *starts])
        lines = [f"  constexpr int64_t N = D{k.rank - 1};", f"  constexpr int64_t R = {outer};",
                 f"  constexpr int V = {s.vector};", f"  constexpr bool VEC = {vec};",
                 "  constexpr int W = VEC ? V : 1;", *self.output_strides()]
        pointers = [f"in{a}" for a, arg in elem_in if arg.inner == "contiguous"]
        pointers += [f"out{a}" for a, arg in enumerate(k.args) if arg.role == "out" and arg.space == "elem"]
        if self.aligned_check:
            checks = " && ".join(["VEC", *(self.aligned_check.format(p) for p in pointers)])
            lines.append(f"  const bool aligned = {checks};")
        return lines

    def streamed(self, i: int, p: int) -> str:
        """Whether load `i` in pass `p` takes the streaming hint: with the schedule's `stream`, for an
        input that is not broadcast across rows (no other row reads it again), at its last read:
        the pass that last uses it, or (a constant expression) its first use when the row is
        held in registers (CACHE) and never read again."""
        a = self.k.body[i].attr("arg")
        if not (self.s.stream and self.vector_load_stream) or 0 in self.k.launch.strides[a][:-1]:
            return "false"
        if i not in self.cached or p == self.last_use[i]:
            return "true"
        return "CACHE"

    def fetch(self, indent: str, elem: tuple[int, ...], aligned: str, p: int = 0) -> list[str]:
        """Vector loads of the contiguous inputs `elem` reads at (row r, columns j..j+W-1), from the
        register cache when an earlier pass `p` put them there (row kernels)."""
        k, lines = self.k, []
        for i in self._contiguous(elem):
            a = k.body[i].attr("arg")
            stream = self.streamed(i, p)
            spelling = self.vector_load if stream == "false" else self.vector_load_stream
            fetch = spelling.format(name=f"L{i}{self.slot}", ptr=f"in{a} + b{a} + j", aligned=aligned,
                                    stream=stream)
            if not self.slot:
                lines.append(f"ApVec<{self.storage[k.args[a].dtype]}, W> L{i};")
            if i in self.cached and self.first_use[i] < p:
                lines.append(f"if (CACHE) L{i} = C{i}[CACHE ? k : 0]; else {{ {fetch} }}")
            else:
                lines.append(fetch)
                if i in self.cached:
                    lines.append(f"if (CACHE) C{i}[CACHE ? k : 0] = L{i};")
        return [indent + line for line in lines]

    def compute(self, indent: str, elem: tuple[int, ...], aligned: str,
                reduces: tuple[int, ...] = ()) -> list[str]:
        """W lanes of per-element math (accumulating `reduces`), then vector stores."""
        k, lines = self.k, []
        stores = [i for i in elem if k.body[i].op is Op.STORE]
        lines += [f"ApVec<{self.storage[k.args[k.body[i].attr('arg')].dtype]}, W> O{i};" for i in stores]
        lines += ["#pragma unroll", "for (int u = 0; u < W; u++) {"]
        for i in elem:
            ins = k.body[i]
            if ins.op is Op.STORE:
                dtype = k.args[ins.attr("arg")].dtype
                value = self.to_storage.get(dtype, "{}").format(self.name(ins.srcs[0]))
                lines.append(f"  O{i}.v[u] = {value};")
            else:
                lines.append(f"  {self.declare(i)}")
        for r in reduces:
            fn = SIMT_REDUCTIONS[k.body[r].op][1]
            lines.append(f"  a{r} = {fn}()(a{r}, {self.name(k.body[r].srcs[0])});")
        lines.append("}")
        store = self.vector_store_stream if self.s.stream and self.vector_store_stream else self.vector_store
        for i in stores:
            a = k.body[i].attr("arg")
            lines.append(store.format(name=f"O{i}", ptr=f"out{a} + {self.elem_index()}", aligned=aligned))
        return [indent + line for line in lines]

    def chunk(self, indent: str, elem: tuple[int, ...], aligned: str, reduces: tuple[int, ...] = (),
              p: int = 0) -> list[str]:
        """One row-kernel step: `fetch`, then `compute`."""
        return self.fetch(indent, elem, aligned, p) + self.compute(indent, elem, aligned, reduces)

    def aligned_branches(self, part) -> list[str]:
        """`part(aligned)` twice, for vector and for element loads, so a thread tests its pointers'
        alignment once rather than at every load (one path where a target has no vector loads)."""
        if not self.aligned_check:
            return part("false")
        return ["  if (aligned) {", *("  " + line for line in part("true")), "  } else {",
                *("  " + line for line in part("false")), "  }"]

    def row_store(self, i: int) -> str:
        ins = self.k.body[i]
        a = ins.attr("arg")
        value = self.to_storage.get(self.k.args[a].dtype, "{}").format(self.name(ins.srcs[0]))
        return f"out{a}[r] = {value};"

    def render(self) -> str:
        body = self.render_elementwise() if self.k.kind == "elementwise" else self.render_row()
        s = self.s
        meta = {"kernel": self.k.name, "kind": self.k.kind, "schedule": s.name, "block": s.block,
                "rows_per_block": s.block // s.row_threads, "vector": s.vector, "unroll": s.unroll,
                **({"stream": True} if s.stream else {}),
                "inputs": [[f"in{a}", arg.dtype] for a, arg in enumerate(self.k.args) if arg.role == "in"],
                "outputs": [[f"out{a}", arg.dtype] for a, arg in enumerate(self.k.args) if arg.role == "out"],
                "templates": self.templates()}
        return "\n".join([f"// autoperfect kernel {self.k.name} ({self.k.kind}), schedule {s.name}",
                          f"// launch: {json.dumps(meta, sort_keys=True)}", SECTION.format("header"),
                          self.prelude.rstrip("\n"), SECTION.format("body"), *body]) + "\n"

    def render_elementwise(self) -> list[str]:
        """U vectors per thread per step, spaced a grid apart (each load instruction coalesced), all
        loaded before any is computed and stored, so U loads are in flight at once."""
        lines = self.constants() + [f"  constexpr int U = {self.s.unroll};",
                                    "  constexpr int64_t VECTORS = R * N / W;",
                                    f"  const int64_t step = {self.grid_threads};"]
        return lines + self.aligned_branches(self.elementwise_loop)

    def elementwise_loop(self, aligned: str) -> list[str]:
        k, p = self.k, self.plan
        lines = [f"  for (int64_t t0 = {self.global_thread}; t0 < VECTORS; t0 += step * U) {{"]
        lines += [f"    ApVec<{self.storage[k.args[k.body[i].attr('arg')].dtype]}, W> L{i}[U];"
                  for i in self._contiguous(p.final_elem)]
        where = ["      const int64_t t = t0 + q * step;", "      if (t < VECTORS) {",
                 "        const int64_t r = R == 1 ? 0 : t * W / N, j = R == 1 ? t * W : t * W % N;",
                 *self.offsets("        ")]
        for step in ("fetch", "compute"):
            lines += [f"    {self.unroll.format('U')}", "    for (int q = 0; q < U; q++) {", *where]
            if step == "fetch":
                lines += self.fetch("        ", p.final_elem, aligned)
            else:
                lines += [f"        {self.declare(i)}" for i in p.row_before]
                lines += self.compute("        ", p.final_elem, aligned)
                lines += [f"        if (j == 0) {self.row_store(i)}" for i in p.row_stores]
            lines += ["      }", "    }"]
        lines.append("  }")
        return lines

    def render_row(self) -> list[str]:
        s = self.s
        lines = self.constants()
        lines += [f"  constexpr int G = {s.row_threads}, RPB = {s.block // s.row_threads};",
                  "  constexpr int K = (int)((N + G * W - 1) / (G * W));  // chunks per thread and row",
                  f"  constexpr bool CACHE = K <= {s.cache};",
                  f"  const int lane = {self.thread} % G;",
                  f"  const int64_t rr = (int64_t){self.block_index} * RPB + {self.thread} / G;",
                  "  const bool live = rr < R;  // a spare row's threads still join the shuffles",
                  "  const int64_t r = live ? rr : R - 1;"]
        lines += self.offsets("  ")
        lines += [f"  {self.declare(i)}" for i in self.plan.row_before]
        return lines + self.aligned_branches(self.row_passes)

    def row_passes(self, aligned: str) -> list[str]:
        k, p, lines = self.k, self.plan, []
        for i in sorted(self.cached):
            dtype = k.args[k.body[i].attr("arg")].dtype
            lines.append(f"  ApVec<{self.storage[dtype]}, W> C{i}[CACHE ? K : 1];")
        loop = [f"  {self.unroll.format('CACHE ? K : 2')}", "  for (int k = 0; k < K; k++) {",
                "    const int64_t j = ((int64_t)k * G + lane) * W;"]
        for n, rp in enumerate(p.passes):
            for r in rp.reduces:
                ident, _ = SIMT_REDUCTIONS[k.body[r].op]
                lines += [f"  {self.shared} float s{r}[32];", f"  float a{r} = {ident};"]
            chunk = self.chunk("      ", rp.elem, aligned, rp.reduces, n)
            lines += loop + ["    if (j < N) {"] + chunk + ["    }", "  }"]
            for r in rp.reduces:
                fn = SIMT_REDUCTIONS[k.body[r].op][1]
                total = f"ap_reduce<G>(a{r}, s{r}, {self.thread}, {fn}())"
                lines.append(f"  const float r{r} = {self.round(total, k.body[r].dtype)};")
            lines += [f"  {self.declare(i)}" for i in rp.row_after]
        if p.final_elem:
            chunk = self.chunk("      ", p.final_elem, aligned, p=len(p.passes))
            lines += loop + ["    if (live && j < N) {"] + chunk + ["    }", "  }"]
        lines += [f"  if (live && lane == 0) {self.row_store(i)}" for i in p.row_stores]
        return lines

    @staticmethod
    def parse(source: str) -> tuple[dict, str, str]:
        """(launch metadata, header, body) of a rendered source."""
        meta = json.loads(source.split("// launch: ", 1)[1].split("\n", 1)[0])
        rest = source.split(SECTION.format("header") + "\n", 1)[1]
        header, body = rest.split(SECTION.format("body") + "\n", 1)
        return meta, header, body


def render(kernel: KernelIR, schedule: Schedule = Schedule()) -> str:
    return CRenderer(kernel, schedule).render()
