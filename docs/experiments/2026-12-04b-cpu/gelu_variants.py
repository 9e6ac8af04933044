"""GELU's chosen rendering (results/gelu_tanh/cpu/candidates/*.libmvec_v16.c, after `snakemake
--cores 4 all`) rewritten two ways, for `docs/experiments/2026-12-03b-cpu/ab_two.py gelu_tanh` (from
memory) and `docs/experiments/2026-12-04-cpu/hb.c` (in cache):

- `nt.c`: streaming stores with every element through the same 64-wide vector chunk (a head chunk
  from the row's start, the aligned body streamed, a tail chunk ending at the row's end), so no
  element meets libm's scalar tanhf wherever the buffer lies;
- `pf{AHEAD}.c`: the input prefetched AHEAD floats ahead, 16 lines before each 256 floats (a
  prefetch inside the `omp simd` loop stops gcc vectorizing it: 17.8 us a row instead of 0.4).

    python docs/experiments/2026-12-04b-cpu/gelu_variants.py OUTDIR
"""
import glob
import os
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
(path,) = glob.glob("results/gelu_tanh/cpu/candidates/*.libmvec_v16.c")
src = open(path).read()
loop_start = src.index("    #pragma omp simd simdlen(16)\n    for (int64_t j = j0; j < j1; j++) {")
store = "      out1[r * N + j] = v13;\n    }\n"
loop_end = src.index(store, loop_start) + len(store)
loop = src[loop_start:loop_end]
body = loop[loop.index("{\n") + 2:loop.index(store)]  # the element's computation, up to v13

# streamed: every chunk of 64 computed by the same loop into an aligned buffer
chunk = lambda s: ("      #pragma omp simd simdlen(16)\n"
                   f"      for (int64_t j = {s}; j < {s} + 64; j++) {{\n" + body.replace("      ", "        ")
                   + f"        t1[j - ({s})] = v13;\n      }}\n")
streamed = ("    float *restrict o = out1 + r * N;\n"
            "    if (!ap_stream || j1 - j0 < 64) {\n" + loop.replace("out1[r * N + j]", "o[j]") + "    } else {\n"
            "    int64_t jc = j0 + (((64 - ((uintptr_t)(o + j0) & 63)) & 63) >> 2);\n"
            "    float t1[64] __attribute__((aligned(64)));\n"
            "    if (jc > j0) {\n" + chunk("j0") + "      __builtin_memcpy(o + j0, t1, (jc - j0) * 4);\n    }\n"
            "    for (; jc + 64 <= j1; jc += 64) {\n" + chunk("jc")
            + "      for (int q = 0; q < 64; q += 16) _mm512_stream_ps(o + jc + q, _mm512_load_ps(t1 + q));\n    }\n"
            "    if (jc < j1) {\n      const int64_t s = j1 - 64;\n" + chunk("s")
            + "      __builtin_memcpy(o + jc, t1 + (jc - s), (j1 - jc) * 4);\n    }\n    }\n")
nt = src[:loop_start] + streamed + src[loop_end:]
nt = nt.replace("#include <math.h>\n", "#include <math.h>\n#include <immintrin.h>\n", 1)
nt = nt.replace("  const int64_t nb =", "  const int ap_stream = R * N * 4 >= 16777216;\n  const int64_t nb =", 1)
head, tail = nt.split("  #pragma omp parallel for schedule(static) if(R * N >= 32768)", 1)
end = tail.rindex("  }\n}")
nt = head + "  #pragma omp parallel if(R * N >= 32768)\n  {\n  #pragma omp for schedule(static)" + tail[:end] \
    + "  }\n  if (ap_stream) _mm_sfence();\n  }\n}\n"
open(os.path.join(out, "nt.c"), "w").write(nt)

for ahead in (1024, 2048, 4096):
    inner = loop.replace("for (int64_t j = j0; j < j1; j++)", "for (int64_t j = jj; j < jj + 256; j++)")
    rest = loop.replace("for (int64_t j = j0; j < j1; j++)", "for (int64_t j = jj; j < j1; j++)")
    pf = f"      for (int q = 0; q < 256; q += 16) __builtin_prefetch(in0 + b0 + jj + {ahead} + q, 0, 3);\n"
    new = ("    int64_t jj = j0;\n    for (; jj + 256 <= j1; jj += 256) {\n" + pf
           + inner.replace("\n    ", "\n      ").replace("    #pragma", "      #pragma", 1) + "    }\n" + rest)
    open(os.path.join(out, f"pf{ahead}.c"), "w").write(src[:loop_start] + new + src[loop_end:])
print("wrote", sorted(os.listdir(out)))
