"""LayerNorm's `_vecfma` rendering (render.py) with the plain row sum's adds written as FMAs by a
runtime 1.0 (`x * 1 + p` rounds once: the same bits), so they issue on the FMA pipes beside the
shifted sums' adds on the add pipes: `python docs/experiments/2026-12-05c-cpu/fma_pipe.py IN.c OUT.c`.
A timing sketch, not kept."""
import sys

src = open(sys.argv[1]).read()
for h in "01":
    src = src.replace(f"p1v{h} = p1v{h} + v0;", f"p1v{h} = _mm512_fmadd_ps(v0, ap_one, p1v{h});")
src = src.replace("  #pragma omp parallel if", "  static volatile float ap_onef = 1.0f;\n"
                  "  const __m512 ap_one = _mm512_set1_ps(ap_onef);\n  #pragma omp parallel if", 1)
open(sys.argv[2], "w").write(src)
