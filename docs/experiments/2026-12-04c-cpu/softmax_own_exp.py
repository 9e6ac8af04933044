"""Softmax's chosen kernel (libmvec_scratch_v16) with its expf replaced by exp_own.c's AVX-512 exp,
reached through a vector-ABI symbol `_ZGVeN16v_ap_expf` and a scalar `ap_expf` named by an asm label
(which the static checks refuse in generated code: a timing sketch, not a candidate).
    python docs/experiments/2026-12-04c-cpu/softmax_own_exp.py OUTDIR     (after snakemake all)
writes OUTDIR/base.c and OUTDIR/own.c; then, from the repository root,
    python docs/experiments/2026-12-03b-cpu/ab_two.py softmax OUTDIR/base.c OUTDIR/own.c
times both from memory beside a streaming copy (SETS=1: one input set, mostly in the L3)."""
import glob, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
base = open(glob.glob("results/softmax/cpu/candidates/*.libmvec_scratch_v16.c")[0]).read()
c = open(os.path.join(HERE, "exp_own.c")).read()
consts = "\n".join(l for l in c.splitlines() if re.match(r"#define (C\d|LOG2E|LN2_)", l))
body = c[c.index("static inline __m512 exp16"):c.index("static inline float f32")]
vector = body.replace("static inline __m512 exp16(__m512 x)", "__m512 _ZGVeN16v_ap_expf(__m512 x)")
scalar = ('float ap_expf_1(float x) __asm__("ap_expf");\n'
          "float ap_expf_1(float x) { return _mm512_cvtss_f32(_ZGVeN16v_ap_expf(_mm512_set1_ps(x))); }\n")
decl = "#pragma omp declare simd notinbranch\nfloat expf(float);"
assert decl in base and "expf(v2)" in base
own = base.replace(decl, "#pragma omp declare simd notinbranch simdlen(16)\nfloat ap_expf(float);\n"
                   + consts + "\n" + vector + scalar).replace("expf(v2)", "ap_expf(v2)")
open(os.path.join(out, "base.c"), "w").write(base)
open(os.path.join(out, "own.c"), "w").write(own)
print(os.path.join(out, "base.c"), os.path.join(out, "own.c"))
